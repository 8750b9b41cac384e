// SPDX-License-Identifier: MIT
/* Collectives through shared memory (see shm.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "sys/util.h"
#include "world/shm.h"

#define WSHM_MAGIC	0x484d5753u	/* "HMWS" */
#define ABORT_LEN	UINT64_MAX
#define SPINS		16		/* polls before yielding the CPU */

struct wshm_hdr {
	uint32_t magic;
	uint32_t nslots;
	uint32_t changed;		/* atomic */
	uint32_t pad;
	uint64_t departed;		/* atomic: bit per rank */
	uint8_t rsvd[40];
};

struct wshm_slot {
	uint64_t seq;			/* atomic: last collective posted + 1 */
	uint64_t len[2];		/* per half: bytes, or ABORT_LEN */
	uint8_t pad[40];
	uint8_t data[2][WSHM_DATA];
};

struct wshm {
	struct wshm_hdr *hdr;
	struct wshm_slot *slots;
	size_t size;
	char name[WSHM_NAME_LEN];
	bool owner, linked;
};

static size_t seg_size(uint32_t n)
{
	return sizeof(struct wshm_hdr) + (size_t)n * sizeof(struct wshm_slot);
}

static int map(struct wshm *w, int fd, uint32_t n)
{
	void *p;

	w->size = seg_size(n);
	p = mmap(NULL, w->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	w->hdr = p;
	w->slots = (struct wshm_slot *)(w->hdr + 1);
	return 0;
}

int wshm_create(uint32_t nslots, char name[WSHM_NAME_LEN], struct wshm **out)
{
	struct wshm *w;
	uint8_t rnd[8];
	int fd, rc;

	if (!nslots || nslots > WSHM_MAX_RANKS)
		return -EOPNOTSUPP;
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return -EIO;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	snprintf(w->name, sizeof(w->name), "/hmc-world-%d-%016llx", getpid(),
		 (unsigned long long)get_be64(rnd));
	fd = shm_open(w->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		free(w);
		return rc;
	}
	if (ftruncate(fd, (off_t)seg_size(nslots))) {
		rc = -errno;
		close(fd);
		shm_unlink(w->name);
		free(w);
		return rc;
	}
	rc = map(w, fd, nslots);
	if (rc) {
		shm_unlink(w->name);
		free(w);
		return rc;
	}
	w->hdr->nslots = nslots;
	__atomic_store_n(&w->hdr->magic, WSHM_MAGIC, __ATOMIC_RELEASE);
	w->owner = w->linked = true;
	memcpy(name, w->name, WSHM_NAME_LEN);
	*out = w;
	return 0;
}

int wshm_open(const char *name, uint32_t nslots, struct wshm **out)
{
	struct wshm *w;
	struct stat st;
	int fd, rc;

	if (!nslots || nslots > WSHM_MAX_RANKS)
		return -EOPNOTSUPP;
	/* Another host's store names a segment we cannot see: that is all. */
	fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || (size_t)st.st_size != seg_size(nslots)) {
		close(fd);
		return -ENODEV;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		close(fd);
		return -ENOMEM;
	}
	rc = map(w, fd, nslots);
	if (!rc && (__atomic_load_n(&w->hdr->magic, __ATOMIC_ACQUIRE) !=
		    WSHM_MAGIC || w->hdr->nslots != nslots)) {
		munmap(w->hdr, w->size);
		rc = -ENODEV;
	}
	if (rc) {
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

void wshm_unlink(struct wshm *w)
{
	if (w->owner && w->linked)
		shm_unlink(w->name);
	w->linked = false;
}

void wshm_close(struct wshm *w)
{
	if (!w)
		return;
	wshm_unlink(w);
	munmap(w->hdr, w->size);
	free(w);
}

void wshm_changed(struct wshm *w, uint32_t departed)
{
	if (departed < w->hdr->nslots)
		__atomic_fetch_or(&w->hdr->departed, 1ULL << departed,
				  __ATOMIC_RELEASE);
	__atomic_store_n(&w->hdr->changed, 1, __ATOMIC_RELEASE);
}

static void post(struct wshm_slot *s, uint64_t seq, const void *p,
		 uint64_t len)
{
	if (len && len != ABORT_LEN)	/* a barrier posts no buffer */
		memcpy(s->data[seq & 1], p, len);
	s->len[seq & 1] = len;
	__atomic_store_n(&s->seq, seq + 1, __ATOMIC_RELEASE);
}

int wshm_coll(struct wshm *w, uint32_t rank, uint64_t seq,
	      enum wshm_kind kind, uint32_t root, const void *send, size_t len,
	      void *recv, int64_t deadline, char *missing, size_t mlen)
{
	uint32_t n = w->hdr->nslots, r, posted;
	bool abort_seen = false, departed_missing;
	uint64_t dep, l;
	unsigned int spins = 0;
	size_t m;

	if (__atomic_load_n(&w->hdr->changed, __ATOMIC_ACQUIRE)) {
		post(&w->slots[rank], seq, NULL, ABORT_LEN);
		return 1;
	}
	post(&w->slots[rank], seq, send,
	     kind == WSHM_BCAST && rank != root ? 0 : len);
	for (;;) {
		posted = 0;
		for (r = 0; r < n; r++)
			posted += __atomic_load_n(&w->slots[r].seq,
						  __ATOMIC_ACQUIRE) > seq;
		if (posted == n)
			break;
		/* A departed rank that did not post never will. */
		dep = __atomic_load_n(&w->hdr->departed, __ATOMIC_ACQUIRE);
		departed_missing = false;
		for (r = 0; dep && r < n; r++)
			if ((dep >> r & 1) && __atomic_load_n(&w->slots[r].seq,
						__ATOMIC_ACQUIRE) <= seq)
				departed_missing = true;
		if (departed_missing)
			return 1;
		if (++spins > SPINS) {
			if (!(spins & 255) && deadline_passed(deadline)) {
				m = (size_t)snprintf(missing, mlen,
					"timed out waiting for ranks");
				for (r = 0; r < n && m < mlen; r++)
					if (__atomic_load_n(&w->slots[r].seq,
							    __ATOMIC_ACQUIRE) <= seq)
						m += (size_t)snprintf(missing + m,
							mlen - m, " %u", r);
				return -ETIMEDOUT;
			}
			sched_yield();
		}
	}
	for (r = 0; r < n; r++)
		abort_seen |= w->slots[r].len[seq & 1] == ABORT_LEN;
	if (abort_seen)
		return 1;
	for (r = 0; r < n; r++) {
		l = w->slots[r].len[seq & 1];
		if (kind == WSHM_BCAST) {
			if (r != root)
				continue;
			if (l != len)
				return -EINVAL;
			if (rank != root && len)
				memcpy(recv, w->slots[r].data[seq & 1], len);
			continue;
		}
		if (l != len)
			return -EINVAL;
		if (len)	/* a barrier has no buffer to gather into */
			memcpy((uint8_t *)recv + (size_t)r * len,
			       w->slots[r].data[seq & 1], len);
	}
	return 0;
}
