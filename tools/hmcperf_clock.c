// SPDX-License-Identifier: MIT
/*
 * hmcperf's clock. Where the kernel's clocksource is the TSC,
 * clock_gettime() is a read of it through the vDSO, and hmcperf reads it
 * itself, as perftest and ucx_perftest do: in the soft-RoCE guest a vDSO
 * call right after a long system call cost ~2k cycles, and put_lat makes
 * two per round trip. The TSC is scaled against CLOCK_MONOTONIC over
 * CALIB_NS at start. Elsewhere (another clocksource or architecture),
 * clock_gettime().
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hmcperf.h"

#define CALIB_NS	(20 * 1000 * 1000)
#define CLOCKSOURCE \
	"/sys/devices/system/clocksource/clocksource0/current_clocksource"

static struct {
	bool tsc;
	uint64_t tsc0;		/* TSC at ns0 */
	int64_t ns0;
	uint64_t mult;		/* nanoseconds per TSC cycle, << 32 */
} clk;

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#if defined(__x86_64__)
#include <x86intrin.h>

static bool clocksource_is_tsc(void)
{
	char src[32] = "";
	FILE *f = fopen(CLOCKSOURCE, "r");

	if (!f)
		return false;
	if (!fgets(src, sizeof(src), f))
		src[0] = '\0';
	fclose(f);
	return !strcmp(src, "tsc\n");
}

void perf_clock_init(void)
{
	struct timespec pause = { 0, CALIB_NS };
	uint64_t c0, c1;
	int64_t t0, t1;

	if (!clocksource_is_tsc())
		return;
	t0 = mono_ns();
	c0 = __rdtsc();
	nanosleep(&pause, NULL);
	t1 = mono_ns();
	c1 = __rdtsc();
	if (c1 <= c0 || t1 <= t0)
		return;
	clk.mult = (uint64_t)(((unsigned __int128)(t1 - t0) << 32) / (c1 - c0));
	clk.tsc0 = c1;
	clk.ns0 = t1;
	clk.tsc = true;
}

__hot int64_t perf_now_ns(void)
{
	unsigned __int128 ns;

	if (!clk.tsc)
		return mono_ns();
	ns = (unsigned __int128)(__rdtsc() - clk.tsc0) * clk.mult;
	return clk.ns0 + (int64_t)(ns >> 32);
}
#else
void perf_clock_init(void)
{
}

__hot int64_t perf_now_ns(void)
{
	return mono_ns();
}
#endif
