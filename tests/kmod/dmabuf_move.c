// SPDX-License-Identifier: GPL-2.0
/*
 * test_dmabuf: imports of an exporter that moves its memory
 * (tests/kmod/mover, loaded by the suite): a dynamic import is invalidated
 * by move_notify; a static one keeps the memory pinned in place.
 */
#include "kmod_test.h"
#include "mover/hmc_test_mover.h"

START_TEST(move_invalidates_dynamic_import)
{
	size_t len = 16 * pg;
	struct hmc_peer_import imp;
	struct hmc_peer_info info;
	uint64_t c[HMC_STAT_COUNT];
	int dmabuf, fd;
	uint8_t *m;

	dmabuf = mover_create(len, 0x600d);
	if (dmabuf < 0)
		SKIP("no %s (hmc_test_mover.ko)", HMC_TEST_MOVER_PATH);
	fd = open_dev();
	EXPECT_OK(hmc_import(fd, dmabuf, HMC_PEER_IMPORT_F_DYNAMIC, 0, 0,
			     &imp));
	EXPECT_OK(hmc_peer_info(fd, imp.handle, &info));
	ck_assert_str_eq(info.exporter, "hmc_test_mover");
	ck_assert_uint_eq(info.state, HMC_PEER_ST_MAPPED);
	ck_assert_uint_ge(info.nents, 1);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_IMPORTS_INVALIDATED), 0);

	EXPECT_OK(mover_move(dmabuf));
	memset(&info, 0, sizeof(info));
	info.handle = imp.handle;
	info.flags = HMC_PEER_INFO_F_SG;
	info.nr_sg = 0;
	EXPECT_OK(hmc_ioc(fd, HMC_IOC_PEER_INFO, &info));
	ck_assert_uint_eq(info.state, HMC_PEER_ST_INVALIDATED);
	ck_assert_uint_eq(info.nents, 0);
	ck_assert_uint_eq(info.nr_sg, 0);
	get_stats(fd, 0, c);
	ck_assert_uint_eq(c[HMC_STAT_IMPORTS_INVALIDATED], 1);
	ck_assert_uint_eq(c[HMC_STAT_IMPORTS_LIVE], 1);
	/* The memory moved with its contents; a new import maps it. */
	m = hmc_map(fd, imp.mmap_offset, len, PROT_READ);
	ck_assert(m != MAP_FAILED);
	expect_pattern(m, len, 0x600d);
	munmap(m, len);
	EXPECT_OK(hmc_release(fd, imp.handle));
	EXPECT_OK(hmc_import(fd, dmabuf, HMC_PEER_IMPORT_F_DYNAMIC, 0, 0,
			     &imp));
	EXPECT_OK(hmc_peer_info(fd, imp.handle, &info));
	ck_assert_uint_eq(info.state, HMC_PEER_ST_MAPPED);
	/* Moving again invalidates only the live import. */
	EXPECT_OK(mover_move(dmabuf));
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_IMPORTS_INVALIDATED), 2);
	close(dmabuf);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(static_import_keeps_memory_in_place)
{
	struct hmc_peer_import imp;
	struct hmc_peer_info info;
	int dmabuf, fd;

	dmabuf = mover_create(4 * pg, 1);
	if (dmabuf < 0)
		SKIP("no %s (hmc_test_mover.ko)", HMC_TEST_MOVER_PATH);
	fd = open_dev();
	EXPECT_OK(hmc_import(fd, dmabuf, 0, 0, 0, &imp));
	EXPECT_ERR(mover_move(dmabuf), EBUSY);
	EXPECT_OK(hmc_peer_info(fd, imp.handle, &info));
	ck_assert_uint_eq(info.state, HMC_PEER_ST_MAPPED);
	ck_assert_uint_ge(info.nents, 1);
	EXPECT_OK(hmc_release(fd, imp.handle));
	EXPECT_OK(mover_move(dmabuf));
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_IMPORTS_INVALIDATED), 0);
	close(dmabuf);
	close(fd);
	expect_no_live();
}
END_TEST

const struct test move_tests[] = {
	T(move_invalidates_dynamic_import, 30),
	T(static_import_keeps_memory_in_place, 30),
	{ NULL }
};
