/* SPDX-License-Identifier: MIT */
/* Shared by the OpenSHMEM conformance tests: a failed check names the PE,
 * the line and the values, then ends the whole job. */
#ifndef HMC_SHMEM_TEST_CHECK_H
#define HMC_SHMEM_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shmem.h>

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "FAIL: PE %d: %s:%d: %s: ",	\
				shmem_my_pe(), __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			shmem_global_exit(1);				\
		}							\
	} while (0)

/* A byte pattern that differs by PE, by position and by round. */
static inline unsigned char pat(int pe, size_t i, int round)
{
	return (unsigned char)(pe * 131 + i * 7 + (i >> 8) * 13 + round * 29 + 1);
}

/*
 * How many consecutive PEs share a host (map each other): all of them, one
 * each with HMC_SHMEM_MAP=0, or what the netns runner says in
 * SHMEM_TEST_HOST_PES (tests/shmem/netns.sh). The others are remote.
 */
static inline int host_pes(void)
{
	const char *map = getenv("HMC_SHMEM_MAP");
	const char *hp = getenv("SHMEM_TEST_HOST_PES");

	if (map && !strcmp(map, "0"))
		return 1;
	if (hp)
		return atoi(hp);
	return shmem_n_pes();
}

static inline int same_host(int a, int b)
{
	return a / host_pes() == b / host_pes();
}

#endif
