/* SPDX-License-Identifier: MIT */
/*
 * etcd_tls.c -- the TLS of etcd.c's https endpoints: one client context
 * (CAs, an optional client certificate whose key is kept like a key
 * file), one SSL per connection, checked against the endpoint's name or
 * address, and what went wrong when it failed.
 */
#include "etcd_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "auth.h"

/* A PEM key fits: RSA 8192 is about 6.5 KiB. */
#define KEY_PEM_MAX 16384

/* tls_why -- OpenSSL's last error, after what. */
static void tls_why(char *err, size_t errlen, const char *what)
{
	char e[200] = "unknown error";
	unsigned long code = ERR_peek_last_error();

	if (code)
		ERR_error_string_n(code, e, sizeof(e));
	ERR_clear_error();
	snprintf(err, errlen, "%s: %s", what, e);
}

/* use_key -- key_file's PEM key, read as a secret file, for ctx. */
static int use_key(SSL_CTX *ctx, const char *key_file, char *err,
		   size_t errlen)
{
	char *pem = malloc(KEY_PEM_MAX);
	EVP_PKEY *key = NULL;
	BIO *bio;
	int ret = pem ? rmp_secret_read(key_file, pem, KEY_PEM_MAX, err,
					errlen) : -ENOMEM;

	if (ret) {
		free(pem);
		return ret;
	}
	bio = BIO_new_mem_buf(pem, (int)strlen(pem));
	if (bio)
		key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio);
	rmp_wipe(pem, KEY_PEM_MAX);
	free(pem);
	if (!key) {
		tls_why(err, errlen, key_file);
		return -EINVAL;
	}
	ret = SSL_CTX_use_PrivateKey(ctx, key) == 1 &&
	      SSL_CTX_check_private_key(ctx) == 1 ? 0 : -EINVAL;
	EVP_PKEY_free(key);
	if (ret)
		tls_why(err, errlen, "the client certificate and its key "
			"do not match");
	return ret;
}

SSL_CTX *rmp_etcd_tls_ctx(const char *ca_file, const char *cert_file,
			  const char *key_file, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (!ctx) {
		tls_why(err, errlen, "TLS context");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (ca_file && ca_file[0] ?
	    SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1 :
	    SSL_CTX_set_default_verify_paths(ctx) != 1) {
		tls_why(err, errlen, ca_file && ca_file[0] ? ca_file :
			"the system's CA certificates");
		goto fail;
	}
	if (cert_file && cert_file[0]) {
		if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
			tls_why(err, errlen, cert_file);
			goto fail;
		}
		if (use_key(ctx, key_file, err, errlen))
			goto fail;
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

struct bufferevent *rmp_etcd_tls_bev(struct event_base *base, SSL_CTX *ctx,
				     const char *host)
{
	unsigned char addr[16];
	struct bufferevent *bev;
	SSL *ssl = SSL_new(ctx);
	bool numeric = inet_pton(AF_INET, host, addr) == 1 ||
		       inet_pton(AF_INET6, host, addr) == 1;

	if (!ssl)
		return NULL;
	/* the certificate must name what we connect to */
	if (numeric ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl),
						    host) != 1 :
	    SSL_set_tlsext_host_name(ssl, host) != 1 ||
	    SSL_set1_host(ssl, host) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	bev = bufferevent_openssl_socket_new(base, -1, ssl,
					     BUFFEREVENT_SSL_CONNECTING,
					     BEV_OPT_CLOSE_ON_FREE |
					     BEV_OPT_DEFER_CALLBACKS);
	if (!bev) {
		SSL_free(ssl);
		return NULL;
	}
	/* etcd may close without a close_notify after "Connection: close" */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

void rmp_etcd_tls_error(struct bufferevent *bev, char *buf, size_t len)
{
	SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
	unsigned long code = bev ? bufferevent_get_openssl_error(bev) : 0;
	long verify = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;

	buf[0] = '\0';
	if (verify != X509_V_OK)
		snprintf(buf, len, "TLS: the server's certificate: %s",
			 X509_verify_cert_error_string(verify));
	else if (code)
		ERR_error_string_n(code, buf, len);
	ERR_clear_error();
}
