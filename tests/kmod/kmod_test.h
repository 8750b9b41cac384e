/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by the files of test_kmod (see test_kmod.c). */
#ifndef HMC_TESTS_KMOD_TEST_H
#define HMC_TESTS_KMOD_TEST_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <check.h>

#include "kmod_util.h"

#define KiB		1024UL
#define MiB		(1024 * KiB)
#define NOBODY		65534
#define TMPFS_MAGIC	0x01021994
#define NR_CMDS		6	/* all_cmds[] */
#define NR_LIVE_STATS	5	/* live_stats[] */

extern size_t pg;

/* State shared with forked test processes and their helpers. */
struct shared {
	char skip[256];		/* why the running test skipped itself */
	char child[512];	/* what a helper process found wrong */
};
extern struct shared *sh;

#define SKIP(...) do {							\
	snprintf(sh->skip, sizeof(sh->skip), __VA_ARGS__);		\
	return;								\
} while (0)

/* Checks inside a forked helper, which reports through sh->child. */
#define CHILD_CHECK(cond) do {						\
	if (!(cond)) {							\
		snprintf(sh->child, sizeof(sh->child),			\
			 "%s:%d: %s (errno %d)", __FILE__, __LINE__,	\
			 #cond, errno);					\
		_exit(1);						\
	}								\
} while (0)

#define EXPECT_ERR(expr, err) do {					\
	int _r = (expr);						\
	ck_assert_msg(_r == -(err), "%s: got %d (%s), want %s", #expr,	\
		      _r, strerror(_r < 0 ? -_r : 0), #err);		\
} while (0)

#define EXPECT_OK(expr) EXPECT_ERR(expr, 0)

/* A test and its timeout in seconds; each test file exports a table. */
struct test {
	const char *name;
	const TTest *const *fn;
	int timeout;
};
#define T(name, timeout) { #name, &name, timeout }

extern const struct test ioctl_tests[], mmap_tests[], pin_tests[],
	life_tests[], rdma_tests[], fuzz_tests[];

extern const char *const stat_names[HMC_STAT_COUNT];
extern const int live_stats[NR_LIVE_STATS];
extern const unsigned int all_cmds[NR_CMDS];

/* Runs @fn in a forked process; fails the test if that one fails. */
void run_child(void (*fn)(void *), void *arg);
/* In a helper: RLIMIT_MEMLOCK to @memlock, then uid/gid nobody. */
void become_nobody(rlim_t memlock);
/* The exec_loses_access test, after exec. */
int exec_probe(int fd);

int open_dev(void);
void get_stats(int fd, int global, uint64_t c[HMC_STAT_COUNT]);
uint64_t stat_of(int fd, int global, int stat);
void expect_live_zero(const uint64_t *c, const char *what);
/* Every test ends here, after closing its files and mappings. */
void expect_no_live(void);
uint32_t alloc_ok(int fd, uint64_t size, uint64_t *offset);
void *map_ok(int fd, uint64_t offset, size_t len);
void *map_anon(size_t len);
void expect_pattern(const void *p, size_t len, uint64_t seed);
void expect_zero(const uint8_t *p, size_t len);
uint64_t offset_of(int fd, uint32_t handle);
uint32_t nr_mappings(int fd, uint32_t handle);
/* An ioctl with a struct size of the caller's choice. */
int ioc_sized(int fd, unsigned int dir, unsigned int nr, size_t size,
	      void *arg);

#endif
