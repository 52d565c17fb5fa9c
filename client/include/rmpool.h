/* SPDX-License-Identifier: MIT */
/* rmpool.h -- librmpool: lease remote memory and access it with one-sided RDMA. */
#ifndef RMPOOL_H
#define RMPOOL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Overview
 *
 * An rmp_client is one RC connection to an rmpoold server. Through it an
 * application allocates leases (extents of the server's pinned memory),
 * then reads, writes, compares-and-swaps and fetches-and-adds inside them
 * with one-sided RDMA: the server's CPU does not take part.
 *
 * Threads: an rmp_client, and every lease and buffer made through it,
 * belongs to one thread at a time, like a queue pair. Nothing on the data
 * path takes a lock. For parallelism open one client per thread; each
 * can attach the same lease (rmp_lease_attach_with) and work on it at
 * once: every connection gets its own key to the same bytes.
 *
 * Tenants: the server knows who may lease how much by tenant. A client
 * names its tenant and that tenant's key in rmp_client_opts and proves
 * the key at connect time (the key itself never travels). Leases belong
 * to the tenant: only its clients can renew, free or attach them, and
 * only with the lease's secret (in its token) too. A client naming no
 * tenant is anonymous, which servers refuse unless configured.
 *
 * Errors: every function that can fail returns 0 (or a count) on success
 * and a negative errno on failure; rmp_strerror() gives the text. Outputs
 * are written only on success unless said otherwise. Each function's
 * comment names the codes it can give; all of them:
 *   -EINVAL       an argument the call does not take (a NULL pointer, an
 *                 option out of range, a malformed token), or a ttl outside
 *                 the server's bounds
 *   -ENOMEM       out of memory, here or (for a request) at the server
 *   -ERANGE       offset/length outside the lease (nothing was posted)
 *   -EKEYEXPIRED  the lease expired or was revoked by the server (as a
 *                 control call or the library's own clock tells)
 *   -EDQUOT       a limit of the tenant (bytes, leases) or the keys-per-lease
 *                 limit is reached (last error says which; bytes freed in the
 *                 last tens of ms still count, up to the byte limit once more)
 *   -ENOSPC       the pool has no free extent large enough, or the server
 *                 holds as many leases as it may (max_leases); while the
 *                 bytes of leases freed a moment ago (being revoked and
 *                 zeroed) would make the room, rmp_lease_alloc asks
 *                 again, for up to the op timeout, before it fails
 *   -EFBIG        a lease longer than the server grants (max_lease)
 *   -ESHUTDOWN    the server is draining and takes no new leases
 *   -EAGAIN       too many asynchronous operations queued or in flight
 *                 (rmp_post_*); from the server: too many key operations of
 *                 this connection in flight (alloc, attach): try again
 *   -ENOENT       no such lease (or a wrong secret); or no key file
 *   -EPERM        the lease belongs to another tenant
 *   -EKEYREJECTED authentication failed: wrong tenant key, or a tenant the
 *                 server does not have (told apart in its log only), or a
 *                 proof replayed from another connection, or relayed from a
 *                 server other than the one that checks it
 *   -EBADE        the server did not prove that it holds the tenant's key
 *                 (not a server of this tenant: nothing about a lease was
 *                 sent to it)
 *   -ESTALE       a member of a cluster lease: the record it was attached by
 *                 is older than the one its group was attached by since (a
 *                 repair moved on, or an old record was put back in etcd)
 *   -EKEYREVOKED  a key of this connection was revoked: from a data call,
 *                 the server refused its key to the lease (a remote access
 *                 error: another connection attached the lease exclusively,
 *                 a repair fenced it, an operator revoked it, or it ended
 *                 before the library's clock said so); the connection is
 *                 failed (RDMA does that), and with reconnect_max_ms the
 *                 next call connects again and attaches the handle again
 *                 (which says whether the lease lives on). From a control
 *                 call, a reload voided this connection's proof (removed
 *                 its tenant, changed its key, or no longer admits its
 *                 address): every request is refused, and the server
 *                 closes the connection (its keys with it) once the
 *                 tenant's rotate_grace is over; connect again with the
 *                 current key (reconnect_max_ms does it)
 *   -EPROTONOSUPPORT no common protocol version with the server
 *   -ECONNREFUSED the server rejected the connection or nobody listens
 *                 (anonymous access disabled, a connection limit, a cool-down;
 *                 once the key is proven: the tenant's connections or
 *                 networks: see rmp_client_last_error())
 *   -ETIMEDOUT    no answer in time (connect, control reply, completion; or
 *                 the transport's retries ran out, about 0.5 s: the server's
 *                 host is down or cannot be reached)
 *   -ENOTCONN     the connection is gone; close and reconnect
 *   -EIO          an RDMA operation completed with an error, or one could not
 *                 be posted (the connection failed)
 *   -EACCES       the lease does not grant this kind of access; or the key
 *                 file cannot be used
 *   -EHOSTUNREACH the server's address does not resolve or answer
 *   -EHOSTDOWN    every member of a stripe of a cluster lease is on a node
 *                 gone from the membership (rmp_cluster_attach)
 *   -ENETUNREACH  no route, or no RDMA device on the way to the server, or
 *                 its port is down
 *   -EAFNOSUPPORT a tenant's proof needs an IPv4 or IPv6 server address
 *   -EISCONN      rmp_client_connect on a client not closed yet
 *   -EPROTO       the server sent something the protocol does not allow
 *   -EOPNOTSUPP   an atomic on a device without atomics
 *   -EMSGSIZE     an asynchronous operation above the device's message size
 *   -EBADMSG      a row of an erasure-coded lease that no single write
 *                 left whole, needed to decode a member that is away
 *   -EBUSY        a write of an erasure-coded lease another handle writes
 * rmp_client_connect and rmp_buf_reg may also pass on the errno of a
 * system or device call that failed (rmp_client_last_error() names it).
 *
 * Control calls: rmp_lease_alloc, rmp_lease_attach*, rmp_lease_renew*,
 * rmp_lease_free* and rmp_stat send a request to the server and wait
 * for its reply. Besides their own errors each can give -ENOTCONN,
 * -ETIMEDOUT (no reply within op_timeout_ms; the request may still have
 * been carried out), -EIO (the request could not be posted), -EPROTO (a
 * malformed reply), -EKEYREVOKED (a reload voided this connection's
 * proof) and -ESTALE (an ATTACH, also one made again after a reconnect,
 * of a cluster lease's member whose group has a newer record).
 *
 * After a failed call, rmp_client_last_error() often says more (which
 * step failed, what the server or the NIC answered).
 *
 * Connection failure: a data operation that completes with an error (a
 * revoked key, a lost peer), a timed-out data operation, or a disconnect by
 * the server moves the queue pair to the error state. That call returns its
 * own error (e.g. -EKEYREVOKED); every later call on the client returns
 * -ENOTCONN until rmp_client_close() and a new rmp_client_connect().
 */

struct rmp_client;
struct rmp_lease;
struct rmp_buf;

/* Lease access rights (rmp_alloc_opts.access). */
#define RMP_ACCESS_READ 0x1u
#define RMP_ACCESS_WRITE 0x2u
#define RMP_ACCESS_ATOMIC 0x4u
#define RMP_ACCESS_ALL 0x7u

/* Lease flags (rmp_alloc_opts.flags). */
#define RMP_LEASE_EPHEMERAL 0x1u /* freed when this connection goes */
/*
 * Renewed automatically, in the background: the server keeps the lease
 * alive while this connection lives, at no cost to the application (no
 * thread, no lock, no message). When the connection is lost the lease
 * lives one more ttl from that moment, time for a restarted client to
 * attach it again (attaching keeps the flag).
 */
#define RMP_LEASE_AUTO_RENEW 0x2u
/*
 * Since 0.6. A server with several RDMA devices keeps a pool per device,
 * on that device's NUMA node, and places a lease in the pool of the
 * device this connection came in on. With RMP_LEASE_SPILL, when that pool
 * has no room the lease may go to another device's pool of the same
 * server (its memory is then on another NUMA node): it then carries
 * RMP_LEASE_SPILLED in rmp_lease_info().flags. Without it, -ENOSPC.
 */
#define RMP_LEASE_SPILL 0x4u
#define RMP_LEASE_SPILLED 0x8u

#define RMP_DEFAULT_PORT 7471
#define RMP_TOKEN_MAXLEN 320 /* buffer size that fits any lease token */

/*
 * Options for rmp_client_new(). Initialise with rmp_client_opts_init() so
 * that fields added in later versions get their defaults; `size` tells the
 * library which fields this caller knows.
 */
struct rmp_client_opts {
	size_t size;            /* sizeof(struct rmp_client_opts) */
	const char *name;       /* client name shown to operators; default
				 * "<hostname>:<pid>"; at most 24 bytes of
				 * printable ASCII */
	/* Ignored since 0.3 (tenant and key prove who connects). Kept so
	 * that the layout of this struct, and programs written for 0.2,
	 * stay as they were; still checked: at most 16 bytes, or NULL. */
	const void *credential;
	size_t credential_len;
	int connect_timeout_ms; /* default 5000; bounds the network steps of
				 * rmp_client_connect (address and route
				 * resolution, the server's answer) */
	int op_timeout_ms;      /* control replies and each wait of a sync
				 * call; default 10000 */
	size_t bounce_bytes;    /* internal registered copy buffer; 4 MiB;
				 * 4 KiB .. 1 GiB */
	unsigned max_inflight;  /* async operations queued or outstanding;
				 * default 128; 1 .. 65536, lowered at
				 * connect if the device's queues are
				 * smaller */
	/* Since 0.3: */
	const char *tenant;     /* tenant name, 1..24 of [A-Za-z0-9_.-];
				 * NULL or "" = anonymous */
	const void *key;        /* the tenant's key, key_len 16..64 bytes */
	size_t key_len;
	const char *key_file;   /* or: a file with the key as hex, this
				 * user's with mode 600 (or root's with
				 * this user's group, mode 640); read at
				 * each connect. Exactly one of key
				 * and key_file with a tenant, neither
				 * without. The library keeps a copy of key
				 * (wiped at rmp_client_free). */
	/* Since 0.4: */
	unsigned spin_max_us;   /* how long a waiting call may poll the
				 * completion queue before it sleeps;
				 * default 1000, at most 1000000. The spin
				 * adapts: about twice the recent time such
				 * a wait took (a single wait counted as at
				 * most this), at least 20 us, and none
				 * beyond this when waits take longer.
				 * 0 = sleep at once (no CPU spent waiting,
				 * a wake-up added to every call). */
	/* Since 0.5: */
	unsigned reconnect_max_ms; /* 0 (default): a lost connection stays
				 * lost until rmp_client_close() and a new
				 * connect. Else the library reconnects by
				 * itself (see "Reconnecting" below), one
				 * try per backoff step of 100 ms doubling up
				 * to this; at most 60000. */
	/* Since 0.6: */
	size_t rail_stripe;     /* with several rails (see Rails below), a
				 * READ or WRITE of at least twice this is
				 * cut in pieces of this size, spread over
				 * the rails; a power of two, 4 KiB .. 1 GiB;
				 * default 256 KiB */
};

/*
 * Rails (since 0.6; librmpool(3) RAILS). rmp_client_connect with host
 * "A1,A2" (at most RMP_RAILS_MAX addresses of ONE node, e.g. one per
 * NIC) opens a connection on each: the node's rails, used together.
 * Rail 0 (the first address) carries the control requests (ALLOC, RENEW,
 * FREE, STAT) and names the server in tokens. A lease gets a key on
 * another rail (an ATTACH over it) the first time that rail carries a
 * piece of it; registered buffers are registered on every rail. A READ
 * or WRITE of at least 2 x rail_stripe is cut in rail_stripe pieces
 * posted on every live rail at once; smaller calls and atomics take the
 * rail on the NUMA node of the caller's buffer when the rails' devices
 * are on different nodes, else the next rail in turn. A rail whose
 * connection fails, or whose port reports an error, is down: the pieces
 * it had are done again on the others and the call succeeds; it is
 * connected again (after a backoff of 100 ms doubling to 5 s, once its
 * port is ACTIVE) by a later call. A call fails only when every rail is
 * down. An atomic that failed after it was posted is not repeated.
 */
#define RMP_RAILS_MAX 4

/*
 * Reconnecting (rmp_client_opts.reconnect_max_ms > 0). When the connection
 * is lost (the server's host, the network or the daemon went away, or the
 * daemon restarted), the operations in flight fail (-ETIMEDOUT, -ENOTCONN,
 * -EIO). The next synchronous call, ALLOC, ATTACH or stat then connects to
 * the same server again; if that fails it returns -ENOTCONN at once and
 * later calls try again after the backoff. A lease handle used after a
 * reconnect is first attached again, by its id and secret, with the access
 * it had: so the application sees at most one error per lease for the
 * loss (the operation in flight), unless the lease itself is gone
 * meanwhile (-ENOENT or -EKEYEXPIRED: an ephemeral lease, a deadline that
 * passed). Not carried over: registered buffers (register them again;
 * rmp_post_* give -ENOTCONN for old ones) and asynchronous operations not
 * reaped before the reconnect (dropped without completions, as by
 * rmp_client_close). The fd of rmp_client_fd() changes: ask again.
 * rmp_client_close() stops reconnecting until the next rmp_client_connect().
 */

/* rmp_client_opts_init -- fill opts with the defaults (sets size). */
void rmp_client_opts_init(struct rmp_client_opts *opts);

/*
 * rmp_client_new -- create an unconnected client. opts may be NULL for
 * the defaults. Returns 0 and *out, -EINVAL (bad options: a size too small
 * or with unknown non-zero fields, a timeout <= 0, a value out of the
 * ranges above, a bad name, credential_len > 16 or without credential,
 * a bad tenant name, a tenant without exactly one of key and key_file,
 * a key without a tenant, a key_len out of range), -ENOMEM.
 */
int rmp_client_new(struct rmp_client **out,
		   const struct rmp_client_opts *opts);

/*
 * rmp_client_connect -- connect to the server at host (name or address;
 * since 0.6 also "A1,A2", one node's rails, see above) and port (0 =
 * RMP_DEFAULT_PORT): resolve, create the queue pair, send the connect
 * request with protocol version, name and tenant, wait for the accept, and
 * prove the tenant's key (for this server's address and port as we reached
 * them), then check the server's proof of the same key (a server that cannot
 * give it is sent nothing more). Errors: -EKEYREJECTED (wrong key or unknown
 * tenant), -EBADE (the server did not prove that it holds the tenant's key:
 * not a server of this tenant), -EACCES / -ENOENT (the key file cannot be
 * used), -EHOSTUNREACH (the name does not resolve, or nobody answers address
 * resolution at that address), -ENETUNREACH (no route, or no RDMA device on
 * the way to the address or its port is down, or none on this host),
 * -ECONNREFUSED (nobody listens, or the server rejected us: see
 * rmp_client_last_error()), -EPROTONOSUPPORT, -EPROTO (the peer accepted
 * without valid rmpool accept data), -ETIMEDOUT, -EISCONN (connected, or
 * failed and not closed yet), -EINVAL, -ENOMEM, -EAFNOSUPPORT (a tenant's
 * proof needs an IPv4 or IPv6 server address), -ENOTCONN or -EIO (the
 * connection failed while the key was being proven), or the errno of a
 * device call that failed (rmp_client_last_error() names it). A client can
 * connect again after rmp_client_close().
 */
int rmp_client_connect(struct rmp_client *c, const char *host,
		       uint16_t port);

/* One rail, as rmp_client_rails tells it (since 0.6). */
struct rmp_rail_info {
	size_t size;           /* sizeof(struct rmp_rail_info), by caller */
	char address[64], device[64]; /* as given; RDMA device or "" */
	int numa_node, up;     /* the device's node (-1 unknown); 1 up */
	uint64_t bytes_read, bytes_written, ops, failovers; /* times down */
	char why[160];         /* down: why, naming the local device its
				* route took (or that no local RDMA device
				* reaches the address) and the address;
				* "" while up. Filled when size has room. */
};
/*
 * rmp_client_rails -- the first max rails of c into out (each out[i].size
 * set by the caller to sizeof(struct rmp_rail_info) as it knows it: a
 * program built before why was added gets the rest); returns how many rails
 * c has (1 for a client of one address, whose counters stay 0), or -EINVAL
 * (c or out NULL, a size too small) or -ENOTCONN. The counters are since the
 * connect: bytes and operations each rail carried, times it went down.
 */
int rmp_client_rails(struct rmp_client *c, struct rmp_rail_info *out,
		     unsigned max);

/*
 * rmp_client_last_error -- a human-readable detail for the last failed
 * call on c (e.g. "server rejected connection: server full"), or "" (also
 * for c NULL). Valid until the next call on c.
 */
const char *rmp_client_last_error(const struct rmp_client *c);

/*
 * rmp_client_close -- disconnect. Lease handles of this client become
 * unusable (-ENOTCONN) but the leases stay on the server until their
 * deadline (except ephemeral ones); they can be attached again from a new
 * connection. Registered buffers are deregistered: their handles stay valid
 * for rmp_buf_dereg() but give -ENOTCONN when used; register them again
 * after a new connect. Queued and in-flight asynchronous operations are
 * dropped without completions. Accepts a client that is not connected.
 */
void rmp_client_close(struct rmp_client *c);

/*
 * rmp_client_free -- close if needed and free c, its registered buffers
 * and every lease handle made through it. Accepts NULL.
 */
void rmp_client_free(struct rmp_client *c);

/* Options for rmp_lease_alloc(); rmp_alloc_opts_init() fills defaults. */
struct rmp_alloc_opts {
	size_t size;        /* sizeof(struct rmp_alloc_opts) */
	uint64_t alignment; /* power of two; 0 = server default (64) */
	uint32_t ttl_s;     /* 0 = server default */
	uint32_t access;    /* RMP_ACCESS_*; default RMP_ACCESS_ALL */
	uint32_t flags;     /* RMP_LEASE_* */
};

void rmp_alloc_opts_init(struct rmp_alloc_opts *opts);

/*
 * rmp_lease_alloc -- lease length bytes of the server's pool. opts may be
 * NULL for the defaults. The length granted may be rounded up
 * (rmp_lease_info). Errors: -EINVAL (c or out NULL, length 0, bad
 * alignment/access/flags, ttl out of the server's bounds), -EFBIG
 * (longer than the server's max_lease), -EDQUOT, -ENOSPC, -ESHUTDOWN,
 * -EAGAIN (the server has too many key operations of this connection in
 * flight: try again), -ENOMEM (here or at the server), and those of a
 * control call (-EKEYREVOKED among them). After -ETIMEDOUT the server may
 * still have granted the lease; it then ends at its deadline (or with
 * the connection, if ephemeral).
 */
int rmp_lease_alloc(struct rmp_client *c, uint64_t length,
		    const struct rmp_alloc_opts *opts, struct rmp_lease **out);

/*
 * rmp_lease_attach -- reach an existing lease of this client's tenant
 * from this connection, e.g. after a restart or from another thread or
 * process: the server grants this connection its own rkey for the same
 * bytes, with the lease's access, beside the keys other connections
 * hold (the same as rmp_lease_attach_with and default options). Errors:
 * -ENOENT (no such lease or wrong secret), -EKEYEXPIRED, -EPERM
 * (another tenant's lease), -EDQUOT (the keys-per-lease limit), -EAGAIN
 * (as for rmp_lease_alloc), -EINVAL (c or out NULL), -ENOMEM, and those
 * of a control call (-EKEYREVOKED among them).
 */
int rmp_lease_attach(struct rmp_client *c, uint64_t id, uint64_t secret,
		     struct rmp_lease **out);

/*
 * rmp_lease_attach_token -- as rmp_lease_attach, with a token from
 * rmp_lease_token(). The token's host and port are not checked against
 * this connection. -EINVAL for a malformed token.
 */
int rmp_lease_attach_token(struct rmp_client *c, const char *token,
			   struct rmp_lease **out);

/* Options for rmp_lease_attach_with(); rmp_attach_opts_init() fills
 * the defaults. */
#define RMP_ATTACH_EXCLUSIVE 0x1u /* revoke every other connection's key
				   * first: a restarted owner's takeover */
struct rmp_attach_opts {
	size_t size;     /* sizeof(struct rmp_attach_opts) */
	uint32_t access; /* RMP_ACCESS_*, at most the lease's; 0 (default) =
			  * the lease's. E.g. RMP_ACCESS_READ for a
			  * consumer: its writes fail at the NIC. */
	uint32_t flags;  /* RMP_ATTACH_* */
};

void rmp_attach_opts_init(struct rmp_attach_opts *opts);

/*
 * rmp_lease_attach_with -- rmp_lease_attach_token with options (opts NULL
 * = defaults). With RMP_ATTACH_EXCLUSIVE every other connection's key to
 * the lease is revoked before this one is granted: their next access
 * fails. The call returns only once the server has proven those keys
 * dead (at most the server's revoke_timeout, when a holder does not let
 * its key be invalidated), so no write through them lands after it.
 * Errors as rmp_lease_attach, plus -EACCES (more access than the lease
 * grants), -EINVAL (malformed token or options) and, with
 * RMP_ATTACH_EXCLUSIVE, -EIO when the server could not prove another key
 * dead (nothing is promised; the lease's extent is quarantined when it
 * ends) and -EKEYEXPIRED or -ENOENT when the lease ended meanwhile.
 */
int rmp_lease_attach_with(struct rmp_client *c, const char *token,
			  const struct rmp_attach_opts *opts,
			  struct rmp_lease **out);

/*
 * rmp_lease_renew -- extend the lease to ttl_s seconds from now (0 = the
 * server default). Errors: -EKEYEXPIRED when it already expired, -ENOENT
 * when it is gone (freed by token, or expired long ago), -EINVAL (l NULL,
 * ttl_s out of the server's bounds), those of a control call (-EKEYREVOKED
 * when a reload voided this connection's proof), and, when a lost connection
 * was made again (reconnect_max_ms), those of rmp_lease_attach: the handle
 * is attached again first. A cluster lease whose stripe has only suspect
 * replicas waits for one as rmp_write does, then fails with the first error,
 * -EHOSTUNREACH when none could be tried.
 */
int rmp_lease_renew(struct rmp_lease *l, uint32_t ttl_s);

/*
 * rmp_lease_renew_token / rmp_lease_free_token -- renew or free the lease
 * of a token without attaching it: nobody's key changes on a renew (an
 * application using the lease goes on undisturbed), and a free revokes
 * every key. *ttl_ms (may be NULL) receives the new lifetime. Errors:
 * -EINVAL (c or token NULL, a malformed token, a ttl_s out of the
 * server's bounds), -ENOENT, -EKEYEXPIRED, -EPERM (another tenant's
 * lease), and those of a control call (-EKEYREVOKED among them).
 */
int rmp_lease_renew_token(struct rmp_client *c, const char *token,
			  uint32_t ttl_s, uint64_t *ttl_ms);
int rmp_lease_free_token(struct rmp_client *c, const char *token);

/*
 * rmp_lease_free -- give the lease back to the server (its memory is zeroed
 * before reuse) and free the handle. The handle is freed even when the
 * server could not be told (the error is returned, e.g. -EKEYREVOKED or
 * -ENOTCONN; the lease then ends at its deadline). Accepts NULL (returns 0).
 * Errors: -ENOENT (gone already), -EKEYEXPIRED, those of a control call,
 * and, when a lost connection was made again (reconnect_max_ms), those of
 * rmp_lease_attach: the handle is attached again first.
 */
int rmp_lease_free(struct rmp_lease *l);

/*
 * rmp_lease_close -- free the handle only: the lease stays on the server
 * until its deadline and can be attached again. Accepts NULL.
 */
void rmp_lease_close(struct rmp_lease *l);

struct rmp_lease_info {
	size_t size;          /* sizeof(struct rmp_lease_info), set by caller */
	uint64_t id;
	uint64_t length;      /* bytes usable: offsets 0 .. length-1 */
	uint64_t remote_addr; /* server virtual address of byte 0 */
	uint32_t rkey;
	uint32_t access;
	uint32_t flags;
	uint64_t ttl_ms;      /* time left as last reported by the server,
			       * minus the time since */
	/* Since 0.3: */
	uint32_t holders;     /* connections with a key to the lease, as
			       * last reported (this one included); of a
			       * mirrored lease: the fewest of a replica */
	/* Since 0.6: */
	unsigned replicas;    /* 1, or a mirrored lease's replicas (of
			       * each stripe) ... */
	unsigned replicas_live; /* ... and how many are not lost (of a
			       * striped lease: the fewest of a stripe) */
	unsigned stripes;     /* 1, or a striped lease's stripes */
	/* Since 0.8, of an erasure-coded lease (else 0): k, m, the chunk, its
	 * members live (stripes of one replica; replicas_live 1 while k are
	 * live), chunks this handle's reads decoded (member away or late) */
	unsigned ec_data, ec_parity, ec_live;
	uint64_t ec_chunk, ec_decoded;
};

/*
 * rmp_lease_info -- describe l (no server round trip). -EINVAL when
 * info->size is smaller than this version's struct.
 */
int rmp_lease_info(const struct rmp_lease *l, struct rmp_lease_info *info);

/*
 * rmp_lease_token -- the printable token (server address, id, secret) of
 * l, NUL terminated, into buf. Returns its length, -ENOSPC (buf too
 * small), -EINVAL (l or buf NULL, or a server host name a token cannot
 * carry), or -EOPNOTSUPP (a mirrored lease made without a record). A
 * mirrored lease's is a cluster token, rmpc://ID-SECRET (see "Mirrored
 * leases"), which rmp_cluster_attach takes.
 */
int rmp_lease_token(const struct rmp_lease *l, char *buf, size_t len);

/*
 * rmp_lease_replica_token -- the token of member i of a mirrored or
 * striped lease (of l itself for i 0 of a lease of one server): it names
 * that member's server. Members are in stripe order, the replicas of a
 * stripe together: i = stripe * replicas + replica. Returns its length,
 * -ENOSPC (buf too small), -EINVAL (l or buf NULL, a host a token cannot
 * carry) or -ENOENT (no replica i).
 */
int rmp_lease_replica_token(const struct rmp_lease *l, unsigned i, char *buf,
			    size_t len);

/* Since 0.7: what this handle knows of a member of a mirrored or striped
 * lease (rmp_lease_member_info). */
enum rmp_member_state {
	RMP_MEMBER_LIVE = 0,    /* read and written */
	RMP_MEMBER_SUSPECT = 1, /* out of reach for now: tried again after a
				 * wait, live when its server still holds
				 * the lease (a flap, a daemon restarted
				 * from its state_dir) */
	RMP_MEMBER_STALE = 2,   /* lacks a write (its record says so):
				 * caught up where it is once its server
				 * answers with the lease (64 MiB at most,
				 * by the holder's next call), else a
				 * repair replaces it */
	RMP_MEMBER_LOST = 3,    /* gone (its lease ended there, its node
				 * left, 30 s out of reach): a repair
				 * replaces it */
	RMP_MEMBER_MISSED = 4,  /* lacks a write its record could not be told
				 * of yet (etcd out of reach): the next
				 * write marks it stale */
};

struct rmp_member_info {
	size_t size;     /* sizeof(struct rmp_member_info), set by caller */
	unsigned stripe, replica; /* i = stripe * replicas + replica */
	int state;       /* enum rmp_member_state */
	char host[256];  /* its server (the address its token names;
			  * of a member this handle never attached, its
			  * node gone when it was opened: its record's) */
	uint16_t port;
	unsigned rails;    /* connections to its node: 1 without rails,
			    * 0 for a member never attached */
	unsigned rails_up; /* of them, up as last seen */
};

/*
 * rmp_lease_member_info -- describe member i (in rmp_lease_replica_token's
 * order; of a lease of one server, member 0 is the lease itself, LIVE),
 * no server round trip. -EINVAL (l or mi NULL, mi->size smaller than
 * this version's struct) or -ENOENT (no member i).
 */
int rmp_lease_member_info(const struct rmp_lease *l, unsigned i,
			  struct rmp_member_info *mi);

/* rmp_member_state_name -- "live", "suspect", "stale", "lost" or
 * "missed" for an enum rmp_member_state; "?" for any other value. */
const char *rmp_member_state_name(int state);

struct rmp_pool_stat {
	size_t size;             /* sizeof(struct rmp_pool_stat), by caller */
	uint64_t pool_bytes, free_bytes, largest_free;
	uint64_t leases;         /* live leases on the server, all tenants */
	uint64_t client_bytes;   /* since 0.3: this client's tenant's leased
				  * bytes, all its connections, leases held
				  * by a connection or not */
	uint64_t client_leases;  /* likewise */
	uint64_t quota_bytes, quota_leases; /* the tenant's, 0: unlimited */
	uint64_t hugepage_size;  /* 0 when the pool is on normal pages */
	uint32_t ttl_min_s, ttl_max_s, ttl_default_s;
	int32_t numa_node;
	const char *keys_mode;   /* "window", "region" or "pool" */
	/* Since 0.2: */
	uint64_t quarantined_bytes; /* never reused: the server could not
				     * prove an old key dead (see its log) */
	uint64_t zeroing_bytes;  /* revoked, being zeroed before reuse */
	/* Since 0.3: */
	uint32_t tenant_connections; /* the tenant's connections now */
	uint32_t quota_connections;  /* its limit, 0 = unlimited */
	uint64_t keys;           /* live keys of all leases (one per lease
				  * and connection that reaches it) */
};

/*
 * rmp_stat -- pool figures for placement decisions (one control round
 * trip). A server with several RDMA devices has a pool per device:
 * pool_bytes, free_bytes, largest_free, hugepage_size and numa_node are
 * those of the pool of the device this connection came in on (where an
 * ALLOC through it goes), the lease, key, quarantine and zeroing figures
 * the server's. keys_mode points to a static string ("unknown" for a mode this
 * library does not know). Errors: -EINVAL (c or st NULL, or st->size
 * smaller than this version's struct), and those of a control call
 * (-EKEYREVOKED among them).
 */
int rmp_stat(struct rmp_client *c, struct rmp_pool_stat *st);

/*
 * Registered buffers. rmp_buf_reg registers [addr, addr+len) with the
 * client's device once; data calls whose local memory lies inside a
 * registered buffer use it directly (zero copy), others copy through the
 * library's internal bounce buffer. Memory is never registered per
 * operation. The client must be connected (-ENOTCONN); -EINVAL for NULL
 * or len 0; the device's errors otherwise (-ENOMEM often means the
 * locked-memory limit, RLIMIT_MEMLOCK). rmp_buf_dereg accepts NULL; the
 * buffer must have no operation in flight.
 */
int rmp_buf_reg(struct rmp_client *c, void *addr, size_t len,
		struct rmp_buf **out);
void rmp_buf_dereg(struct rmp_buf *b);

/*
 * Synchronous data path: each call posts, then waits for its completion
 * (op_timeout_ms). off/len are checked against the lease first (-ERANGE,
 * nothing posted; also when off + len overflows) and against the lease's
 * access rights (-EACCES). Atomics need an 8-byte aligned offset
 * (-EINVAL) and a device with atomics (-EOPNOTSUPP). rmp_cas stores the
 * old value in *old (the swap happened iff *old == expected); rmp_faa adds
 * and stores the old value; old may be NULL. Length 0 is a no-op.
 *
 * When a lease's deadline has passed by the library's own clock (the ttl the
 * server last reported, counted from its reply), the call first asks the
 * server (one control round trip), since another process may have renewed it
 * by token: if the lease lives on, the call goes ahead; if not it gives
 * -EKEYEXPIRED with nothing posted, and the connection stays usable; if the
 * question finds no answer (no reply, a lost connection), the call gives
 * that error instead (those of a control call). An access the server refused
 * because it revoked this connection's key (another connection's exclusive
 * attach, a repair, an operator, the lease's end) gives -EKEYREVOKED, and
 * the connection has to be reopened (RDMA moves the queue pair to an error
 * state): with reconnect_max_ms the next call does it and attaches the
 * handle again. The server does not count such an error against the client's
 * address, and keeps the connection's ephemeral leases for a while (about 10
 * s) for the reconnected client to attach again. Other errors: -ENOTCONN,
 * -EIO, -ETIMEDOUT (the connection is then failed as well, so the NIC stops
 * using the memory), -EINVAL (l NULL; dst or src NULL with len > 0). When a
 * lost connection was made again (reconnect_max_ms), the handle is first
 * attached again: then the errors of rmp_lease_attach too.
 *
 * Transfers larger than the bounce buffer or the device's message size
 * are split into several RDMA operations; on an error some of them may
 * have taken effect.
 *
 * On a cluster lease whose touched stripe has no live replica but a
 * suspect one (every way to it failed: a flap of every link), rmp_read
 * and rmp_write wait for one to come back, for up to op_timeout_ms, and
 * then fail with the first error they met. Erasure coded: also -EBADMSG;
 * rmp_write -EBUSY, or etcd's error (-ECONNREFUSED, ...) for its claim. */
int rmp_read(struct rmp_lease *l, uint64_t off, void *dst, size_t len);
int rmp_write(struct rmp_lease *l, uint64_t off, const void *src, size_t len);
int rmp_cas(struct rmp_lease *l, uint64_t off, uint64_t expected,
	    uint64_t desired, uint64_t *old);
int rmp_faa(struct rmp_lease *l, uint64_t off, uint64_t add, uint64_t *old);

/*
 * rmp_flush -- return once every earlier write on this lease is placed in
 * the server's memory, so a reader on another connection sees it (it is a
 * small RDMA READ after the writes on the same queue pair). Covers
 * synchronous writes and asynchronous writes already passed to
 * rmp_submit(), not those still queued. Works on a lease without the read
 * right too (a zero-byte READ). Errors: those of rmp_read, but -ERANGE;
 * -EHOSTUNREACH on a cluster lease whose stripe has only suspect
 * replicas (it does not wait for them: nothing of theirs to flush).
 */
int rmp_flush(struct rmp_lease *l);

/*
 * Asynchronous data path. rmp_post_* queue one operation each, using memory
 * of a registered buffer b at boff (nothing is copied), and return at once;
 * nothing reaches the NIC until rmp_submit() posts the whole batch as one
 * chain of work requests with one doorbell, signaling only where needed.
 * Completions are reaped by rmp_poll(). At most max_inflight operations may
 * be queued or in flight (-EAGAIN). user_data comes back in the completion.
 * Atomics write the old value to 8 bytes at boff. Errors of rmp_post_*, with
 * nothing queued: those of rmp_read and rmp_cas (checked the same way: a
 * refresh of an expired lease, or an attach after a reconnect, is a control
 * round trip here too), plus -EINVAL (l or b NULL, b belongs to another
 * client, or [boff, boff+len) is outside it), -ENOTCONN (b was registered on
 * an earlier connection), -EMSGSIZE (len above the device's message size;
 * asynchronous operations are not split), -EAGAIN (max_inflight).
 */
int rmp_post_read(struct rmp_lease *l, uint64_t off, struct rmp_buf *b,
		  size_t boff, size_t len, uint64_t user_data);
int rmp_post_write(struct rmp_lease *l, uint64_t off, struct rmp_buf *b,
		   size_t boff, size_t len, uint64_t user_data);
int rmp_post_cas(struct rmp_lease *l, uint64_t off, uint64_t expected,
		 uint64_t desired, struct rmp_buf *b, size_t boff,
		 uint64_t user_data);
int rmp_post_faa(struct rmp_lease *l, uint64_t off, uint64_t add,
		 struct rmp_buf *b, size_t boff, uint64_t user_data);
/*
 * rmp_submit -- post everything queued; returns the number posted (0 when
 * nothing was queued). On an error (-ENOTCONN, -ETIMEDOUT when the send
 * queue does not drain, -EIO) every operation it could not post still
 * completes, with that error, through rmp_poll(). -EINVAL for c NULL.
 */
int rmp_submit(struct rmp_client *c);

struct rmp_completion {
	uint64_t user_data;
	int status; /* 0, or a negative errno as for the sync calls */
};

/*
 * rmp_poll -- reap up to max completions of submitted operations, in
 * submission order. timeout_ms 0 = do not wait, < 0 = wait forever.
 * Returns the number reaped (0 on timeout, and at once when nothing
 * submitted is left to reap), -EINVAL (out NULL, max <= 0), -ENOTCONN
 * (not connected). After a connection failure the outstanding operations
 * still complete, with -ENOTCONN or the error that broke it.
 */
int rmp_poll(struct rmp_client *c, struct rmp_completion *out, int max,
	     int timeout_ms);

/*
 * rmp_client_fd -- a file descriptor that becomes readable when completions
 * may be ready, for epoll/poll; then call rmp_poll(c, ..., 0) until it
 * returns fewer than max. Asking for it turns the fd on: from then on
 * rmp_submit() and an rmp_poll() that leaves operations outstanding arm it
 * (a caller that never asks, and polls, makes no system call for
 * completions). Other calls on c (synchronous ones included) may reap
 * completions without the fd signaling them, so call rmp_poll(c, ..., 0)
 * after them before waiting on the fd. -ENOTCONN when not connected (a new
 * connection has a new fd: ask again), -EINVAL for c NULL.
 */
int rmp_client_fd(struct rmp_client *c);

/*
 * Clusters (since 0.6). Storage nodes whose rmpoold registers in etcd
 * ([cluster] in rmpoold.conf) form a cluster: each keeps a record under
 * PREFIX/nodes/NODE (its addresses, port, labels, free bytes) for as
 * long as it lives. An rmp_cluster reads those records once and keeps
 * them current with an etcd watch, so placing a lease costs no etcd
 * round trip; it opens one connection per node it actually uses, on
 * demand, with the client options given at open (tenant and key
 * included: every node must know the tenant). Leases it places are
 * ordinary lease handles of those connections: every data call,
 * rmp_lease_token and rmp_lease_free take them. An rmp_cluster, its
 * connections and leases belong to one thread at a time, like a client.
 *
 * Membership news waits in a socket until a call on the cluster takes it
 * in (before it places anything), so a node whose key is gone from etcd
 * is not chosen once etcd's news of it has arrived (a few milliseconds
 * after the change; a node that dies is known by etcd only when its
 * record's ttl ran out: until then a connect to it fails and the next
 * node is tried). When the watch breaks (etcd down or restarted), the
 * next call reads the membership again; while that fails, calls that
 * place fail with the etcd error (-ECONNREFUSED, -ETIMEDOUT, -EACCES,
 * -EIO, -EPROTO; rmp_cluster_last_error() says which endpoint and why)
 * and leases already placed work on as before.
 */
struct rmp_cluster;

struct rmp_cluster_opts {
	size_t size;            /* sizeof(struct rmp_cluster_opts) */
	const struct rmp_client_opts *client; /* each node's connection;
				 * NULL = defaults; copied at open */
	const char *prefix;     /* etcd key prefix, as the daemons'
				 * [cluster] prefix; default "/rmpool/" */
	int etcd_timeout_ms;    /* one etcd request at one endpoint;
				 * default 2000 */
	/* https endpoints: the CAs that sign etcd's certificate (NULL: the
	 * system's), a client certificate and its key (NULL: none). */
	const char *ca_file, *cert_file, *key_file;
	const char *credentials_file; /* etcd's "USER:PASSWORD", a file kept
				 * like a key file; NULL: no etcd auth */
	/* since 0.7: 1 lets a client naming no tenant open the cluster
	 * (refused otherwise: an anonymous server proves nothing, so any
	 * node registered in etcd gets its leases' bytes, and the token
	 * alone seals a lease record). For a closed lab only. */
	int allow_anonymous;
	/* since 0.7: a member of a mirrored or striped lease out of reach
	 * (suspect) this long is lost, and a repair may replace it; default
	 * 30000: longer than a daemon restarted from its state_dir, a link
	 * flap or a switch's reboot, and than the etcd ttl of the daemons'
	 * records (default 10 s: a node that died has left etcd by then,
	 * and its member is lost for that), so that it bounds only a node
	 * alive to etcd that this client cannot reach. 0: never. */
	int member_timeout_ms;
};

/* rmp_cluster_opts_init -- fill opts with the defaults (sets size). */
void rmp_cluster_opts_init(struct rmp_cluster_opts *opts);

/*
 * rmp_cluster_open -- read the membership from the etcd endpoints of url
 * ("etcd://HOST:PORT[,HOST:PORT...]"; http:// and https:// (TLS) work too,
 * per entry; an entry without a scheme takes the one before it) and watch
 * it. opts may be NULL. Errors: -EINVAL (a malformed url or option, a
 * credentials or TLS file that cannot be used, or given with an endpoint
 * that is not https://; client options that name no tenant, unless
 * allow_anonymous), -ENOMEM, and when the membership cannot be read from
 * etcd -ECONNREFUSED (no endpoint answers), -ETIMEDOUT, -EACCES (credentials
 * or permission refused), -EIO (another etcd error) or -EPROTO (an answer
 * that is not etcd's).
 */
int rmp_cluster_open(struct rmp_cluster **out, const char *url,
		     const struct rmp_cluster_opts *opts);

/*
 * rmp_cluster_close -- close every connection the cluster opened (their
 * lease handles are freed; the leases stay on their servers until their
 * deadlines, as after rmp_client_free) and free cl. Accepts NULL.
 */
void rmp_cluster_close(struct rmp_cluster *cl);

/* rmp_cluster_last_error -- detail of the last failed call on cl, or "". */
const char *rmp_cluster_last_error(const struct rmp_cluster *cl);

/* One node of the membership (rmp_cluster_nodes). */
struct rmp_node_info {
	size_t size;           /* sizeof(struct rmp_node_info), by caller */
	char node[64];         /* its name in the cluster */
	char addr[46];         /* the first address its record lists */
	uint16_t port;
	char device[64];       /* its RDMA device */
	int32_t numa_node;     /* -1: not known */
	uint64_t pool_bytes, free_bytes, largest_free; /* as last published */
	uint32_t draining;     /* 1: it takes no new leases */
	char version[64];      /* its rmpoold's */
	char labels[1040];     /* "NAME=VALUE NAME=VALUE ..." */
	uint32_t connected;    /* 1: this cluster has a connection to it */
	/* since 0.7 (filled when size has room): what this cluster's last
	 * connect to it said: 1 it proved the tenant's key, -1 it failed
	 * (why says how; "did not prove tenant ...'s key": not a server of
	 * this tenant, never given a lease), 0 not connected yet */
	int32_t proven;
	char why[160];
};
/* The size of struct rmp_node_info in 0.6, which rmp_cluster_nodes
 * still takes (it fills what fits). */
#define RMP_NODE_INFO_SIZE_0_6 \
	(offsetof(struct rmp_node_info, connected) + sizeof(uint32_t))

/*
 * rmp_cluster_check -- connect to node (the name of a node registered
 * now) as placing a lease there would: 0 when it proved the tenant's
 * key, else the connect's error (-EBADE: not a server of this tenant);
 * rmp_cluster_nodes says so after. Errors: -EINVAL, -ENOENT (no such
 * node now), the etcd errors of rmp_cluster_nodes, and those of
 * rmp_client_connect.
 */
int rmp_cluster_check(struct rmp_cluster *cl, const char *node);

/*
 * rmp_cluster_nodes -- the nodes registered now (the membership taken in
 * first), sorted by name: up to max of them into out (each out[i].size set
 * by the caller, the same in each: a program built with an older struct gets
 * what its struct holds), and how many there are (possibly more than max).
 * Errors: -EINVAL (cl NULL, out NULL with max > 0, a size too small),
 * -ENOMEM, and -ECONNREFUSED, -ETIMEDOUT, -EACCES, -EIO or -EPROTO when the
 * membership cannot be read from etcd.
 */
int rmp_cluster_nodes(struct rmp_cluster *cl, struct rmp_node_info *out,
		      unsigned max);

/* Options for rmp_cluster_alloc(); rmp_cluster_alloc_opts_init() fills
 * the defaults. */
struct rmp_cluster_alloc_opts {
	size_t size;        /* sizeof(struct rmp_cluster_alloc_opts) */
	uint64_t alignment; /* these four as rmp_alloc_opts */
	uint32_t ttl_s, access, flags;
	const char *prefer; /* "LABEL=VALUE": nodes with it come first */
	const char *exclude; /* node names never to use, separated by commas
			     * or blanks; NULL: none */
	unsigned replicas;  /* 0 or 1: one server; 2..3: a mirrored lease */
	const char *spread; /* a label: replicas on nodes with distinct
			     * values of it (no label counts as one
			     * value); NULL: on distinct nodes only */
	unsigned stripes;   /* 0 or 1: not striped; 2..16: a striped
			     * lease (see "Striped leases") */
	uint64_t stripe_unit; /* 0: 1 MiB; a power of two, 4 KiB .. 1 GiB */
	/* since 0.8: an erasure-coded lease (see "Erasure-coded leases"), k
	 * ec_data 2..12, m ec_parity 1..4, chunks of ec_chunk bytes (0: 4 KiB;
	 * a power of two up to 1 MiB); replicas and stripes stay 0 */
	unsigned ec_data, ec_parity;
	uint64_t ec_chunk;
};

void rmp_cluster_alloc_opts_init(struct rmp_cluster_alloc_opts *opts);

/*
 * rmp_cluster_alloc -- lease length bytes on a node of the cluster and
 * return an ordinary lease handle (its token names that node); with replicas
 * > 1, a lease on that many nodes, one handle over them (see "Mirrored
 * leases"); with stripes > 1, a lease cut over that many leases (see
 * "Striped leases"). Nodes are tried in the order of the placement policy:
 * those with opts->prefer first, then the most free bytes (nodes within 1/16
 * of the most count as equal and are tried in random order, so that clients
 * with the same view spread their leases); nodes draining, excluded, or
 * without length bytes in one free extent are left out; a node that refuses
 * (-ENOSPC, -EDQUOT, -EFBIG, -ESHUTDOWN, -EAGAIN) or cannot be reached (its
 * connection failing, -ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH, ...) or does
 * not prove the tenant's key (-EBADE: not a server of this tenant, whatever
 * etcd says of it; nothing is sent to it) is skipped and the next tried; one
 * that could not be reached is tried last by later calls for a while (a
 * second, doubling up to 30 s). Errors: the error of the first node tried
 * when none granted it (rmp_cluster_last_error() lists what each node
 * answered): those of rmp_lease_alloc and rmp_client_connect; -ENOSPC when
 * no node has room (or none is registered, or fewer than replicas nodes
 * apart have; of a striped lease: for one of its stripes, the others then
 * freed); -EINVAL for options out of range (replicas, stripes, stripe_unit,
 * a malformed prefer); -EKEYREJECTED, -EINVAL, -EAFNOSUPPORT and -ENOMEM at
 * once, without trying further nodes; -ECONNREFUSED, -ETIMEDOUT, -EACCES,
 * -EIO or -EPROTO when etcd cannot be read (the membership is not current);
 * -EOPNOTSUPP when a mirrored or striped lease's record, read back, is one
 * this version cannot open. */
int rmp_cluster_alloc(struct rmp_cluster *cl, uint64_t length,
		      const struct rmp_cluster_alloc_opts *opts,
		      struct rmp_lease **out);

/*
 * Mirrored leases (rmp_cluster_alloc_opts.replicas 2..3). One handle over a
 * lease of the same length on each of replicas nodes (distinct nodes;
 * distinct values of the spread label when given), placed in the policy's
 * order. rmp_write posts to every replica at once and returns when all of
 * them have the bytes; rmp_read reads from the first replica in that order
 * and, should it fail, from the next within the same call. A replica whose
 * call fails for another reason than the arguments (its server gone, its
 * connection failed past reconnecting, its lease expired) is lost: not read,
 * written or renewed by this handle again; the calls give no error while one
 * replica is left. rmp_lease_info says replicas and replicas_live (fewer:
 * degraded). rmp_lease_renew, rmp_lease_free and rmp_lease_close act on
 * every replica; rmp_flush on every live one. Not taken, -EOPNOTSUPP:
 * atomics (an atomic on each replica is no atomic of the whole: two clients'
 * CAS could win on different replicas) and the asynchronous calls
 * (rmp_post_*). What a reader may see: a write in flight may be on one
 * replica and not yet on another, so a read concurrent with it may return
 * old or new bytes (per replica, as for a single lease); once rmp_write
 * returned 0, every replica the lease's record (below) calls live has the
 * bytes, and a read (from any of them) returns them: a write made without a
 * replica (lost during it, or before) returns 0 only once the record marks
 * that replica stale, and fails with etcd's error (-ECONNREFUSED,
 * -ETIMEDOUT, ...; the bytes may be on some replicas) when the record cannot
 * be written. A stale replica is not read again by anybody who reads the
 * record after the mark, and a repair replaces it. Two clients writing the
 * same bytes at once may leave the replicas different (each replica orders
 * the two writes as they arrive): as with one lease, writers of the same
 * bytes must agree among themselves.
 *
 * Striped leases (rmp_cluster_alloc_opts.stripes 2..16): a lease larger than
 * any one node. Its bytes are cut in units of stripe_unit (default 1 MiB);
 * unit u is in stripe u % stripes, at offset (u / stripes) * stripe_unit of
 * that stripe's lease. Each stripe is a lease of ceil(ceil(length /
 * stripe_unit) / stripes) * stripe_unit bytes on a node of its own choosing
 * (placed one after the other, each in the policy's order after what the
 * ones before took: stripes may share a node when one has room for several).
 * With replicas > 1 each stripe is mirrored as above (its replicas on
 * distinct nodes). rmp_lease_info's length is the length asked for; it says
 * stripes, replicas (of each stripe) and replicas_live (the fewest of any
 * stripe). rmp_read and rmp_write cut a call by stripe and post every
 * stripe's part before waiting for any (parts of stripes on the same node go
 * one after the other), so a large call moves at the speed of all the nodes
 * together; within a stripe as for a mirrored lease (reads from one replica
 * with failover, writes to all). What a reader sees: per stripe as for a
 * mirrored lease; a call over several stripes is not atomic over them (a
 * read concurrent with a write may see some stripes' parts old, others new).
 * A stripe whose replicas are all lost fails the calls that touch it (-EIO,
 * or the first error of its replicas within that call), rmp_lease_renew and
 * rmp_flush (its bytes are gone); calls that touch only other stripes work
 * on. rmp_lease_renew, rmp_lease_free and rmp_lease_close act on every
 * member; not taken as for a mirrored lease (atomics, the asynchronous
 * calls: -EOPNOTSUPP); each member's token is rmp_lease_replica_token's. A
 * striped lease has a cluster token as a mirrored one has (below), and
 * rmp_lease_repair replaces the lost replicas of its stripes.
 *
 * Erasure-coded leases (ec_data k 2..12, ec_parity m 1..4; librmpool(3)):
 * k + m members on distinct nodes (apart by spread), (k + m) / k times the
 * bytes pinned, any m of them may be lost. Bytes are cut in chunks of
 * ec_chunk: a row is k chunks, one per data member (laid out as a striped
 * lease's units), and m parity chunks at the same offset of the parity
 * members. A read goes to the data members it touches; one that is away is
 * decoded from k members that hold the same write of the row (each write of
 * a row leaves one tag on all its members), else -EBADMSG (a writer died
 * within the row) or -EIO (fewer than k live). rmp_write encodes whole rows
 * and updates the parity of a part of a row by its delta. One handle
 * writes at a time, cluster-wide: its claim in etcd (PREFIX/writers/ID,
 * kept alive while it writes) goes when it closes, 30 s after its process
 * died, or at a repair; another's write fails with -EBUSY
 * (rmp_cluster_last_error() names the holder). rmp_lease_repair decodes
 * lost members anew and mends torn rows. Not taken: as for a mirror.
 *
 * The token of a mirrored lease (rmp_lease_token) is a cluster token,
 * rmpc://ID-SECRET: its member list is kept in the cluster's etcd at
 * PREFIX/leases/ID, sealed (XChaCha20-Poly1305) with a key derived from
 * SECRET, so that etcd holds nothing that reaches the lease without the
 * token; the record ends a little after the lease (an etcd lease that
 * rmp_lease_renew extends, rmp_lease_free revokes). Making one costs two
 * etcd round trips more than a lease of one server. rmp_cluster_attach
 * takes such a token; each member is then attached as an ordinary
 * lease, so a tenant other than the owner gets -EPERM from the servers
 * even with the token. Not taken: RMP_LEASE_AUTO_RENEW (-EINVAL; the
 * servers would renew the members, never the record).
 *
 * After a repair (rmp_lease_repair, by any holder of the token) the
 * lease has new members: every other holder's keys to the live ones
 * were revoked before the copy began, so their next call fails on each
 * member; the library then reads the record again, waits while the
 * repair holds it (at most its deadline: 20 s plus 1 s per 16 MiB), and
 * makes the call again on the new members, once. So a write made during
 * the repair is not lost: it lands after the copy, on every member.
 */

/*
 * rmp_lease_repair -- give a cluster lease (from rmp_cluster_alloc with
 * replicas > 1, or rmp_cluster_attach of its token) new members for those it
 * lost: for each member whose node has left the membership (or that cannot
 * be attached), a lease of the same length on another node, apart from the
 * other members as the lease was placed (its spread label), filled from a
 * live member and published in the record, as described above; a member the
 * record marks stale (a write went on while it was away) whose node is back
 * and whose server still holds it is caught up in place instead (fenced like
 * the live ones, overwritten from one). 0 when nothing was lost or all of it
 * is replaced. Errors: -EINVAL (l NULL), -EOPNOTSUPP (not a cluster lease;
 * or a live member's node grants one key for its whole pool, lease_keys =
 * pool, which no fence revokes), -EIO (a stripe has no live member: its
 * bytes are lost), -EAGAIN (another repair changed the record meanwhile, or
 * the fence cut a holder's write of a coded row short: try again), -ETIMEDOUT (the copy ran past the repair's deadline: nothing
 * changed), -EHOSTDOWN (a live member's node left meanwhile), -EPERM
 * (another tenant's lease), the errors of rmp_cluster_alloc (no node could
 * take a member) and of the data calls (the copy: -EKEYREVOKED,
 * -EKEYEXPIRED, -ERANGE, -EBADMSG, ...); rmp_cluster_last_error() of the lease's
 * cluster says more. Like every call on one handle: not at the same time as
 * another call on it. */
int rmp_lease_repair(struct rmp_lease *l);

/*
 * rmp_cluster_repair -- rmp_lease_repair on the cluster lease of token
 * (attached and closed again here), and also when rmp_cluster_attach refuses
 * it with -ESTALE: its record in etcd is older than what its members know.
 * Then the newest record in etcd's history of the key (one that opens with
 * the token and the tenant's key) is written again if it is newer (the
 * record was put back over it). When the members still know a newer epoch
 * than any record (a repair fenced them and could publish nothing, nor
 * undo), no newer list ever existed: each member is asked the epoch it
 * knows, those behind the newest (away during that repair) are replaced as
 * lost ones are, from those that know it, and the record is written past it;
 * every member must answer then (-EAGAIN: try again once it does). -ESTALE
 * when etcd compacted the record's history: nothing can be told then.
 * Errors: -EINVAL (cl or token NULL), -EOPNOTSUPP (not a cluster token),
 * those of rmp_cluster_attach and of rmp_lease_repair (the copy's among
 * them: -ERANGE, -EBADMSG, ...).
 */
int rmp_cluster_repair(struct rmp_cluster *cl, const char *token);

/*
 * rmp_cluster_attach -- attach the lease of token through the cluster's
 * connection to the token's server (opened if need be), with opts as
 * rmp_lease_attach_with (NULL: defaults). The server need not be
 * registered now. Errors as rmp_lease_attach_with and rmp_client_connect.
 * A cluster token (rmpc://, of a mirrored lease) is looked up in etcd
 * and each member attached (those on nodes gone from the membership are
 * lost from the start; -EHOSTDOWN when every member of a stripe is):
 * one handle, as rmp_cluster_alloc gives; then also -ENOENT (no record:
 * freed, expired, or not this cluster's), -EOPNOTSUPP (a record this
 * version cannot open) and the etcd errors of rmp_cluster_alloc.
 */
int rmp_cluster_attach(struct rmp_cluster *cl, const char *token,
		       const struct rmp_attach_opts *opts,
		       struct rmp_lease **out);

/*
 * rmp_cluster_client -- the cluster's connection to the server of token
 * (opened if need be), for the calls that take a client
 * (rmp_lease_renew_token, rmp_lease_free_token, rmp_stat, rmp_buf_reg).
 * It stays the cluster's: do not close or free it. NULL with
 * rmp_cluster_last_error() set when it cannot be opened.
 */
struct rmp_client *rmp_cluster_client(struct rmp_cluster *cl,
				      const char *token);

/*
 * rmp_strerror -- text for a (negative) rmpool error code, in the
 * library's terms (e.g. -ENOENT: "no such lease (or wrong secret)"); a
 * positive errno gives the same. Never NULL.
 */
const char *rmp_strerror(int err);

/* rmp_version -- the library's version string. */
const char *rmp_version(void);

#ifdef __cplusplus
}
#endif

#endif /* RMPOOL_H */
