/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by the Check programs of hmc.ko (see kmod_test.c). */
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
#define NR_CMDS		11	/* all_cmds[] */
#define NR_LIVE_STATS	9	/* live_stats[] */

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
extern const struct test export_tests[], import_tests[], vgem_tests[],
	move_tests[];
extern const struct test peer_tests[], genl_tests[], watch_tests[],
	rdma_event_tests[];

/* The runner: runs the tests of @groups named in @argv (all by default). */
int test_main(const char *prog, const struct test *const *groups,
	      size_t nr_groups, int argc, char **argv);

extern const char *const stat_names[HMC_STAT_COUNT];
extern const int live_stats[NR_LIVE_STATS];
extern const unsigned int all_cmds[NR_CMDS];
/* HMC_*_SIZE_VER0 of all_cmds[i]. */
extern const unsigned int ver0_sizes[NR_CMDS];

/* Runs @fn in a forked process; fails the test if that one fails. */
void run_child(void (*fn)(void *), void *arg);
/* Runs @fn in a forked process that must end by SIGKILL (raise). */
void run_child_killed(void (*fn)(void *), void *arg);
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
/* rmmod hmc (O_NONBLOCK); 0 or -errno. */
int delete_hmc(void);
/* Loads @ko unless hmc is loaded; 0 or -errno. */
int load_hmc(const char *ko);
/*
 * The end of an rmmod test: @refused[i] is what rmmod gave while @what[i]
 * held hmc (EWOULDBLOCK or EBUSY, or the test fails); now rmmod must work
 * and take /dev/hmc away. hmc is loaded again from @ko before anything is
 * asserted, so that later tests find it.
 */
void expect_rmmod_sequence(const char *ko, const int *refused,
			   const char *const *what, int n);
/* Open file descriptors of this process. */
int count_fds(void);
/* Physical address of the page mapped at @addr (root, /proc/self/pagemap). */
uint64_t page_phys(const void *addr);
/* Whether an IOMMU translates DMA (then DMA and physical addresses differ). */
int iommu_present(void);
/* The DMA segments of import @h are the pages mapped at @map (dmabuf_import.c). */
void expect_segments_are_pages(int fd, uint32_t h, const uint8_t *map,
			       size_t len);
/* A dma-buf of hmc_test_mover.ko with a pattern, or -1 (dmabuf_move.c). */
int mover_create(size_t len, uint64_t seed);
/* Moves it; 0 or -errno. */
int mover_move(int dmabuf);
/* An ioctl with a struct size of the caller's choice. */
int ioc_sized(int fd, unsigned int dir, unsigned int nr, size_t size,
	      void *arg);

#endif
