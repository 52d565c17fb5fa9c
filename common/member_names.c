/* SPDX-License-Identifier: MIT */
/*
 * member_names.c -- how the cluster's lists and names are written: etcd
 * endpoints, labels, a node name. The daemon's config loader checks
 * [cluster] with them (and cluster.c splits the same text again at
 * start); the library reads an etcd:// URL with them.
 */
#include "member_names.h"

#include <ctype.h>
#include <errno.h>
#include <sys/socket.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"  /* rmp_secret_read */
#include "parse.h"
#include "proto.h" /* rmp_tenant_char_ok: the bytes of every name */
#include "util.h"

bool rmp_cluster_node_ok(const char *s)
{
	size_t n;

	if (!isascii((unsigned char)s[0]) || !isalnum((unsigned char)s[0]))
		return false;
	for (n = 0; s[n]; n++)
		if (n >= RMP_CLUSTER_NODE_LEN - 1 ||
		    !rmp_tenant_char_ok((unsigned char)s[n]))
			return false;
	return true;
}

/* dns_name_ok -- letters, digits, '-' and '.', not starting with '-'. */
static bool dns_name_ok(const char *s)
{
	if (!*s || *s == '-' || *s == '.')
		return false;
	for (; *s; s++)
		if (!isascii((unsigned char)*s) ||
		    (!isalnum((unsigned char)*s) && *s != '-' && *s != '.'))
			return false;
	return true;
}

/* The schemes an endpoint is written with; etcd:// is plain http. */
static const struct {
	const char *prefix;
	bool tls;
} schemes[] = { { "http://", false }, { "https://", true },
		{ "etcd://", false } };

/* parse_endpoint -- one "SCHEME://HOST:PORT" of b..e into ep; without a
 * scheme, "HOST:PORT" takes *scheme (the previous entry's; -1: none). */
static int parse_endpoint(const char *b, const char *e,
			  struct rmp_cluster_endpoint *ep, int *scheme,
			  char *why, size_t whylen)
{
	char text[RMP_CLUSTER_LIST_LEN], host[RMP_CLUSTER_HOST_LEN];
	const char *port = NULL, *hp;
	int family = 0;

	snprintf(text, sizeof(text), "%.*s", (int)(e - b), b);
	hp = strstr(text, "://") ? NULL : text;
	for (int i = 0; !hp && i < (int)RMP_ARRAY_SIZE(schemes); i++) {
		if (!strncmp(text, schemes[i].prefix,
			     strlen(schemes[i].prefix))) {
			*scheme = i;
			hp = text + strlen(schemes[i].prefix);
		}
	}
	if (!hp || *scheme < 0 ||
	    rmp_split_hostport(hp, host, sizeof(host), &port) ||
	    !port || rmp_parse_port(port, &ep->port) ||
	    (strchr(host, ':') ? rmp_parse_addr(host, &family) ||
	     family != AF_INET6 || *hp != '[' || strchr(host, '%') :
	     !dns_name_ok(host))) {
		snprintf(why, whylen, "\"%s\" is not http://HOST:PORT, "
			 "https://HOST:PORT or etcd://HOST:PORT (HOST a name, "
			 "an IPv4 address or [an IPv6 address])", text);
		return -EINVAL;
	}
	ep->tls = schemes[*scheme].tls;
	snprintf(ep->host, sizeof(ep->host), "%s", host);
	return 0;
}

int rmp_cluster_endpoints(const char *list, struct rmp_cluster_endpoint *eps,
			  unsigned *n, char *why, size_t whylen)
{
	const char *s = list, *b, *e;
	unsigned k = 0;
	int scheme = -1;

	if (!list[strspn(list, " \t")]) /* no endpoint: no cluster */
		s = NULL;
	while (rmp_list_item(&s, &b, &e)) {
		if (b == e) {
			snprintf(why, whylen, "empty entry in the list");
			return -EINVAL;
		}
		if (k == RMP_CLUSTER_ENDPOINTS_MAX) {
			snprintf(why, whylen, "more than %d endpoints",
				 RMP_CLUSTER_ENDPOINTS_MAX);
			return -EINVAL;
		}
		if (parse_endpoint(b, e, &eps[k], &scheme, why, whylen))
			return -EINVAL;
		k++;
	}
	*n = k;
	return 0;
}

/* parse_label -- one "NAME=VALUE" of b..e into l. */
static int parse_label(const char *b, const char *e,
		       struct rmp_cluster_label *l, char *why, size_t whylen)
{
	const char *eq = memchr(b, '=', (size_t)(e - b)), *p;
	size_t nlen = eq ? (size_t)(eq - b) : 0, vlen;
	bool ok = eq && nlen > 0 && nlen < RMP_CLUSTER_LABEL_LEN &&
		  isascii((unsigned char)*b) && isalpha((unsigned char)*b);

	vlen = eq ? (size_t)(e - eq - 1) : 0;
	ok = ok && vlen > 0 && vlen < RMP_CLUSTER_LABEL_LEN;
	for (p = b; ok && p < e; p++)
		ok = p == eq || rmp_tenant_char_ok((unsigned char)*p);
	if (!ok) {
		snprintf(why, whylen, "\"%.*s\" is not NAME=VALUE (each 1 to "
			 "63 of A-Z, a-z, 0-9, '_', '.', '-'; NAME starting "
			 "with a letter)", (int)RMP_MIN((size_t)(e - b), 64),
			 b);
		return -EINVAL;
	}
	memcpy(l->name, b, nlen);
	l->name[nlen] = '\0';
	memcpy(l->value, eq + 1, vlen);
	l->value[vlen] = '\0';
	return 0;
}

int rmp_cluster_labels(const char *list, struct rmp_cluster_label *out,
		       unsigned *n, char *why, size_t whylen)
{
	const char *s = list, *e;
	unsigned k = 0;

	for (;;) {
		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		for (e = s; *e && !isspace((unsigned char)*e); e++)
			;
		if (k == RMP_CLUSTER_LABELS_MAX) {
			snprintf(why, whylen, "more than %d labels",
				 RMP_CLUSTER_LABELS_MAX);
			return -EINVAL;
		}
		if (parse_label(s, e, &out[k], why, whylen))
			return -EINVAL;
		for (unsigned i = 0; i < k; i++) {
			if (!strcmp(out[i].name, out[k].name)) {
				snprintf(why, whylen, "label %s given twice",
					 out[k].name);
				return -EINVAL;
			}
		}
		k++;
		s = e;
	}
	*n = k;
	return 0;
}

int rmp_cluster_credentials(const char *path, char *user, size_t ulen,
			    char *password, size_t plen, char *err,
			    size_t errlen)
{
	char buf[512], *colon, *end;
	int ret = rmp_secret_read(path, buf, sizeof(buf), err, errlen);

	if (ret)
		return ret;
	end = buf + strcspn(buf, "\r\n");
	ret = -EINVAL;
	if (end[strspn(end, "\r\n")]) {
		snprintf(err, errlen, "%s: more than one line", path);
	} else if (*end = '\0', !(colon = strchr(buf, ':')) || colon == buf ||
		   (size_t)(colon - buf) >= ulen || strlen(colon + 1) >= plen) {
		snprintf(err, errlen, "%s: not USER:PASSWORD on one line", path);
	} else {
		*colon = '\0';
		snprintf(user, ulen, "%s", buf);
		snprintf(password, plen, "%s", colon + 1);
		ret = 0;
	}
	rmp_wipe(buf, sizeof(buf));
	return ret;
}
