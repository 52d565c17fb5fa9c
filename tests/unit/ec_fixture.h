/* SPDX-License-Identifier: MIT */
/*
 * ec_fixture.h -- the 4+2 erasure-coded lease of the client's unit tests
 * on fake verbs (test_client_ec, test_client_late): its members are
 * MEMBER bytes apart in the fake remote memory, each holding 3 rows'
 * chunks and then their tags (at 3 * CHUNK: 8 bytes a row).
 */
#ifndef RMP_EC_FIXTURE_H
#define RMP_EC_FIXTURE_H

#define KIB 1024u
#define CHUNK (4 * KIB)
#define K 4
#define M 2
#define N (K + M)
#define ROW (K * CHUNK)
#define LENGTH (2 * ROW + 2 * CHUNK + 100) /* 2 rows, a part of one */
#define MEMBER (16 * KIB) /* 3 rows' chunks and their tags, rounded */
#define TAGS (3 * CHUNK)  /* where a member's tags start */

#endif
