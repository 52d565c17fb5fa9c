/* SPDX-License-Identifier: MIT */
/*
 * config_load.c -- read a configuration from a file or a string: lines
 * and sections (inih with a reader of ours, so line numbers are exact and
 * odd bytes are refused), one key at a time through config_value.c, then
 * the rules between keys (config_check.c).
 */
#include "config.h"
#include "config_int.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

/* The sections besides [tenant.NAME]. */
static const char *const sections[] = { "server", "pool", "lease",
					"anonymous", "cluster" };

#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))


/* State of one load: the configuration being built and the text source. */
struct parse {
	struct rmp_config cfg;
	const char *name;        /* FILE in messages */
	char *err;
	size_t errlen;
	unsigned int line;       /* line the reader returned last */
	unsigned int err_line;   /* line of the first error, 0 = none */
	unsigned int seen[CFG_KEYS_MAX]; /* line that set each key, 0 = not yet */
	/* the same for each tenant's keys, and the line of its section */
	unsigned int tseen[RMP_TENANTS_MAX][CFG_TENANT_KEYS_MAX];
	unsigned int tline[RMP_TENANTS_MAX];
	FILE *file;              /* source: a file ... */
	const char *text;        /* ... or a string */
	int read_errno;
};

/* fail -- record "FILE:LINE: ..." unless an earlier error is recorded. */
static void fail(struct parse *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(struct parse *p, const char *fmt, ...)
{
	va_list ap;
	int o;

	if (p->err_line)
		return;
	p->err_line = p->line;
	if (!p->err || !p->errlen)
		return;
	o = snprintf(p->err, p->errlen, "%s:%u: ", p->name, p->line);
	if (o < 0 || (size_t)o >= p->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(p->err + o, p->errlen - (size_t)o, fmt, ap);
	va_end(ap);
}

/* next_char -- the next byte of the source, or EOF at its end/on error. */
static int next_char(struct parse *p)
{
	int ch;

	if (p->text)
		return *p->text ? (unsigned char)*p->text++ : EOF;
	ch = getc(p->file);
	if (ch == EOF && ferror(p->file))
		p->read_errno = errno ? errno : EIO;
	return ch;
}

/* known_section -- s is one of the sections besides [tenant.NAME]. */
static bool known_section(const char *s)
{
	size_t i;

	for (i = 0; i < NSECTIONS; i++)
		if (!strcmp(s, sections[i]))
			return true;
	return false;
}

/*
 * add_tenant -- the [tenant.NAME] header of a new tenant: check the name,
 * that it is new and that there is room. 0 or -EINVAL (error recorded).
 */
static int add_tenant(struct parse *p, const char *name)
{
	struct rmp_tenant_config *t;
	char q[CFG_QUOTE_LEN];
	int i;

	if (!rmp_tenant_name_ok(name)) {
		fail(p, "tenant name %s is not valid (1 to %d of A-Z, a-z, "
		     "0-9, '_', '.' and '-')", cfg_quote(name, q, sizeof(q)),
		     RMP_TENANT_MAX);
		return -EINVAL;
	}
	if (!strcmp(name, "anonymous")) {
		fail(p, "tenant name \"anonymous\" is reserved (anonymous "
		     "clients are set up in [anonymous])");
		return -EINVAL;
	}
	i = cfg_find_tenant(&p->cfg, name);
	if (i >= 0) {
		fail(p, "tenant.%s: duplicate tenant (first defined on line "
		     "%u)", name, p->tline[i]);
		return -EINVAL;
	}
	if (p->cfg.ntenants >= RMP_TENANTS_MAX) {
		fail(p, "tenant.%s: too many tenants (at most %d)", name,
		     RMP_TENANTS_MAX);
		return -EINVAL;
	}
	t = &p->cfg.tenants[p->cfg.ntenants];
	memset(t, 0, sizeof(*t));
	strcpy(t->name, name);
	p->tline[p->cfg.ntenants++] = p->line;
	return 0;
}

/*
 * check_section -- validate a "[name]" line in buf and rewrite it as
 * exactly "[name]\n" so inih sees the trimmed name; a [tenant.NAME]
 * header adds the tenant. 0 or -EINVAL (with the error recorded).
 */
static int check_section(struct parse *p, char *buf)
{
	char q[CFG_QUOTE_LEN];
	char *name = buf + 1, *rb = strchr(buf, ']'), *e, *rest;

	if (!rb) {
		fail(p, "section header lacks ']'");
		return -EINVAL;
	}
	for (rest = rb + 1; isspace((unsigned char)*rest); rest++)
		;
	if (*rest && *rest != ';' && *rest != '#') {
		fail(p, "unexpected text after ']'");
		return -EINVAL;
	}
	*rb = '\0';
	while (isspace((unsigned char)*name))
		name++;
	for (e = rb; e > name && isspace((unsigned char)e[-1]); e--)
		;
	*e = '\0';
	if (!strcmp(name, "quota")) {
		fail(p, "section [quota] was replaced by per-tenant limits: "
		     "bytes and leases in [tenant.NAME] and [anonymous]");
		return -EINVAL;
	}
	if (!strcmp(name, "tenant")) {
		fail(p, "section [tenant] needs a name: [tenant.NAME]");
		return -EINVAL;
	}
	if (!strncmp(name, TENANT_PFX, TENANT_PFX_LEN)) {
		if (add_tenant(p, name + TENANT_PFX_LEN))
			return -EINVAL;
	} else if (!known_section(name)) {
		fail(p, "unknown section %s (expected server, pool, lease, "
		     "anonymous, cluster or tenant.NAME)", cfg_quote(name, q, sizeof(q)));
		return -EINVAL;
	}
	memmove(buf + 1, name, (size_t)(e - name));
	buf[1 + (e - name)] = ']';
	buf[2 + (e - name)] = '\n';
	buf[3 + (e - name)] = '\0';
	return 0;
}

/*
 * reader -- the ini_reader: one physical line per call, so inih's line
 * numbers are ours. It rejects over-long lines and NUL bytes rather than
 * letting inih split or cut them, drops a UTF-8 BOM and leading
 * whitespace (no continuation lines), checks section headers (inih never
 * reports an empty unknown section) and stops at the first error.
 */
static char *reader(char *buf, int num, void *stream)
{
	struct parse *p = stream;
	size_t n = 0, skip = 0, cap;
	bool too_long = false, nul = false;
	int ch;

	if (p->err_line || p->read_errno || num < 4)
		return NULL;
	cap = (size_t)num - 2; /* room for '\n' and NUL */
	ch = next_char(p);
	if (ch == EOF)
		return NULL;
	p->line++;
	for (; ch != EOF && ch != '\n'; ch = next_char(p)) {
		if (ch == '\0')
			nul = true;
		else if (n < cap)
			buf[n++] = (char)ch;
		else
			too_long = true;
	}
	if (p->read_errno)
		return NULL;
	buf[n] = '\0';
	if (nul) {
		fail(p, "line contains a NUL byte");
		return NULL;
	}
	if (too_long) {
		fail(p, "line is too long (at most %zu characters)", cap);
		return NULL;
	}
	if (p->line == 1 && !strncmp(buf, "\xef\xbb\xbf", 3))
		skip = 3;
	while (isspace((unsigned char)buf[skip]))
		skip++;
	n -= skip;
	memmove(buf, buf + skip, n + 1);
	if (buf[0] == '[' && check_section(p, buf))
		return NULL;
	if (buf[0] != '[') {
		buf[n] = '\n';
		buf[n + 1] = '\0';
	}
	return buf;
}

/* handler -- the ini_handler: one "key = value" in a known section. */
static int handler(void *user, const char *section, const char *name,
		   const char *value)
{
	struct parse *p = user;
	char msg[512], q[CFG_QUOTE_LEN], qname[64];
	const struct key *tab = cfg_keys;
	struct rmp_tenant_config *t = NULL;
	unsigned int *seen = p->seen;
	void *base = &p->cfg;
	size_t i, n = cfg_nkeys;
	int ti;

	if (p->err_line)
		return 0;
	if (!*section) {
		fail(p, "key %s is outside of any section",
		     cfg_quote(name, q, sizeof(q)));
		return 0;
	}
	if (!strncmp(section, TENANT_PFX, TENANT_PFX_LEN)) {
		/* check_section() added it */
		ti = cfg_find_tenant(&p->cfg, section + TENANT_PFX_LEN);
		if (ti < 0) {
			fail(p, "[%s]: no such tenant (bug)", section);
			return 0;
		}
		t = &p->cfg.tenants[ti];
		tab = cfg_tenant_keys;
		n = cfg_ntenant_keys;
		seen = p->tseen[ti];
		base = t;
	}
	for (i = 0; i < n; i++)
		if ((t || !strcmp(section, tab[i].section)) &&
		    !strcmp(name, tab[i].name))
			break;
	if (t)
		snprintf(qname, sizeof(qname), "tenant.%s.%s", t->name,
			 i < n ? tab[i].name : "");
	else
		snprintf(qname, sizeof(qname), "%s",
			 i < n ? tab[i].qname : "");
	if (i == n) {
		fail(p, "unknown key %s in section [%s]",
		     cfg_quote(name, q, sizeof(q)), section);
		return 0;
	}
	if (seen[i]) {
		fail(p, "%s: duplicate key (first set on line %u)", qname,
		     seen[i]);
		return 0;
	}
	if (cfg_parse_value(&tab[i], base, qname, value, msg, sizeof(msg))) {
		fail(p, "%s", msg);
		return 0;
	}
	if (t && t->key_len && t->key_file[0]) {
		fail(p, "tenant.%s: give key or key_file (not both)", t->name);
		return 0;
	}
	seen[i] = p->line;
	return 1;
}

/* key_line -- the line that set key name of section (NULL: of tenant
 * ti), 0 when none did. */
static unsigned int key_line(const struct parse *p, const char *section,
			     int ti, const char *name)
{
	const struct key *tab = section ? cfg_keys : cfg_tenant_keys;
	size_t n = section ? cfg_nkeys : cfg_ntenant_keys;

	for (size_t i = 0; i < n; i++)
		if ((!section || !strcmp(tab[i].section, section)) &&
		    !strcmp(tab[i].name, name))
			return section ? p->seen[i] : p->tseen[ti][i];
	return 0;
}

/* check_leases -- cfg_check_leases for l, said at the line of its leases
 * key (who: "anonymous", or tenant ti's "tenant.NAME"). */
static int check_leases(struct parse *p, const struct rmp_tenant_limits *l,
			const char *who, int ti)
{
	char msg[160];

	if (!cfg_check_leases(&p->cfg, l, who, "", "", msg, sizeof(msg)))
		return 0;
	p->line = key_line(p, ti < 0 ? "anonymous" : NULL, ti, "leases");
	fail(p, "%s", msg);
	return -EINVAL;
}

/* parse_all -- run inih over p's source into p->cfg, then the checks. */
static int parse_all(struct parse *p)
{
	char ebuf[128], who[sizeof(TENANT_PFX) + RMP_TENANT_MAX];
	unsigned int i;
	int ret;

	rmp_config_defaults(&p->cfg);
	ret = ini_parse_stream(reader, p, handler, p);
	if (p->read_errno) {
		cfg_set_err(p->err, p->errlen, "%s: read error: %s", p->name,
			strerror_r(p->read_errno, ebuf, sizeof(ebuf)));
		return -p->read_errno;
	}
	if (ret < 0) {
		/* inih could not allocate its line buffer */
		cfg_set_err(p->err, p->errlen, "%s: out of memory", p->name);
		return -ENOMEM;
	}
	if (ret > 0 && (!p->err_line || (unsigned int)ret < p->err_line)) {
		cfg_set_err(p->err, p->errlen,
			"%s:%d: expected \"key = value\", \"[section]\" or a comment",
			p->name, ret);
		return -EINVAL;
	}
	if (p->err_line)
		return -EINVAL;
	/* before rmp_config_check(), to say the line */
	for (i = 0; i < p->cfg.ntenants; i++) {
		const struct rmp_tenant_config *t = &p->cfg.tenants[i];

		if (!t->key_len && !t->key_file[0]) {
			p->line = p->tline[i];
			fail(p, "tenant.%s: give key or key_file (not both)",
			     t->name);
			return -EINVAL;
		}
		snprintf(who, sizeof(who), TENANT_PFX "%s", t->name);
		if (check_leases(p, &t->limits, who, (int)i))
			return -EINVAL;
	}
	if (check_leases(p, &p->cfg.anonymous.limits, "anonymous", -1))
		return -EINVAL;
	return rmp_config_check(&p->cfg, p->name, p->err, p->errlen);
}

/*
 * load -- parse p's source and publish p->cfg into c on success. Wipes
 * p->cfg, which may hold keys, either way.
 */
static int load(struct rmp_config *c, struct parse *p)
{
	int ret = parse_all(p);

	if (!ret) {
		*c = p->cfg;
		cfg_set_err(p->err, p->errlen, "%s", "");
	}
	rmp_wipe(&p->cfg, sizeof(p->cfg));
	return ret;
}

int rmp_config_load_string(struct rmp_config *c, const char *text,
			   const char *name, char *err, size_t errlen)
{
	struct parse p;

	memset(&p, 0, sizeof(p));
	p.name = name ? name : "<string>";
	p.err = err;
	p.errlen = errlen;
	p.text = text ? text : "";
	return load(c, &p);
}

/*
 * check_inline_keys -- a file that holds a tenant's key inline (key =)
 * must be as closed as a key file: nobody but its owner and group may
 * read it. -EACCES otherwise (a key others may have read is spent).
 */
static int check_inline_keys(const struct rmp_config *c, FILE *f,
			     const char *path, char *err, size_t errlen)
{
	struct stat st;

	for (unsigned i = 0; i < c->ntenants; i++) {
		if (!c->tenants[i].key_len)
			continue;
		if (fstat(fileno(f), &st))
			return -errno;
		if (!(st.st_mode & S_IRWXO))
			return 0;
		cfg_set_err(err, errlen, "%s: tenant.%s.key is inline, but others "
			"may read the file (mode %03o): chmod o-rwx it, "
			"and make a new key, or use key_file", path,
			c->tenants[i].name, (unsigned)(st.st_mode & 0777));
		return -EACCES;
	}
	return 0;
}

int rmp_config_load_file(struct rmp_config *c, const char *path, char *err,
			 size_t errlen)
{
	struct parse p;
	char ebuf[128];
	int ret;

	memset(&p, 0, sizeof(p));
	p.name = path;
	p.err = err;
	p.errlen = errlen;
	p.file = fopen(path, "re");
	if (!p.file) {
		ret = -errno;
		cfg_set_err(err, errlen, "%s: cannot open: %s", path,
			strerror_r(-ret, ebuf, sizeof(ebuf)));
		return ret;
	}
	ret = load(c, &p);
	if (ret == 0)
		ret = check_inline_keys(c, p.file, path, err, errlen);
	fclose(p.file);
	return ret;
}
