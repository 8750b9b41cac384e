/* SPDX-License-Identifier: MIT */
/*
 * hmcperf: put, get and put_signal bandwidth and latency between two ranks,
 * measured like ucx_perftest and perftest (see hmcperf.c for the CLI).
 *
 * The client (rank 1) drives; the server (rank 0) follows commands sent as
 * u64 tags over the control plane, so both run the same test with the same
 * parameters. Each buffer is split in two areas of slots: a send area at 0
 * and a receive area at half the buffer; puts go from our send area to the
 * peer's receive area, gets from the peer's send area to our receive area.
 */
#ifndef HMC_TOOLS_HMCPERF_H
#define HMC_TOOLS_HMCPERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hmc/hmc.h>

/* The timed loops: placed together, like libhmc's transfer path. */
#define __hot	__attribute__((__hot__))

enum perf_test {
	PERF_PUT_BW,
	PERF_GET_BW,
	PERF_PUT_SIGNAL_BW,
	PERF_PUT_LAT,
	PERF_GET_LAT,
	PERF_PUT_SIGNAL_LAT,
	PERF_TAG_LAT,		/* control plane only: tag ping-pong */
	PERF_TEST_MAX,
};

/* Tags: kind in the top byte, arguments below. */
#define TAG_KIND(t)		((uint8_t)((t) >> 56))
#define TAG_ARG(t)		((t) & ((1ULL << 56) - 1))
#define TAG_MAKE(k, arg)	((uint64_t)(k) << 56 | ((arg) & ((1ULL << 56) - 1)))

enum tag_kind {
	TAG_CMD_HELLO = 1,	/* client: the session starts */
	TAG_CMD_TEST,	/* test (8 bits) << 48 | size (48 bits) */
	TAG_CMD_PARAMS,		/* target_sleeps << 50 | passive << 49 | validate << 48 | window (16) << 32 | count (32) */
	TAG_CMD_END,		/* the session is over */
	TAG_READY,		/* server: prepared; arg: its buffer backing */
	TAG_DONE,		/* server: test over; arg: bytes it verified */
	TAG_ERR,		/* either side: arg: a positive errno */
	TAG_BATCH,		/* first iteration << 16 | count (validate) */
	TAG_ACK,		/* the batch was checked or prepared */
	TAG_STOP,		/* end of a windowed test */
	TAG_SIG,		/* put_signal of iteration arg */
	TAG_PING,		/* tag ping-pong iteration arg */
};

#define PERF_MAX_SIZE	(1ULL << 40)
#define PERF_MAX_WINDOW	4096
#define PERF_MAX_COUNT	0xffffffffULL

struct perf_params {
	enum perf_test test;
	size_t size;
	uint64_t iters;
	uint64_t warmup;
	uint32_t window;
	bool validate;
	bool passive;		/* the target need not progress (RDMA, shm) */
	/* the target need not progress (RDMA) */
	/*
	 * The target's progress engine is woken by the data (tcp): a windowed
	 * test's target waits for the client's tags asleep, as a process
	 * blocked in recv() does, and leaves the CPU to the network stack.
	 */
	bool target_sleeps;
};

struct perf_result {
	uint64_t iters;
	double bw_MBps;		/* 1e6 bytes per second */
	double lat_med_us;
	double lat_p99_us;
	double lat_avg_us;
	uint64_t checked;	/* bytes verified by the client */
};

struct perf {
	struct hmc_comm *comm;
	uint8_t *base;
	size_t half;		/* our receive area starts here */
	size_t peer_half;
	uint32_t peer;
	int timeout_ms;		/* of one test */
	bool busy_poll;		/* wait for requests without sleeping */
	int64_t deadline;	/* of the running test, ns */
	uint64_t checked;	/* bytes this side verified in the test */
};

const char *perf_test_name(enum perf_test test);
int perf_test_by_name(const char *name);
bool perf_test_is_lat(enum perf_test test);
/* Slots of @size bytes each area needs for @p. */
size_t perf_slots(const struct perf_params *p);

/* Reset what a test polls for; both sides, before it starts. */
void perf_prepare(struct perf *pf, const struct perf_params *p);
/* Client side of one test; the server was told and is ready. */
int perf_run_client(struct perf *pf, const struct perf_params *p,
		    struct perf_result *res);
/* Server side of one test; sends TAG_DONE or TAG_ERR at the end. */
int perf_serve(struct perf *pf, const struct perf_params *p);

/* Wait for the peer's next tag, of @kind: 0, a negative errno, -EPROTO. */
int perf_expect(struct perf *pf, enum tag_kind kind, uint64_t *arg);
int perf_send(struct perf *pf, enum tag_kind kind, uint64_t arg);
/* Milliseconds left in the running test (at least 1). */
int perf_left_ms(const struct perf *pf);

/* Scale the TSC when the kernel's clock reads it (hmcperf_clock.c). */
void perf_clock_init(void);
/* Monotonic nanoseconds. */
int64_t perf_now_ns(void);

#endif
