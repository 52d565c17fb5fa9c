/* SPDX-License-Identifier: MIT */
/* etcd_tls.h -- TLS for etcd.c's https endpoints (OpenSSL under
 * libevent's bufferevent_openssl). */
#ifndef RMP_ETCD_TLS_H
#define RMP_ETCD_TLS_H

#include <stddef.h>
#include <openssl/ssl.h>

struct bufferevent;
struct event_base;

/*
 * rmp_etcd_tls_ctx -- a client context: TLS 1.2 or later, the server's
 * certificate verified against ca_file (NULL or "": the system's CAs),
 * and, with cert_file and key_file, a client certificate (cert_file may
 * hold its chain after it) whose key is read as a secret file
 * (rmp_secret_read: never one others may read). NULL with why in err.
 */
SSL_CTX *rmp_etcd_tls_ctx(const char *ca_file, const char *cert_file,
			  const char *key_file, char *err, size_t errlen);
/*
 * rmp_etcd_tls_bev -- a bufferevent that will speak TLS to host (a
 * name: SNI and the certificate's DNS names; an address: its IP
 * addresses) once evhttp connects it. NULL when out of memory.
 */
struct bufferevent *rmp_etcd_tls_bev(struct event_base *base, SSL_CTX *ctx,
				     const char *host);
/* rmp_etcd_tls_error -- why TLS failed on bev, as text ("" none). */
void rmp_etcd_tls_error(struct bufferevent *bev, char *buf, size_t len);

#endif /* RMP_ETCD_TLS_H */
