/* SPDX-License-Identifier: MIT */
/* etcd_fixture.c -- a real etcd for the tests of suite 'etcd'. */
#include "etcd_fixture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long etcd may take to answer after it was started. */
#define START_MS 15000

void fixture_skip_without_etcd(void)
{
	if (system("command -v etcd >/dev/null && command -v etcdctl "
		   ">/dev/null")) {
		printf("1..0 # SKIP etcd or etcdctl not installed (apt-get "
		       "install etcd-server etcd-client)\n");
		exit(77);
	}
}

/* bound_socket -- a TCP socket bound to a free loopback port. */
static int bound_socket(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &len)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

uint16_t fixture_free_port(void)
{
	uint16_t port = 0;
	int fd = bound_socket(&port);

	if (fd >= 0)
		close(fd);
	return port;
}

int fixture_silent_listener(uint16_t *port)
{
	int fd = bound_socket(port);

	if (fd >= 0 && listen(fd, 16)) {
		close(fd);
		return -1;
	}
	return fd;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* tls_args -- etcdctl's options for f's TLS, or "". */
static const char *tls_args(const struct etcd_fixture *f, char *buf,
			    size_t len)
{
	if (!f->tls)
		return "";
	snprintf(buf, len, "--cacert=%s/ca.pem --cert=%s/client.pem "
		 "--key=%s/client.key", f->dir, f->dir, f->dir);
	return buf;
}

/* make_certs -- a CA, etcd's certificate and a client's, and another CA,
 * in f's directory (openssl's output in dir/openssl.log). */
static bool make_certs(const struct etcd_fixture *f)
{
	static const char script[] =
		"set -e; cd \"$1\"; exec >openssl.log 2>&1; "
		"k=\"-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes\"; "
		"openssl req -x509 $k -keyout ca.key -out ca.pem -days 2 "
		"-subj /CN=rmp-test-ca; "
		"openssl req -x509 $k -keyout other.key -out other.pem -days 2 "
		"-subj /CN=rmp-other-ca; "
		"openssl req $k -keyout server.key -out server.csr -subj /CN=etcd; "
		"echo subjectAltName=IP:127.0.0.1,DNS:localhost >server.ext; "
		"openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key "
		"-CAcreateserial -out server.pem -days 2 -extfile server.ext; "
		"openssl req $k -keyout client.key -out client.csr -subj /CN=rmp; "
		"echo extendedKeyUsage=clientAuth >client.ext; "
		"openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key "
		"-CAcreateserial -out client.pem -days 2 -extfile client.ext; "
		"chmod 600 ./*.key";
	char cmd[sizeof(script) + 128];

	snprintf(cmd, sizeof(cmd), "sh -c '%s' sh '%s'", script, f->dir);
	return system(cmd) == 0;
}

/* answers -- etcd's client port serves /health with "true". */
static bool answers(const struct etcd_fixture *f)
{
	char cmd[512], buf[256] = "", t[300];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), "etcdctl --endpoints=%s %s --dial-timeout=1s "
		 "endpoint health 2>&1", f->url, tls_args(f, t, sizeof(t)));
	p = popen(cmd, "r");
	if (!p)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, p);
	buf[n] = '\0';
	return pclose(p) == 0 && strstr(buf, "is healthy");
}

/* spawn -- etcd on f's ports and directory, its output in dir/log. */
static pid_t spawn(const struct etcd_fixture *f)
{
	char data[96], log[96], listen_c[64], listen_p[64], cluster[96];
	char cert[96], key[96], ca[96];
	pid_t pid = fork();
	int fd;

	if (pid)
		return pid;
	snprintf(cert, sizeof(cert), "%s/server.pem", f->dir);
	snprintf(key, sizeof(key), "%s/server.key", f->dir);
	snprintf(ca, sizeof(ca), "%s/ca.pem", f->dir);
	snprintf(data, sizeof(data), "%s/data", f->dir);
	snprintf(log, sizeof(log), "%s/log", f->dir);
	snprintf(listen_c, sizeof(listen_c), "%s://127.0.0.1:%u",
		 f->tls ? "https" : "http", f->client_port);
	snprintf(listen_p, sizeof(listen_p), "http://127.0.0.1:%u",
		 f->peer_port);
	snprintf(cluster, sizeof(cluster), "default=%s", listen_p);
	fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	if (f->tls)
		execlp("etcd", "etcd", "--data-dir", data,
		       "--listen-client-urls", listen_c,
		       "--advertise-client-urls", listen_c,
		       "--listen-peer-urls", listen_p,
		       "--initial-advertise-peer-urls", listen_p,
		       "--initial-cluster", cluster, "--log-level", "warn",
		       "--cert-file", cert, "--key-file", key,
		       "--trusted-ca-file", ca, "--client-cert-auth",
		       (char *)NULL);
	else
		execlp("etcd", "etcd", "--data-dir", data,
		       "--listen-client-urls", listen_c,
		       "--advertise-client-urls", listen_c,
		       "--listen-peer-urls", listen_p,
		       "--initial-advertise-peer-urls", listen_p,
		       "--initial-cluster", cluster, "--log-level", "warn",
		       f->auth_token ? "--auth-token" : (char *)NULL,
		       f->auth_token, (char *)NULL);
	_exit(127);
}

bool fixture_start(struct etcd_fixture *f)
{
	uint64_t end = now_ms() + START_MS;
	int st;

	if (!f->dir[0]) {
		snprintf(f->dir, sizeof(f->dir), "/tmp/rmp-etcd-XXXXXX");
		if (!mkdtemp(f->dir))
			return false;
		f->client_port = fixture_free_port();
		f->peer_port = fixture_free_port();
		snprintf(f->url, sizeof(f->url), "%s://127.0.0.1:%u",
			 f->tls ? "https" : "http", f->client_port);
		if (f->tls && !make_certs(f)) {
			fprintf(stderr, "openssl failed: see %s/openssl.log\n",
				f->dir);
			return false;
		}
	}
	f->pid = spawn(f);
	if (f->pid < 0)
		return false;
	while (now_ms() < end) {
		if (waitpid(f->pid, &st, WNOHANG) == f->pid) {
			f->pid = 0;
			fprintf(stderr, "etcd exited: see %s/log\n", f->dir);
			return false;
		}
		if (answers(f))
			return true;
		usleep(100 * 1000);
	}
	return false;
}

void fixture_kill(struct etcd_fixture *f)
{
	if (f->pid > 0) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
	}
	f->pid = 0;
}

void fixture_stop(struct etcd_fixture *f)
{
	char cmd[96];

	fixture_kill(f);
	if (f->dir[0] && !getenv("RMP_KEEP_ETCD")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", f->dir);
	}
}

void fixture_pause(struct etcd_fixture *f)
{
	if (f->pid > 0)
		kill(f->pid, SIGSTOP);
}

void fixture_resume(struct etcd_fixture *f)
{
	if (f->pid > 0)
		kill(f->pid, SIGCONT);
}

/* write_all -- all of buf to fd; false when it broke. */
static bool write_all(int fd, const char *buf, ssize_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, buf, (size_t)n);

		if (w <= 0)
			return false;
		buf += w;
		n -= w;
	}
	return true;
}

/* relay -- bytes both ways between a and b until one side ends. */
static void relay(int a, int b)
{
	struct pollfd p[2] = { { .fd = a, .events = POLLIN },
			       { .fd = b, .events = POLLIN } };
	char buf[16384];

	for (;;) {
		if (poll(p, 2, -1) < 0)
			return;
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(p[i].fd, buf, sizeof(buf));
			if (n <= 0 || !write_all(p[1 - i].fd, buf, n))
				return;
		}
	}
}

/* proxy_serve -- the relay's process: a child for each connection, all
 * in one process group that proxy_kill ends. */
static void proxy_serve(int lfd, uint16_t to_port)
{
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(to_port) };

	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	signal(SIGCHLD, SIG_IGN);
	for (;;) {
		int c = accept(lfd, NULL, NULL), e;

		if (c < 0)
			continue;
		if (fork() == 0) {
			close(lfd);
			e = socket(AF_INET, SOCK_STREAM, 0);
			if (e >= 0 &&
			    !connect(e, (struct sockaddr *)&to, sizeof(to)))
				relay(c, e);
			_exit(0);
		}
		close(c);
	}
}

bool proxy_start(struct etcd_proxy *p, const struct etcd_fixture *f)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	/* the same port again, past the last run's connections */
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(p->port);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&a, &len)) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	p->port = ntohs(a.sin_port);
	snprintf(p->url, sizeof(p->url), "http://127.0.0.1:%u", p->port);
	p->pid = fork();
	if (p->pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* no relay outlives a test */
		proxy_serve(fd, f->client_port);
		_exit(0);
	}
	setpgid(p->pid, p->pid); /* whoever runs first */
	close(fd);
	return p->pid > 0;
}

void proxy_kill(struct etcd_proxy *p)
{
	if (p->pid > 0) {
		kill(-p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
	}
	p->pid = 0;
}

char *fixture_etcdctl(const struct etcd_fixture *f, const char *args)
{
	char cmd[1024], *out = NULL, t[300];
	size_t cap = 0, len = 0, n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ETCDCTL_API=3 etcdctl --endpoints=%s %s %s",
		 f->url, tls_args(f, t, sizeof(t)), args);
	p = popen(cmd, "r");
	if (!p)
		return NULL;
	do {
		if (len + 4096 > cap) {
			char *more = realloc(out, cap += 65536);

			if (!more)
				break;
			out = more;
		}
		n = fread(out + len, 1, cap - len - 1, p);
		len += n;
	} while (n > 0);
	if (out)
		out[len] = '\0';
	if (pclose(p) != 0) {
		free(out);
		return NULL;
	}
	return out;
}
