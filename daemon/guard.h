/* SPDX-License-Identifier: MIT */
/* guard.h -- failures per peer block (and tenant), and their cool-down. */
#ifndef RMP_GUARD_H
#define RMP_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A client that guesses rkeys causes remote access errors; one that
 * guesses a tenant's key fails its proofs. The guard counts failures per
 * subject over one-minute windows; more than max_per_minute starts a
 * cool-down during which the listener refuses that subject. A subject is
 * what failed: a peer block (rmp_peer_block) for access errors and bad
 * connect requests, or a tenant name from a peer block for failed proofs
 * (and any name from it, for all of them together)
 * -- so a key guesser cools down its own tenant name there, not the
 * neighbours that share its address and prove their keys (nor does the
 * cool-down of any name from the block, for names that proved their key
 * there lately: rmp_guard_proven). Guessing an
 * 8-bit key tag then takes hours, not seconds, and every error is in the
 * log. Pure bookkeeping: no I/O.
 */
struct rmp_guard;

/*
 * rmp_peer_block -- the unit a peer's address is counted in, as text: an
 * IPv4 address itself; an IPv6 address's /64 ("2001:db8:1:2::/64"), since
 * one host is commonly given a whole /64 and could otherwise take a fresh
 * address for every few guesses; an IPv4-mapped IPv6 address as IPv4.
 * Text that is no address is its own block.
 */
#define RMP_PEER_BLOCK_LEN 64
void rmp_peer_block(const char *ip, char *out, size_t len);

/* Remembers at most `slots` subjects; a new one takes the place of the
 * least recently seen that is not cooling down (of the one whose
 * cool-down ends first if all are), a tenant name that proved its key
 * lately (rmp_guard_proven) last among those. */
struct rmp_guard *rmp_guard_new(unsigned slots);
void rmp_guard_free(struct rmp_guard *g);

/*
 * rmp_guard_note -- one failure at now_ms of ip's block (tenant NULL: an
 * access error, a bad connect), of tenant name `tenant` from ip's block
 * ("" is anonymous), or of any name from it (RMP_GUARD_ANY_NAME: failed
 * proofs whatever names they named). Returns the count in the subject's
 * current window; sets *cooldown_started when this failure started a
 * cool-down of cooldown_ms (max_per_minute 0: never).
 */
#define RMP_GUARD_ANY_NAME "*" /* no tenant name has a '*' */
unsigned rmp_guard_note(struct rmp_guard *g, const char *ip,
			const char *tenant, uint64_t now_ms,
			unsigned max_per_minute, uint64_t cooldown_ms,
			bool *cooldown_started);

/*
 * rmp_guard_proven -- a connection from ip proved tenant's key at now_ms
 * (not for anonymous: it has no key to prove). For RMP_GUARD_PROVEN_MS
 * after, the cool-down of RMP_GUARD_ANY_NAME from ip's block does not
 * refuse that tenant name from there (its own name's cool-down and the
 * block's, for access errors, still do): failed proofs under ever new
 * names cannot lock out a neighbour that proves its key. Every other
 * name gets that cool-down alike, a tenant that exists and a name nobody
 * has.
 */
#define RMP_GUARD_PROVEN_MS 3600000u
void rmp_guard_proven(struct rmp_guard *g, const char *ip,
		      const char *tenant, uint64_t now_ms);

/* rmp_guard_refusing -- ms left at now_ms of the cool-down that refuses a
 * connection from ip naming tenant: its block's, that of any name from
 * its block (unless tenant proved its key from there lately:
 * rmp_guard_proven), or that of the tenant name from its block (0:
 * none; tenant NULL: a request that did not decode, the first two). */
uint64_t rmp_guard_refusing(const struct rmp_guard *g, const char *ip,
			    const char *tenant, uint64_t now_ms);

/*
 * rmp_guard_may_log -- may one more line about ip's block (a refused
 * connect, an access or authentication error; audit: an audit line of a
 * failure, such as auth-fail) be logged at now_ms? At most
 * RMP_GUARD_LOG_BURST of each kind per block in each
 * RMP_GUARD_LOG_WINDOW_MS: a flood's other lines cannot crowd out the
 * first audit lines. The rest are counted, and the first call of the
 * next window gets that count (both kinds) in *suppressed (else 0), for
 * one summary line. The audit lines of what succeeds and the start of a
 * cool-down are not for this: they are always logged.
 */
#define RMP_GUARD_LOG_BURST 10u
#define RMP_GUARD_LOG_WINDOW_MS 10000u
bool rmp_guard_may_log(struct rmp_guard *g, const char *ip, uint64_t now_ms,
		       bool audit, unsigned *suppressed);

#endif /* RMP_GUARD_H */
