/* SPDX-License-Identifier: MIT */
/*
 * lanes.h -- the lease nbdkit-rmpool-plugin serves, and the connections
 * it is served through (lanes.c).
 *
 * A librmpool client, and every lease handle made through it, belongs
 * to one thread at a time. nbdkit calls the plugin from many threads at
 * once (the parallel thread model), so the lease is opened on several
 * lanes: each its own connection (or cluster handle) and lease handle,
 * behind a mutex. A thread keeps the lane it first got; requests on
 * different lanes move at once, on different queue pairs. An
 * erasure-coded lease is written through lane 0 alone: one handle of a
 * process holds its writer claim. Lane 0 also renews the lease, from a
 * thread of its own, for as long as the plugin runs.
 */
#ifndef RMPNBD_LANES_H
#define RMPNBD_LANES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RMPNBD_LANES_MAX 16u

/* What to serve: an existing lease (token), or a new one (size) on a
 * server or placed on a cluster. */
struct rmpnbd_cfg {
	const char *token;       /* rmp://... or rmpc://...: an existing lease */
	const char *server;      /* HOST[:PORT] (or rails A1,A2:PORT) */
	const char *cluster;     /* etcd://...: a cluster */
	uint64_t size;           /* a new lease's bytes (0: token) */
	unsigned replicas, stripes, ec_k, ec_m; /* a new cluster lease */
	const char *spread;
	const char *tenant, *key_file;
	const char *token_file;  /* a new lease's token written here */
	unsigned lanes;          /* 1 .. RMPNBD_LANES_MAX */
	unsigned retry_s;        /* a request rides out a lost connection
				  * this long before it fails */
	bool keep;               /* a new lease not freed at the end */
};

/*
 * rmpnbd_open -- connect cfg->lanes lanes, lease or attach the lease on
 * lane 0 and attach it on the others, start the renewing thread. 0, or
 * a negative errno with why in err. rmpnbd_close -- stop renewing, free
 * a new lease (unless keep), close every lane.
 */
int rmpnbd_open(const struct rmpnbd_cfg *cfg, char *err, size_t cap);
void rmpnbd_close(void);

/* The open lease: its bytes, the block a write should not cut (an
 * erasure-coded lease's chunk, else 4 KiB). */
uint64_t rmpnbd_length(void);
uint32_t rmpnbd_block(void);

/*
 * rmpnbd_io -- count bytes at off read into buf (write false) or written
 * from it, on the calling thread's lane: 0, or a negative errno with
 * why in err. A call that failed for the connection's sake (a daemon
 * restarted, a link down: the library connects again) is made again,
 * backing off, for up to cfg->retry_s: a block device's request that
 * fails may cost a file system its mount. Once the lease is lost (it
 * expired, was freed or is gone from its server) every call fails with
 * -EIO and the reason it was lost: never zeros in place of the lease's
 * bytes.
 */
int rmpnbd_io(void *buf, uint32_t count, uint64_t off, bool write,
	      char *err, size_t cap);

/* rmpnbd_lost -- the lease was lost: true and why in why. */
bool rmpnbd_lost(char *why, size_t cap);

#endif /* RMPNBD_LANES_H */
