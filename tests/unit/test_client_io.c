/* SPDX-License-Identifier: MIT */
/*
 * test_client_io.c -- the data path (client/io.c) on fake verbs and a
 * fake NIC: arguments refused before anything is posted, bytes through
 * the bounce buffer, registered buffers and inline WRITEs, split
 * transfers, completion errors per operation, the asynchronous ring
 * through a QP error and a refused post, the expiry check, a read after
 * the reconnect upcall, and a write through a key the server revoked
 * (-EKEYREVOKED) followed by the reconnect and a new key.
 *
 * io.c is linked with lease.c, chan.c, buf.c, error.c and spin.c;
 * fake_client.c is the NIC and the server (see fake_client.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "chan.h"
#include "check.h"
#include "fake_client.h"
#include "io_int.h"
#include "lease.h"
#include "rmpool.h"
#include "state.h"
#include "util.h"

/* pattern -- len bytes that differ from those at another seed. */
static void pattern(uint8_t *p, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

/* signaled -- data WRs posted since fake_wrs index from that are. */
static unsigned signaled(unsigned from)
{
	unsigned i, n = 0;

	for (i = from; i < fake_nwrs; i++)
		n += fake_wrs[i].opcode != IBV_WR_SEND &&
		     (fake_wrs[i].send_flags & IBV_SEND_SIGNALED);
	return n;
}

/* ------------------------------------------------------- arguments */

/* Out of bounds (the sum overflowing too), rights the lease lacks,
 * misaligned atomics, a device without atomics: refused, nothing
 * posted. Length 0 inside the lease posts nothing and succeeds. */
static void test_sync_args(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = fake_lease(c, 0, 4096, RMP_ACC_ALL);
	struct rmp_lease *ro = fake_lease(c, 4096, 4096, RMP_ACC_READ);
	struct rmp_lease *wo = fake_lease(c, 8192, 4096, RMP_ACC_WRITE);
	struct rmp_lease *odd = fake_lease(c, 12300, 64, RMP_ACC_ALL);
	uint64_t old = 0;
	char buf[64] = "";

	CHECK_EQ(rmp_read(NULL, 0, buf, 8), -EINVAL);
	CHECK_EQ(rmp_cas(NULL, 0, 0, 1, &old), -EINVAL);
	CHECK_EQ(rmp_flush(NULL), -EINVAL);
	CHECK_EQ(rmp_read(l, 0, NULL, 8), -EINVAL);
	CHECK_EQ(rmp_read(l, 4095, buf, 2), -ERANGE);
	CHECK_STR(c->errbuf, "offset 4095 + length 2 outside the lease "
		  "(4096 bytes)");
	CHECK_EQ(rmp_read(l, UINT64_MAX - 3, buf, 8), -ERANGE);
	CHECK_EQ(rmp_write(l, 8, buf, SIZE_MAX), -ERANGE);
	CHECK_EQ(rmp_read(l, 4097, buf, 0), -ERANGE);
	CHECK_EQ(rmp_read(l, 4096, buf, 0), 0);
	CHECK_EQ(rmp_write(l, 0, NULL, 0), 0);
	CHECK_EQ(rmp_write(l, 4088, buf, 8 + 1), -ERANGE);

	CHECK_EQ(rmp_write(ro, 0, buf, 8), -EACCES);
	CHECK_STR(c->errbuf, "lease grants no write access");
	CHECK_EQ(rmp_cas(ro, 0, 0, 1, &old), -EACCES);
	CHECK_STR(c->errbuf, "lease grants no atomic access");
	CHECK_EQ(rmp_faa(ro, 0, 1, &old), -EACCES);
	CHECK_EQ(rmp_read(wo, 0, buf, 8), -EACCES);
	CHECK_STR(c->errbuf, "lease grants no read access");

	CHECK_EQ(rmp_cas(l, 4, 0, 1, &old), -EINVAL);
	CHECK_STR(c->errbuf, "atomic offset 4 is not 8-byte aligned");
	CHECK_EQ(rmp_faa(odd, 0, 1, &old), -EINVAL); /* address 12300 */
	CHECK_EQ(rmp_faa(l, 4092, 1, &old), -ERANGE);
	CHECK_EQ(rmp_faa(l, UINT64_MAX - 7, 1, &old), -ERANGE);
	c->atomics = false;
	CHECK_EQ(rmp_cas(l, 0, 0, 1, &old), -EOPNOTSUPP);
	CHECK_STR(c->errbuf, "the RDMA device has no atomics");
	c->atomics = true;

	CHECK_EQ(fake_data_wrs(), 0);
	CHECK_EQ(fake_nreqs, 0);
	CHECK_EQ(c->conn, RMPC_CONN_UP);
	fake_client_free(c);
}

static void test_async_args(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = fake_lease(c, 0, 4096, RMP_ACC_ALL);
	struct rmp_lease *ro = fake_lease(c, 4096, 4096, RMP_ACC_READ);
	static uint8_t mem[4096];
	struct rmp_buf *b = NULL, alien;
	struct ibv_mr *mr;

	CHECK_EQ(rmp_buf_reg(c, mem, sizeof(mem), &b), 0);
	CHECK_EQ(rmp_post_read(NULL, 0, b, 0, 8, 1), -EINVAL);
	CHECK_EQ(rmp_post_read(l, 0, NULL, 0, 8, 1), -EINVAL);
	CHECK_EQ(rmp_post_read(l, 0, b, 4000, 200, 1), -EINVAL);
	CHECK_STR(c->errbuf, "buffer offset 4000 + length 200 outside the "
		  "buffer (4096 bytes)");
	CHECK_EQ(rmp_post_read(l, 0, b, SIZE_MAX, 2, 1), -EINVAL);
	CHECK_EQ(rmp_post_read(l, 4000, b, 0, 200, 1), -ERANGE);
	CHECK_EQ(rmp_post_write(ro, 0, b, 0, 8, 1), -EACCES);
	CHECK_EQ(rmp_post_cas(l, 4, 0, 1, b, 0, 1), -EINVAL);
	CHECK_EQ(rmp_post_faa(l, 4096, 1, b, 0, 1), -ERANGE);
	CHECK_EQ(rmp_post_faa(ro, 0, 1, b, 0, 1), -EACCES);
	alien = *b;
	alien.c = (struct rmp_client *)&alien; /* another client's */
	CHECK_EQ(rmp_post_read(l, 0, &alien, 0, 8, 1), -EINVAL);
	CHECK_STR(c->errbuf, "buffer belongs to another client");
	c->max_msg_sz = 1024;
	CHECK_EQ(rmp_post_read(l, 0, b, 0, 2048, 1), -EMSGSIZE);
	c->max_msg_sz = UINT32_C(1) << 31;
	c->max_inflight = 2;
	CHECK_EQ(rmp_post_read(l, 0, b, 0, 8, 1), 0);
	CHECK_EQ(rmp_post_read(l, 0, b, 0, 8, 2), 0);
	CHECK_EQ(rmp_post_read(l, 0, b, 0, 8, 3), -EAGAIN);
	CHECK_HAS(c->errbuf, "2 operations queued or in flight");
	CHECK_EQ(c->ring_tail, 2);
	mr = b->mr;
	b->mr = NULL; /* as after its connection closed */
	CHECK_EQ(rmp_post_read(l, 0, b, 0, 8, 1), -ENOTCONN);
	CHECK_HAS(c->errbuf, "register it again");
	b->mr = mr;
	CHECK_EQ(fake_data_wrs(), 0); /* queued, not submitted */
	fake_client_free(c);
}

/* ------------------------------------------------------------ data */

/* Bytes go where they should: through the bounce buffer, inline, from
 * and into registered buffers; atomics and flush. */
static void test_data(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = fake_lease(c, 0, 65536, RMP_ACC_ALL);
	struct rmp_lease *wo = fake_lease(c, 0, 65536, RMP_ACC_WRITE);
	static uint8_t src[300], dst[300], mem[4096];
	struct rmp_buf *b = NULL;
	uint64_t old = 0, v;
	unsigned at;

	pattern(src, sizeof(src), 1);
	at = fake_nwrs;
	CHECK_EQ(rmp_write(l, 1000, src, sizeof(src)), 0);
	CHECK(!memcmp(fake_remote + 1000, src, sizeof(src)));
	CHECK_EQ(fake_wrs[at].local, (uintptr_t)c->bounce);
	CHECK_EQ(fake_wrs[at].lkey, c->bounce_mr->lkey);
	CHECK_EQ(fake_wrs[at].remote_addr, FAKE_REMOTE_ADDR + 1000);
	CHECK_EQ(fake_wrs[at].rkey, fake_rkey);
	CHECK_EQ(rmp_read(l, 1000, dst, sizeof(dst)), 0);
	CHECK(!memcmp(dst, src, sizeof(dst)));

	/* Small writes travel in the WQE, straight from the caller. */
	at = fake_nwrs;
	CHECK_EQ(rmp_write(l, 2000, src, 40), 0);
	CHECK(fake_wrs[at].send_flags & IBV_SEND_INLINE);
	CHECK_EQ(fake_wrs[at].local, (uintptr_t)src);
	CHECK_EQ(fake_wrs[at].lkey, 0);
	CHECK(!memcmp(fake_remote + 2000, src, 40));

	/* Registered memory: zero copy, its own key. */
	CHECK_EQ(rmp_buf_reg(c, mem, sizeof(mem), &b), 0);
	at = fake_nwrs;
	CHECK_EQ(rmp_read(l, 1000, mem + 100, 300), 0);
	CHECK_EQ(fake_wrs[at].local, (uintptr_t)(mem + 100));
	CHECK_EQ(fake_wrs[at].lkey, b->mr->lkey);
	CHECK(!memcmp(mem + 100, src, 300));

	/* Atomics: the old value comes back; CAS swaps only on a match. */
	v = 5;
	memcpy(fake_remote + 64, &v, 8);
	CHECK_EQ(rmp_cas(l, 64, 5, 9, &old), 0);
	CHECK_EQ(old, 5);
	CHECK_EQ(rmp_cas(l, 64, 5, 11, &old), 0);
	CHECK_EQ(old, 9);
	CHECK_EQ(rmp_faa(l, 64, 3, &old), 0);
	CHECK_EQ(old, 9);
	CHECK_EQ(rmp_faa(l, 64, 1, NULL), 0);
	memcpy(&v, fake_remote + 64, 8);
	CHECK_EQ(v, 13);

	/* Flush: a 1-byte READ, or with no read right a 0-byte one. */
	at = fake_nwrs;
	CHECK_EQ(rmp_flush(l), 0);
	CHECK_EQ(fake_wrs[at].opcode, IBV_WR_RDMA_READ);
	CHECK_EQ(fake_wrs[at].num_sge, 1);
	CHECK_EQ(fake_wrs[at].length, 1);
	at = fake_nwrs;
	CHECK_EQ(rmp_flush(wo), 0);
	CHECK_EQ(fake_wrs[at].num_sge, 0);
	fake_client_free(c);
}

/* Transfers beyond the device's message size and the bounce buffer are
 * split into pieces, at most RMPC_SYNC_BATCH a chain, one signaled. */
static void test_split(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = fake_lease(c, 0, 65536, RMP_ACC_ALL);
	static uint8_t src[40000], dst[40000];
	struct rmp_buf *b = NULL;
	unsigned at;

	c->max_msg_sz = 1000;
	pattern(src, 10000, 3);
	at = fake_nwrs;
	CHECK_EQ(rmp_write(l, 0, src, 10000), 0);
	CHECK_EQ(fake_nwrs - at, 10);
	CHECK_EQ(signaled(at), 1);
	CHECK(fake_wrs[fake_nwrs - 1].send_flags & IBV_SEND_SIGNALED);
	CHECK(!memcmp(fake_remote, src, 10000));

	/* A smaller bounce buffer: one chain per bounce-full. */
	c->bounce_len = 4096;
	pattern(src, 10000, 4);
	at = fake_nwrs;
	CHECK_EQ(rmp_write(l, 0, src, 10000), 0);
	CHECK_EQ(fake_nwrs - at, 12);
	CHECK_EQ(signaled(at), 3);
	CHECK(!memcmp(fake_remote, src, 10000));
	CHECK_EQ(rmp_read(l, 0, dst, 10000), 0);
	CHECK(!memcmp(dst, src, 10000));

	/* Registered memory: 16 pieces a chain. */
	CHECK_EQ(rmp_buf_reg(c, dst, sizeof(dst), &b), 0);
	at = fake_nwrs;
	CHECK_EQ(rmp_read(l, 0, dst, 40000), 0);
	CHECK_EQ(fake_nwrs - at, 40);
	CHECK_EQ(signaled(at), 3);
	CHECK(!memcmp(dst, fake_remote, 40000));
	fake_client_free(c);
}

/* data_since -- data WRs posted since fake_wrs index from. */
static unsigned data_since(unsigned from)
{
	unsigned n = 0;

	for (unsigned i = from; i < fake_nwrs; i++)
		n += fake_wrs[i].opcode != IBV_WR_SEND;
	return n;
}

/* signaled_polls -- fake_polls when the k-th (0-based) signaled data WR
 * from fake_wrs index from on was posted; ~0u when there is none. */
static unsigned signaled_polls(unsigned from, unsigned k)
{
	for (unsigned i = from; i < fake_nwrs; i++)
		if (fake_wrs[i].opcode != IBV_WR_SEND &&
		    (fake_wrs[i].send_flags & IBV_SEND_SIGNALED) && !k--)
			return fake_wrs[i].polls;
	return ~0u;
}

/* Two legs of one call on the same client (a rail's pieces): zero copy,
 * they go in one chain (one doorbell, its last WR signaled); through the
 * bounce buffer (one per client) they take turns, a chain each. */
static void test_legs_share_client(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = fake_lease(c, 0, 65536, RMP_ACC_ALL);
	static uint8_t mem[32768];
	struct rmp_buf *b = NULL;
	struct rmpc_leg legs[2];
	unsigned at;

	pattern(fake_remote, 32768, 5);
	CHECK_EQ(rmp_buf_reg(c, mem, sizeof(mem), &b), 0);
	legs[0] = (struct rmpc_leg){ .l = l, .off = 0, .len = 16384,
				     .local = (char *)mem };
	legs[1] = (struct rmpc_leg){ .l = l, .off = 16384, .len = 16384,
				     .local = (char *)mem + 16384 };
	at = fake_nwrs;
	CHECK_EQ(rmpc_rw(legs, 2, false), 0);
	CHECK_EQ(data_since(at), 2);
	CHECK_EQ(signaled(at), 1); /* one chain, one doorbell */
	CHECK_EQ(fake_wrs[at].polls, signaled_polls(at, 0));
	CHECK(!memcmp(mem, fake_remote, 32768));
	rmp_buf_dereg(b);

	memset(mem, 0, sizeof(mem));
	at = fake_nwrs;
	CHECK_EQ(rmpc_rw(legs, 2, false), 0);
	CHECK_EQ(signaled(at), 2);
	CHECK(signaled_polls(at, 0) < signaled_polls(at, 1));
	CHECK(!memcmp(mem, fake_remote, 32768));
	fake_client_free(c);
}

/* ---------------------------------------------------- completions */

/* A completion error gives each call its errno, and fails the
 * connection: the next call says -ENOTCONN. */
static void check_error(int (*call)(struct rmp_lease *l),
			enum ibv_wc_status status, int err, const char *text)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = fake_lease(c, 0, 4096, RMP_ACC_ALL);
	static char buf[300];

	fake_fail_next = status;
	CHECK_EQ(call(l), err);
	CHECK_HAS(c->errbuf, text);
	CHECK(rmpc_broken(c));
	CHECK_EQ(rmp_read(l, 0, buf, 8), -ENOTCONN);
	CHECK_HAS(c->errbuf, "connection failed earlier");
	fake_client_free(c);
}

static uint64_t cas_old = 77;

static int call_read(struct rmp_lease *l)
{
	static char buf[300];

	return rmp_read(l, 0, buf, sizeof(buf));
}

static int call_write(struct rmp_lease *l)
{
	static char buf[300];

	return rmp_write(l, 0, buf, sizeof(buf));
}

static int call_cas(struct rmp_lease *l)
{
	return rmp_cas(l, 0, 1, 2, &cas_old);
}

static int call_faa(struct rmp_lease *l)
{
	return rmp_faa(l, 8, 1, NULL);
}

static void test_completion_errors(void)
{
	struct rmp_client *c;
	struct rmp_lease *l;
	static uint8_t src[5000];

	check_error(call_read, IBV_WC_REM_ACCESS_ERR, -EKEYREVOKED,
		    "RDMA READ refused by the server: remote access error");
	check_error(call_write, IBV_WC_RETRY_EXC_ERR, -ETIMEDOUT,
		    "RDMA WRITE completed with error: transport retry");
	check_error(call_cas, IBV_WC_REM_OP_ERR, -EIO,
		    "RDMA compare-and-swap completed with error");
	CHECK_EQ(cas_old, 77); /* no old value from a failed CAS */
	check_error(call_faa, IBV_WC_REM_ACCESS_ERR, -EKEYREVOKED,
		    "RDMA fetch-and-add refused by the server");
	check_error(rmp_flush, IBV_WC_RETRY_EXC_ERR, -ETIMEDOUT,
		    "RDMA READ completed with error");

	/* A key the NIC no longer takes (revoked): -EKEYREVOKED. */
	c = fake_client_new();
	l = fake_lease(c, 0, 4096, RMP_ACC_ALL);
	l->rkey++;
	CHECK_EQ(rmp_write(l, 0, src, 100), -EKEYREVOKED);
	CHECK_HAS(c->errbuf, "lease key revoked");
	fake_client_free(c);

	/* A split transfer that fails in its third piece: that error, the
	 * rest flushed; what came before took effect. */
	c = fake_client_new();
	c->max_msg_sz = 1000;
	l = fake_lease(c, FAKE_REMOTE_LEN - 2500, 5000, RMP_ACC_ALL);
	memset(fake_remote + FAKE_REMOTE_LEN - 2500, 0, 2500);
	pattern(src, sizeof(src), 5);
	CHECK_EQ(rmp_write(l, 0, src, 5000), -EKEYREVOKED);
	CHECK(!memcmp(fake_remote + FAKE_REMOTE_LEN - 2500, src, 2000));
	CHECK_EQ(c->sq_done, c->sq_posted);
	fake_client_free(c);

	/* No completion at all: -ETIMEDOUT, and the QP is moved to the
	 * error state so that the NIC stops using our memory. */
	c = fake_client_new();
	l = fake_lease(c, 0, 4096, RMP_ACC_ALL);
	fake_hold = true;
	CHECK_EQ(rmp_read(l, 0, src, 100), -ETIMEDOUT);
	CHECK_HAS(c->errbuf, "RDMA READ: no completion within 50 ms");
	CHECK_EQ(fake_qp_errors, 1);
	CHECK_EQ(rmp_read(l, 0, src, 100), -ENOTCONN);
	fake_client_free(c);
}

/* ----------------------------------------------------- asynchronous */

/* post_all -- read, write, fetch-and-add, compare-and-swap on l with b,
 * user_data 1..4; returns how many were queued. */
static int post_all(struct rmp_lease *l, struct rmp_buf *b)
{
	return !rmp_post_read(l, 0, b, 0, 100, 1) +
	       !rmp_post_write(l, 200, b, 1000, 50, 2) +
	       !rmp_post_faa(l, 128, 1, b, 2048, 3) +
	       !rmp_post_cas(l, 136, 0, 5, b, 2056, 4);
}

/* Completions come back in submission order with their user data; a
 * synchronous call that reaps them on its way leaves them to rmp_poll. */
static void test_async(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = fake_lease(c, 0, 4096, RMP_ACC_ALL);
	static uint8_t mem[4096];
	struct rmp_completion out[8];
	struct rmp_buf *b = NULL;
	uint8_t want[100];
	uint64_t v;
	unsigned at;
	int n, i;

	memset(fake_remote, 0, 4096);
	pattern(fake_remote, 100, 6);
	pattern(want, 100, 6);
	pattern(mem + 1000, 50, 7);
	CHECK_EQ(rmp_buf_reg(c, mem, sizeof(mem), &b), 0);
	CHECK_EQ(rmp_submit(c), 0);
	CHECK_EQ(post_all(l, b), 4);
	at = fake_nwrs;
	CHECK_EQ(rmp_submit(c), 4);
	CHECK_EQ(fake_nwrs - at, 4);
	CHECK(fake_wrs[at + 3].send_flags & IBV_SEND_SIGNALED);
	CHECK_EQ(rmp_read(l, 0, mem + 3000, 8), 0); /* reaps them too */
	n = rmp_poll(c, out, 8, 0);
	CHECK_EQ(n, 4);
	for (i = 0; i < n; i++) {
		CHECK_EQ(out[i].user_data, i + 1);
		CHECK_EQ(out[i].status, 0);
	}
	CHECK(!memcmp(mem, want, 100));
	CHECK(!memcmp(fake_remote + 200, mem + 1000, 50));
	memcpy(&v, fake_remote + 128, 8);
	CHECK_EQ(v, 1);
	memcpy(&v, fake_remote + 136, 8);
	CHECK_EQ(v, 5);
	CHECK_EQ(rmp_poll(c, out, 8, 100), 0); /* nothing left: at once */
	CHECK_EQ(rmp_poll(c, out, 0, 0), -EINVAL);
	fake_client_free(c);
}

/*
 * The QP fails under submitted operations (an error completion, or the
 * timeout of a synchronous call): each still completes through
 * rmp_poll, the failed one with its error, the others flushed; then
 * nothing more can be queued.
 */
static void test_async_qp_error(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = fake_lease(c, 0, 4096, RMP_ACC_ALL);
	static uint8_t mem[4096];
	struct rmp_completion out[8];
	struct rmp_buf *b = NULL;
	unsigned at;

	CHECK_EQ(rmp_buf_reg(c, mem, sizeof(mem), &b), 0);
	fake_hold = true;
	CHECK_EQ(post_all(l, b), 4);
	at = fake_nwrs;
	CHECK_EQ(rmp_submit(c), 4);
	CHECK_EQ(rmp_poll(c, out, 8, 0), 0);
	fake_complete(at + 1, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(rmp_poll(c, out, 8, 0), 4);
	CHECK_EQ(out[0].status, 0);
	CHECK_EQ(out[1].status, -EKEYREVOKED);
	CHECK_EQ(out[2].status, -ENOTCONN);
	CHECK_EQ(out[3].status, -ENOTCONN);
	CHECK_EQ(out[3].user_data, 4);
	CHECK_HAS(c->errbuf, "RDMA WRITE refused by the server");
	CHECK_EQ(rmp_post_read(l, 0, b, 0, 8, 9), -ENOTCONN);
	fake_client_free(c);

	c = fake_client_new();
	l = fake_lease(c, 0, 4096, RMP_ACC_ALL);
	CHECK_EQ(rmp_buf_reg(c, mem, sizeof(mem), &b), 0);
	fake_hold = true;
	CHECK_EQ(post_all(l, b), 4);
	CHECK_EQ(rmp_submit(c), 4);
	CHECK_EQ(rmp_read(l, 0, mem + 3000, 8), -ETIMEDOUT);
	CHECK_EQ(rmp_poll(c, out, 8, 0), 4);
	CHECK_EQ(out[0].status, -ENOTCONN);
	CHECK_EQ(out[3].status, -ENOTCONN);
	fake_client_free(c);
}

/*
 * A submit that cannot post: on a failed connection every queued
 * operation completes with -ENOTCONN; when the provider refuses a WR of
 * the chain, those from it on complete with -EIO, and the ones it took
 * complete too (whatever the NIC did with them), so rmp_poll hands out
 * every operation.
 */
static void test_submit_fails(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = fake_lease(c, 0, 4096, RMP_ACC_ALL);
	static uint8_t mem[4096];
	struct rmp_completion out[8];
	struct rmp_buf *b = NULL;
	int i;

	CHECK_EQ(rmp_buf_reg(c, mem, sizeof(mem), &b), 0);
	CHECK_EQ(post_all(l, b), 4);
	rmpc_fail(c);
	CHECK_EQ(rmp_submit(c), -ENOTCONN);
	CHECK_EQ(rmp_poll(c, out, 8, 0), 4);
	for (i = 0; i < 4; i++)
		CHECK_EQ(out[i].status, -ENOTCONN);
	CHECK_EQ(fake_data_wrs(), 0);
	fake_client_free(c);

	/* Eight ops, WR 3 and 7 signaled; the provider takes six. WR 3
	 * reports 0..3 (those before it as -ENOTCONN once the connection
	 * has failed: the code does not tell them from flushed ones); 4
	 * and 5 ran without a trace, 6 and 7 never ran. */
	c = fake_client_new();
	l = fake_lease(c, 0, 4096, RMP_ACC_ALL);
	CHECK_EQ(rmp_buf_reg(c, mem, sizeof(mem), &b), 0);
	CHECK_EQ(post_all(l, b) + post_all(l, b), 8);
	fake_post_error = ENOMEM;
	fake_post_fail_at = 6;
	CHECK_EQ(rmp_submit(c), -EIO);
	CHECK_EQ(fake_data_wrs(), 6);
	CHECK_EQ(signaled(0), 1);
	memset(out, 0, sizeof(out));
	CHECK_EQ(rmp_poll(c, out, 8, 100), 8);
	for (i = 0; i < 3; i++)
		CHECK(out[i].status == 0 || out[i].status == -ENOTCONN);
	CHECK_EQ(out[3].status, 0);
	CHECK_EQ(out[4].status, -ENOTCONN);
	CHECK_EQ(out[5].status, -ENOTCONN);
	CHECK_EQ(out[6].status, -EIO);
	CHECK_EQ(out[7].status, -EIO);
	CHECK_EQ(out[7].user_data, 4);
	CHECK_EQ(rmp_poll(c, out, 8, 0), 0);
	fake_client_free(c);
}

/* ---------------------------------------------------------- expiry */

/*
 * A lease past its deadline that the server no longer has: every data
 * call gives -EKEYEXPIRED before any data WR is posted (the NIC would
 * answer with an access error that breaks the connection), and the
 * connection stays usable. Renewed elsewhere: the call goes ahead.
 */
static void test_expiry(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = fake_lease(c, 0, 4096, RMP_ACC_ALL);
	struct rmp_lease *fresh = fake_lease(c, 8192, 4096, RMP_ACC_ALL);
	static uint8_t mem[4096];
	struct rmp_buf *b = NULL;
	uint64_t old;

	CHECK_EQ(rmp_buf_reg(c, mem, sizeof(mem), &b), 0);
	l->stamp_ms -= l->ttl_ms + 5;
	fake_refuse = -ENOENT;
	CHECK_EQ(rmp_read(l, 0, mem, 8), -EKEYEXPIRED);
	CHECK_HAS(c->errbuf, " expired ");
	CHECK_EQ(rmp_write(l, 0, mem, 8), -EKEYEXPIRED);
	CHECK_EQ(rmp_cas(l, 0, 0, 1, &old), -EKEYEXPIRED);
	CHECK_EQ(rmp_faa(l, 0, 1, &old), -EKEYEXPIRED);
	CHECK_EQ(rmp_flush(l), -EKEYEXPIRED);
	CHECK_EQ(rmp_post_read(l, 0, b, 0, 8, 1), -EKEYEXPIRED);
	CHECK_EQ(fake_data_wrs(), 0);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 6);
	CHECK_EQ(c->conn, RMPC_CONN_UP);
	CHECK_EQ(rmp_read(fresh, 0, mem, 8), 0);

	fake_refuse = 0;
	CHECK_EQ(rmp_read(l, 0, mem, 8), 0);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 7);
	CHECK_EQ(fake_data_wrs(), 2);
	fake_client_free(c);
}

/* ------------------------------------------------ reconnect upcall */

/* The connection fails and the lease's key changes with it: with
 * reconnecting on, the next read makes the connection again, attaches
 * the lease again and reads with the new key. A buffer registered on
 * the old connection must be registered again. */
static void test_reconnect(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = NULL;
	static uint8_t src[300], dst[300], mem[4096];
	struct rmp_buf *b = NULL;
	uint32_t old_rkey = fake_rkey;

	c->auto_reconnect = true;
	CHECK_EQ(rmp_lease_alloc(c, 4096, NULL, &l), 0);
	CHECK_EQ(rmp_buf_reg(c, mem, sizeof(mem), &b), 0);
	pattern(src, sizeof(src), 8);
	CHECK_EQ(rmp_write(l, 0, src, sizeof(src)), 0);
	rmpc_fail(c);
	fake_rkey = 0x5a99;
	CHECK_EQ(rmp_read(l, 0, dst, sizeof(dst)), 0);
	CHECK_EQ(fake_reconnects, 1);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 1);
	CHECK_EQ(l->rkey, 0x5a99);
	CHECK_EQ(fake_wrs[fake_nwrs - 1].rkey, 0x5a99);
	CHECK(!memcmp(dst, src, sizeof(dst)));
	CHECK_EQ(rmp_post_read(l, 0, b, 0, 8, 1), -ENOTCONN);
	fake_rkey = old_rkey;
	fake_client_free(c);
}

/* The server revokes the lease's key (another connection's exclusive
 * attach): the write through it gives -EKEYREVOKED and fails the
 * connection; with reconnecting on, the next write connects again,
 * attaches the lease again (a new key) and lands. */
static void test_revoked_reattach(void)
{
	struct rmp_client *c = fake_client_new();
	struct rmp_lease *l = NULL;
	static uint8_t src[300], dst[300];
	uint32_t old_rkey = fake_rkey;

	c->auto_reconnect = true;
	CHECK_EQ(rmp_lease_alloc(c, 4096, NULL, &l), 0);
	pattern(src, sizeof(src), 3);
	CHECK_EQ(rmp_write(l, 0, src, sizeof(src)), 0);
	fake_rkey = 0x6b01; /* the old key reaches nothing now */
	CHECK_EQ(rmp_write(l, 0, src, sizeof(src)), -EKEYREVOKED);
	CHECK_HAS(c->errbuf, "lease key revoked");
	CHECK_EQ(fake_reconnects, 0);
	pattern(src, sizeof(src), 4);
	CHECK_EQ(rmp_write(l, 0, src, sizeof(src)), 0);
	CHECK_EQ(fake_reconnects, 1);
	CHECK_EQ(fake_reqs[RMP_OP_ATTACH], 1);
	CHECK_EQ(l->rkey, 0x6b01);
	CHECK_EQ(rmp_read(l, 0, dst, sizeof(dst)), 0);
	CHECK(!memcmp(dst, src, sizeof(dst)));
	fake_rkey = old_rkey;
	fake_client_free(c);
}

/*
 * Buffers with rails: rmp_buf_reg registers the bytes with every rail's
 * client that is up too (found there by rmpc_buf_lookup, so that rail
 * moves them zero copy), a rail that was down gets them when it comes
 * back, one whose connection was made anew registers them again, and
 * they go with the buffer or with the rail's client.
 */
static void test_rail_bufs(void)
{
	struct rmp_client *c = fake_client_new(), *r1 = fake_client_new(),
			  *r2 = fake_client_new();
	struct rmpc_rail_set set = { .n = 3 };
	static char mem[8192];
	struct rmp_buf *b = NULL;

	set.r[0].c = c;
	set.r[1].c = r1;
	set.r[2].c = r2;
	set.r[2].down = true;
	c->rails = &set;
	CHECK_EQ(rmp_buf_reg(c, mem, sizeof(mem), &b), 0);
	CHECK(b->rail[1] && !b->rail[2]);
	CHECK(rmpc_buf_lookup(r1, mem + 100, 4096) == b->rail[1]->mr);
	CHECK(b->rail[1]->mr->lkey != b->mr->lkey);
	CHECK(!rmpc_buf_lookup(r2, mem, 1));
	/* rail 2 comes back; rail 1's connection was made anew */
	rmpc_bufs_on_rail(c, r2, 2);
	CHECK(b->rail[2] && rmpc_buf_lookup(r2, mem, 8192));
	CHECK_EQ(fake_reconnect(r1), 0); /* deregisters r1's buffers */
	CHECK(!rmpc_buf_lookup(r1, mem, 1));
	rmpc_bufs_on_rail(c, r1, 1);
	CHECK(b->rail[1]->mr && rmpc_buf_lookup(r1, mem, 1) == b->rail[1]->mr);
	/* rail 2's client goes; then the buffer */
	rmpc_bufs_rail_drop(c, 2);
	CHECK(!b->rail[2] && LIST_EMPTY(&r2->bufs));
	rmp_buf_dereg(b);
	CHECK(LIST_EMPTY(&r1->bufs) && LIST_EMPTY(&c->bufs));
	c->rails = NULL;
	fake_client_free(r2);
	fake_client_free(r1);
	fake_client_free(c);
}

int main(void)
{
	test_sync_args();
	test_async_args();
	test_data();
	test_split();
	test_legs_share_client();
	test_completion_errors();
	test_async();
	test_async_qp_error();
	test_submit_fails();
	test_expiry();
	test_reconnect();
	test_revoked_reattach();
	test_rail_bufs();
	return check_done();
}
