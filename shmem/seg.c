// SPDX-License-Identifier: MIT
/*
 * Symmetric segments: the heap and the program's writable data segment.
 *
 * Each lives in a memfd mapped MAP_SHARED; every PE opens its peers' memfds
 * through /proc/<pid>/fd (same user, so the ptrace access check passes) and
 * maps them, so any PE reaches any symmetric byte on the host by address.
 * Peers it does not map are remote (peer.c): on another host (another
 * kernel boot id), in another pid namespace (where the pid names another
 * process), in another network namespace (which stands for another host:
 * that is how the tests put PEs on "hosts" of one machine), or when either
 * side has HMC_SHMEM_MAP=0. Every condition holds both ways, so two PEs
 * agree on whether they map each other, and PEs that map each other form
 * groups in which all members map all others.
 *
 * The data segment (.data and .bss of the executable, after its RELRO part)
 * is moved into a memfd in place at start-up: its pages are copied into the
 * memfd and the memfd is mapped over them with MAP_FIXED, at the same
 * address, so the program's globals and statics keep their addresses and
 * values and become shared. This happens in shmem_init(), before the
 * program starts threads of its own (a store made by another thread during
 * the copy would be lost). Peers translate an address by its offset from
 * the start of the segment, which ASLR moves but every PE has the same
 * executable.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

static size_t page_size;

static uintptr_t page_down(uintptr_t a)
{
	return a & ~(uintptr_t)(page_size - 1);
}

static uintptr_t page_up(uintptr_t a)
{
	return page_down(a + page_size - 1);
}

struct phdr_scan {
	unsigned int n;
	struct shm_seg seg[SHM_MAX_DATA_SEGS];
};

/* The first object dl_iterate_phdr() reports is the executable. */
static int scan_exe(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct phdr_scan *scan = arg;
	uintptr_t relro_end = 0;
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_GNU_RELRO)
			relro_end = page_down(info->dlpi_addr + ph->p_vaddr +
					      ph->p_memsz);
	}
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start, end;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		start = page_down(info->dlpi_addr + ph->p_vaddr);
		end = page_up(info->dlpi_addr + ph->p_vaddr + ph->p_memsz);
		/* ld.so made the pages below relro_end read-only. */
		if (relro_end > start && relro_end < end)
			start = relro_end;
		else if (relro_end >= end)
			continue;
		if (scan->n == SHM_MAX_DATA_SEGS)
			return 1;
		scan->seg[scan->n].base = start;
		scan->seg[scan->n].len = end - start;
		scan->n++;
	}
	return 1;
}

/*
 * The segment holds, between the program's objects, the redzones an
 * AddressSanitizer build puts around globals: whole pages are read here
 * and written to the memfd by the kernel (a raw syscall, which its pwrite
 * interceptor does not check), as any bytes.
 */
__attribute__((no_sanitize_address))
static bool page_is_zero(const unsigned char *p)
{
	const uint64_t *w = (const uint64_t *)p;
	size_t i;

	for (i = 0; i < page_size / sizeof(*w); i++)
		if (w[i])
			return false;
	return true;
}

/*
 * Copy the segment's pages into a new memfd and map it over them. Zero
 * pages are not written, so a large .bss costs no memory until used.
 */
static int share_in_place(struct shm_seg *seg, int *fdp)
{
	unsigned char *p = (unsigned char *)seg->base;
	size_t off, run;
	void *m;
	int fd, err;

	fd = memfd_create("hmc-shmem-data", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)seg->len)) {
		err = -errno;
		goto err_close;
	}
	for (off = 0; off < seg->len; off += run) {
		run = page_size;
		if (page_is_zero(p + off))
			continue;
		while (off + run < seg->len && !page_is_zero(p + off + run))
			run += page_size;
		if (syscall(SYS_pwrite64, fd, p + off, run, (off_t)off) !=
		    (long)run) {
			err = -EIO;
			goto err_close;
		}
	}
	m = mmap(p, seg->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 fd, 0);
	if (m == MAP_FAILED) {
		err = -errno;
		goto err_close;
	}
	*fdp = fd;
	return 0;

err_close:
	close(fd);
	return err;
}

/* Every mapped PE's process, for shm_seg_exit_peers(). */
static pid_t *peer_pid;

static void *map_peer(pid_t pid, int fd, size_t len)
{
	char path[64];
	void *m;
	int pfd;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	pfd = open(path, O_RDWR | O_CLOEXEC);
	if (pfd < 0)
		return NULL;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, pfd, 0);
	close(pfd);
	return m == MAP_FAILED ? NULL : m;
}

static bool mappable(const struct shm_peer_info *a,
		     const struct shm_peer_info *b)
{
	return a->map && b->map && !strcmp(a->boot_id, b->boot_id) &&
	       a->pid_ns == b->pid_ns && a->net_ns == b->net_ns;
}

static int map_peers(const struct shm_peer_info *all, char *why, size_t why_len)
{
	const struct shm_peer_info *mine = &all[shm.me];
	unsigned int s;
	int pe, err;

	shm.peer_heap = calloc((size_t)shm.npes, sizeof(*shm.peer_heap));
	if (!shm.peer_heap)
		return -ENOMEM;
	for (s = 0; s < shm.ndata; s++) {
		shm.peer_data[s] = calloc((size_t)shm.npes, sizeof(void *));
		if (!shm.peer_data[s])
			return -ENOMEM;
	}
	peer_pid = calloc((size_t)shm.npes, sizeof(*peer_pid));
	if (!peer_pid)
		return -ENOMEM;
	for (pe = 0; pe < shm.npes; pe++) {
		const struct shm_peer_info *p = &all[pe];

		if (p->heap_len != mine->heap_len || p->ndata != mine->ndata) {
			snprintf(why, why_len, "PE %d has another symmetric heap size or executable",
				 pe);
			return -EINVAL;
		}
		for (s = 0; s < shm.ndata; s++) {
			if (p->data_len[s] != mine->data_len[s]) {
				snprintf(why, why_len, "PE %d runs another executable",
					 pe);
				return -EINVAL;
			}
		}
		if (pe != shm.me && !mappable(p, mine))
			continue;	/* remote: NULL mappings, no pid */
		peer_pid[pe] = p->pid;
		if (pe == shm.me) {
			shm.peer_heap[pe] = (unsigned char *)shm.heap.base;
			for (s = 0; s < shm.ndata; s++)
				shm.peer_data[s][pe] =
					(unsigned char *)shm.data[s].base;
			continue;
		}
		shm.peer_heap[pe] = map_peer(p->pid, p->heap_fd, p->heap_len);
		if (!shm.peer_heap[pe])
			goto err_map;
		for (s = 0; s < shm.ndata; s++) {
			shm.peer_data[s][pe] = map_peer(p->pid, p->data_fd[s],
							p->data_len[s]);
			if (!shm.peer_data[s][pe])
				goto err_map;
		}
	}
	return 0;

err_map:
	err = errno ? errno : EIO;
	snprintf(why, why_len, "cannot map the memory of PE %d (pid %d): %s",
		 pe, (int)all[pe].pid, strerror(err));
	return -err;
}

/* The kernel we run on, the namespaces we run in, and HMC_SHMEM_MAP. */
static int host_identity(struct shm_peer_info *info)
{
	const char *map = getenv("HMC_SHMEM_MAP");
	struct stat st;
	FILE *f;
	int ok;

	f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (!f)
		return -errno;
	ok = fgets(info->boot_id, sizeof(info->boot_id), f) != NULL;
	fclose(f);
	if (!ok)
		return -EIO;
	if (stat("/proc/self/ns/pid", &st))
		return -errno;
	info->pid_ns = (uint64_t)st.st_ino;
	if (stat("/proc/self/ns/net", &st))
		return -errno;
	info->net_ns = (uint64_t)st.st_ino;
	info->map = !map || !(!strcmp(map, "0") || !strcasecmp(map, "off") ||
			      !strcasecmp(map, "no"));
	return 0;
}

/*
 * shmem_global_exit() on this host. A PE that maps peers runs a thread
 * that sleeps on the exit word at the start of its heap, a futex every
 * mapper may wake; the asker stores 1 + (its PE << 8 | status) there in
 * every peer. A thread, not a look in the library's own waits, since the
 * peer may be anywhere in the program; not a signal, which would end it
 * with the signal's status instead of the one asked for.
 */
#define EXIT_STOP	UINT32_MAX	/* the word at shmem_finalize */
#define EXIT_WAIT_MS	2000

static pthread_t exit_thread;
static bool exit_watching;

static uint32_t *exit_word(int pe)
{
	return &shm_internal(pe)->exit_word;
}

static void *exit_watch(void *arg)
{
	uint32_t *w = exit_word(shm.me), v;
	pid_t asker;
	int ms;

	while (!(v = __atomic_load_n(w, __ATOMIC_ACQUIRE)))
		syscall(SYS_futex, w, FUTEX_WAIT, 0, NULL, NULL, 0);
	if (v == EXIT_STOP)
		return NULL;
	v--;
	fflush(NULL);
	/*
	 * The asker goes first and is reaped, so that a launcher ending the
	 * job at a non-zero status names the asker, not us.
	 */
	asker = peer_pid[v >> 8];
	for (ms = 0; ms < EXIT_WAIT_MS && !kill(asker, 0); ms++)
		usleep(1000);
	shm_boot_exit((int)(v & 0xff));
}

void shm_seg_exit_peers(int status)
{
	uint32_t v = 1 + ((uint32_t)shm.me << 8 | ((uint32_t)status & 0xff));
	int pe;

	for (pe = 0; pe < shm.npes; pe++) {
		uint32_t *w, old = 0;

		if (pe == shm.me || !shm_pe_mapped(pe))
			continue;
		w = exit_word(pe);
		/* A PE told already, or leaving, goes as it is. */
		if (__atomic_compare_exchange_n(w, &old, v, false,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			syscall(SYS_futex, w, FUTEX_WAKE, INT_MAX, NULL, NULL,
				0);
	}
}

/* The watch runs with every signal blocked: they are the program's. */
static int exit_watch_start(void)
{
	sigset_t all, old;
	int pe, err;

	for (pe = 0; pe < shm.npes; pe++)
		if (pe != shm.me && shm_pe_mapped(pe))
			break;
	if (pe == shm.npes)
		return 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&exit_thread, NULL, exit_watch, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	exit_watching = !err;
	return err;
}

static void exit_watch_stop(void)
{
	uint32_t *w = exit_word(shm.me), old = 0;

	if (!exit_watching)
		return;
	/* Lost to an asker: the watch ends the process, join waits for it. */
	if (__atomic_compare_exchange_n(w, &old, EXIT_STOP, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	pthread_join(exit_thread, NULL);
	exit_watching = false;
}

int shm_seg_init(size_t heap_size, char *why, size_t why_len)
{
	struct shm_peer_info info = { 0 }, *all;
	struct phdr_scan scan = { 0 };
	unsigned int s;
	void *m;
	int fd, err;

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	shm.heap_internal = page_up(sizeof(struct shm_internal));
	shm.heap.len = shm.heap_internal + page_up(heap_size);
	fd = memfd_create("hmc-shmem-heap", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)shm.heap.len)) {
		err = -errno;
		close(fd);
		return err;
	}
	m = mmap(NULL, shm.heap.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	shm.heap.base = (uintptr_t)m;
	err = host_identity(&info);
	if (err)
		return err;
	info.pid = getpid();
	info.heap_fd = fd;
	info.heap_len = shm.heap.len;

	dl_iterate_phdr(scan_exe, &scan);
	for (s = 0; s < scan.n; s++) {
		err = share_in_place(&scan.seg[s], &info.data_fd[s]);
		if (err)
			return err;
		shm.data[s] = scan.seg[s];
		info.data_base[s] = scan.seg[s].base;
		info.data_len[s] = scan.seg[s].len;
	}
	shm.ndata = info.ndata = scan.n;

	all = calloc((size_t)shm.npes, sizeof(*all));
	if (!all)
		return -ENOMEM;
	err = shm_boot_allgather(&info, sizeof(info), all);
	if (!err)
		err = map_peers(all, why, why_len);
	free(all);
	if (!err) {
		err = exit_watch_start();
		if (err)
			snprintf(why, why_len, "cannot start the exit watch: %s",
				 strerror(-err));
	}
	return err;
}

void shm_seg_fini(void)
{
	unsigned int s;
	int pe;

	exit_watch_stop();

	for (pe = 0; shm.peer_heap && pe < shm.npes; pe++) {
		if (pe == shm.me)
			continue;
		if (shm.peer_heap[pe])
			munmap(shm.peer_heap[pe], shm.heap.len);
		for (s = 0; s < shm.ndata; s++)
			if (shm.peer_data[s] && shm.peer_data[s][pe])
				munmap(shm.peer_data[s][pe], shm.data[s].len);
	}
	free(shm.peer_heap);
	free(peer_pid);
	peer_pid = NULL;
	shm.peer_heap = NULL;
	for (s = 0; s < shm.ndata; s++) {
		free(shm.peer_data[s]);
		shm.peer_data[s] = NULL;
	}
	/*
	 * Our own heap stays mapped: the program may still read what it
	 * allocated (the standard leaves it undefined, a crash is unkind);
	 * the data segment stays shared since globals live there.
	 */
}

void *shm_peer_addr(const void *addr, int pe)
{
	uintptr_t a = (uintptr_t)addr;
	unsigned int s;

	if (!shm.peer_heap[pe])
		return NULL;
	if (a - shm.heap.base < shm.heap.len)
		return shm.peer_heap[pe] + (a - shm.heap.base);
	for (s = 0; s < shm.ndata; s++)
		if (a - shm.data[s].base < shm.data[s].len)
			return shm.peer_data[s][pe] + (a - shm.data[s].base);
	return NULL;
}

int shm_sym_locate(const void *addr, uint64_t *off)
{
	uintptr_t a = (uintptr_t)addr;
	unsigned int s;

	if (a - shm.heap.base < shm.heap.len) {
		*off = a - shm.heap.base;
		return 0;
	}
	for (s = 0; s < shm.ndata; s++) {
		if (a - shm.data[s].base < shm.data[s].len) {
			*off = a - shm.data[s].base;
			return (int)s + 1;
		}
	}
	return -1;
}

void *shm_sym_local(unsigned int seg, uint64_t off, uint64_t len)
{
	const struct shm_seg *sg;

	if (seg > shm.ndata)
		return NULL;
	sg = seg ? &shm.data[seg - 1] : &shm.heap;
	if (off > sg->len || len > sg->len - off)
		return NULL;
	return (void *)(sg->base + off);
}

struct shm_internal *shm_internal(int pe)
{
	return (struct shm_internal *)shm.peer_heap[pe];
}
