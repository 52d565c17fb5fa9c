/* SPDX-License-Identifier: MIT */
/*
 * fake_client.h -- a connected librmpool client on fake verbs, for the
 * unit tests of client/ (test_client_chan, test_client_lease,
 * test_client_io).
 *
 * The verbs the library calls on its hot paths are inline in verbs.h and
 * go through the context's ops: a fake context routes ibv_post_send,
 * ibv_post_recv, ibv_poll_cq and ibv_req_notify_cq here. The other
 * libibverbs and librdmacm calls of chan.c and buf.c are defined in
 * fake_client.c, which wins at link time. Behind them sits a fake NIC
 * that behaves as an RC queue pair does (in-order completions, an error
 * moves the QP to the error state and flushes what is outstanding, a
 * flushed or failed WR completes even when unsignaled) over a fake
 * remote memory, and a fake server that answers control requests.
 */
#ifndef RMP_FAKE_CLIENT_H
#define RMP_FAKE_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "proto.h"

struct rmp_client;
struct rmp_lease;

/* The remote memory the fake NIC reads and writes, and the one rkey it
 * accepts (others get a remote access error, as a revoked key would). */
#define FAKE_REMOTE_ADDR UINT64_C(0x7f0000000000)
#define FAKE_REMOTE_LEN (1u << 20)
extern uint8_t fake_remote[FAKE_REMOTE_LEN];
extern uint32_t fake_rkey;

/* Every send WR posted, in order (control SENDs included). */
struct fake_wr {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned send_flags;
	uint64_t remote_addr; /* rdma or atomic */
	uint32_t rkey;
	uint64_t compare_add, swap; /* atomics */
	uint64_t local;       /* first sge's address, 0 without one */
	uint32_t length;      /* first sge's length */
	uint32_t lkey;
	int num_sge;
	bool outstanding;     /* posted, not completed (fake_hold) */
	unsigned nic;         /* the fake NIC (queue pair) it went to */
	unsigned polls;       /* fake_polls when it was posted */
};
#define FAKE_WRS_MAX 4096
extern struct fake_wr fake_wrs[FAKE_WRS_MAX];
extern unsigned fake_nwrs;
/* fake_posts -- ibv_post_send calls so far (doorbells). */
extern unsigned fake_posts;
/* fake_data_wrs -- data WRs (not control SENDs) posted so far. */
unsigned fake_data_wrs(void);

/* NIC behaviour. fake_hold: data WRs stay outstanding until
 * fake_complete(). fake_fail_next: the next WR to leave the send queue
 * (data or control SEND) completes with this status instead
 * (IBV_WC_SUCCESS: none). fake_post_error: the
 * fake_post_fail_at-th WR (0-based) of the next posted chain is refused
 * with that errno, and the ones before it are posted. */
extern bool fake_hold;
/* fake_hold_nics -- as fake_hold, for the NICs of these bits only. */
extern uint32_t fake_hold_nics;
/* fake_on_poll -- called (when set) at each ibv_poll_cq, with the NIC
 * whose CQ is polled: a completion arriving late, during a wait. */
extern void (*fake_on_poll)(unsigned nic);
extern enum ibv_wc_status fake_fail_next;
extern int fake_post_error;
extern unsigned fake_post_fail_at;
extern unsigned fake_qp_errors; /* ibv_modify_qp to the error state */
extern unsigned fake_arms;      /* ibv_req_notify_cq */
extern unsigned fake_polls;     /* ibv_poll_cq */
/* fake_after_write -- called (when set) after each RDMA WRITE lands in
 * fake_remote: a test sees the remote memory at every step of a call,
 * as a process killed there would leave it. */
extern void (*fake_after_write)(void);
/* fake_before_read -- called (when set) before each RDMA READ is carried
 * out, with its offset in fake_remote and its length: another writer's
 * bytes landing between two READs of one chain. */
extern void (*fake_before_read)(uint64_t off, uint32_t len);

/* fake_complete -- WR i (index into fake_wrs) completes with status, and
 * every outstanding WR before it first, successfully (an RC send queue
 * completes in order). An error status flushes the outstanding rest. */
void fake_complete(unsigned i, enum ibv_wc_status status);
/* fake_push_wc -- put any completion into the CQ. */
void fake_push_wc(const struct ibv_wc *wc);
/* fake_cm_event -- an rdma_cm event arrives (the channel's fd wakes). */
void fake_cm_event(enum rdma_cm_event_type type);

/* The server: fake_serve(req, rep) fills rep's opcode-specific part and
 * status (and opcode, to answer with another) and returns true to reply
 * (the rest of the header done here), false to stay silent. NULL: never
 * replies. Each request is counted by opcode and the last one kept.
 * fake_reply puts a reply of its own (a late one) into the next posted
 * receive; fake_reply_trim bytes are cut off the end of every reply. */
extern bool (*fake_serve)(const struct rmp_msg *req, struct rmp_msg *rep);
extern unsigned fake_reqs[RMP_OP_MAX + 1], fake_nreqs;
extern struct rmp_msg fake_last_req;
void fake_reply(const struct rmp_msg *rep);
/* A server that grants what is asked (ALLOC, ATTACH, RENEW, FREE, STAT)
 * with fake_rkey over the fake remote memory; fake_refuse, when set,
 * is the status of every reply. */
bool fake_serve_grant(const struct rmp_msg *req, struct rmp_msg *rep);
extern int fake_refuse, fake_reply_trim;
extern uint64_t fake_ttl_ms; /* ttl of the grants */

/* The reconnect upcall the tests install (client.c's is not linked): it
 * counts its calls and makes the connection again (a new generation,
 * fresh queues, the fake NIC's state dropped) unless
 * fake_reconnect_err is set, which it then returns. */
extern int fake_reconnect_err;
extern unsigned fake_reconnects;
int fake_reconnect(struct rmp_client *c);

/* fake_client_new -- a client connected to the fake server: op timeout
 * 50 ms, no spinning, 16 KiB bounce buffer, 64 async ops, credits 8.
 * Resets the fake NICs and server.
 * fake_client_new_nic -- another such client, on fake NIC nic (1 ..
 * FAKE_NICS; fake_client_new's is NIC 0): a queue pair and CQ of its
 * own, as a cluster's members on other servers have (its WRs complete
 * in order among themselves only). The server, the remote memory and
 * its WR list fake_wrs are shared. */
#define FAKE_NICS 8u
struct rmp_client *fake_client_new(void);
struct rmp_client *fake_client_new_nic(unsigned nic);
/* fake_client_free -- free c with its lease handles and buffers. */
void fake_client_free(struct rmp_client *c);
/* fake_lease -- a lease handle on c's connection over fake remote bytes
 * [off, off+len) with access, as an ALLOC reply would make it. */
struct rmp_lease *fake_lease(struct rmp_client *c, uint64_t off,
			     uint64_t len, uint32_t access);

#endif /* RMP_FAKE_CLIENT_H */
