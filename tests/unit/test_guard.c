/* SPDX-License-Identifier: MIT */
/* test_guard.c -- the guard: failures per peer block and per tenant name
 * from a block, their cool-downs, and the log rate per block. A name that
 * proved its key there is spared the block's cool-down. */
#include "check.h"
#include "guard.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MIN_MS 60000u

/* More than max errors within a minute start one cool-down. */
static void test_threshold(void)
{
	struct rmp_guard *g = rmp_guard_new(8);
	bool started;
	unsigned n = 0;

	CHECK(g != NULL);
	for (unsigned i = 1; i <= 5; i++) {
		n = rmp_guard_note(g, "192.0.2.7", NULL, 1000 + i, 5, 30000, &started);
		CHECK(!started);
	}
	CHECK_EQ(n, 5);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.7", NULL, 2000), 0);
	n = rmp_guard_note(g, "192.0.2.7", NULL, 2000, 5, 30000, &started);
	CHECK_EQ(n, 6);
	CHECK(started);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.7", NULL, 2000), 30000);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.7", NULL, 31999), 1);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.7", NULL, 32000), 0);
	/* Further errors during the cool-down do not restart it. */
	rmp_guard_note(g, "192.0.2.7", NULL, 3000, 5, 30000, &started);
	CHECK(!started);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.7", NULL, 3000), 29000);
	/* Other addresses are not affected. */
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.8", NULL, 3000), 0);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.70", NULL, 3000), 0);
	rmp_guard_free(g);
}

/* Errors spread over more than a minute never add up. */
static void test_window(void)
{
	struct rmp_guard *g = rmp_guard_new(8);
	bool started, ever = false;

	for (unsigned i = 0; i < 100; i++) {
		rmp_guard_note(g, "198.51.100.1", NULL, (uint64_t)i * (MIN_MS / 4),
			       5, 30000, &started);
		ever |= started;
	}
	CHECK(!ever);
	/* 0 = never refuse, however many. */
	for (unsigned i = 0; i < 1000; i++) {
		rmp_guard_note(g, "198.51.100.2", NULL, 5, 0, 30000, &started);
		ever |= started;
	}
	CHECK(!ever);
	CHECK_EQ(rmp_guard_refusing(g, "198.51.100.2", NULL, 5), 0);
	rmp_guard_free(g);
}

/* With more addresses than slots, the least recently seen is dropped:
 * here not the one cooling down, which was seen last but one. */
static void test_eviction(void)
{
	struct rmp_guard *g = rmp_guard_new(2);
	bool started;

	for (unsigned i = 0; i < 3; i++)
		rmp_guard_note(g, "203.0.113.1", NULL, 100 + i, 2, 60000, &started);
	CHECK(started);
	rmp_guard_note(g, "203.0.113.2", NULL, 200, 2, 60000, &started);
	rmp_guard_note(g, "203.0.113.1", NULL, 300, 2, 60000, &started);
	rmp_guard_note(g, "203.0.113.3", NULL, 400, 2, 60000, &started);
	CHECK(rmp_guard_refusing(g, "203.0.113.1", NULL, 500) > 0);
	rmp_guard_free(g);
}

/* A block that is cooling down keeps its slot however many new blocks
 * come: here 3 slots, one cooling, 100 other blocks with errors after. */
static void test_eviction_keeps_cooldown(void)
{
	struct rmp_guard *g = rmp_guard_new(3);
	char ip[32];
	bool started;

	for (unsigned i = 0; i < 3; i++)
		rmp_guard_note(g, "203.0.113.9", NULL, 100 + i, 2, 60000, &started);
	CHECK(started);
	for (unsigned i = 0; i < 100; i++) {
		snprintf(ip, sizeof(ip), "198.51.100.%u", i);
		rmp_guard_note(g, ip, NULL, 1000 + i, 2, 60000, &started);
	}
	CHECK_EQ(rmp_guard_refusing(g, "203.0.113.9", NULL, 2000), 58102);
	/* With every slot cooling, the cool-down that ends first goes. */
	for (unsigned i = 0; i < 3; i++) {
		rmp_guard_note(g, "192.0.2.1", NULL, 3000 + i, 2, 60000, &started);
		rmp_guard_note(g, "192.0.2.2", NULL, 3000 + i, 2, 60000, &started);
	}
	CHECK(rmp_guard_refusing(g, "192.0.2.1", NULL, 4000) > 0);
	CHECK(rmp_guard_refusing(g, "192.0.2.2", NULL, 4000) > 0);
	CHECK(rmp_guard_refusing(g, "203.0.113.9", NULL, 4000) > 0);
	for (unsigned i = 0; i < 3; i++)
		rmp_guard_note(g, "192.0.2.3", NULL, 5000 + i, 2, 60000, &started);
	CHECK_EQ(rmp_guard_refusing(g, "203.0.113.9", NULL, 5010), 0);
	CHECK(rmp_guard_refusing(g, "192.0.2.1", NULL, 5010) > 0);
	CHECK(rmp_guard_refusing(g, "192.0.2.3", NULL, 5010) > 0);
	rmp_guard_free(g);
}

static void check_block(const char *ip, const char *want)
{
	char out[RMP_PEER_BLOCK_LEN];

	rmp_peer_block(ip, out, sizeof(out));
	CHECK_STR(out, want);
}

/* IPv4 counts per address, IPv6 per /64, v4-mapped as IPv4. */
static void test_block(void)
{
	check_block("192.0.2.7", "192.0.2.7");
	check_block("2001:db8:1:2::1", "2001:db8:1:2::/64");
	check_block("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64");
	check_block("2001:DB8:1:2:0:0:0:9", "2001:db8:1:2::/64");
	check_block("2001:db8:1:3::1", "2001:db8:1:3::/64");
	check_block("::ffff:192.0.2.7", "192.0.2.7");
	check_block("fe80::1", "fe80::/64");
	check_block("not an address", "not an address");
}

/* Errors from many addresses of one /64 add up to one cool-down that
 * refuses the whole /64 and nothing beside it. */
static void test_ipv6_block(void)
{
	struct rmp_guard *g = rmp_guard_new(8);
	bool started = false;
	char ip[64];

	for (unsigned i = 1; i <= 6; i++) {
		snprintf(ip, sizeof(ip), "2001:db8:7:7::%x", i);
		CHECK(!started);
		rmp_guard_note(g, ip, NULL, 100 + i, 5, 30000, &started);
	}
	CHECK(started);
	CHECK(rmp_guard_refusing(g, "2001:db8:7:7:1234::99", NULL, 200) > 0);
	CHECK_EQ(rmp_guard_refusing(g, "2001:db8:7:8::1", NULL, 200), 0);
	rmp_guard_free(g);
}

/* Log lines about one block: a burst per window, then counted; the next
 * window's first line gets the count, once; other blocks are apart. */
static void test_log_rate(void)
{
	struct rmp_guard *g = rmp_guard_new(8);
	unsigned logged = 0, suppressed = 99, i;

	for (i = 0; i < 25; i++)
		logged += rmp_guard_may_log(g, "192.0.2.7", 1000 + i, false,
					    &suppressed);
	CHECK_EQ(logged, RMP_GUARD_LOG_BURST);
	CHECK_EQ(suppressed, 0);
	/* Two addresses of one /64 share a budget. */
	for (i = 0; i < RMP_GUARD_LOG_BURST; i++)
		CHECK(rmp_guard_may_log(g, "2001:db8::1", 1100, false,
					&suppressed));
	CHECK(!rmp_guard_may_log(g, "2001:db8::2", 1100, false, &suppressed));
	/* Another address has its own. */
	CHECK(rmp_guard_may_log(g, "192.0.2.8", 1100, false, &suppressed));
	CHECK_EQ(suppressed, 0);
	/* The next window: allowed again, with the count of the last. */
	CHECK(rmp_guard_may_log(g, "192.0.2.7",
				1000 + RMP_GUARD_LOG_WINDOW_MS, false,
				&suppressed));
	CHECK_EQ(suppressed, 25 - RMP_GUARD_LOG_BURST);
	CHECK(rmp_guard_may_log(g, "192.0.2.7",
				1001 + RMP_GUARD_LOG_WINDOW_MS, false,
				&suppressed));
	CHECK_EQ(suppressed, 0);
	/* Audit lines of failures have a budget of their own: the other
	 * lines used theirs up, and still the first audit lines go out;
	 * then they are counted too. */
	for (i = 0; i < 25; i++)
		rmp_guard_may_log(g, "192.0.2.9", 3000, false, &suppressed);
	for (i = logged = 0; i < 25; i++)
		logged += rmp_guard_may_log(g, "192.0.2.9", 3000, true,
					    &suppressed);
	CHECK_EQ(logged, RMP_GUARD_LOG_BURST);
	CHECK(rmp_guard_may_log(g, "192.0.2.9",
				3000 + RMP_GUARD_LOG_WINDOW_MS, true,
				&suppressed));
	CHECK_EQ(suppressed, 2 * (25 - RMP_GUARD_LOG_BURST));
	rmp_guard_free(g);
}

/* Failed proofs cool down the tenant name they named from that block:
 * other tenant names from the block, the block as a whole and the same
 * name from another block are not refused; a block's own cool-down
 * refuses every name from it. */
static void test_tenant_subject(void)
{
	struct rmp_guard *g = rmp_guard_new(8);
	bool started = false;
	unsigned i, n = 0;

	for (i = 0; i < 3; i++)
		n = rmp_guard_note(g, "192.0.2.21", "a", 100 + i, 2, 60000,
				   &started);
	CHECK_EQ(n, 3);
	CHECK(started);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.21", "a", 200), 59902);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.21", "b", 200), 0);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.21", "", 200), 0);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.21", NULL, 200), 0);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.22", "a", 200), 0);
	/* Anonymous ("") is a name of its own, not the block. */
	CHECK_EQ(rmp_guard_note(g, "192.0.2.21", "", 300, 2, 60000, &started),
		 1);
	CHECK(!started);
	/* The block's count is apart from its names'. */
	CHECK_EQ(rmp_guard_note(g, "192.0.2.21", NULL, 400, 2, 60000,
				&started), 1);
	for (i = 0; i < 2; i++)
		rmp_guard_note(g, "192.0.2.21", NULL, 500 + i, 2, 60000,
			       &started);
	CHECK(started);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.21", "b", 600), 59901);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.21", NULL, 600), 59901);
	rmp_guard_free(g);

	/* A full table gives up a tenant name's slot before a block's, even
	 * a more recent one: names cannot push a block's count out. */
	g = rmp_guard_new(2);
	for (i = 0; i < 2; i++)
		rmp_guard_note(g, "198.51.100.9", NULL, 100 + i, 2, 60000,
			       &started);
	rmp_guard_note(g, "192.0.2.30", "n1", 200, 2, 60000, &started);
	rmp_guard_note(g, "192.0.2.30", "n2", 300, 2, 60000, &started);
	/* The block's count survived: one more error cools it down. */
	rmp_guard_note(g, "198.51.100.9", NULL, 400, 2, 60000, &started);
	CHECK(started);
	rmp_guard_free(g);
}

/*
 * A tenant name that proved its key from a block is not refused by the
 * cool-down of any name from that block (failed proofs under many
 * names) for RMP_GUARD_PROVEN_MS; its own name's cool-down still refuses
 * it, and so does the block's (access errors); anonymous proves nothing;
 * other names, known or not, get the any-name cool-down alike; another
 * block's proof counts nothing here. With more subjects than slots, a
 * guesser's new names do not push the proven name out.
 */
static void test_proven(void)
{
	struct rmp_guard *g = rmp_guard_new(8);
	char name[16];
	bool started = false;
	unsigned i;

	rmp_guard_proven(g, "192.0.2.30", "a", 1000);
	rmp_guard_proven(g, "192.0.2.30", "", 1000);   /* nothing */
	rmp_guard_proven(g, "192.0.2.31", "b", 1000);  /* another block */
	for (i = 0; i < 3; i++)
		rmp_guard_note(g, "192.0.2.30", RMP_GUARD_ANY_NAME, 2000 + i,
			       2, 60000, &started);
	CHECK(started);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.30", "a", 3000), 0);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.30", "b", 3000), 59002);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.30", "zz", 3000), 59002);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.30", "", 3000), 59002);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.30", NULL, 3000), 59002);
	/* Its own name's failures refuse it still. */
	for (i = 0; i < 3; i++)
		rmp_guard_note(g, "192.0.2.30", "a", 4000 + i, 2, 60000,
			       &started);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.30", "a", 5000), 59002);
	rmp_guard_free(g);

	/* The block's own cool-down (access errors) refuses it too. */
	g = rmp_guard_new(8);
	rmp_guard_proven(g, "192.0.2.30", "a", 1000);
	for (i = 0; i < 3; i++)
		rmp_guard_note(g, "192.0.2.30", NULL, 2000 + i, 2, 60000,
			       &started);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.30", "a", 3000), 59002);
	rmp_guard_free(g);

	/* The exemption ends RMP_GUARD_PROVEN_MS after the proof. */
	g = rmp_guard_new(8);
	rmp_guard_proven(g, "192.0.2.30", "a", 1000);
	for (i = 0; i < 3; i++)
		rmp_guard_note(g, "192.0.2.30", RMP_GUARD_ANY_NAME,
			       RMP_GUARD_PROVEN_MS, 2, 60000, &started);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.30", "a",
				    RMP_GUARD_PROVEN_MS + 999), 0);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.30", "a",
				    RMP_GUARD_PROVEN_MS + 1000), 59000);
	rmp_guard_free(g);

	/* 4 slots, then 50 new names failing once each from the block. */
	g = rmp_guard_new(4);
	rmp_guard_proven(g, "192.0.2.30", "a", 1000);
	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "n%u", i);
		rmp_guard_note(g, "192.0.2.30", name, 2000 + i, 5, 60000,
			       &started);
		rmp_guard_note(g, "192.0.2.30", RMP_GUARD_ANY_NAME, 2000 + i,
			       20, 60000, &started);
	}
	CHECK(rmp_guard_refusing(g, "192.0.2.30", NULL, 3000) > 0);
	CHECK(rmp_guard_refusing(g, "192.0.2.30", "n49", 3000) > 0);
	CHECK_EQ(rmp_guard_refusing(g, "192.0.2.30", "a", 3000), 0);
	rmp_guard_free(g);
}

int main(void)
{
	test_threshold();
	test_window();
	test_eviction();
	test_eviction_keeps_cooldown();
	test_block();
	test_ipv6_block();
	test_log_rate();
	test_tenant_subject();
	test_proven();
	return check_done();
}
