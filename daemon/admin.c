/* SPDX-License-Identifier: MIT */
/* admin.c -- the admin socket: rmpoolctl's requests, answered in
 * the loop (admin_int.h names the other files). */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <libgen.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <json-c/json.h>

#include "admin.h"
#include "admin_int.h"
#include "log.h"
#include "ops.h"
#include "parse.h"
#include "util.h"

/* ------------------------------------------------------------ replies */

static void conn_free(struct admin_conn *c);

/*
 * linger -- the last reply is out: shut our side and wait for the peer's
 * EOF (or LINGER_S) before closing, so that the reply is not lost to a
 * reset of a peer still writing.
 */
static void linger(struct admin_conn *c)
{
	const struct timeval tv = { LINGER_S, 0 };

	if (c->eof) {
		conn_free(c);
		return;
	}
	if (c->lingering)
		return;
	c->lingering = true;
	shutdown(bufferevent_getfd(c->bev), SHUT_WR);
	bufferevent_disable(c->bev, EV_WRITE);
	bufferevent_set_timeouts(c->bev, &tv, NULL);
	bufferevent_enable(c->bev, EV_READ);
}

/* finish -- no more requests: close once the output is out. */
static void finish(struct admin_conn *c)
{
	c->closing = true;
	free(c->ids);
	c->ids = NULL;
	/* The write callback now comes when the output is empty. */
	bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
	bufferevent_enable(c->bev, EV_WRITE);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		linger(c);
}

static const struct command {
	const char *name;
	void (*fn)(struct admin_conn *c, json_object *req);
	const char *fields[4]; /* the ones it takes besides "command" */
	bool action;           /* changes something: logged at info */
} commands[] = {
	{ "status", adm_cmd_status, { NULL }, false },
	{ "leases", adm_cmd_leases,
	  { "tenant", "client", "expiring_within_ms", NULL }, false },
	{ "show", adm_cmd_show, { "id", NULL }, false },
	{ "revoke", adm_cmd_revoke, { "id", NULL }, true },
	{ "extend", adm_cmd_extend, { "id", "ttl_ms", NULL }, true },
	{ "clients", adm_cmd_clients, { NULL }, false },
	{ "disconnect", adm_cmd_disconnect, { "client", NULL }, true },
	{ "drain", adm_cmd_drain, { NULL }, true },
	{ "undrain", adm_cmd_undrain, { NULL }, true },
	{ "reload", adm_cmd_reload, { NULL }, true },
};

/* unknown_field -- the first key of req the command does not take. */
static const char *unknown_field(const struct command *cmd, json_object *req)
{
	json_object_object_foreach(req, k, v) {
		bool known = !strcmp(k, "command");

		(void)v;
		for (size_t i = 0; !known && cmd->fields[i]; i++)
			known = !strcmp(k, cmd->fields[i]);
		if (!known)
			return k;
	}
	return NULL;
}

/* handle -- one request line (NUL-terminated, n bytes). */
static void handle(struct admin_conn *c, const char *line, size_t n)
{
	const struct command *cmd = NULL;
	enum json_tokener_error jerr;
	json_object *req, *v;
	json_tokener *tok;
	const char *name, *bad;
	size_t end;

	if (strspn(line, " \t\r") == n)
		return; /* a blank line asks nothing */
	tok = json_tokener_new_ex(JSON_DEPTH);
	if (!tok) {
		adm_reply_error(c, ENOMEM, "out of memory");
		return;
	}
	req = json_tokener_parse_ex(tok, line, (int)n);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!req || jerr != json_tokener_success) {
		json_object_put(req);
		adm_reply_error(c, EBADMSG, "not a JSON request (%s): send one "
			    "JSON object per line, e.g. "
			    "{\"command\":\"status\"}",
			    jerr == json_tokener_continue ? "incomplete" :
			    json_tokener_error_desc(jerr));
		return;
	}
	if (strspn(line + end, " \t\r") != n - end) {
		adm_reply_error(c, EBADMSG, "text after the JSON object at byte "
			    "%zu: one request per line", end);
	} else if (!json_object_is_type(req, json_type_object)) {
		adm_reply_error(c, EBADMSG, "a request is a JSON object, e.g. "
			    "{\"command\":\"status\"}");
	} else if (!json_object_object_get_ex(req, "command", &v) ||
		   !json_object_is_type(v, json_type_string)) {
		adm_reply_error(c, EINVAL, "a request needs \"command\", a "
			    "string, e.g. {\"command\":\"status\"}");
	} else {
		name = json_object_get_string(v);
		for (size_t i = 0; i < RMP_ARRAY_SIZE(commands); i++)
			if (!strcmp(name, commands[i].name))
				cmd = &commands[i];
		if (!cmd) {
			adm_reply_error(c, EOPNOTSUPP, "unknown command \"%.64s\": "
				    "see docs/admin.md", name);
		} else if ((bad = unknown_field(cmd, req))) {
			adm_reply_error(c, EINVAL, "%s takes no \"%.64s\"",
				    cmd->name, bad);
		} else {
			if (cmd->action)
				log_info("admin: %s: %.*s", c->who, (int)n,
					 line);
			else
				log_debug("admin: %s: %.*s", c->who, (int)n,
					  line);
			cmd->fn(c, req);
		}
	}
	json_object_put(req);
}

/* ----------------------------------------------------------- the loop */

static void conn_free(struct admin_conn *c)
{
	struct rmp_admin *a = c->a;

	TAILQ_REMOVE(&a->conns, c, link);
	a->nconns--;
	bufferevent_free(c->bev);
	free(c->ids);
	free(c);
}

/*
 * serve -- answer the complete lines that wait, in order, while the
 * output has room and no leases reply is under way; then close if the
 * peer is done and everything is out.
 */
static void serve(struct admin_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct evbuffer *out = bufferevent_get_output(c->bev);
	struct evbuffer_ptr eol;
	size_t n, len;
	char *line;

	while (!c->closing && !c->ids && evbuffer_get_length(out) < OUT_HIGH) {
		len = evbuffer_get_length(in);
		if (c->discarding) {
			eol = evbuffer_search_eol(in, NULL, &n, EVBUFFER_EOL_LF);
			if (eol.pos < 0) {
				evbuffer_drain(in, len);
				break;
			}
			evbuffer_drain(in, (size_t)eol.pos + n);
			c->discarding = false;
			continue;
		}
		line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF);
		if (!line && len > RMP_ADMIN_LINE_MAX) {
			adm_reply_error(c, EMSGSIZE, "request longer than %d "
				    "bytes: refused", RMP_ADMIN_LINE_MAX);
			c->discarding = true;
			continue;
		}
		if (!line && c->eof && len) {
			/* The last request may lack its newline. */
			line = malloc(len + 1);
			if (!line) {
				c->closing = true;
				break;
			}
			evbuffer_remove(in, line, len);
			line[len] = '\0';
			n = len;
		}
		if (!line)
			break;
		if (n > RMP_ADMIN_LINE_MAX)
			adm_reply_error(c, EMSGSIZE, "request longer than %d "
				    "bytes: refused", RMP_ADMIN_LINE_MAX);
		else if (strlen(line) != n)
			adm_reply_error(c, EBADMSG, "a NUL byte in the request");
		else
			handle(c, line, n);
		free(line);
	}
	if (c->closing || (c->eof && !c->ids &&
			   evbuffer_get_length(in) == 0))
		finish(c);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct admin_conn *c = arg;

	if (c->closing) {
		/* Read and drop: closing with unread input resets the peer. */
		evbuffer_drain(bufferevent_get_input(bev),
			       evbuffer_get_length(bufferevent_get_input(bev)));
		return;
	}
	serve(c);
}

static void on_write(struct bufferevent *bev, void *arg)
{
	struct admin_conn *c = arg;

	if (c->closing) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			linger(c);
		return;
	}
	adm_stream_leases(c);
	serve(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct admin_conn *c = arg;

	if ((what & BEV_EVENT_EOF) &&
	    !(what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))) {
		/* The peer is done sending: answer what it sent, then go. */
		c->eof = true;
		if (!c->closing)
			serve(c);
		else if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			conn_free(c);
		return;
	}
	if (c->lingering) {
		conn_free(c); /* the peer's EOF did not come in time */
		return;
	}
	if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_READING) &&
	    (c->ids || evbuffer_get_length(bufferevent_get_output(bev)))) {
		/* Quiet, but reading a reply: not idle. */
		bufferevent_enable(bev, EV_READ);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT)
		log_info("admin: %s: %s: closing", c->who,
			 what & BEV_EVENT_WRITING ? "reads no reply" : "idle");
	else if (what & BEV_EVENT_ERROR)
		log_debug("admin: %s: %s", c->who,
			  evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	conn_free(c);
}

/* in_group -- the peer's groups (SO_PEERGROUPS) include gid. */
static bool in_group(int fd, gid_t gid)
{
	gid_t small[64], *g = small;
	socklen_t len = sizeof(small);
	bool found = false;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) {
		if (errno != ERANGE)
			return false;
		g = malloc(len);
		if (!g || getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) {
			free(g);
			return false;
		}
	}
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		found |= g[i] == gid;
	if (g != small)
		free(g);
	return found;
}

static void on_accept(struct evconnlistener *lsn, evutil_socket_t fd,
		      struct sockaddr *sa, int salen, void *arg)
{
	const struct timeval idle = { IDLE_TIMEOUT_S, 0 },
			     wr = { WRITE_TIMEOUT_S, 0 };
	struct rmp_admin *a = arg;
	struct ucred cr = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
	socklen_t len = sizeof(cr);
	struct admin_conn *c;
	bool allowed;

	(void)lsn;
	(void)sa;
	(void)salen;
	c = calloc(1, sizeof(*c));
	if (c)
		c->bev = bufferevent_socket_new(a->base, fd,
						BEV_OPT_CLOSE_ON_FREE);
	if (!c || !c->bev) {
		log_err("admin: out of memory for a connection");
		free(c);
		close(fd);
		return;
	}
	c->a = a;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len))
		log_warn("admin: SO_PEERCRED: %s", strerror(errno));
	snprintf(c->who, sizeof(c->who), "rmpoolctl uid %u pid %d",
		 (unsigned)cr.uid, (int)cr.pid);
	TAILQ_INSERT_TAIL(&a->conns, c, link);
	a->nconns++;
	bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
	bufferevent_setwatermark(c->bev, EV_READ, 0, IN_HIGH);
	bufferevent_setwatermark(c->bev, EV_WRITE, OUT_LOW, 0);
	bufferevent_set_timeouts(c->bev, &idle, &wr);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);

	allowed = cr.uid == 0 || (a->has_group && (cr.gid == a->gid ||
						   in_group(fd, a->gid)));
	if (!allowed) {
		log_notice("admin: refused %s: %s", c->who, a->deny);
		adm_reply_error(c, EACCES, "%s", a->deny);
		finish(c);
		return;
	}
	if (a->nconns > CONNS_MAX) {
		log_warn("admin: refused %s: %d admin connections already",
			 c->who, CONNS_MAX);
		adm_reply_error(c, EUSERS, "too many admin connections (%d): "
			    "try again later", CONNS_MAX);
		finish(c);
		return;
	}
	log_debug("admin: %s connected", c->who);
}

static void on_pause_over(evutil_socket_t fd, short what, void *arg)
{
	struct rmp_admin *a = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(a->lsn);
}

/* on_accept_error -- out of descriptors, say: pause rather than spin. */
static void on_accept_error(struct evconnlistener *lsn, void *arg)
{
	const struct timeval tv = { ACCEPT_PAUSE_MS / 1000,
				    (ACCEPT_PAUSE_MS % 1000) * 1000 };
	struct rmp_admin *a = arg;
	int err = EVUTIL_SOCKET_ERROR();

	log_warn("admin: accept on %s: %s; pausing %d ms", a->path,
		 evutil_socket_error_to_string(err), ACCEPT_PAUSE_MS);
	evconnlistener_disable(lsn);
	evtimer_add(a->pause_ev, &tv);
}

/* ------------------------------------------------------- the socket */

/* make_dir -- the socket's directory, created (0755) when missing. */
static int make_dir(const char *path)
{
	char buf[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *dir;
	struct stat st;

	rmp_strlcpy(buf, path, sizeof(buf));
	dir = dirname(buf);
	if (!stat(dir, &st))
		return 0;
	if (errno != ENOENT || mkdir(dir, 0755)) {
		log_err("admin socket %s: cannot create its directory %s: %s",
			path, dir, strerror(errno));
		return -errno;
	}
	log_info("admin socket: created directory %s", dir);
	return 0;
}

/*
 * clear_stale -- make room at path: nothing there, or a socket nobody
 * listens on (left by a daemon that died), which is removed. A live
 * socket or another kind of file is left alone: -EADDRINUSE / -EEXIST.
 */
static int clear_stale(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, ret, err;

	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		log_err("admin socket %s: %s", path, strerror(errno));
		return -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		log_err("admin socket %s: a file that is not a socket is in "
			"the way: remove it, or set another admin_socket in "
			"rmpoold.conf", path);
		return -EEXIST;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ret = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	err = errno;
	close(fd);
	if (ret == 0 || err == EAGAIN) {
		log_err("admin socket %s: another process listens on it "
			"(another rmpoold?): stop it, or set another "
			"admin_socket in rmpoold.conf", path);
		return -EADDRINUSE;
	}
	if (err != ECONNREFUSED) {
		log_err("admin socket %s: cannot tell whether it is in use: %s",
			path, strerror(err));
		return -err;
	}
	if (unlink(path) && errno != ENOENT) {
		log_err("admin socket %s: cannot remove the stale socket: %s",
			path, strerror(errno));
		return -errno;
	}
	log_info("admin socket %s: replaced a stale socket", path);
	return 0;
}

/* give_to_group -- chown the socket to the admin group, then 0660. */
static void give_to_group(struct rmp_admin *a)
{
	struct passwd *pw;

	if (chown(a->path, (uid_t)-1, a->gid) == 0) {
		if (chmod(a->path, 0660))
			log_err("admin socket %s: chmod 0660: %s; only root "
				"can use it", a->path, strerror(errno));
		return;
	}
	pw = getpwuid(geteuid());
	log_err("admin socket %s: cannot give it to group %s: %s: the "
		"daemon's user (%s) must be a member of %s; until then only "
		"root can use the admin socket", a->path, a->group,
		strerror(errno), pw ? pw->pw_name : "?", a->group);
}

static int open_socket(struct rmp_admin *a)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st = { 0 };
	mode_t old;
	int fd, ret;

	ret = make_dir(a->path);
	if (!ret)
		ret = clear_stale(a->path);
	if (ret)
		return ret;
	memcpy(sun.sun_path, a->path, strlen(a->path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_err("admin socket: socket: %s", strerror(errno));
		return -errno;
	}
	/* 0600 from its first moment; the group is let in after chown. */
	old = umask(0177);
	ret = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (ret) {
		ret = -errno;
		log_err("admin socket %s: cannot bind: %s", a->path,
			strerror(errno));
		close(fd);
		return ret;
	}
	a->made = !lstat(a->path, &st);
	a->dev = st.st_dev;
	a->ino = st.st_ino;
	if (a->has_group)
		give_to_group(a);
	if (listen(fd, LISTEN_BACKLOG)) {
		ret = -errno;
		log_err("admin socket %s: listen: %s", a->path, strerror(errno));
		close(fd);
		return ret;
	}
	a->lsn = evconnlistener_new(a->base, on_accept, a,
				    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
				    0, fd);
	if (!a->lsn) {
		close(fd);
		return -ENOMEM;
	}
	evconnlistener_set_error_cb(a->lsn, on_accept_error);
	return 0;
}

struct rmp_admin *rmp_admin_new(struct event_base *base, struct rmp_ops *ops,
				const char *path, const char *group)
{
	struct rmp_admin *a;
	struct group *gr;
	int ret;

	if (!path || path[0] != '/') {
		log_err("admin socket %s: not an absolute path",
			path ? path : "(none)");
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		log_err("admin socket: out of memory");
		errno = ENOMEM;
		return NULL;
	}
	a->base = base;
	a->ops = ops;
	TAILQ_INIT(&a->conns);
	if (rmp_strlcpy(a->path, path, sizeof(a->path)) ||
	    rmp_strlcpy(a->group, group ? group : "", sizeof(a->group))) {
		log_err("admin socket %s: path or group name too long", path);
		free(a);
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (a->group[0]) {
		errno = 0;
		gr = getgrnam(a->group);
		if (!gr) {
			log_err("admin_group %s: %s: create the group "
				"(groupadd %s), or leave admin_group empty "
				"for root only", a->group,
				errno ? strerror(errno) : "no such group",
				a->group);
			free(a);
			errno = EINVAL;
			return NULL;
		}
		a->gid = gr->gr_gid;
		a->has_group = true;
		snprintf(a->deny, sizeof(a->deny), "permission denied: only "
			 "root and members of group %s may use the admin "
			 "socket", a->group);
	} else {
		snprintf(a->deny, sizeof(a->deny), "permission denied: only "
			 "root may use the admin socket (admin_group in "
			 "rmpoold.conf can let a group in)");
	}
	a->pause_ev = evtimer_new(base, on_pause_over, a);
	ret = a->pause_ev ? open_socket(a) : -ENOMEM;
	if (ret) {
		rmp_admin_free(a);
		errno = -ret;
		return NULL;
	}
	log_info("admin socket %s, for root%s%s", a->path,
		 a->has_group ? " and group " : " only",
		 a->has_group ? a->group : "");
	return a;
}

void rmp_admin_free(struct rmp_admin *a)
{
	struct stat st;

	if (!a)
		return;
	while (!TAILQ_EMPTY(&a->conns))
		conn_free(TAILQ_FIRST(&a->conns));
	if (a->lsn)
		evconnlistener_free(a->lsn);
	if (a->pause_ev)
		event_free(a->pause_ev);
	/* Only our own socket: another daemon may have taken the path. */
	if (a->made && !lstat(a->path, &st) && st.st_dev == a->dev &&
	    st.st_ino == a->ino && unlink(a->path))
		log_warn("admin socket %s: cannot remove it: %s", a->path,
			 strerror(errno));
	free(a);
}
