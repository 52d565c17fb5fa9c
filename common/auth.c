/* SPDX-License-Identifier: MIT */
/* auth.c -- tenant keys and the connect-time proof (HMAC-SHA256, libsodium). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sodium.h>

#include "auth.h"

/* The proofs' labels, NUL padded to 16 bytes. */
static const char labels[2][16] = {
	[RMP_AUTH_CLIENT] = "rmpool-auth-v5",
	[RMP_AUTH_SERVER] = "rmpool-serv-v5",
};

int rmp_auth_init(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

void rmp_auth_random(void *buf, size_t len)
{
	randombytes_buf(buf, len);
}

/* padded -- s NUL padded to n bytes, cut at n. */
static void padded(const char *s, uint8_t *out, size_t n)
{
	size_t l = strnlen(s, n);

	memset(out, 0, n);
	memcpy(out, s, l);
}

int rmp_auth_endpoint(const struct sockaddr *sa,
		      uint8_t out[RMP_ENDPOINT_LEN])
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	const struct sockaddr_in6 *in6;
	const struct sockaddr_in *in;

	memset(out, 0, RMP_ENDPOINT_LEN);
	if (!sa)
		return -EAFNOSUPPORT;
	switch (sa->sa_family) {
	case AF_INET:
		in = (const struct sockaddr_in *)sa;
		memcpy(out, v4mapped, sizeof(v4mapped));
		memcpy(out + 12, &in->sin_addr, 4);
		memcpy(out + 16, &in->sin_port, 2);
		return 0;
	case AF_INET6:
		/* The scope id is left out: it is local to each side. */
		in6 = (const struct sockaddr_in6 *)sa;
		memcpy(out, &in6->sin6_addr, 16);
		memcpy(out + 16, &in6->sin6_port, 2);
		return 0;
	}
	return -EAFNOSUPPORT;
}

bool rmp_auth_endpoint_local(const uint8_t ep[RMP_ENDPOINT_LEN])
{
	uint8_t have[RMP_ENDPOINT_LEN];
	struct ifaddrs *ifa, *i;
	bool local = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !local; i = i->ifa_next)
		local = !rmp_auth_endpoint(i->ifa_addr, have) &&
			!memcmp(have, ep, RMP_ENDPOINT_LEN - 2);
	freeifaddrs(ifa);
	return local;
}

void rmp_auth_proof(enum rmp_auth_role role, const uint8_t *key,
		    size_t key_len, const uint8_t snonce[RMP_NONCE_LEN],
		    const uint8_t cnonce[RMP_NONCE_LEN], uint8_t version,
		    const char *tenant, const char *name,
		    const uint8_t server[RMP_ENDPOINT_LEN],
		    uint8_t out[RMP_PROOF_LEN])
{
	const char *label = labels[role == RMP_AUTH_SERVER];
	crypto_auth_hmacsha256_state st;
	uint8_t t[RMP_TENANT_MAX], n[RMP_TENANT_MAX];

	padded(tenant, t, sizeof(t));
	padded(name, n, sizeof(n));
	crypto_auth_hmacsha256_init(&st, key, key_len);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)label,
				      sizeof(labels[0]));
	crypto_auth_hmacsha256_update(&st, snonce, RMP_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, cnonce, RMP_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, &version, 1);
	crypto_auth_hmacsha256_update(&st, t, sizeof(t));
	crypto_auth_hmacsha256_update(&st, n, sizeof(n));
	crypto_auth_hmacsha256_update(&st, server, RMP_ENDPOINT_LEN);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

bool rmp_auth_equal(const uint8_t a[RMP_PROOF_LEN],
		    const uint8_t b[RMP_PROOF_LEN])
{
	return crypto_verify_32(a, b) == 0;
}

int rmp_key_parse(const char *text, uint8_t out[RMP_KEY_MAX], size_t *len)
{
	const char *s = text, *end;
	uint8_t buf[RMP_KEY_MAX];
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	end = s;
	while (isxdigit((unsigned char)*end))
		end++;
	for (const char *p = end; *p; p++)
		if (!isspace((unsigned char)*p))
			return -EINVAL;
	if ((end - s) % 2 || (size_t)(end - s) / 2 < RMP_KEY_MIN ||
	    (size_t)(end - s) / 2 > RMP_KEY_MAX)
		return -EINVAL;
	if (sodium_hex2bin(buf, sizeof(buf), s, (size_t)(end - s), NULL, &n,
			   NULL) || n != (size_t)(end - s) / 2) {
		sodium_memzero(buf, sizeof(buf));
		return -EINVAL;
	}
	memcpy(out, buf, n);
	sodium_memzero(buf, sizeof(buf));
	*len = n;
	return 0;
}

/*
 * root_group_read -- st is a key file a process that is not root may use
 * although its group can read it: owned by root (so the process cannot
 * change it), its group the process's effective group, readable by that
 * group only (mode 0640 or 0440). It is how a service running as its own
 * user reads keys an administrator manages: root:rmpool 0640. A process
 * owning the file itself, root included, keeps to 0600.
 */
static bool root_group_read(const struct stat *st)
{
	return st->st_uid == 0 && geteuid() != 0 &&
	       st->st_gid == getegid() &&
	       !(st->st_mode & (S_IWGRP | S_IXGRP | S_IRWXO));
}

/* group_name -- gid's name, or its number when it has none. */
static const char *group_name(gid_t gid, char *buf, size_t len)
{
	struct group gr, *res = NULL;
	char tmp[1024];

	if (!getgrgid_r(gid, &gr, tmp, sizeof(tmp), &res) && res &&
	    strlen(res->gr_name) < len)
		snprintf(buf, len, "%s", res->gr_name);
	else
		snprintf(buf, len, "%u", (unsigned)gid);
	return buf;
}

/*
 * open_secret -- open path as a secret file: a regular file, the
 * caller's own (or root's) with no other access, or root_group_read().
 * The fd, or -errno with the reason and its fix in err.
 */
static int open_secret(const char *path, char *err, size_t errlen)
{
	char grp[64];
	struct stat st;
	int fd, ret;

	/* O_NONBLOCK: a FIFO put at the path must not hang the reader (it
	 * is refused below as not a regular file). */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
		  O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		if (ret == -EACCES)
			snprintf(err, errlen, "%s: %s (this process runs as "
				 "uid %u, group %s: make the file this user's, "
				 "mode 600, or root's with that group, mode "
				 "640)", path, strerror(EACCES),
				 (unsigned)geteuid(),
				 group_name(getegid(), grp, sizeof(grp)));
		else
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
	} else if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen, "%s: owned by uid %u, not by this user "
			 "(uid %u) or root", path, (unsigned)st.st_uid,
			 (unsigned)geteuid());
	} else if ((st.st_mode & (S_IRWXG | S_IRWXO)) && !root_group_read(&st)) {
		if (st.st_uid == 0 && geteuid() != 0)
			snprintf(err, errlen, "%s: readable or writable by "
				 "others; chgrp %s %s && chmod 640 %s (or make "
				 "it this user's, mode 600)", path,
				 group_name(getegid(), grp, sizeof(grp)), path,
				 path);
		else
			snprintf(err, errlen, "%s: readable or writable by "
				 "others; chmod 600 %s", path, path);
	} else {
		return fd;
	}
	close(fd);
	return -EACCES;
}

int rmp_secret_read(const char *path, char *buf, size_t buflen, char *err,
		    size_t errlen)
{
	ssize_t n;
	int fd = open_secret(path, err, errlen), ret = 0;

	if (fd < 0)
		return fd;
	n = read(fd, buf, buflen);
	if (n < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	} else if ((size_t)n >= buflen) {
		/* A full buffer means a longer file. */
		ret = -EINVAL;
		snprintf(err, errlen, "%s: longer than %zu bytes", path,
			 buflen - 1);
	}
	buf[ret ? 0 : n] = '\0';
	close(fd);
	return ret;
}

int rmp_key_load(const char *path, uint8_t out[RMP_KEY_MAX], size_t *len,
		 char *err, size_t errlen)
{
	/* Room for the longest key, its newline and some slack; a longer
	 * file is not a key. */
	char text[2 * RMP_KEY_MAX + 64];
	int ret;

	ret = rmp_secret_read(path, text, sizeof(text), err, errlen);
	if (ret == -EINVAL || !ret)
		ret = rmp_key_parse(text, out, len);
	if (ret == -EINVAL)
		snprintf(err, errlen, "%s: not a key (expected %d to %d hex "
			 "digits)", path, 2 * RMP_KEY_MIN, 2 * RMP_KEY_MAX);
	sodium_memzero(text, sizeof(text));
	return ret;
}

void rmp_key_format(const uint8_t *key, size_t len, char *buf, size_t cap)
{
	sodium_bin2hex(buf, cap, key, len);
}

bool rmp_tenant_name_ok(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (n >= RMP_TENANT_MAX ||
		    !rmp_tenant_char_ok((unsigned char)s[n]))
			return false;
	return n > 0;
}

void rmp_wipe(void *p, size_t len)
{
	sodium_memzero(p, len);
}
