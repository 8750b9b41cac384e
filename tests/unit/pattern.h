/* SPDX-License-Identifier: MIT */
/*
 * Test data: bytes that differ from their neighbours and between seeds, so
 * that a copy from the wrong offset, a short copy or a stale page shows.
 */
#ifndef HMC_TESTS_PATTERN_H
#define HMC_TESTS_PATTERN_H

#include <stddef.h>
#include <stdint.h>

static inline uint8_t pattern_at(uint64_t seed, size_t i)
{
	uint64_t x = i * 0x9e3779b97f4a7c15ULL + seed * 0xd1b54a32d192ed03ULL;

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return (uint8_t)(x >> 56);
}

static inline void pattern_fill(void *p, size_t len, uint64_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		((uint8_t *)p)[i] = pattern_at(seed, i);
}

/* Offset of the first byte that is not the pattern's, or -1. */
static inline long pattern_mismatch(const void *p, size_t len, uint64_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (((const uint8_t *)p)[i] != pattern_at(seed, i))
			return (long)i;
	return -1;
}

#endif
