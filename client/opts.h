/* SPDX-License-Identifier: MIT */
/* opts.h -- how a caller's option struct (rmp_*_opts, sized by its first field) is taken in. */
#ifndef RMPC_OPTS_H
#define RMPC_OPTS_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

#define RMPC_OPTS_SIZE_MAX 4096u /* largest option struct size accepted */

/*
 * rmpc_opts_copy -- copy caller options of src_size bytes into dst
 * (dst_size bytes, already holding the defaults). A larger src is accepted
 * only when the bytes we do not know are zero. -EINVAL otherwise.
 */
static inline int rmpc_opts_copy(void *dst, size_t dst_size,
				 const void *src, size_t src_size)
{
	const unsigned char *extra = (const unsigned char *)src + dst_size;
	size_t i;

	/* A size beyond any plausible struct is an uninitialised field. */
	if (src_size < sizeof(size_t) || src_size > RMPC_OPTS_SIZE_MAX)
		return -EINVAL;
	/* A newer caller may pass fields we do not know: only as zeroes. */
	for (i = 0; src_size > dst_size && i < src_size - dst_size; i++)
		if (extra[i])
			return -EINVAL;
	memcpy(dst, src, dst_size < src_size ? dst_size : src_size);
	*(size_t *)dst = dst_size;
	return 0;
}

#endif /* RMPC_OPTS_H */
