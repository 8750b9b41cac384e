// SPDX-License-Identifier: GPL-2.0
/*
 * test_dmabuf: hmc and vgem, the stock kernel's GPU-less DRM driver, both
 * ways: hmc imports vgem's dumb buffers as peer memory, and vgem imports
 * hmc's exports (PRIME). The suite loads vgem.
 */
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/dma-buf.h>
#include <drm.h>
#include <drm_mode.h>

#include "kmod_test.h"

static int drm_ioc(int fd, unsigned long cmd, void *arg)
{
	int ret;

	do
		ret = ioctl(fd, cmd, arg);
	while (ret < 0 && (errno == EINTR || errno == EAGAIN));
	return ret < 0 ? -errno : 0;
}

/* The DRM node of vgem, opened; skips the test if there is none. */
static int vgem_open(void)
{
	char path[32], name[16];
	struct drm_version v;
	int i, fd;

	for (i = 0; i < 16; i++) {
		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&v, 0, sizeof(v));
		memset(name, 0, sizeof(name));
		v.name = name;
		v.name_len = sizeof(name) - 1;
		if (!drm_ioc(fd, DRM_IOCTL_VERSION, &v) && !strcmp(name, "vgem"))
			return fd;
		close(fd);
	}
	return -1;
}

/* A vgem dumb buffer of @len bytes (a multiple of the page size). */
static uint32_t vgem_create(int vfd, size_t len)
{
	struct drm_mode_create_dumb c = {
		.width = pg, .height = len / pg, .bpp = 8,
	};

	EXPECT_OK(drm_ioc(vfd, DRM_IOCTL_MODE_CREATE_DUMB, &c));
	ck_assert_uint_eq(c.size, len);
	return c.handle;
}

static uint8_t *vgem_map(int vfd, uint32_t handle, size_t len)
{
	struct drm_mode_map_dumb m = { .handle = handle };
	void *p;

	EXPECT_OK(drm_ioc(vfd, DRM_IOCTL_MODE_MAP_DUMB, &m));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, vfd,
		 (off_t)m.offset);
	ck_assert_msg(p != MAP_FAILED, "mmap of vgem: %s", strerror(errno));
	return p;
}

static int vgem_export(int vfd, uint32_t handle, uint32_t flags)
{
	struct drm_prime_handle h = { .handle = handle, .flags = flags };

	EXPECT_OK(drm_ioc(vfd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &h));
	return h.fd;
}

static uint32_t vgem_import(int vfd, int dmabuf)
{
	struct drm_prime_handle h = { .fd = dmabuf };

	EXPECT_OK(drm_ioc(vfd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &h));
	ck_assert_uint_ne(h.handle, 0);
	return h.handle;
}

static void vgem_close(int vfd, uint32_t handle)
{
	struct drm_gem_close c = { .handle = handle };

	EXPECT_OK(drm_ioc(vfd, DRM_IOCTL_GEM_CLOSE, &c));
}

/* ---- vgem's memory as hmc peer memory ------------------------------- */

START_TEST(vgem_buffer_imported_by_hmc)
{
	size_t len = 64 * pg;
	struct hmc_peer_import imp;
	struct hmc_peer_info info;
	uint8_t *v, *m;
	uint32_t vh, vh2;
	int dmabuf, vfd = vgem_open(), fd;

	if (vfd < 0)
		SKIP("no vgem device (modprobe vgem)");
	fd = open_dev();
	vh = vgem_create(vfd, len);
	v = vgem_map(vfd, vh, len);
	pattern_fill(v, len, 0x7e);
	dmabuf = vgem_export(vfd, vh, DRM_CLOEXEC | DRM_RDWR);

	EXPECT_OK(hmc_import(fd, dmabuf, 0, 0, 0, &imp));
	EXPECT_OK(hmc_peer_info(fd, imp.handle, &info));
	ck_assert_str_eq(info.exporter, "vgem");
	ck_assert_uint_eq(info.size, len);
	ck_assert_uint_eq(info.state, HMC_PEER_ST_MAPPED);
	ck_assert_uint_eq(info.import_flags, 0);
	ck_assert_uint_ge(info.nents, 1);
	close(dmabuf);
	/* Every byte through the import, and back. */
	m = hmc_map(fd, imp.mmap_offset, len, PROT_READ | PROT_WRITE);
	ck_assert_msg(m != MAP_FAILED, "mmap of the import: %s",
		      strerror(errno));
	expect_pattern(m, len, 0x7e);
	pattern_fill(m, len, 0x7f);
	expect_pattern(v, len, 0x7f);
	ck_assert_int_eq(munmap(m, len), 0);
	EXPECT_OK(hmc_release(fd, imp.handle));

	/*
	 * A part. (Not mapped: vgem's mmap of a dma-buf, drm_gem_shmem's in
	 * 6.1, maps from the first page whatever the offset asked for; the
	 * DMA segments of parts are checked by vgem_import_segments.)
	 */
	dmabuf = vgem_export(vfd, vh, DRM_CLOEXEC | DRM_RDWR);
	EXPECT_OK(hmc_import(fd, dmabuf, 0, 8 * pg, 16 * pg, &imp));
	EXPECT_OK(hmc_peer_info(fd, imp.handle, &info));
	ck_assert_uint_eq(info.offset, 8 * pg);
	ck_assert_uint_eq(info.size, 16 * pg);
	ck_assert_uint_eq(info.dmabuf_size, len);
	close(dmabuf);

	/*
	 * A read-only dma-buf (of a new buffer: vgem hands out the same
	 * dma-buf for a buffer as long as it has one).
	 */
	vh2 = vgem_create(vfd, 4 * pg);
	dmabuf = vgem_export(vfd, vh2, DRM_CLOEXEC);
	EXPECT_OK(hmc_import(fd, dmabuf, 0, 0, 0, &imp));
	EXPECT_OK(hmc_peer_info(fd, imp.handle, &info));
	ck_assert_uint_eq(info.import_flags, HMC_PEER_IMPORT_F_READONLY);
	ck_assert(hmc_map(fd, imp.mmap_offset, 4 * pg,
			  PROT_READ | PROT_WRITE) == MAP_FAILED);
	ck_assert_int_eq(errno, EACCES);
	m = hmc_map(fd, imp.mmap_offset, 4 * pg, PROT_READ);
	ck_assert(m != MAP_FAILED);
	expect_zero(m, 4 * pg);
	ck_assert_int_eq(munmap(m, 4 * pg), 0);
	vgem_close(vfd, vh2);
	close(dmabuf);
	close(fd);	/* releases the import */

	munmap(v, len);
	vgem_close(vfd, vh);
	close(vfd);
	expect_no_live();
}
END_TEST

/* Ranges of "System RAM" in /proc/iomem (real addresses for root). */
static int ram_ranges(uint64_t (*r)[2], int max)
{
	char line[256];
	FILE *f = fopen("/proc/iomem", "re");
	unsigned long long lo, hi;
	int n = 0;

	ck_assert_ptr_nonnull(f);
	while (n < max && fgets(line, sizeof(line), f))
		if (line[0] != ' ' && strstr(line, ": System RAM") &&
		    sscanf(line, "%llx-%llx", &lo, &hi) == 2) {
			r[n][0] = lo;
			r[n++][1] = hi;
		}
	fclose(f);
	return n;
}

/* The DMA address of every page of import @h, in order; their number. */
static size_t import_pages(int fd, uint32_t h, uint64_t *pages, size_t max)
{
	static struct hmc_sg_entry sg[1024];
	struct hmc_peer_info info = {
		.handle = h, .flags = HMC_PEER_INFO_F_SG, .nr_sg = 1024,
		.sg_ptr = (uintptr_t)sg,
	};
	uint64_t off;
	size_t n = 0;
	uint32_t i;

	EXPECT_OK(hmc_ioc(fd, HMC_IOC_PEER_INFO, &info));
	ck_assert_uint_le(info.nents, 1024);
	for (i = 0; i < info.nents; i++) {
		ck_assert(sg[i].len && !(sg[i].len % pg) &&
			  !(sg[i].dma_addr % pg));
		for (off = 0; off < sg[i].len; off += pg) {
			ck_assert_uint_lt(n, max);
			pages[n++] = sg[i].dma_addr + off;
		}
	}
	return n;
}

/*
 * hmc's DMA mapping of vgem's buffer: one distinct page of RAM for every
 * page, and a part maps the same pages as the whole. (vgem's own mapping
 * is a PFN mapping, whose pages /proc/self/pagemap does not show.)
 */
START_TEST(vgem_import_segments)
{
	size_t len = 256 * pg, i, j, n;
	static uint64_t whole[256], part[256], ram[64][2];
	struct hmc_peer_import imp;
	int dmabuf, nram, vfd = vgem_open(), fd;
	uint32_t vh;

	if (vfd < 0)
		SKIP("no vgem device (modprobe vgem)");
	if (iommu_present())
		SKIP("an IOMMU translates DMA addresses");
	fd = open_dev();
	vh = vgem_create(vfd, len);
	dmabuf = vgem_export(vfd, vh, DRM_CLOEXEC | DRM_RDWR);
	EXPECT_OK(hmc_import(fd, dmabuf, HMC_PEER_IMPORT_F_DYNAMIC, 0, 0,
			     &imp));
	ck_assert_uint_eq(import_pages(fd, imp.handle, whole, 256), 256);
	EXPECT_OK(hmc_import(fd, dmabuf, 0, 100 * pg, 50 * pg, &imp));
	n = import_pages(fd, imp.handle, part, 256);
	ck_assert_uint_eq(n, 50);
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(part[i], whole[100 + i]);
	nram = ram_ranges(ram, 64);
	ck_assert_int_gt(nram, 0);
	for (i = 0; i < 256; i++) {
		for (j = 0; j < (size_t)nram; j++)
			if (whole[i] >= ram[j][0] && whole[i] + pg - 1 <= ram[j][1])
				break;
		ck_assert_msg(j < (size_t)nram, "page %zu at %#llx is not RAM",
			      i, (unsigned long long)whole[i]);
		for (j = 0; j < i; j++)
			ck_assert_uint_ne(whole[i], whole[j]);
	}
	close(dmabuf);
	close(fd);
	vgem_close(vfd, vh);
	close(vfd);
	expect_no_live();
}
END_TEST

/* ---- hmc's buffers in vgem ------------------------------------------- */

static int dmabuf_sync(int dmabuf, uint64_t flags)
{
	struct dma_buf_sync sync = { .flags = flags };

	return ioctl(dmabuf, DMA_BUF_IOCTL_SYNC, &sync) ? -errno : 0;
}

static ino_t inode_of(int fd)
{
	struct stat st;

	ck_assert_int_eq(fstat(fd, &st), 0);
	return st.st_ino;
}

START_TEST(hmc_buffer_imported_by_vgem)
{
	size_t len = 128 * pg;
	uint64_t off, c[HMC_STAT_COUNT];
	uint8_t *p, *d;
	uint32_t h, vh;
	int dmabuf, again, vfd = vgem_open(), fd;

	if (vfd < 0)
		SKIP("no vgem device (modprobe vgem)");
	fd = open_dev();
	h = alloc_ok(fd, len, &off);
	p = map_ok(fd, off, len);
	pattern_fill(p, len, 0x1c);
	EXPECT_OK(hmc_export(fd, h, HMC_BUF_EXPORT_F_RDWR, 0, 0, &dmabuf));

	/* vgem attaches its device and maps our pages for it. */
	vh = vgem_import(vfd, dmabuf);
	get_stats(fd, 0, c);
	ck_assert_uint_eq(c[HMC_STAT_ATTACHMENTS_LIVE], 1);
	ck_assert_uint_eq(c[HMC_STAT_EXPORTS_LIVE], 1);
	/* The same dma-buf, whichever way it comes back. */
	ck_assert_uint_eq(vgem_import(vfd, dmabuf), vh);
	again = vgem_export(vfd, vh, DRM_CLOEXEC | DRM_RDWR);
	ck_assert_uint_eq(inode_of(again), inode_of(dmabuf));
	d = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, again, 0);
	ck_assert(d != MAP_FAILED);
	close(again);
	/* CPU access while a device has it mapped: synced for that device. */
	EXPECT_OK(dmabuf_sync(dmabuf, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW));
	expect_pattern(d, len, 0x1c);
	pattern_fill(d, len, 0x1d);
	EXPECT_OK(dmabuf_sync(dmabuf, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW));
	expect_pattern(p, len, 0x1d);
	ck_assert_int_eq(munmap(d, len), 0);

	/* vgem holds the dma-buf until it drops the object. */
	close(dmabuf);
	EXPECT_OK(hmc_free(fd, h));
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_EXPORTS_LIVE), 1);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_BUFS_LIVE), 1);
	vgem_close(vfd, vh);
	get_stats(fd, 0, c);
	ck_assert_uint_eq(c[HMC_STAT_ATTACHMENTS_LIVE], 0);
	ck_assert_uint_eq(c[HMC_STAT_EXPORTS_LIVE], 0);
	expect_pattern(p, len, 0x1d);
	ck_assert_int_eq(munmap(p, len), 0);
	close(fd);
	close(vfd);
	expect_no_live();
}
END_TEST

/* vgem closed with our dma-buf imported: the attachment goes too. */
START_TEST(vgem_closed_with_hmc_buffer_imported)
{
	uint32_t h, vh;
	int dmabuf, vfd = vgem_open(), fd;

	if (vfd < 0)
		SKIP("no vgem device (modprobe vgem)");
	fd = open_dev();
	h = alloc_ok(fd, 16 * pg, NULL);
	EXPECT_OK(hmc_export(fd, h, 0, 4 * pg, 4 * pg, &dmabuf));
	vh = vgem_import(vfd, dmabuf);
	ck_assert_uint_ne(vh, 0);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_ATTACHMENTS_LIVE), 1);
	close(vfd);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_ATTACHMENTS_LIVE), 0);
	close(dmabuf);
	close(fd);
	expect_no_live();
}
END_TEST

const struct test vgem_tests[] = {
	T(vgem_buffer_imported_by_hmc, 60),
	T(vgem_import_segments, 60),
	T(hmc_buffer_imported_by_vgem, 60),
	T(vgem_closed_with_hmc_buffer_imported, 30),
	{ NULL }
};
