/* SPDX-License-Identifier: MIT */
/* admin.h -- the admin socket: rmpoolctl's requests, answered in the loop. */
#ifndef RMP_ADMIN_H
#define RMP_ADMIN_H

/*
 * A unix stream socket for operators (rmpoolctl), speaking one JSON
 * object per line each way; docs/admin.md is the protocol. Only root and
 * members of admin_group get in, checked twice: by the socket file's
 * mode (0660 owned by the daemon's user and admin_group, or 0600 with no
 * group) and by the peer's credentials (SO_PEERCRED, SO_PEERGROUPS).
 * Everything runs in the daemon's event loop, on bufferevents: a slow or
 * hostile peer costs a bounded buffer, never the loop.
 *
 * rmpoolctl includes this header for the constants below only.
 */

/* Where rmpoolctl looks when neither -s nor RMPOOL_ADMIN_SOCKET says. */
#define RMP_ADMIN_SOCKET_DEFAULT "/run/rmpool/admin.sock"
/* The longest request line, newline excluded; longer ones are refused. */
#define RMP_ADMIN_LINE_MAX 4096

struct event_base;
struct rmp_admin;
struct rmp_ops;

/*
 * rmp_admin_new -- listen on the unix socket path (a stale socket there
 * is replaced; a live one or another kind of file is an error) for root
 * and the members of group ("" = root only), and serve requests with
 * ops on base. Creates the socket's directory when it is missing. The
 * daemon need not be root: if the socket cannot be given to group, that
 * is logged (the daemon's user must be a member of it) and only root
 * gets in. Returns NULL on failure, with the reason logged and errno
 * set.
 */
struct rmp_admin *rmp_admin_new(struct event_base *base, struct rmp_ops *ops,
				const char *path, const char *group);

/*
 * rmp_admin_free -- close every admin connection and the socket, and
 * remove the socket file (if it is still the one we made). Accepts NULL.
 */
void rmp_admin_free(struct rmp_admin *a);

#endif /* RMP_ADMIN_H */
