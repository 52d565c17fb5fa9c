/* SPDX-License-Identifier: MIT */
/*
 * test_member.c -- unit tests of the node record's codec (common/member.c):
 * every field through encode and decode, and each kind of record the
 * decoder refuses, with its reason; and the etcd:// endpoint lists the
 * library takes (common/member_names.c), the scheme carried over, and
 * what rmp_etcd_open (common/etcd_open.c) says of a list it refuses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd.h"
#include "member.h"
#include "check.h"

/* full -- a record that uses every field. */
static void full(struct rmp_member *m)
{
	memset(m, 0, sizeof(*m));
	strcpy(m->node, "n1.rack-2");
	strcpy(m->addrs[0], "10.0.0.1");
	strcpy(m->addrs[1], "fe80::1%eth0");
	strcpy(m->addrs[2], "2001:db8::7");
	m->naddrs = 3;
	m->port = 7471;
	strcpy(m->device, "rxe0");
	m->numa_node = -1;
	strcpy(m->keys_mode, "per-lease");
	m->pool_bytes = 1ull << 40;
	m->free_bytes = (1ull << 40) - 4096;
	m->largest_free = 1ull << 39;
	m->draining = true;
	strcpy(m->version, "0.6.0");
	strcpy(m->labels[0].name, "rack");
	strcpy(m->labels[0].value, "r1");
	strcpy(m->labels[1].name, "zone");
	strcpy(m->labels[1].value, "z_1.a-b");
	m->nlabels = 2;
	m->registered = 1700000000;
	m->updated = 1700000123;
	strcpy(m->devices[0].name, "rxe0");
	m->devices[0].numa_node = 1;
	strcpy(m->devices[0].addr, "10.0.0.1");
	m->devices[0].pool_bytes = 1ull << 39;
	m->devices[0].free_bytes = (1ull << 39) - 4096;
	m->devices[0].largest_free = 1ull << 38;
	strcpy(m->devices[1].name, "mlx5_1");
	m->devices[1].numa_node = -1;
	m->devices[1].pool_bytes = 1ull << 39;
	m->devices[1].free_bytes = 1ull << 39;
	m->devices[1].largest_free = 1ull << 39;
	m->ndevices = 2;
}

/* same -- a and b hold the same record, field by field. */
static void same(const struct rmp_member *a, const struct rmp_member *b)
{
	CHECK_STR(a->node, b->node);
	CHECK_EQ(a->naddrs, b->naddrs);
	for (unsigned i = 0; i < a->naddrs && i < b->naddrs; i++)
		CHECK_STR(a->addrs[i], b->addrs[i]);
	CHECK_EQ(a->port, b->port);
	CHECK_STR(a->device, b->device);
	CHECK_EQ(a->numa_node, b->numa_node);
	CHECK_STR(a->keys_mode, b->keys_mode);
	CHECK_EQ(a->pool_bytes, b->pool_bytes);
	CHECK_EQ(a->free_bytes, b->free_bytes);
	CHECK_EQ(a->largest_free, b->largest_free);
	CHECK_EQ(a->draining, b->draining);
	CHECK_STR(a->version, b->version);
	CHECK_EQ(a->nlabels, b->nlabels);
	for (unsigned i = 0; i < a->nlabels && i < b->nlabels; i++) {
		CHECK_STR(a->labels[i].name, b->labels[i].name);
		CHECK_STR(a->labels[i].value, b->labels[i].value);
	}
	CHECK_EQ(a->registered, b->registered);
	CHECK_EQ(a->updated, b->updated);
	CHECK_EQ(a->ndevices, b->ndevices);
	for (unsigned i = 0; i < a->ndevices && i < b->ndevices; i++) {
		const struct rmp_member_device *x = &a->devices[i],
					       *y = &b->devices[i];

		CHECK_STR(x->name, y->name);
		CHECK_EQ(x->numa_node, y->numa_node);
		CHECK_STR(x->addr, y->addr);
		CHECK_EQ(x->pool_bytes, y->pool_bytes);
		CHECK_EQ(x->free_bytes, y->free_bytes);
		CHECK_EQ(x->largest_free, y->largest_free);
	}
}

/* test_round_trip -- what is encoded decodes to the same record. */
static void test_round_trip(void)
{
	struct rmp_member m, back;
	char err[200] = "";
	char *text;

	full(&m);
	text = rmp_member_encode(&m);
	CHECK(text != NULL);
	if (!text)
		return;
	printf("# %s\n", text);
	CHECK_EQ(rmp_member_decode(text, strlen(text), &back, err,
				   sizeof(err)), 0);
	if (err[0])
		printf("# %s\n", err);
	same(&m, &back);
	CHECK_STR(rmp_member_label(&back, "zone"), "z_1.a-b");
	CHECK(rmp_member_label(&back, "row") == NULL);
	free(text);

	/* the other values of the flags: a known NUMA node, not draining,
	 * no labels, one address */
	m.numa_node = 3;
	m.draining = false;
	m.nlabels = 0;
	m.naddrs = 1;
	m.ndevices = 0;
	text = rmp_member_encode(&m);
	CHECK(text != NULL);
	CHECK_EQ(rmp_member_decode(text, strlen(text), &back, err,
				   sizeof(err)), 0);
	same(&m, &back);
	free(text);

	/* blanks after the object are no garbage; unknown names are
	 * ignored (a newer daemon's fields) */
	text = strdup("{\"node\":\"a\",\"addresses\":[\"1.2.3.4\"],\"port\":1,"
		      "\"pool_bytes\":10,\"free_bytes\":10,\"largest_free\":"
		      "10,\"future\":{\"x\":[1]}}\n ");
	CHECK_EQ(rmp_member_decode(text, strlen(text), &back, err,
				   sizeof(err)), 0);
	CHECK_STR(back.node, "a");
	CHECK_EQ(back.numa_node, -1);
	CHECK(!back.draining);
	CHECK_EQ(back.ndevices, 0); /* an older daemon's record */
	free(text);
}

/* A record refused, with reason in its message; the record is cleared. */
#define REFUSED(text, reason)                                           \
	do {                                                            \
		struct rmp_member m_;                                   \
		char err_[200] = "";                                    \
		const char *t_ = (text);                                \
		memset(&m_, 0x55, sizeof(m_));                          \
		CHECK_EQ(rmp_member_decode(t_, strlen(t_), &m_, err_,   \
					   sizeof(err_)), -EINVAL);     \
		CHECK_HAS(err_, reason);                                \
		CHECK(m_.node[0] == '\0' && m_.naddrs == 0);            \
	} while (0)

/* A valid record with one field replaced: HEAD, then field, then TAIL. */
#define HEAD "{\"node\":\"n1\","
#define ADDRS "\"addresses\":[\"10.0.0.1\"],"
#define PORT "\"port\":7471,"
#define FIGS "\"pool_bytes\":1000,\"free_bytes\":500,\"largest_free\":400"
#define D1 "{\"name\":\"d\",\"pool_bytes\":1,\"free_bytes\":1," \
	   "\"largest_free\":1}"

/* test_refused -- each way a record is wrong, refused with its reason. */
static void test_refused(void)
{
	char text[4096];
	size_t n;

	/* the valid base these variants break decodes */
	REFUSED("{\"node\":\"n1\"}", "addresses");
	{
		struct rmp_member m;
		char err[200];
		const char *ok = HEAD ADDRS PORT FIGS "}";

		CHECK_EQ(rmp_member_decode(ok, strlen(ok), &m, err,
					   sizeof(err)), 0);
	}
	/* not JSON, not an object, trailing garbage */
	REFUSED("", "not a JSON object");
	REFUSED("hello", "not a JSON object");
	REFUSED("[1,2]", "not a JSON object");
	REFUSED(HEAD ADDRS PORT FIGS, "not a JSON object"); /* unclosed */
	REFUSED(HEAD ADDRS PORT FIGS "} x", "not a JSON object");
	REFUSED(HEAD ADDRS PORT FIGS "}{}", "not a JSON object");
	/* wrong types */
	REFUSED("{\"node\":5," ADDRS PORT FIGS "}", "node");
	REFUSED(HEAD "\"addresses\":\"10.0.0.1\"," PORT FIGS "}",
		"addresses");
	REFUSED(HEAD "\"addresses\":[1]," PORT FIGS "}", "addresses");
	REFUSED(HEAD ADDRS "\"port\":\"7471\"," FIGS "}", "port");
	REFUSED(HEAD ADDRS PORT "\"pool_bytes\":\"1000\",\"free_bytes\":500,"
		"\"largest_free\":400}", "pool_bytes");
	REFUSED(HEAD ADDRS PORT FIGS ",\"draining\":\"yes\"}", "draining");
	REFUSED(HEAD ADDRS PORT FIGS ",\"device\":5}", "device");
	REFUSED(HEAD ADDRS PORT FIGS ",\"labels\":[\"rack=1\"]}", "labels");
	REFUSED(HEAD ADDRS PORT FIGS ",\"labels\":{\"rack\":1}}", "labels");
	/* figures that disagree, or negative */
	REFUSED(HEAD ADDRS PORT "\"pool_bytes\":1000,\"free_bytes\":1001,"
		"\"largest_free\":400}", "largest <= free <= pool");
	REFUSED(HEAD ADDRS PORT "\"pool_bytes\":1000,\"free_bytes\":500,"
		"\"largest_free\":501}", "largest <= free <= pool");
	REFUSED(HEAD ADDRS PORT "\"pool_bytes\":-1,\"free_bytes\":0,"
		"\"largest_free\":0}", "largest <= free <= pool");
	/* devices: a list of named devices with their figures */
	REFUSED(HEAD ADDRS PORT FIGS ",\"devices\":{}}", "devices");
	REFUSED(HEAD ADDRS PORT FIGS ",\"devices\":[1]}", "devices: entry 0");
	REFUSED(HEAD ADDRS PORT FIGS ",\"devices\":[{\"pool_bytes\":1,"
		"\"free_bytes\":1,\"largest_free\":1}]}", "no name");
	REFUSED(HEAD ADDRS PORT FIGS ",\"devices\":[{\"name\":\"d\","
		"\"address\":\"host\",\"pool_bytes\":1,\"free_bytes\":1,"
		"\"largest_free\":1}]}", "not numeric");
	REFUSED(HEAD ADDRS PORT FIGS ",\"devices\":[{\"name\":\"d\","
		"\"pool_bytes\":1,\"free_bytes\":2,\"largest_free\":1}]}",
		"entry 0: not figures");
	REFUSED(HEAD ADDRS PORT FIGS ",\"devices\":[" D1 "," D1 "," D1 "," D1
		"," D1 "," D1 "," D1 "," D1 "," D1 "]}", "at most 8");
	/* a bad node name */
	REFUSED("{\"node\":\"\"," ADDRS PORT FIGS "}", "node: not a node name");
	REFUSED("{\"node\":\"-n1\"," ADDRS PORT FIGS "}", "node: not a node");
	REFUSED("{\"node\":\"a/b\"," ADDRS PORT FIGS "}", "node: not a node");
	REFUSED("{\"node\":\"a\\nb\"," ADDRS PORT FIGS "}", "node: not a node");
	/* 63 bytes are a name, 64 are not */
	{
		struct rmp_member m;
		char err[200];

		snprintf(text, sizeof(text), "{\"node\":\"%0*d\",%s%s%s}", 63,
			 7, ADDRS, PORT, FIGS);
		CHECK_EQ(rmp_member_decode(text, strlen(text), &m, err,
					   sizeof(err)), 0);
		CHECK_EQ(strlen(m.node), 63);
		snprintf(text, sizeof(text), "{\"node\":\"%0*d\",%s%s%s}", 64,
			 7, ADDRS, PORT, FIGS);
		REFUSED(text, "node: not a node");
	}
	REFUSED("{" ADDRS PORT FIGS "}", "node: not a node");
	/* addresses: not numeric, none, too many */
	REFUSED(HEAD "\"addresses\":[\"host.example\"]," PORT FIGS "}",
		"entry 0 is not a numeric address");
	REFUSED(HEAD "\"addresses\":[\"10.0.0.1\",\"10.0.0\"]," PORT FIGS "}",
		"entry 1 is not a numeric address");
	REFUSED(HEAD "\"addresses\":[]," PORT FIGS "}", "addresses: not a list");
	n = (size_t)snprintf(text, sizeof(text), "%s\"addresses\":[", HEAD);
	for (int i = 0; i < RMP_MEMBER_ADDRS_MAX + 1; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "%s\"10.0.0.%d\"", i ? "," : "", i + 1);
	snprintf(text + n, sizeof(text) - n, "],%s%s}", PORT, FIGS);
	REFUSED(text, "addresses: not a list of 1 to 16");
	/* ... while 16 are fine */
	{
		struct rmp_member m;
		char err[200] = "";
		char *cut = strstr(text, ",\"10.0.0.17\"");

		memmove(cut, cut + strlen(",\"10.0.0.17\""),
			strlen(cut + strlen(",\"10.0.0.17\"")) + 1);
		CHECK_EQ(rmp_member_decode(text, strlen(text), &m, err,
					   sizeof(err)), 0);
		CHECK_EQ(m.naddrs, RMP_MEMBER_ADDRS_MAX);
		CHECK_STR(m.addrs[15], "10.0.0.16");
	}
	/* labels: too many, a bad character, a name not starting with a
	 * letter, an empty value, blanks */
	n = (size_t)snprintf(text, sizeof(text), "%s%s%s%s,\"labels\":{",
			     HEAD, ADDRS, PORT, FIGS);
	for (int i = 0; i < RMP_CLUSTER_LABELS_MAX + 1; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "%s\"l%d\":\"v\"", i ? "," : "", i);
	snprintf(text + n, sizeof(text) - n, "}}");
	REFUSED(text, "labels: not an object of at most 16");
	REFUSED(HEAD ADDRS PORT FIGS ",\"labels\":{\"rack\":\"a/b\"}}",
		"labels: \"rack=a/b\" is not NAME=VALUE");
	REFUSED(HEAD ADDRS PORT FIGS ",\"labels\":{\"rack\":\"a=b\"}}",
		"is not NAME=VALUE");
	REFUSED(HEAD ADDRS PORT FIGS ",\"labels\":{\"1rack\":\"a\"}}",
		"is not NAME=VALUE");
	REFUSED(HEAD ADDRS PORT FIGS ",\"labels\":{\"rack\":\"\"}}",
		"is not NAME=VALUE");
	REFUSED(HEAD ADDRS PORT FIGS ",\"labels\":{\"rack\":\"a b\"}}",
		"labels: a label that is not NAME: VALUE");
	REFUSED(HEAD ADDRS PORT FIGS ",\"labels\":{\"ra\\tck\":\"a\"}}",
		"labels: ");
	/* the port: 0, past 65535, negative */
	REFUSED(HEAD ADDRS "\"port\":0," FIGS "}", "port: not 1..65535");
	REFUSED(HEAD ADDRS "\"port\":65536," FIGS "}", "port: not 1..65535");
	REFUSED(HEAD ADDRS "\"port\":-1," FIGS "}", "port: not 1..65535");
	REFUSED(HEAD ADDRS FIGS "}", "port: not 1..65535");
	/* ... and 65535 is one */
	{
		struct rmp_member m;
		char err[200];
		const char *ok = HEAD ADDRS "\"port\":65535," FIGS "}";

		CHECK_EQ(rmp_member_decode(ok, strlen(ok), &m, err,
					   sizeof(err)), 0);
		CHECK_EQ(m.port, 65535);
	}
	/* text longer than a record may be */
	{
		size_t big = 20000;
		char *t = malloc(big + 1);

		memset(t, ' ', big);
		t[big] = '\0';
		memcpy(t, HEAD ADDRS PORT FIGS "}", strlen(HEAD ADDRS PORT
							   FIGS "}"));
		REFUSED(t, "longer than");
		free(t);
	}
}

/* test_endpoints -- the library's URL lists: etcd:// is http, a scheme
 * carries over to the entries after it, and none at all is refused. */
static void test_endpoints(void)
{
	struct rmp_cluster_endpoint eps[RMP_CLUSTER_ENDPOINTS_MAX];
	char why[256] = "";
	unsigned n = 99;

	CHECK_EQ(rmp_cluster_endpoints("etcd://a:1,b:2", eps, &n, why,
				       sizeof(why)), 0);
	CHECK_EQ(n, 2);
	CHECK_STR(eps[0].host, "a");
	CHECK_EQ(eps[0].port, 1);
	CHECK(!eps[0].tls);
	CHECK_STR(eps[1].host, "b");
	CHECK_EQ(eps[1].port, 2);
	CHECK(!eps[1].tls);

	n = 99;
	CHECK_EQ(rmp_cluster_endpoints("https://a:1,b:2", eps, &n, why,
				       sizeof(why)), 0);
	CHECK_EQ(n, 2);
	CHECK(eps[0].tls);
	CHECK(eps[1].tls);
	CHECK_STR(eps[1].host, "b");

	/* each entry takes the scheme just before it */
	n = 99;
	CHECK_EQ(rmp_cluster_endpoints("https://a:1, http://b:2, c:3, "
				       "https://[::1]:4,10.0.0.1:5", eps, &n,
				       why, sizeof(why)), 0);
	CHECK_EQ(n, 5);
	CHECK(eps[0].tls && !eps[1].tls && !eps[2].tls && eps[3].tls &&
	      eps[4].tls);
	CHECK_STR(eps[2].host, "c");
	CHECK_STR(eps[3].host, "::1");
	CHECK_STR(eps[4].host, "10.0.0.1");
	CHECK_EQ(eps[4].port, 5);

	/* no scheme to take */
	why[0] = '\0';
	CHECK_EQ(rmp_cluster_endpoints("a:1", eps, &n, why, sizeof(why)),
		 -EINVAL);
	CHECK_HAS(why, "\"a:1\" is not http://HOST:PORT");
	why[0] = '\0';
	CHECK_EQ(rmp_cluster_endpoints("a:1,etcd://b:2", eps, &n, why,
				       sizeof(why)), -EINVAL);
	CHECK_HAS(why, "\"a:1\" is not");
	/* a later entry's fault is its own */
	why[0] = '\0';
	CHECK_EQ(rmp_cluster_endpoints("etcd://a:1,b", eps, &n, why,
				       sizeof(why)), -EINVAL);
	CHECK_HAS(why, "\"b\" is not");
	why[0] = '\0';
	CHECK_EQ(rmp_cluster_endpoints("etcd://a:1,ftp://b:2", eps, &n, why,
				       sizeof(why)), -EINVAL);
	CHECK_HAS(why, "\"ftp://b:2\" is not");
	why[0] = '\0';
	CHECK_EQ(rmp_cluster_endpoints("etcd://a:1,b:0", eps, &n, why,
				       sizeof(why)), -EINVAL);
	CHECK_HAS(why, "\"b:0\" is not");
}

/* test_etcd_open -- settings refused before any client is made, each
 * saying why (no event loop needed for that). */
static void test_etcd_open(void)
{
	static const struct {
		const char *endpoints, *why;
	} bad[] = {
		{ "", "etcd endpoints: none given" },
		{ " ", "etcd endpoints: none given" },
		{ "a:1", "etcd endpoints: \"a:1\" is not http://HOST:PORT" },
		{ "etcd://h", "etcd endpoints: \"etcd://h\" is not" },
		{ "etcd://a:1,b", "etcd endpoints: \"b\" is not" },
		{ "etcd://a:1,,b:2", "etcd endpoints: empty entry" },
	};
	struct rmp_etcd_settings s = { .timeout_ms = 1000 };
	char err[512];

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s.endpoints = bad[i].endpoints;
		err[0] = '\0';
		errno = 0;
		CHECK(rmp_etcd_open(NULL, &s, err, sizeof(err)) == NULL);
		CHECK_EQ(errno, EINVAL);
		CHECK_HAS(err, bad[i].why);
	}
	s.endpoints = "etcd://a:1";
	s.credentials_file = "/nonexistent/etcd.cred";
	err[0] = '\0';
	CHECK(rmp_etcd_open(NULL, &s, err, sizeof(err)) == NULL);
	CHECK_HAS(err, "etcd credentials: ");
}

int main(void)
{
	test_round_trip();
	test_refused();
	test_endpoints();
	test_etcd_open();
	return check_done();
}
