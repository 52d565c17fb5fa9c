/* SPDX-License-Identifier: MIT */
/* raw_attacks.c -- rmp-raw: attacks on keys, leases and the server. */

#include <endian.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "raw.h"

/* ---------------------------------------------------------------- oob */

int run_oob(const char *host, const char *port)
{
	struct raw r = { 0 };
	struct rmp_lease_desc d;
	int st, fail = 1;

	if (connect_ok(&r, "oob", host, port, 2 * LEASE_LEN))
		goto out;
	if (r.rep.keys_mode != RMP_KEYS_REGION)
		say("note: server uses lease_keys=%s; this check is meant "
		    "for region", keys_mode_str(r.rep.keys_mode));
	/* Ephemeral: the lease goes with this connection, whose QP the
	 * failing READ below breaks. */
	if (do_alloc(&r, LEASE_LEN, 60, RMP_LEASE_F_EPHEMERAL, &d))
		goto out;
	say("lease %#" PRIx64 ": addr %#" PRIx64 " rkey %#x length %" PRIu64,
	    d.id, d.addr, d.rkey, d.length);
	st = rdma_op(&r, IBV_WR_RDMA_READ, d.addr, d.rkey, d.length);
	if (st != IBV_WC_SUCCESS) {
		if (st >= 0)
			say("FAIL: READ of the whole lease: %s",
			    ibv_wc_status_str((enum ibv_wc_status)st));
		goto out;
	}
	say("ok: READ of the whole lease (%" PRIu64 " bytes)", d.length);
	st = rdma_op(&r, IBV_WR_RDMA_READ, d.addr + d.length, d.rkey, 1);
	if (st == IBV_WC_REM_ACCESS_ERR) {
		say("ok: READ of 1 byte at addr+length -> %s",
		    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		fail = 0;
	} else if (st == IBV_WC_SUCCESS) {
		say("FAIL: READ of 1 byte at addr+length succeeded: the "
		    "lease's rkey reaches past its end");
	} else if (st >= 0) {
		say("FAIL: READ of 1 byte at addr+length: %s, want %s",
		    ibv_wc_status_str((enum ibv_wc_status)st),
		    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	}
out:
	raw_close(&r);
	say("oob: %s", fail ? "FAIL" : "PASS");
	return fail;
}

/* -------------------------------------------------------------- steal */

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	       op == IBV_WR_ATOMIC_CMP_AND_SWP;
}

/*
 * steal_once -- on a connection of its own, one operation with a key
 * that was not granted to it. 0 if it completed with a remote access
 * error (with expect_success: if it succeeded).
 */
static int steal_once(const char *host, const char *port,
		      enum ibv_wr_opcode op, uint64_t addr, uint32_t rkey,
		      uint64_t len, bool expect_success)
{
	const char *name = op_name(op);
	uint64_t n = is_atomic(op) ? 8 : len;
	struct raw r = { 0 };
	uint64_t old;
	int st, fail = 1;

	if (connect_ok(&r, "steal", host, port, len))
		goto out;
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		memset(r.data, 0xee, len);
		/* fall through */
	case IBV_WR_RDMA_READ:
		st = rdma_op(&r, op, addr, rkey, len);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		st = atomic_op(&r, op, addr, rkey, 1, 0);
		break;
	default:
		st = atomic_op(&r, op, addr, rkey, 0, 0xeeeeeeeeeeeeeeeeull);
		break;
	}
	memcpy(&old, r.data, sizeof(old));
	if (expect_success) {
		if (st == IBV_WC_SUCCESS) {
			say("ok: %s of %" PRIu64 " bytes at %#" PRIx64 " with "
			    "key %#x from a connection of its own succeeded, "
			    "as expected (keys %s)", name, n, addr, rkey,
			    keys_mode_str(r.rep.keys_mode));
			if (op == IBV_WR_RDMA_READ)
				hexdump("bytes read", r.data, len);
			else if (is_atomic(op))
				say("%s: old value %#" PRIx64, name, old);
			fail = 0;
		} else {
			say("FAIL: %s with key %#x: %s, want success (the "
			    "negative control does not reach the lease)",
			    name, rkey, wc_str(st));
		}
		goto out;
	}
	if (st == IBV_WC_REM_ACCESS_ERR) {
		say("ok: %s of %" PRIu64 " bytes at %#" PRIx64 " with key %#x "
		    "from a connection of its own -> %s", name, n, addr, rkey,
		    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
		fail = 0;
	} else if (st == IBV_WC_SUCCESS) {
		say("FAIL: the key %#x was usable from a connection it was not "
		    "granted to (keys %s): %s of %" PRIu64 " bytes at %#"
		    PRIx64 " succeeded", rkey, keys_mode_str(r.rep.keys_mode),
		    name, n, addr);
		if (op == IBV_WR_RDMA_READ)
			hexdump("stolen bytes", r.data, len);
		else if (is_atomic(op))
			say("%s: old value %#" PRIx64, name, old);
	} else {
		say("FAIL: %s with key %#x: %s, want %s", name, rkey,
		    wc_str(st), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	}
out:
	raw_close(&r);
	return fail;
}

/* run_steal -- READ, WRITE, FAA, CAS, each on a fresh connection (a
 * failed operation breaks its QP). A WRITE or atomic that gets through
 * also shows up in the holder's pattern check. */
int run_steal(const char *host, const char *port, uint64_t addr,
	      uint32_t rkey, uint64_t len, bool expect_success)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE,
		IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP,
	};
	unsigned nops = sizeof(ops) / sizeof(ops[0]);
	int fails = 0;

	if (len < 8 || len > (64u << 20) || addr % 8) {
		say("bad length %" PRIu64 " or address %#" PRIx64 " (atomics "
		    "need 8 aligned bytes)", len, addr);
		return 2;
	}
	for (unsigned i = 0; i < nops; i++)
		fails += steal_once(host, port, ops[i], addr, rkey, len,
				    expect_success);
	say("steal: %u of %u operations %s: %s", nops - (unsigned)fails, nops,
	    expect_success ? "succeeded" : "refused",
	    fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

/* -------------------------------------------------------------- guess */

enum guess_outcome { G_ACCESS, G_REFUSED, G_SUCCESS, G_OTHER };

static const char *guess_str(enum guess_outcome o)
{
	static const char *const s[] = { "access error", "refused",
					 "SUCCEEDED", "other outcome" };

	return s[o];
}

static void guess_run_end(unsigned first, unsigned last,
			  enum guess_outcome o)
{
	if (first == last)
		say("try %u: %s", first, guess_str(o));
	else
		say("tries %u-%u: %s", first, last, guess_str(o));
}

/* run_guess -- N connections, each READ with a guessed rkey; prints a
 * summary; 0 unless a guess worked. */
int run_guess(const char *host, const char *port, uint64_t addr,
	      uint32_t rkey, unsigned n, uint64_t len)
{
	unsigned count[4] = { 0 }, run_start = 0;
	enum guess_outcome prev = G_OTHER;

	for (unsigned i = 0; i < n; i++) {
		uint32_t key = (rkey & ~0xffu) | (i & 0xffu);
		enum guess_outcome o = G_OTHER;
		struct raw r = { 0 };
		int reason = 0, ret, st;

		ret = connect_named(&r, "guess", host, port, len, &reason);
		if (ret == 1 && reason == RMP_REJ_COOLDOWN) {
			o = G_REFUSED;
		} else if (ret == 1) {
			say("try %u: rejected: %s", i, reason < 0 ?
			    "(undecodable reject data)" :
			    rmp_reject_reason_str((unsigned)reason));
		} else if (ret < 0) {
			say("try %u: could not connect", i);
		} else {
			st = rdma_op(&r, IBV_WR_RDMA_READ, addr, key, len);
			if (st == IBV_WC_REM_ACCESS_ERR) {
				o = G_ACCESS;
			} else if (st == IBV_WC_SUCCESS) {
				o = G_SUCCESS;
				say("FAIL: try %u: READ of %" PRIu64 " bytes "
				    "at %#" PRIx64 " with guessed rkey %#x "
				    "succeeded", i, len, addr, key);
				hexdump("bytes read", r.data, len);
			} else {
				say("try %u: READ with rkey %#x: %s", i, key,
				    wc_str(st));
			}
		}
		raw_close(&r);
		count[o]++;
		if (i > 0 && o != prev) {
			guess_run_end(run_start, i - 1, prev);
			run_start = i;
		}
		prev = o;
		if (o == G_REFUSED)
			usleep(20000);
	}
	if (n)
		guess_run_end(run_start, n - 1, prev);
	printf("guess: %u tries, %u access errors, %u refused, %u "
	       "succeeded\n", n, count[G_ACCESS], count[G_REFUSED],
	       count[G_SUCCESS]);
	if (count[G_OTHER])
		printf("guess: %u tries ended otherwise (see stderr)\n",
		       count[G_OTHER]);
	fflush(stdout);
	return count[G_SUCCESS] ? 1 : 0;
}

/* -------------------------------------------------------------- stall */

/*
 * run_stall -- a client that stops posting receives: every receive
 * buffer is used up by replies (the last one by the ALLOC), then a few
 * more requests go out whose replies meet RNR at this end. Exits 0
 * whatever the server does about it after that.
 */
int run_stall(const char *host, const char *port, uint32_t ttl_s)
{
	struct raw r = { 0 };
	struct rmp_lease_desc d;
	unsigned nstat, extra;
	int ret = 1;

	if (connect_ok(&r, "stall", host, port, LEASE_LEN))
		goto out;
	/* One receive buffer left: the ALLOC's reply. */
	if (use_up_recvs(&r, 1, &nstat) ||
	    do_alloc(&r, LEASE_LEN, ttl_s, 0, &d))
		goto out;
	print_lease(&d);
	send_unanswerable(&r, &extra);
	ret = 0;
	stalled(&r, nstat, extra);
out:
	raw_close(&r);
	return ret;
}

/* ------------------------------------------------------------ notsend */

/*
 * run_notsend -- see the header. Before the fix, a WRITE with immediate
 * made the server decode whatever the shared receive buffer held (another
 * connection's last request, replayed as this one's), and a SEND with
 * invalidate got its FREE handled after the NIC had invalidated the
 * window, and the server's LOCAL_INV of it crashed Soft-RoCE's kernel (on
 * a device that reports the failure: a key not proven dead, the extent
 * quarantined for good).
 */
int run_notsend(const char *host, const char *port, bool inv)
{
	struct raw v = { 0 }, r = { 0 };
	struct rmp_lease_desc dv, d;
	struct rmp_msg req = { 0 }, rep;
	struct ibv_sge sge = { 0 };
	struct ibv_send_wr wr = { 0 };
	uint64_t t0, end;
	bool transport;
	int st, len, fail = 1;

	if (connect_ok(&v, "notsend", host, port, LEASE_LEN) ||
	    do_alloc(&v, LEASE_LEN, HOLD_TTL_S, 0, &dv) ||
	    connect_ok(&r, "notsend", host, port, LEASE_LEN) ||
	    do_alloc(&r, LEASE_LEN, HOLD_TTL_S, 0, &d))
		goto out;
	/* The other connection's request lands in a shared receive buffer:
	 * the one a WRITE with immediate could make the server read. */
	st = do_simple(&v, RMP_OP_STAT, 0, &rep, &transport);
	if (st) {
		say("notsend: STAT before: %s", errname(st));
		goto out;
	}
	if (inv) {
		/* A FREE of its own lease that also invalidates its rkey. */
		req.hdr.opcode = RMP_OP_FREE;
		req.hdr.req_id = r.next_req_id++;
		req.u.free.id = d.id;
		req.u.free.secret = secret_of(&r, d.id);
		len = rmp_msg_encode(r.msg + (size_t)NRECV * RMP_MSG_MAX,
				     SEND_MAX, &req);
		if (len < 0)
			goto out;
		sge.addr = (uintptr_t)(r.msg + (size_t)NRECV * RMP_MSG_MAX);
		sge.length = (uint32_t)len;
		sge.lkey = r.msg_mr->lkey;
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.invalidate_rkey = d.rkey;
	} else {
		/* 48 bytes into its own lease: the size of an ATTACH. */
		memset(r.data, 0, 48);
		sge.addr = (uintptr_t)r.data;
		sge.length = 48;
		sge.lkey = r.data_mr->lkey;
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htobe32(1);
		wr.wr.rdma.remote_addr = d.addr;
		wr.wr.rdma.rkey = d.rkey;
	}
	wr.sg_list = &sge;
	wr.num_sge = 1;
	t0 = now_ms();
	st = post_wait(&r, &wr, TIMEOUT_MS);
	say("notsend: %s -> %s", inv ? "SEND with invalidate" :
	    "WRITE with immediate", wc_str(st));
	/* The server must answer nothing and drop the connection. */
	end = now_ms() + TIMEOUT_MS;
	while (!r.disconnected && !r.rx_count && now_ms() < end)
		pump(&r, (int)(end - now_ms()), -1);
	if (r.rx_count) {
		struct rmp_msg m;

		if (parse_reply(&r.rx[r.rx_head], &m) == 0)
			say("FAIL: the server answered it: %s status %s, %s",
			    rmp_opcode_name(m.hdr.opcode),
			    errname(m.hdr.status),
			    m.hdr.status ? "refused" :
			    "a request it never sent was served");
		else
			say("FAIL: the server answered it (undecodable)");
		goto out;
	}
	if (!r.disconnected) {
		say("FAIL: the connection stayed up for %d ms", TIMEOUT_MS);
		goto out;
	}
	say("ok: no answer, disconnected after %" PRIu64 " ms",
	    now_ms() - t0);
	/* The other connection is served as before, its lease intact. */
	st = do_simple(&v, RMP_OP_STAT, 0, &rep, &transport);
	if (st) {
		say("FAIL: STAT on the other connection after it: %s",
		    errname(st));
		goto out;
	}
	st = do_simple(&v, RMP_OP_FREE, dv.id, &rep, &transport);
	if (st) {
		say("FAIL: FREE on the other connection after it: %s",
		    errname(st));
		goto out;
	}
	say("ok: the other connection is still served");
	fail = 0;
out:
	raw_close(&r);
	raw_close(&v);
	say("notsend: %s", fail ? "FAIL" : "PASS");
	return fail;
}

/* ----------------------------------------------------------- freerace */

#define FREERACE_LATE_MS 5000 /* old key still working after the reply */
#define FREERACE_READ_MS 1000 /* a READ not answered by then: cut off */

struct freerace_tally {
	uint64_t reads, late;   /* READs that succeeded; after the reply */
	uint64_t refused;       /* rounds ended by a remote access error */
	uint64_t cut;           /* ... by a READ cut off (never answered) */
};

/* freerace_content -- what the lease holds: its id in the first 8 bytes
 * (ids are never reused, so a zeroed or another lease's extent cannot
 * pass), pattern(id) after them. */
static void freerace_content(uint8_t *p, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern(i, id);
	memcpy(p, &id, sizeof(id));
}

/* freerace_check -- data[0..n) is own[0..n), the lease's content
 * (complete: a READ that succeeded) or, for a READ that failed, holds no
 * byte but its own and the zeroes the buffer was cleared to. 0, or 1
 * (printed). */
static int freerace_check(const struct raw *r, const uint8_t *own, size_t n,
			  bool complete)
{
	for (size_t i = 0; i < n; i++) {
		if (r->data[i] == own[i] || (!complete && !r->data[i]))
			continue;
		say("FAIL: a READ with the freed lease's rkey (%s) put byte "
		    "%zu = %#x, the lease's own is %#x: %s", complete ?
		    "completed" : "failed", i, r->data[i], own[i],
		    i < sizeof(uint64_t) ?
			    "another lease's or a zeroed extent" :
			    "not this lease's content");
		hexdump("bytes read", r->data, n < 64 ? n : 64);
		return 1;
	}
	return 0;
}

/* freerace_round -- one lease on a connection of its own: ALLOC, WRITE
 * its content, send FREE and, without waiting for the reply, READ with
 * the lease's rkey back to back until a READ fails. Every READ that
 * succeeds must see the lease's own bytes; the failing one must have
 * delivered nothing else. It fails by a remote access error, or, when
 * the invalidation cut a READ's response short, it is never answered
 * (Soft-RoCE stops sending the response and drops the retries), or its
 * retries run out. 0, or 1 (printed). */
static int freerace_round(const char *host, const char *port,
			  struct freerace_tally *t)
{
	struct raw r = { .retry_count = 6 }; /* as librmpool */
	struct rmp_msg req = { 0 };
	struct rmp_lease_desc d;
	uint64_t replied_at = 0;
	uint8_t own[LEASE_LEN];
	size_t n = LEASE_LEN;
	int st, fail = 1;

	if (connect_ok(&r, "freerace", host, port, n) ||
	    do_alloc(&r, n, 60, 0, &d))
		goto out;
	freerace_content(own, n, d.id);
	memcpy(r.data, own, n);
	st = rdma_op(&r, IBV_WR_RDMA_WRITE, d.addr, d.rkey, n);
	if (st != IBV_WC_SUCCESS) {
		say("FAIL: RDMA WRITE to the lease: %s", wc_str(st));
		goto out;
	}
	req.hdr.opcode = RMP_OP_FREE;
	req.u.free.id = d.id;
	req.u.free.secret = d.secret;
	if (post_request(&r, &req))
		goto out;
	for (;;) {
		bool replied = r.rx_count > 0;

		if (replied && !replied_at)
			replied_at = now_ms();
		memset(r.data, 0, n);
		st = rdma_op_within(&r, IBV_WR_RDMA_READ, d.addr, d.rkey, n,
				    FREERACE_READ_MS);
		if (freerace_check(&r, own, n, st == IBV_WC_SUCCESS))
			goto out;
		if (st == IBV_WC_REM_ACCESS_ERR || st == IBV_WC_RETRY_EXC_ERR ||
		    st < 0)
			break;
		if (st != IBV_WC_SUCCESS) {
			say("FAIL: READ after the FREE (rkey %#x, FREE reply "
			    "%s): %s, want success, %s or %s", d.rkey,
			    replied ? "in" : "not in yet", wc_str(st),
			    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR),
			    ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
			goto out;
		}
		t->reads++;
		t->late += replied;
		if (replied_at && now_ms() - replied_at > FREERACE_LATE_MS) {
			say("FAIL: the rkey still worked %d ms after the FREE "
			    "was answered", FREERACE_LATE_MS);
			goto out;
		}
	}
	if (st == IBV_WC_REM_ACCESS_ERR)
		t->refused++;
	else
		t->cut++;
	fail = 0;
out:
	raw_close(&r);
	return fail;
}

/* run_freerace -- `rounds` freerace rounds. Two of these at once reuse
 * each other's extents, so a key that outlived its FREE would show the
 * other's bytes, or the zeroes the extent gets before reuse. */
int run_freerace(const char *host, const char *port, uint64_t rounds)
{
	struct freerace_tally t = { 0 };

	for (uint64_t i = 0; i < rounds; i++)
		if (freerace_round(host, port, &t)) {
			say("freerace: FAIL in round %" PRIu64, i + 1);
			return 1;
		}
	say("ok: %" PRIu64 " rounds; %" PRIu64 " READs with a freed lease's "
	    "rkey saw only its own bytes (%" PRIu64 " of them after the FREE "
	    "reply); then %" PRIu64 " got %s and %" PRIu64 " were cut off "
	    "(no answer within %d ms, or %s) with no foreign byte delivered",
	    rounds, t.reads, t.late, t.refused,
	    ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), t.cut, FREERACE_READ_MS,
	    ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
	say("freerace: PASS");
	return 0;
}
