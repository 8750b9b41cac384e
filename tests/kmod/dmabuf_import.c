// SPDX-License-Identifier: GPL-2.0
/*
 * test_dmabuf: PEER_IMPORT of hmc's own dma-bufs: mapping through the
 * import, DMA segments against the physical pages, read-only imports,
 * PCI-device attachment, errors and lifetimes.
 */
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kmod_test.h"

#define PCI_EXPORTERS	"/sys/module/hmc/parameters/pci_exporters"

/* A kernel buffer of @len bytes with pattern @seed, mapped at *map. */
static uint32_t pattern_buf(int fd, size_t len, uint64_t seed, uint8_t **map)
{
	uint64_t off;
	uint32_t h = alloc_ok(fd, len, &off);

	*map = map_ok(fd, off, len);
	pattern_fill(*map, len, seed);
	return h;
}

static int export_rw(int fd, uint32_t h)
{
	int dmabuf;

	EXPECT_OK(hmc_export(fd, h, HMC_BUF_EXPORT_F_RDWR, 0, 0, &dmabuf));
	return dmabuf;
}

/*
 * Checks that the DMA segments of import @h cover exactly the pages mapped
 * at @map, page by page: the import maps the same memory. Only where DMA
 * addresses are physical ones (no IOMMU), as for hmc's own device.
 */
void expect_segments_are_pages(int fd, uint32_t h, const uint8_t *map,
			       size_t len)
{
	static struct hmc_sg_entry sg[2048];
	struct hmc_peer_info info;
	uint64_t addr, left;
	size_t page = 0;
	uint32_t i;

	memset(&info, 0, sizeof(info));
	info.handle = h;
	info.flags = HMC_PEER_INFO_F_SG;
	info.nr_sg = 2048;
	info.sg_ptr = (uintptr_t)sg;
	EXPECT_OK(hmc_ioc(fd, HMC_IOC_PEER_INFO, &info));
	ck_assert_uint_ge(info.nents, 1);
	ck_assert_uint_le(info.nents, len / pg);
	ck_assert_uint_eq(info.nr_sg, info.nents);
	for (i = 0; i < info.nents; i++) {
		ck_assert_msg(sg[i].len && !(sg[i].len % pg) &&
			      !(sg[i].dma_addr % pg),
			      "segment %u: %#llx+%#llx", i,
			      (unsigned long long)sg[i].dma_addr,
			      (unsigned long long)sg[i].len);
		for (addr = sg[i].dma_addr, left = sg[i].len; left;
		     addr += pg, left -= pg, page++) {
			ck_assert_uint_lt(page, len / pg);
			ck_assert_msg(page_phys(map + page * pg) == addr,
				      "page %zu is at %#llx, segment %u says %#llx",
				      page,
				      (unsigned long long)page_phys(map + page * pg),
				      i, (unsigned long long)addr);
		}
	}
	ck_assert_uint_eq(page, len / pg);
}

/* ---- import of hmc's own dma-bufs ------------------------------------ */

START_TEST(import_self)
{
	size_t len = 8 * pg;
	struct hmc_peer_import imp;
	struct hmc_peer_info info;
	uint64_t c[HMC_STAT_COUNT];
	uint8_t *p, *m;
	uint32_t h;
	int dmabuf, fd = open_dev();

	h = pattern_buf(fd, len, 100, &p);
	dmabuf = export_rw(fd, h);
	memset(&imp, 0xee, sizeof(imp));
	EXPECT_OK(hmc_import(fd, dmabuf, 0, 0, 0, &imp));
	ck_assert_uint_ne(imp.handle, 0);
	ck_assert_uint_ge(imp.nents, 1);
	ck_assert_uint_eq(imp.mmap_offset,
			  HMC_MMAP_IMPORT | (uint64_t)imp.handle << HMC_MMAP_SHIFT);
	close(dmabuf);	/* the import holds it */

	EXPECT_OK(hmc_peer_info(fd, imp.handle, &info));
	ck_assert_uint_eq(info.size, len);
	ck_assert_uint_eq(info.offset, 0);
	ck_assert_uint_eq(info.dmabuf_size, len);
	ck_assert_uint_eq(info.mmap_offset, imp.mmap_offset);
	ck_assert_uint_eq(info.state, HMC_PEER_ST_MAPPED);
	ck_assert_uint_eq(info.import_flags, 0);
	ck_assert_uint_eq(info.nents, imp.nents);
	ck_assert_uint_eq(info.nr_sg, 0);
	ck_assert_str_eq(info.exporter, "hmc");

	get_stats(fd, 0, c);
	ck_assert_uint_eq(c[HMC_STAT_IMPORTS_LIVE], 1);
	ck_assert_uint_eq(c[HMC_STAT_EXPORTS_LIVE], 1);
	ck_assert_uint_eq(c[HMC_STAT_ATTACHMENTS_LIVE], 1);

	m = hmc_map(fd, imp.mmap_offset, len, PROT_READ | PROT_WRITE);
	ck_assert_msg(m != MAP_FAILED, "mmap of the import: %s",
		      strerror(errno));
	expect_pattern(m, len, 100);
	pattern_fill(m, len, 101);
	expect_pattern(p, len, 101);

	EXPECT_OK(hmc_release(fd, imp.handle));
	get_stats(fd, 0, c);
	ck_assert_uint_eq(c[HMC_STAT_IMPORTS_LIVE], 0);
	ck_assert_uint_eq(c[HMC_STAT_ATTACHMENTS_LIVE], 0);
	/* The mapping made through the import holds the dma-buf. */
	ck_assert_uint_eq(c[HMC_STAT_EXPORTS_LIVE], 1);
	expect_pattern(m, len, 101);
	ck_assert_int_eq(munmap(m, len), 0);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_EXPORTS_LIVE), 0);
	ck_assert_int_eq(munmap(p, len), 0);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(import_part)
{
	size_t len = 8 * pg;
	struct hmc_peer_import imp;
	struct hmc_peer_info info;
	uint8_t *p, *m;
	uint32_t h;
	int dmabuf, fd = open_dev();

	h = pattern_buf(fd, len, 200, &p);
	dmabuf = export_rw(fd, h);
	EXPECT_OK(hmc_import(fd, dmabuf, 0, 2 * pg, 3 * pg, &imp));
	EXPECT_OK(hmc_peer_info(fd, imp.handle, &info));
	ck_assert_uint_eq(info.offset, 2 * pg);
	ck_assert_uint_eq(info.size, 3 * pg);
	ck_assert_uint_eq(info.dmabuf_size, len);
	m = hmc_map(fd, imp.mmap_offset, 3 * pg, PROT_READ);
	ck_assert(m != MAP_FAILED);
	ck_assert_int_eq(memcmp(m, p + 2 * pg, 3 * pg), 0);
	ck_assert_int_eq(munmap(m, 3 * pg), 0);
	m = hmc_map(fd, imp.mmap_offset + pg, 2 * pg, PROT_READ);
	ck_assert(m != MAP_FAILED);
	ck_assert_int_eq(memcmp(m, p + 3 * pg, 2 * pg), 0);
	ck_assert_int_eq(munmap(m, 2 * pg), 0);
	/* Nothing outside the part, and only shared mappings. */
	ck_assert(hmc_map(fd, imp.mmap_offset, 4 * pg, PROT_READ) ==
		  MAP_FAILED);
	ck_assert(hmc_map(fd, imp.mmap_offset + 3 * pg, pg, PROT_READ) ==
		  MAP_FAILED);
	ck_assert(mmap(NULL, pg, PROT_READ, MAP_PRIVATE, fd,
		       imp.mmap_offset) == MAP_FAILED);
	ck_assert_int_eq(errno, EINVAL);
	/* Size 0: up to the end. */
	EXPECT_OK(hmc_release(fd, imp.handle));
	EXPECT_OK(hmc_import(fd, dmabuf, 0, 5 * pg, 0, &imp));
	EXPECT_OK(hmc_peer_info(fd, imp.handle, &info));
	ck_assert_uint_eq(info.size, 3 * pg);
	EXPECT_OK(hmc_release(fd, imp.handle));
	close(dmabuf);
	munmap(p, len);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

/* The import's DMA segments are the buffer's pages, part by part. */
START_TEST(import_segments_are_the_pages)
{
	size_t len = 3 * MiB + 5 * pg;
	struct hmc_peer_import imp;
	uint8_t *p, *anon;
	uint32_t h, hp;
	int dmabuf, fd = open_dev();

	if (iommu_present())
		SKIP("an IOMMU translates DMA addresses");
	h = pattern_buf(fd, len, 300, &p);
	dmabuf = export_rw(fd, h);
	EXPECT_OK(hmc_import(fd, dmabuf, 0, 0, 0, &imp));
	expect_segments_are_pages(fd, imp.handle, p, len);
	EXPECT_OK(hmc_release(fd, imp.handle));
	EXPECT_OK(hmc_import(fd, dmabuf, 0, MiB + 3 * pg, MiB, &imp));
	expect_segments_are_pages(fd, imp.handle, p + MiB + 3 * pg, MiB);
	EXPECT_OK(hmc_release(fd, imp.handle));
	close(dmabuf);

	/* Pinned user memory: scattered anonymous pages. */
	anon = map_anon(64 * pg);
	pattern_fill(anon, 64 * pg, 301);
	EXPECT_OK(hmc_pin(fd, anon, 64 * pg, 0, &hp));
	EXPECT_OK(hmc_export(fd, hp, HMC_BUF_EXPORT_F_RDWR, 0, 0, &dmabuf));
	EXPECT_OK(hmc_import(fd, dmabuf, 0, 0, 0, &imp));
	expect_segments_are_pages(fd, imp.handle, anon, 64 * pg);
	close(dmabuf);
	close(fd);
	munmap(anon, 64 * pg);
	munmap(p, len);
	expect_no_live();
}
END_TEST

static void segments_as_nobody(void *arg)
{
	struct hmc_sg_entry sg[4];
	struct hmc_peer_info info = {
		.flags = HMC_PEER_INFO_F_SG, .nr_sg = 4,
		.sg_ptr = (uintptr_t)sg,
	};
	struct hmc_peer_import imp;
	uint8_t *p;
	uint32_t h;
	int dmabuf, fd = hmc_open();

	CHILD_CHECK(fd >= 0);
	become_nobody(MiB);
	CHILD_CHECK(hmc_alloc(fd, 2 * pg, &h, NULL) == 0);
	CHILD_CHECK(hmc_export(fd, h, HMC_BUF_EXPORT_F_RDWR, 0, 0,
			       &dmabuf) == 0);
	CHILD_CHECK(hmc_import(fd, dmabuf, 0, 0, 0, &imp) == 0);
	info.handle = imp.handle;
	memset(sg, 0xa5, sizeof(sg));
	CHILD_CHECK(hmc_ioc(fd, HMC_IOC_PEER_INFO, &info) == -EPERM);
	for (p = (uint8_t *)sg; p < (uint8_t *)(sg + 4); p++)
		CHILD_CHECK(*p == 0xa5);
	/* Without the flag: all but the addresses. */
	CHILD_CHECK(hmc_peer_info(fd, imp.handle, &info) == 0);
	CHILD_CHECK(info.nents >= 1 && info.size == 2 * pg);
	/* A PCI device is for CAP_SYS_ADMIN only, too. */
	CHILD_CHECK(hmc_import(fd, dmabuf, HMC_PEER_IMPORT_F_PCI_DEV, 0, 0,
			       &imp) == -EPERM);
	close(dmabuf);
	close(fd);
}

START_TEST(import_dma_addresses_for_admin_only)
{
	run_child(segments_as_nobody, NULL);
	expect_no_live();
}
END_TEST

START_TEST(import_read_only)
{
	size_t len = 4 * pg;
	struct hmc_peer_import imp;
	struct hmc_peer_info info;
	uint8_t *p, *m;
	uint32_t h;
	int dmabuf, rw, fd = open_dev();

	h = pattern_buf(fd, len, 400, &p);
	EXPECT_OK(hmc_export(fd, h, 0, 0, 0, &dmabuf));	/* read-only */
	rw = export_rw(fd, h);
	EXPECT_OK(hmc_import(fd, dmabuf, 0, 0, 0, &imp));
	EXPECT_OK(hmc_peer_info(fd, imp.handle, &info));
	ck_assert_uint_eq(info.import_flags, HMC_PEER_IMPORT_F_READONLY);
	ck_assert(hmc_map(fd, imp.mmap_offset, len, PROT_READ | PROT_WRITE) ==
		  MAP_FAILED);
	ck_assert_int_eq(errno, EACCES);
	m = hmc_map(fd, imp.mmap_offset, len, PROT_READ);
	ck_assert(m != MAP_FAILED);
	expect_pattern(m, len, 400);
	ck_assert_int_eq(mprotect(m, len, PROT_READ | PROT_WRITE), -1);
	munmap(m, len);
	EXPECT_OK(hmc_release(fd, imp.handle));

	/* Asked for, of a writable dma-buf. */
	EXPECT_OK(hmc_import(fd, rw, HMC_PEER_IMPORT_F_READONLY, 0, 0, &imp));
	EXPECT_OK(hmc_peer_info(fd, imp.handle, &info));
	ck_assert_uint_eq(info.import_flags, HMC_PEER_IMPORT_F_READONLY);
	ck_assert(hmc_map(fd, imp.mmap_offset, len, PROT_READ | PROT_WRITE) ==
		  MAP_FAILED);
	ck_assert_int_eq(errno, EACCES);
	close(rw);
	close(dmabuf);
	munmap(p, len);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(import_dynamic)
{
	static const uint32_t flags[] = {
		HMC_PEER_IMPORT_F_DYNAMIC,
		HMC_PEER_IMPORT_F_DYNAMIC | HMC_PEER_IMPORT_F_P2P,
	};
	size_t len = 4 * pg, i;
	struct hmc_peer_import imp;
	struct hmc_peer_info info;
	uint8_t *p, *m;
	uint32_t h;
	int dmabuf, fd = open_dev();

	h = pattern_buf(fd, len, 450, &p);
	dmabuf = export_rw(fd, h);
	for (i = 0; i < 2; i++) {
		EXPECT_OK(hmc_import(fd, dmabuf, flags[i], 0, 0, &imp));
		EXPECT_OK(hmc_peer_info(fd, imp.handle, &info));
		ck_assert_uint_eq(info.import_flags, flags[i]);
		ck_assert_uint_eq(info.state, HMC_PEER_ST_MAPPED);
		ck_assert_uint_ge(info.nents, 1);
		m = hmc_map(fd, imp.mmap_offset, len, PROT_READ);
		ck_assert(m != MAP_FAILED);
		expect_pattern(m, len, 450);
		munmap(m, len);
	}
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_IMPORTS_LIVE), 2);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_ATTACHMENTS_LIVE), 2);
	close(dmabuf);
	munmap(p, len);
	close(fd);
	expect_no_live();
}
END_TEST

static int write_param(const char *value)
{
	int fd = open(PCI_EXPORTERS, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, value, strlen(value)) != (ssize_t)strlen(value))
		ret = -errno;
	close(fd);
	return ret;
}

/* A PCI device of this machine: domain, bus and devfn. */
static int some_pci_device(unsigned int *dom, unsigned int *bus,
			   unsigned int *devfn)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	unsigned int dev, fn;
	struct dirent *e;
	int found = 0;

	if (!d)
		return 0;
	while (!found && (e = readdir(d)))
		found = sscanf(e->d_name, "%x:%x:%x.%x", dom, bus, &dev,
			       &fn) == 4;
	closedir(d);
	*devfn = dev << 3 | fn;
	return found;
}

/*
 * Exporters named in pci_exporters (NVIDIA's by default) need a PCI device:
 * hmc's own name stands in for them here.
 */
START_TEST(import_pci_exporters)
{
	struct hmc_peer_import imp;
	struct hmc_peer_info info;
	unsigned int dom, bus, devfn;
	char old[128] = "";
	uint8_t *p, *m;
	uint32_t h;
	int dmabuf, pfd, fd = open_dev();
	ssize_t n;

	if (!some_pci_device(&dom, &bus, &devfn))
		SKIP("no PCI device");
	pfd = open(PCI_EXPORTERS, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(pfd, 0);
	n = read(pfd, old, sizeof(old) - 1);
	close(pfd);
	ck_assert_str_eq(old, n > 0 ? "nvidia\n" : "?");

	h = pattern_buf(fd, 2 * pg, 500, &p);
	dmabuf = export_rw(fd, h);
	EXPECT_OK(write_param("vgem,hmc\n"));
	EXPECT_ERR(hmc_import(fd, dmabuf, 0, 0, 0, &imp), EOPNOTSUPP);
	EXPECT_ERR(hmc_import(fd, dmabuf, HMC_PEER_IMPORT_F_DYNAMIC, 0, 0,
			      &imp), EOPNOTSUPP);
	memset(&imp, 0, sizeof(imp));
	imp.fd = dmabuf;
	imp.flags = HMC_PEER_IMPORT_F_PCI_DEV;
	imp.pci_domain = 0xffff;
	imp.pci_bus = 0xff;
	imp.pci_devfn = 0xff;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_PEER_IMPORT, &imp), ENODEV);
	imp.pci_domain = dom;
	imp.pci_bus = bus;
	imp.pci_devfn = devfn;
	EXPECT_OK(hmc_ioc(fd, HMC_IOC_PEER_IMPORT, &imp));
	EXPECT_OK(write_param("nvidia"));
	EXPECT_OK(hmc_peer_info(fd, imp.handle, &info));
	ck_assert_uint_eq(info.import_flags, HMC_PEER_IMPORT_F_PCI_DEV);
	ck_assert_uint_ge(info.nents, 1);
	m = hmc_map(fd, imp.mmap_offset, 2 * pg, PROT_READ);
	ck_assert(m != MAP_FAILED);
	expect_pattern(m, 2 * pg, 500);
	munmap(m, 2 * pg);
	/* Back to the default: hmc's own device will do. */
	EXPECT_OK(hmc_import(fd, dmabuf, 0, 0, 0, &imp));
	close(dmabuf);
	munmap(p, 2 * pg);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(import_errors)
{
	struct hmc_peer_import imp;
	struct hmc_peer_release rel;
	struct hmc_peer_info info;
	int pipefd[2], null, memfd, dmabuf, fd = open_dev();
	uint32_t h, good;
	uint64_t errors;

	h = alloc_ok(fd, 4 * pg, NULL);
	dmabuf = export_rw(fd, h);
	ck_assert_int_eq(pipe(pipefd), 0);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	memfd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
	ck_assert_int_ge(memfd, 0);
	ck_assert_int_eq(ftruncate(memfd, 4 * pg), 0);

	/* Not a file, or not a dma-buf. */
	EXPECT_ERR(hmc_import(fd, -1, 0, 0, 0, &imp), EBADF);
	EXPECT_ERR(hmc_import(fd, 9999, 0, 0, 0, &imp), EBADF);
	EXPECT_ERR(hmc_import(fd, fd, 0, 0, 0, &imp), EINVAL);
	EXPECT_ERR(hmc_import(fd, pipefd[0], 0, 0, 0, &imp), EINVAL);
	EXPECT_ERR(hmc_import(fd, null, 0, 0, 0, &imp), EINVAL);
	EXPECT_ERR(hmc_import(fd, memfd, 0, 0, 0, &imp), EINVAL);

#define TRY_IMPORT(field, value, err) do {				\
	memset(&imp, 0, sizeof(imp));					\
	imp.fd = dmabuf;						\
	imp.field = value;						\
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_PEER_IMPORT, &imp), err);	\
	ck_assert_uint_eq(imp.handle, 0);				\
} while (0)
	TRY_IMPORT(flags, 1U << 4, EINVAL);
	TRY_IMPORT(flags, 1U << 31, EINVAL);
	TRY_IMPORT(flags, HMC_PEER_IMPORT_F_P2P, EINVAL);
	TRY_IMPORT(pci_domain, 1, EINVAL);	/* without F_PCI_DEV */
	TRY_IMPORT(pci_bus, 1, EINVAL);
	TRY_IMPORT(pci_devfn, 1, EINVAL);
	TRY_IMPORT(pad, 1, EINVAL);
	TRY_IMPORT(reserved[0], 1, EINVAL);
	TRY_IMPORT(reserved[1], 1, EINVAL);
	TRY_IMPORT(offset, 1, EINVAL);
	TRY_IMPORT(offset, 4 * pg, EINVAL);
	TRY_IMPORT(offset, -(uint64_t)pg, EINVAL);
	TRY_IMPORT(size, pg - 1, EINVAL);
	TRY_IMPORT(size, 5 * pg, EINVAL);
	TRY_IMPORT(size, -(uint64_t)pg, EINVAL);
#undef TRY_IMPORT
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_IMPORTS_LIVE), 0);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_ATTACHMENTS_LIVE), 0);

	/* Release and info of unknown handles, double release, flags. */
	EXPECT_OK(hmc_import(fd, dmabuf, 0, 0, 0, &imp));
	good = imp.handle;
	rel = (struct hmc_peer_release){ .handle = good, .flags = 1 };
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_PEER_RELEASE, &rel), EINVAL);
	EXPECT_ERR(hmc_release(fd, 0), ENOENT);
	EXPECT_ERR(hmc_release(fd, good + 1), ENOENT);
	EXPECT_ERR(hmc_release(fd, ~0U), ENOENT);
	EXPECT_ERR(hmc_peer_info(fd, good + 1, &info), ENOENT);
	memset(&info, 0, sizeof(info));
	info.handle = good;
	info.flags = 2;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_PEER_INFO, &info), EINVAL);
	info.flags = 0;
	info.nr_sg = 1;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_PEER_INFO, &info), EINVAL);
	info.nr_sg = 0;
	info.sg_ptr = 4096;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_PEER_INFO, &info), EINVAL);
	info.sg_ptr = 0;
	info.reserved[1] = 1;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_PEER_INFO, &info), EINVAL);
	info.reserved[1] = 0;
	info.flags = HMC_PEER_INFO_F_SG;
	info.nr_sg = 4;
	info.sg_ptr = 8;	/* unmapped */
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_PEER_INFO, &info), EFAULT);
	/* A buffer's mmap window is not an import's. */
	ck_assert(hmc_map(fd, HMC_MMAP_IMPORT | (uint64_t)(good + 1) <<
			  HMC_MMAP_SHIFT, pg, PROT_READ) == MAP_FAILED);
	EXPECT_OK(hmc_release(fd, good));
	EXPECT_ERR(hmc_release(fd, good), ENOENT);	/* double release */
	EXPECT_ERR(hmc_peer_info(fd, good, &info), ENOENT);
	ck_assert(hmc_map(fd, HMC_MMAP_IMPORT | (uint64_t)good <<
			  HMC_MMAP_SHIFT, pg, PROT_READ) == MAP_FAILED);
	errors = stat_of(fd, 0, HMC_STAT_ERRORS);
	ck_assert_uint_eq(errors, 6 + 15 + 14);

	close(memfd);
	close(null);
	close(pipefd[0]);
	close(pipefd[1]);
	close(dmabuf);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

static void die_importing(void *arg)
{
	struct hmc_peer_import imp;
	uint32_t h;
	void *m;
	int i, dmabuf, fd = hmc_open();

	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(hmc_alloc(fd, 8 * pg, &h, NULL) == 0);
	CHILD_CHECK(hmc_export(fd, h, HMC_BUF_EXPORT_F_RDWR, 0, 0,
			       &dmabuf) == 0);
	for (i = 0; i < 8; i++)
		CHILD_CHECK(hmc_import(fd, dmabuf, i % 2, i * pg, pg,
				       &imp) == 0);
	m = hmc_map(fd, imp.mmap_offset, pg, PROT_READ | PROT_WRITE);
	CHILD_CHECK(m != MAP_FAILED);
	raise(SIGKILL);
}

START_TEST(imports_released_at_process_death)
{
	run_child_killed(die_importing, NULL);
	expect_no_live();
}
END_TEST

START_TEST(import_result_not_writable)
{
	struct hmc_peer_import *imp;
	uint8_t *ro;
	uint32_t h;
	int dmabuf, fd = open_dev();

	h = alloc_ok(fd, pg, NULL);
	dmabuf = export_rw(fd, h);
	ro = map_anon(pg);
	imp = (void *)ro;
	imp->fd = dmabuf;
	ck_assert_int_eq(mprotect(ro, pg, PROT_READ), 0);
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_PEER_IMPORT, imp), EFAULT);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_IMPORTS_LIVE), 0);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_ATTACHMENTS_LIVE), 0);
	munmap(ro, pg);
	close(dmabuf);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

const struct test import_tests[] = {
	T(import_self, 30),
	T(import_part, 30),
	T(import_segments_are_the_pages, 60),
	T(import_dma_addresses_for_admin_only, 30),
	T(import_read_only, 30),
	T(import_dynamic, 30),
	T(import_pci_exporters, 30),
	T(import_errors, 30),
	T(imports_released_at_process_death, 30),
	T(import_result_not_writable, 30),
	{ NULL }
};
