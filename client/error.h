/* SPDX-License-Identifier: MIT */
/* error.h -- the text rmp_client_last_error() returns, and errno texts. */
#ifndef RMPC_ERROR_H
#define RMPC_ERROR_H

struct rmp_client;

/* rmpc_set_error -- set the text rmp_client_last_error() returns. */
void rmpc_set_error(struct rmp_client *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* rmpc_clear_error -- forget the last error text (start of a call). */
void rmpc_clear_error(struct rmp_client *c);
/* rmpc_errno_text -- the C library's text for an errno (either sign),
 * for details about a failed system or verbs call. */
const char *rmpc_errno_text(int err);

#endif /* RMPC_ERROR_H */
