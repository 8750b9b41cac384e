// SPDX-License-Identifier: MIT
/*
 * GPU test: memory and ConnBuffers on every CUDA, ROCm, Ascend (AscendCL),
 * Cambricon (CNRT) and Moore Threads (MUSA) device present.
 * Host-to-device, device-to-host and device-to-device round trips, writes
 * and reads of GPU ConnBuffers from host and device memory, copy_within
 * (overlapping both ways), a CPU ConnBuffer written from device memory,
 * device_id honoured on every device, threads on several devices, dma-buf
 * export of device memory and of GPU ConnBuffers (where the device can:
 * whole pages only, the last one up to the end, bad ranges refused; the
 * runtimes without dma-buf export must say -EOPNOTSUPP). Every byte is
 * checked against non-uniform data.
 *
 * Without a GPU it says why and exits 77 (skipped). With HMC_GPU_MOCK=1 it
 * expects the mock runtimes of this directory instead, and also checks
 * their reports: kinds matching pointers, contexts balanced, every copy
 * synchronised, the application's current device left alone, no leaks;
 * their dma-bufs (memfds holding the range) are read back, and with
 * MOCK_GPU_DMABUF=0 the export must say -EOPNOTSUPP.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "mem/mem.h"
#include "pattern.h"

#define EXIT_SKIP	77

static int failures;

#define EXPECT(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED); \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);				\
			printf("\n");					\
		}							\
	} while (0)

#define EXPECT_RET(expr, want)						\
	do {								\
		long got_ = (expr);					\
		EXPECT(got_ == (want), "got %ld (%s), want %ld", got_,	\
		       hmc_strerror((int)got_), (long)(want));		\
	} while (0)

#define EXPECT_PATTERN(p, len, seed, what)				\
	do {								\
		long at_ = pattern_mismatch((p), (len), (seed));	\
		EXPECT(at_ < 0, "%s: byte %ld differs", (what), at_);	\
	} while (0)

/* Entry points of a mock runtime (HMC_GPU_MOCK=1). */
struct mock {
	void (*app_device_enter)(int dev);
	void (*app_device_leave)(int dev);
	int (*current_device)(void);
	int (*report)(char *msg, size_t len);
	int app_device;
};

struct gpu {
	enum hmc_mem_type type;
	int nr_devices;
	bool dmabuf;		/* the runtime can export dma-bufs */
	struct mock *mock;
};

static void check_mock(const struct gpu *gpu, const char *when)
{
	char msg[256] = "";

	if (!gpu->mock)
		return;
	EXPECT(gpu->mock->current_device() == gpu->mock->app_device,
	       "%s: the application's device changed to %d", when,
	       gpu->mock->current_device());
	/* Leaks are only known at the end; violations at once. */
	if (gpu->mock->report(msg, sizeof(msg)))
		EXPECT(!strstr(msg, "violation"), "%s: mock: %s", when, msg);
}

static void memory_round_trip(const struct gpu *gpu, int dev)
{
	const size_t len = 300007;
	uint8_t *host = malloc(len);
	void *a, *b;

	EXPECT_RET(hmc_mem_alloc(gpu->type, dev, len, &a), 0);
	EXPECT_RET(hmc_mem_alloc(gpu->type, dev, len, &b), 0);
	EXPECT_RET(mem_ptr_device(gpu->type, a), dev);
	EXPECT_RET(mem_ptr_device(gpu->type, b), dev);
	pattern_fill(host, len, 1);
	EXPECT_RET(hmc_mem_copy(gpu->type, dev, a, host, len, HMC_COPY_H2D), 0);
	EXPECT_RET(hmc_mem_copy(gpu->type, dev, b, a, len, HMC_COPY_D2D), 0);
	memset(host, 0, len);
	EXPECT_RET(hmc_mem_copy(gpu->type, dev, host, b, len, HMC_COPY_D2H), 0);
	EXPECT_PATTERN(host, len, 1, "mem H2D, D2D, D2H");
	EXPECT_RET(hmc_mem_free(gpu->type, dev, a), 0);
	EXPECT_RET(hmc_mem_free(gpu->type, dev, b), 0);
	free(host);
	check_mock(gpu, "memory round trip");
}

/* The whole GPU buffer, read back to the host, against @model. */
static void check_buf(struct hmc_buf *buf, const uint8_t *model,
		      uint8_t *scratch, const char *what)
{
	size_t i, size = hmc_buf_size(buf);

	memset(scratch, 0x5a, size);
	EXPECT_RET(hmc_buf_read(buf, 0, scratch, size, HMC_MEM_CPU), 0);
	for (i = 0; i < size; i++) {
		if (scratch[i] != model[i]) {
			EXPECT(0, "%s: byte %zu is %u, not %u", what, i,
			       scratch[i], model[i]);
			return;
		}
	}
}

static void gpu_buffer(const struct gpu *gpu, int dev)
{
	const size_t size = (1 << 20) + 13, len = 200003;
	const size_t off = 4099, off2 = 65537;
	enum hmc_mem_type other = gpu->type == HMC_MEM_CUDA ? HMC_MEM_ROCM :
							      HMC_MEM_CUDA;
	uint8_t *model = malloc(size), *scratch = malloc(size);
	struct hmc_buf *buf;
	void *dsrc, *ddst;

	EXPECT_RET(hmc_buf_create(gpu->type, dev, size, NULL, &buf), 0);
	if (!buf)
		return;
	EXPECT(hmc_buf_backing(buf) == HMC_BUF_BACKING_DEVICE, "backing %s",
	       hmc_buf_backing_name(hmc_buf_backing(buf)));
	EXPECT(hmc_buf_mem_type(buf) == gpu->type, "type");
	EXPECT(hmc_buf_device(buf) == dev, "device %d", hmc_buf_device(buf));
	EXPECT(hmc_buf_size(buf) == size, "size");
	EXPECT_RET(mem_ptr_device(gpu->type, hmc_buf_ptr(buf)), dev);
	EXPECT_RET(hmc_mem_alloc(gpu->type, dev, len, &dsrc), 0);
	EXPECT_RET(hmc_mem_alloc(gpu->type, dev, len, &ddst), 0);

	/* From the host, and back. */
	pattern_fill(model, size, 2);
	EXPECT_RET(hmc_buf_write(buf, 0, model, size, HMC_MEM_CPU), 0);
	if (gpu->mock)		/* mock device memory is host memory */
		EXPECT(!memcmp(hmc_buf_ptr(buf), model, size),
		       "H2D data not in place when the write returned");
	check_buf(buf, model, scratch, "write from host");

	/* From device memory (D2D). */
	pattern_fill(scratch, len, 3);
	EXPECT_RET(hmc_mem_copy(gpu->type, dev, dsrc, scratch, len,
				HMC_COPY_H2D), 0);
	EXPECT_RET(hmc_buf_write(buf, off, dsrc, len, gpu->type), 0);
	pattern_fill(model + off, len, 3);
	check_buf(buf, model, scratch, "write from device memory");

	/* To device memory (D2D), checked through the host. */
	EXPECT_RET(hmc_buf_read(buf, off2, ddst, len, gpu->type), 0);
	memset(scratch, 0, len);
	EXPECT_RET(hmc_mem_copy(gpu->type, dev, scratch, ddst, len,
				HMC_COPY_D2H), 0);
	EXPECT(!memcmp(scratch, model + off2, len), "read to device memory");

	/* copy_within: apart, overlapping forwards and backwards. */
	EXPECT_RET(hmc_buf_copy_within(buf, size - len, 0, len), 0);
	memmove(model + size - len, model, len);
	check_buf(buf, model, scratch, "copy_within apart");
	EXPECT_RET(hmc_buf_copy_within(buf, off + 1000, off, len), 0);
	memmove(model + off + 1000, model + off, len);
	check_buf(buf, model, scratch, "copy_within forwards");
	EXPECT_RET(hmc_buf_copy_within(buf, off, off + 777, len), 0);
	memmove(model + off, model + off + 777, len);
	check_buf(buf, model, scratch, "copy_within backwards");

	/* Ranges, empty ones, another runtime's memory. */
	EXPECT_RET(hmc_buf_write(buf, size, NULL, 0, HMC_MEM_CPU), 0);
	EXPECT_RET(hmc_buf_write(buf, size - 1, scratch, 2, HMC_MEM_CPU),
		   -ERANGE);
	EXPECT_RET(hmc_buf_read(buf, SIZE_MAX, scratch, 2, HMC_MEM_CPU),
		   -ERANGE);
	EXPECT_RET(hmc_buf_read(buf, 1, ddst, SIZE_MAX, gpu->type), -ERANGE);
	EXPECT_RET(hmc_buf_copy_within(buf, 0, size, 1), -ERANGE);
	EXPECT_RET(hmc_buf_write(buf, 0, scratch, 1, other), -EOPNOTSUPP);
	check_buf(buf, model, scratch, "after refused calls");

	EXPECT_RET(hmc_mem_free(gpu->type, dev, dsrc), 0);
	EXPECT_RET(hmc_mem_free(gpu->type, dev, ddst), 0);
	hmc_buf_destroy(buf);
	free(model);
	free(scratch);
	check_mock(gpu, "GPU ConnBuffer");
}

/* A CPU ConnBuffer filled from and read into device memory. */
static void cpu_buffer_device_io(const struct gpu *gpu, int dev)
{
	const size_t size = 1 << 20, len = 100003, off = 333, off2 = 500001;
	uint8_t *host = malloc(len);
	struct hmc_buf *buf;
	uint8_t *p;
	void *d;

	EXPECT_RET(hmc_buf_create(HMC_MEM_CPU, 0, size, NULL, &buf), 0);
	if (!buf)
		return;
	p = hmc_buf_ptr(buf);
	pattern_fill(p, size, 4);
	EXPECT_RET(hmc_mem_alloc(gpu->type, dev, len, &d), 0);
	pattern_fill(host, len, 5);
	EXPECT_RET(hmc_mem_copy(gpu->type, dev, d, host, len, HMC_COPY_H2D),
		   0);

	EXPECT_RET(hmc_buf_write(buf, off, d, len, gpu->type), 0);
	EXPECT_PATTERN(p, off, 4, "before the D2H range");
	EXPECT_PATTERN(p + off, len, 5, "D2H into a CPU buffer");
	EXPECT(p[off + len] == pattern_at(4, off + len), "after the range");

	EXPECT_RET(hmc_buf_read(buf, off2, d, len, gpu->type), 0);
	memset(host, 0, len);
	EXPECT_RET(hmc_mem_copy(gpu->type, dev, host, d, len, HMC_COPY_D2H),
		   0);
	EXPECT(!memcmp(host, p + off2, len), "H2D out of a CPU buffer");
	EXPECT_RET(hmc_buf_write(buf, size - len + 1, d, len, gpu->type),
		   -ERANGE);
	if (gpu->mock)		/* host memory posing as device memory */
		EXPECT_RET(hmc_buf_write(buf, 0, host, 16, gpu->type),
			   -EINVAL);

	EXPECT_RET(hmc_mem_free(gpu->type, dev, d), 0);
	hmc_buf_destroy(buf);
	free(host);
	check_mock(gpu, "CPU ConnBuffer from device memory");
}

/*
 * The dma-buf in @fd has @size bytes and starts with the @len of @want:
 * only the mocks' can be read (a memfd); a real one is only known open.
 */
static void check_dmabuf(const struct gpu *gpu, int fd, const uint8_t *want,
			 size_t len, size_t size, const char *what)
{
	struct stat st;
	uint8_t *got;

	EXPECT(fcntl(fd, F_GETFD) >= 0, "%s: descriptor not open", what);
	if (!gpu->mock)
		return;
	got = malloc(len);
	EXPECT(!fstat(fd, &st) && (size_t)st.st_size == size,
	       "%s: %lld bytes, not %zu", what, (long long)st.st_size, size);
	EXPECT(pread(fd, got, len, 0) == (ssize_t)len && !memcmp(got, want, len),
	       "%s: not the range's data", what);
	free(got);
}

/* Device memory as a dma-buf: whole pages of an existing device. */
static void export_memory(const struct gpu *gpu, int dev)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE), len = 6 * page;
	uint8_t *host = malloc(len);
	char *d, *at;
	int fd = -1, rc;

	EXPECT_RET(hmc_mem_alloc(gpu->type, dev, len, (void **)&d), 0);
	if (!d)
		return;
	/* Real runtimes align allocations to far more than a page. */
	at = (char *)(((uintptr_t)d + page - 1) & ~(uintptr_t)(page - 1));
	pattern_fill(host, len, 6);
	EXPECT_RET(hmc_mem_copy(gpu->type, dev, d, host, len, HMC_COPY_H2D),
		   0);
	rc = mem_export_dmabuf(gpu->type, dev, at + page, 2 * page, &fd);
	if (!gpu->dmabuf) {
		EXPECT_RET(rc, -EOPNOTSUPP);
	} else if (rc == -EOPNOTSUPP && !gpu->mock) {
		printf("note: %s device %d cannot export dma-bufs\n",
		       hmc_mem_type_name(gpu->type), dev);
	} else {
		EXPECT_RET(rc, 0);
		if (!rc) {
			check_dmabuf(gpu, fd, host + (at - d) + page, 2 * page,
				     2 * page, "device memory export");
			close(fd);
		}
	}

	EXPECT_RET(mem_export_dmabuf(gpu->type, dev, at + 1, page, &fd),
		   -EINVAL);
	EXPECT_RET(mem_export_dmabuf(gpu->type, dev, at, page + 1, &fd),
		   -EINVAL);
	EXPECT_RET(mem_export_dmabuf(gpu->type, dev, at, 0, &fd), -EINVAL);
	EXPECT_RET(mem_export_dmabuf(gpu->type, dev, NULL, page, &fd),
		   -EINVAL);
	EXPECT_RET(mem_export_dmabuf(gpu->type, dev, at, page, NULL),
		   -EINVAL);
	EXPECT_RET(mem_export_dmabuf(HMC_MEM_CPU, 0, at, page, &fd), -EINVAL);
	EXPECT_RET(mem_export_dmabuf(gpu->type, gpu->nr_devices, at, page,
				     &fd), -ENODEV);
	if (gpu->mock) {	/* a device without dma-buf support */
		setenv("MOCK_GPU_DMABUF", "0", 1);
		EXPECT_RET(mem_export_dmabuf(gpu->type, dev, at, page, &fd),
			   -EOPNOTSUPP);
		unsetenv("MOCK_GPU_DMABUF");
	}
	EXPECT_RET(hmc_mem_free(gpu->type, dev, d), 0);
	free(host);
	check_mock(gpu, "dma-buf export of device memory");
}

/* hmc_buf_export_fd() of a GPU ConnBuffer: the argument checks of all. */
static void export_buffer(const struct gpu *gpu, int dev)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE), size = 5 * page + 13;
	uint8_t *model = malloc(size);
	struct hmc_buf *buf;
	int fd = -1, rc;

	EXPECT_RET(hmc_buf_create(gpu->type, dev, size, NULL, &buf), 0);
	if (!buf)
		return;
	pattern_fill(model, size, 7);
	EXPECT_RET(hmc_buf_write(buf, 0, model, size, HMC_MEM_CPU), 0);
	rc = hmc_buf_export_fd(buf, page, 2 * page, HMC_BUF_EXPORT_RDWR, &fd);
	if (!gpu->dmabuf) {
		EXPECT_RET(rc, -EOPNOTSUPP);
	} else if (rc == -EOPNOTSUPP && !gpu->mock) {
		printf("note: %s device %d cannot export ConnBuffers\n",
		       hmc_mem_type_name(gpu->type), dev);
	} else {
		EXPECT_RET(rc, 0);
		if (!rc) {
			EXPECT(fcntl(fd, F_GETFD) == FD_CLOEXEC,
			       "export not close-on-exec");
			check_dmabuf(gpu, fd, model + page, 2 * page, 2 * page,
				     "ConnBuffer pages 1 and 2");
			close(fd);
		}
		/* Length 0: to the end, the last page whole. */
		EXPECT_RET(hmc_buf_export_fd(buf, 2 * page, 0, 0, &fd), 0);
		if (fd >= 0) {
			check_dmabuf(gpu, fd, model + 2 * page, size - 2 * page,
				     4 * page, "ConnBuffer from page 2 on");
			close(fd);
		}
	}

	EXPECT_RET(hmc_buf_export_fd(buf, 1, page, 0, &fd), -EINVAL);
	EXPECT_RET(hmc_buf_export_fd(buf, 0, page + 1, 0, &fd), -EINVAL);
	EXPECT_RET(hmc_buf_export_fd(buf, 0, page, 2, &fd), -EINVAL);
	EXPECT_RET(hmc_buf_export_fd(buf, 0, page, 0, NULL), -EINVAL);
	EXPECT_RET(hmc_buf_export_fd(NULL, 0, page, 0, &fd), -EINVAL);
	EXPECT_RET(hmc_buf_export_fd(buf, 0, 6 * page, 0, &fd), -ERANGE);
	EXPECT_RET(hmc_buf_export_fd(buf, 6 * page, 0, 0, &fd), -ERANGE);
	EXPECT_RET(hmc_buf_export_fd(buf, SIZE_MAX & ~(page - 1), page, 0,
				     &fd), -ERANGE);
	if (gpu->mock) {
		setenv("MOCK_GPU_DMABUF", "0", 1);
		EXPECT_RET(hmc_buf_export_fd(buf, 0, 0, 0, &fd), -EOPNOTSUPP);
		unsetenv("MOCK_GPU_DMABUF");
	}
	hmc_buf_destroy(buf);
	free(model);
	check_mock(gpu, "dma-buf export of a GPU ConnBuffer");
}

/* device_id names the device everywhere, and only existing ones. */
static void device_ids(const struct gpu *gpu)
{
	struct hmc_buf *buf;
	void *p;

	EXPECT_RET(hmc_mem_alloc(gpu->type, gpu->nr_devices, 64, &p),
		   -ENODEV);
	EXPECT_RET(hmc_mem_alloc(gpu->type, -1, 64, &p), -ENODEV);
	EXPECT_RET(hmc_buf_create(gpu->type, gpu->nr_devices, 64, NULL, &buf),
		   -ENODEV);
	if (gpu->nr_devices < 2) {
		printf("note: %s: one device, cross-device checks not run\n",
		       hmc_mem_type_name(gpu->type));
		return;
	}
	EXPECT_RET(hmc_mem_alloc(gpu->type, 1, 4096, &p), 0);
	EXPECT_RET(mem_ptr_device(gpu->type, p), 1);
	/* Freed on the wrong device: refused, memory kept. */
	EXPECT_RET(hmc_mem_free(gpu->type, 0, p), -EINVAL);
	EXPECT_RET(mem_ptr_device(gpu->type, p), 1);
	EXPECT_RET(hmc_mem_free(gpu->type, 1, p), 0);
	check_mock(gpu, "device ids");
}

struct worker {
	const struct gpu *gpu;
	int dev;
	uint64_t seed;
};

static void *worker_run(void *arg)
{
	const struct worker *w = arg;
	const size_t size = 262147;
	uint8_t *host = malloc(size);
	struct hmc_buf *buf;
	int i;

	EXPECT_RET(hmc_buf_create(w->gpu->type, w->dev, size, NULL, &buf), 0);
	for (i = 0; buf && i < 20; i++) {
		pattern_fill(host, size, w->seed + i);
		EXPECT_RET(hmc_buf_write(buf, 0, host, size, HMC_MEM_CPU), 0);
		memset(host, 0, size);
		EXPECT_RET(hmc_buf_read(buf, 0, host, size, HMC_MEM_CPU), 0);
		EXPECT_PATTERN(host, size, w->seed + i, "thread round trip");
	}
	hmc_buf_destroy(buf);
	free(host);
	return NULL;
}

static void threads(const struct gpu *gpu)
{
	struct worker w[4];
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++) {
		w[i] = (struct worker){ gpu, i % gpu->nr_devices, 100 * i };
		EXPECT(!pthread_create(&t[i], NULL, worker_run, &w[i]),
		       "pthread_create");
	}
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	check_mock(gpu, "threads");
}

static bool load_mock(const char *lib, struct mock *m)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);

	if (!h)
		return false;
	*(void **)&m->app_device_enter = dlsym(h, "mock_app_device_enter");
	*(void **)&m->app_device_leave = dlsym(h, "mock_app_device_leave");
	*(void **)&m->current_device = dlsym(h, "mock_current_device");
	*(void **)&m->report = dlsym(h, "mock_report");
	return m->app_device_enter && m->app_device_leave &&
	       m->current_device && m->report;
}

/* Runs every check on one runtime: false if it has no device. */
static bool test_runtime(enum hmc_mem_type type, const char *lib,
			 bool dmabuf, bool mocked)
{
	struct mock mock = { 0 };
	struct gpu gpu = { .type = type, .dmabuf = dmabuf };
	char msg[256] = "";
	int dev;

	gpu.nr_devices = hmc_mem_device_count(type);
	if (gpu.nr_devices <= 0) {
		printf("%s: %s\n", hmc_mem_type_name(type),
		       gpu.nr_devices ? "no usable runtime (HMC_LOG=debug says why)" :
		       "runtime loaded, no device visible");
		EXPECT(!mocked, "the mock %s runtime did not load", lib);
		return false;
	}
	printf("%s: %d device(s)\n", hmc_mem_type_name(type), gpu.nr_devices);
	if (mocked) {
		EXPECT(load_mock(lib, &mock), "%s is not the mock", lib);
		if (!mock.report)
			return true;
		/* The application works on its last device meanwhile. */
		mock.app_device = gpu.nr_devices - 1;
		mock.app_device_enter(mock.app_device);
		gpu.mock = &mock;
	}

	for (dev = 0; dev < gpu.nr_devices; dev++) {
		memory_round_trip(&gpu, dev);
		gpu_buffer(&gpu, dev);
		cpu_buffer_device_io(&gpu, dev);
		export_memory(&gpu, dev);
		export_buffer(&gpu, dev);
	}
	device_ids(&gpu);
	threads(&gpu);

	if (mocked) {
		check_mock(&gpu, "end");
		mock.app_device_leave(mock.app_device);
		EXPECT(!mock.report(msg, sizeof(msg)), "mock %s: %s", lib, msg);
	}
	return true;
}

int main(void)
{
	const char *env = getenv("HMC_GPU_MOCK");
	bool mocked = env && !strcmp(env, "1");
	int ran = 0;

	if (mocked)
		printf("mock runtimes (HMC_GPU_MOCK=1): fake devices in host memory\n");
	ran += test_runtime(HMC_MEM_CUDA, "libcuda.so.1", true, mocked);
	ran += test_runtime(HMC_MEM_ROCM, "libamdhip64.so", true, mocked);
	ran += test_runtime(HMC_MEM_ASCEND, "libascendcl.so", false, mocked);
	ran += test_runtime(HMC_MEM_CNRT, "libcnrt.so", false, mocked);
	ran += test_runtime(HMC_MEM_MUSA, "libmusart.so", false, mocked);
	if (failures) {
		printf("%d checks failed\n", failures);
		return EXIT_FAILURE;
	}
	if (!ran) {
		printf("SKIP: no CUDA, ROCm, Ascend, Cambricon or MUSA device visible\n");
		return EXIT_SKIP;
	}
	printf("all checks passed on %d runtime(s)\n", ran);
	return EXIT_SUCCESS;
}
