/* SPDX-License-Identifier: MIT */
/*
 * etcd_fixture.h -- a real etcd for a test: started on free loopback
 * ports in a temporary directory, stopped (and the directory removed)
 * at the end, killed and started again on the same ports and data for
 * outages; etcdctl for reading back what the code under test wrote.
 * Every call here blocks: it is the test's side, not the daemon's.
 */
#ifndef RMP_ETCD_FIXTURE_H
#define RMP_ETCD_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct etcd_fixture {
	char dir[64];         /* the temporary directory */
	uint16_t client_port, peer_port;
	char url[64];         /* http://127.0.0.1:PORT */
	pid_t pid;            /* 0: not running */
	/* Set before the first fixture_start: etcd serves https with a
	 * certificate for 127.0.0.1 and localhost, signed by dir/ca.pem,
	 * and asks clients for one (dir/client.pem, client.key, mode
	 * 600); dir/other.pem is a CA that signed none of them. */
	bool tls;
	/* Set before the first fixture_start: etcd's --auth-token (e.g.
	 * "jwt,pub-key=...,priv-key=...,sign-method=RS256"); NULL: simple
	 * tokens. Not with tls. */
	const char *auth_token;
};

/* fixture_skip_without_etcd -- exit 77 (skip) when etcd is not installed. */
void fixture_skip_without_etcd(void);
/* fixture_start -- etcd up and answering (new directory on first call,
 * the same data and ports after fixture_kill). false on failure. */
bool fixture_start(struct etcd_fixture *f);
/* fixture_kill -- SIGKILL etcd and wait for it (an outage). */
void fixture_kill(struct etcd_fixture *f);
/* fixture_stop -- kill etcd and remove its directory. */
void fixture_stop(struct etcd_fixture *f);
/* fixture_free_port -- a loopback port nothing listens on now. */
uint16_t fixture_free_port(void);
/* fixture_silent_listener -- a loopback socket that accepts connections
 * (in the kernel's backlog) and never answers; its fd, *port its port. */
int fixture_silent_listener(uint16_t *port);
/* fixture_pause, fixture_resume -- SIGSTOP and SIGCONT etcd: it takes
 * connections (the kernel's backlog) and answers nothing until resumed,
 * its leases' clocks running on (a hung etcd). */
void fixture_pause(struct etcd_fixture *f);
void fixture_resume(struct etcd_fixture *f);

/*
 * A TCP relay from a loopback port to etcd's client port, in a child
 * process: killed, whoever uses its url cannot reach etcd (connections
 * refused at once) while etcd itself runs on and its leases expire (a
 * partition, which killing etcd is not: a restarted etcd gives every
 * lease its full ttl again); started again on the same port.
 */
struct etcd_proxy {
	uint16_t port;
	char url[64];         /* http://127.0.0.1:PORT */
	pid_t pid;            /* 0: not running */
};

/* proxy_start -- the relay to f up (a new port on first call, the same
 * one after proxy_kill). false on failure. */
bool proxy_start(struct etcd_proxy *p, const struct etcd_fixture *f);
/* proxy_kill -- the relay and every connection through it gone. */
void proxy_kill(struct etcd_proxy *p);

/* fixture_etcdctl -- run "etcdctl --endpoints=URL ARGS" (ARGS a shell
 * word list) and return its stdout (malloc'ed; NULL on failure). */
char *fixture_etcdctl(const struct etcd_fixture *f, const char *args);

#endif /* RMP_ETCD_FIXTURE_H */
