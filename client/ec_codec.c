/* SPDX-License-Identifier: MIT */
/* ec_codec.c -- the erasure code of an EC lease, by ISA-L (ec_codec.h). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/erasure_code.h>

#include "ec_codec.h"
#include "ec_layout.h"

/* ISA-L's tables: 32 bytes per coefficient. */
#define TBL 32u

/* The decode tables of one pattern: every chunk of the row (k + m rows
 * of the matrix) from the k chunks of have_mask, in ascending order. */
struct pattern {
	uint32_t have_mask;
	unsigned char tbls[TBL * RMPC_EC_K_MAX * RMPC_EC_N_MAX];
};

struct rmpc_ec_code {
	unsigned k, m;
	unsigned char gen[RMPC_EC_N_MAX * RMPC_EC_K_MAX]; /* (k + m) x k */
	unsigned char enc[TBL * RMPC_EC_K_MAX * RMPC_EC_M_MAX];
	pthread_mutex_t lock; /* adds to pat */
	/* pat[0 .. npat) are complete and never change (release/acquire) */
	_Atomic unsigned npat;
	struct pattern *pat[RMPC_EC_PATTERNS_CACHED];
};

static pthread_mutex_t codes_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rmpc_ec_code *codes[RMPC_EC_K_MAX + 1][RMPC_EC_M_MAX + 1];

const struct rmpc_ec_code *rmpc_ec_code_get(unsigned k, unsigned m)
{
	struct rmpc_ec_code *c;

	if (k < RMPC_EC_K_MIN || k > RMPC_EC_K_MAX || m < RMPC_EC_M_MIN ||
	    m > RMPC_EC_M_MAX) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&codes_lock);
	c = codes[k][m];
	if (!c && (c = calloc(1, sizeof(*c)))) {
		c->k = k;
		c->m = m;
		gf_gen_cauchy1_matrix(c->gen, (int)(k + m), (int)k);
		ec_init_tables((int)k, (int)m, c->gen + k * k, c->enc);
		pthread_mutex_init(&c->lock, NULL);
		codes[k][m] = c;
	}
	pthread_mutex_unlock(&codes_lock);
	if (!c)
		errno = ENOMEM;
	return c;
}

uint8_t rmpc_ec_coef(const struct rmpc_ec_code *c, unsigned row,
		     unsigned col)
{
	return c->gen[row * c->k + col];
}

void rmpc_ec_encode(const struct rmpc_ec_code *c, size_t len,
		    uint8_t *const *data, uint8_t *const *parity)
{
	ec_encode_data((int)len, (int)c->k, (int)c->m,
		       (unsigned char *)c->enc, (unsigned char **)data,
		       (unsigned char **)parity);
}

void rmpc_ec_update(const struct rmpc_ec_code *c, size_t len, unsigned i,
		    const uint8_t *delta, uint8_t *const *parity)
{
	ec_encode_data_update((int)len, (int)c->k, (int)c->m, (int)i,
			      (unsigned char *)c->enc, (unsigned char *)delta,
			      (unsigned char **)parity);
}

/* make_pattern -- the tables giving every chunk from the k chunks of
 * have_mask: the inverse of the generator's rows of those chunks, then
 * each parity row times it. */
static int make_pattern(const struct rmpc_ec_code *c, uint32_t have_mask,
			struct pattern *p)
{
	unsigned k = c->k, n = c->k + c->m, r = 0;
	unsigned char b[RMPC_EC_K_MAX * RMPC_EC_K_MAX];
	unsigned char inv[RMPC_EC_K_MAX * RMPC_EC_K_MAX];
	unsigned char all[RMPC_EC_N_MAX * RMPC_EC_K_MAX];

	for (unsigned i = 0; i < n; i++)
		if (have_mask & (1u << i))
			memcpy(b + k * r++, c->gen + k * i, k);
	if (gf_invert_matrix(b, inv, (int)k)) /* never, for a Cauchy code */
		return -EINVAL;
	memcpy(all, inv, k * k);
	for (unsigned w = k; w < n; w++)
		for (unsigned j = 0; j < k; j++) {
			unsigned char s = 0;

			for (unsigned t = 0; t < k; t++)
				s ^= gf_mul(c->gen[w * k + t], inv[t * k + j]);
			all[w * k + j] = s;
		}
	p->have_mask = have_mask;
	ec_init_tables((int)k, (int)n, all, p->tbls);
	return 0;
}

/* find_pattern -- the cached pattern of have_mask, or NULL. */
static const struct pattern *find_pattern(const struct rmpc_ec_code *c,
					  uint32_t have_mask)
{
	unsigned n = atomic_load_explicit(&((struct rmpc_ec_code *)c)->npat,
					  memory_order_acquire);

	for (unsigned i = 0; i < n; i++)
		if (c->pat[i]->have_mask == have_mask)
			return c->pat[i];
	return NULL;
}

/* keep_pattern -- p in the cache, when it has room and lacks it. */
static void keep_pattern(const struct rmpc_ec_code *cc,
			 const struct pattern *p)
{
	struct rmpc_ec_code *c = (struct rmpc_ec_code *)cc;
	unsigned n;

	pthread_mutex_lock(&c->lock);
	n = atomic_load_explicit(&c->npat, memory_order_relaxed);
	if (n < RMPC_EC_PATTERNS_CACHED && !find_pattern(c, p->have_mask) &&
	    (c->pat[n] = malloc(sizeof(*p)))) {
		memcpy(c->pat[n], p, sizeof(*p));
		atomic_store_explicit(&c->npat, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&c->lock);
}

int rmpc_ec_decode(const struct rmpc_ec_code *c, size_t len,
		   const unsigned *have, uint8_t *const *src,
		   unsigned nwant, const unsigned *want, uint8_t *const *out)
{
	unsigned k = c->k, n = c->k + c->m;
	uint32_t mask = 0;
	unsigned char *sorted[RMPC_EC_K_MAX];
	unsigned char tbls[TBL * RMPC_EC_K_MAX * RMPC_EC_N_MAX];
	struct pattern local;
	const struct pattern *p;

	if (nwant > n || len > INT_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < k; i++) {
		if (have[i] >= n || mask & (1u << have[i]))
			return -EINVAL;
		mask |= 1u << have[i];
	}
	for (unsigned i = 0; i < nwant; i++)
		if (want[i] >= n)
			return -EINVAL;
	/* the sources in ascending index order, as the pattern's rows */
	for (unsigned i = 0, r = 0; i < n; i++)
		for (unsigned j = 0; j < k && mask & (1u << i); j++)
			if (have[j] == i) {
				sorted[r++] = src[j];
				break;
			}
	if (!(p = find_pattern(c, mask))) {
		int err = make_pattern(c, mask, &local);

		if (err)
			return err;
		keep_pattern(c, &local);
		p = &local;
	}
	/* the wanted rows' tables side by side: one pass over the sources */
	for (unsigned i = 0; i < nwant; i++)
		memcpy(tbls + TBL * k * i, p->tbls + TBL * k * want[i], TBL * k);
	if (nwant)
		ec_encode_data((int)len, (int)k, (int)nwant, tbls, sorted,
			       (unsigned char **)out);
	return 0;
}
