/* SPDX-License-Identifier: MIT */
/* ec_tags.c -- the sources of a degraded read of a row (ec_tags.h). */
#include <errno.h>

#include "ec_tags.h"

int rmpc_ec_pick(unsigned k, unsigned n, const bool *usable,
		 const uint64_t *tag, unsigned *have)
{
	unsigned usable_n = 0, best = n, best_data = 0;

	for (unsigned i = 0; i < n; i++)
		usable_n += usable[i];
	if (usable_n < k)
		return -EIO;
	/* each tag once, at its lowest usable member i */
	for (unsigned i = 0; i < n; i++) {
		unsigned same = 0, data = 0;
		bool first = usable[i] && !(tag[i] & RMPC_EC_TAG_PENDING);

		for (unsigned j = 0; first && j < i; j++)
			first = !(usable[j] && tag[j] == tag[i]);
		if (!first)
			continue;
		for (unsigned j = i; j < n; j++)
			if (usable[j] && tag[j] == tag[i]) {
				same++;
				data += j < k;
			}
		if (same >= k && (best == n || data > best_data)) {
			best = i;
			best_data = data;
		}
	}
	if (best == n)
		return -EBADMSG;
	/* ascending indexes: data members come first */
	for (unsigned j = best, got = 0; got < k; j++)
		if (usable[j] && tag[j] == tag[best])
			have[got++] = j;
	return (int)k;
}
