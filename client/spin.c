/* SPDX-License-Identifier: MIT */
/* spin.c -- how long a waiting call polls before it sleeps. */
#include "spin.h"
#include "util.h"

uint64_t rmpc_spin_budget_ns(uint64_t avg_ns, uint64_t max_ns,
			     bool minimum_only)
{
	uint64_t want = 2 * avg_ns;

	if (!max_ns)
		return 0;
	if (minimum_only || want > max_ns)
		return RMP_MIN(max_ns, (uint64_t)RMPC_SPIN_MIN_NS);
	return RMP_MAX(want, (uint64_t)RMPC_SPIN_MIN_NS);
}

uint64_t rmpc_spin_avg_ns(uint64_t avg_ns, uint64_t took_ns, uint64_t max_ns)
{
	took_ns = RMP_MIN(took_ns, max_ns);
	return avg_ns ? avg_ns - avg_ns / 8 + took_ns / 8 : took_ns;
}
