// SPDX-License-Identifier: MIT
/*
 * Access to another PE's symmetric memory: the one layer that put, get,
 * AMOs, signals, quiet, barriers, collectives and locks go through.
 *
 * A mapped peer (seg.c) is reached by address: copies and CPU atomics.
 * A remote one by requests on the world's communicator: a request names
 * the segment, the offset and the length (and the AMO), and the target's
 * progress thread applies it to its own memory with the same copies and
 * the same CPU atomics (shm_amo_apply()) its mapped peers and its own
 * program use, so AMOs on one location are atomic with respect to each
 * other whoever issues them, and a PE's wait_until (acquire loads) sees
 * what the thread wrote.
 *
 * Ordering: requests are messages of one tag, which hmc_comm matches in
 * the order each source sent them, and one thread per target serves them
 * in that order. So puts, AMOs and signals from one PE to another are
 * applied in the order issued: fence costs nothing, and a put_signal's
 * signal (a second request) lands after its data. Quiet sends QUIET to
 * every peer with requests not yet known to be applied and waits for the
 * answers: an answer means everything sent before it was applied. Data of
 * a put larger than INLINE_MAX follows its request as a message of its own
 * tag, which the target receives straight into the destination.
 *
 * One-sided transfers: every PE registers its heap and data segments as
 * memory regions of the world's communicator and imports its remote
 * peers' (where the transport to them carries regions: tcp, ucx, verbs).
 * A put above INLINE_MAX from symmetric memory, and a get above it into
 * symmetric memory, then moves straight between the segments, with no
 * request and no copy on either side. Smaller ones do so too where the
 * target's transport counts them for its waiters (below), from or into a
 * registered bounce page where our side is no symmetric memory: served by
 * the target's progress engine, with no hop through its progress thread.
 * Such a put travels apart from the requests, so the next request to
 * that PE (an AMO, a signal, a QUIET, a BYE) and a one-sided get first
 * flush it, and so do fence and quiet.
 * Neither goes one-sided while requests to that PE are not known to be
 * applied (it would overtake them): it then goes as a request, until the
 * next quiet. AMOs go the same way, as the communicator's remote atomics
 * (tcp: applied by the target's progress engine with the same CPU
 * atomics), where the transport counts them in the target's notify word,
 * the count its waiters sleep on; one-sided puts count there too. Where
 * a transport's writes land unannounced (a NIC's), AMOs stay requests and
 * waiters look more often (shm_peer_silent()).
 *
 * Waiting: the progress thread and every requester wait in blocking
 * receives, which sleep until a frame wakes the communicator; a PE
 * waiting on its own memory for remote peers' writes sleeps on the count
 * of requests the thread applied (shm_peer_wait_applied()), woken by the
 * thread after each write.
 *
 * Failures: the progress thread looks at every peer's connection every
 * POLL_MS; a peer gone without saying BYE (which shmem_finalize sends
 * after its last barrier, see shm_peer_fini()) ends the job with one line,
 * as does a request or answer that fails or does not come within
 * HMC_WORLD_TIMEOUT. Tags from SHMEMX_COMM_TAG_BASE up are ours on the
 * world's communicator (shmemx.h tells programs that share the world).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "internal.h"

#define SHM_TAG_REQ	SHMEMX_COMM_TAG_BASE
/*
 * One message each: an answer's tag + a sequence number of the PE that
 * receives it, put data's + one of the PE that sends it. Apart, so that
 * the numbers two PEs draw each from its own counter never meet in one
 * receiver's matching.
 */
#define SHM_TAG_ANSWER	(SHM_TAG_REQ | 1ULL << 39)
#define SHM_TAG_DATA	(SHM_TAG_REQ | 1ULL << 38)
#define SHM_SEQ_MASK	((1ULL << 37) - 1)
/* Each PE's descriptors of its segments' regions, once. */
#define SHM_TAG_MR	(SHM_TAG_REQ | 1ULL << 37)
#define NR_SEGS		(1 + SHM_MAX_DATA_SEGS)
/* Put data carried in the request, below hmc_comm's eager limit. */
#define INLINE_MAX	(16 * 1024)
/* Packed elements of one strided get's answer. */
#define IGET_MAX	(1024 * 1024)
/* How often the progress thread looks at its peers' connections. */
#define POLL_MS		50

enum req_kind {
	RQ_PUT = 1,
	RQ_GET,
	RQ_IPUT,	/* @val elements of @len bytes, @cond bytes apart */
	RQ_IGET,
	RQ_AMO,
	RQ_QUIET,
	RQ_BYE,
	RQ_EXIT,
};

struct req_hdr {
	uint8_t kind;		/* enum req_kind */
	uint8_t seg;		/* 0 the heap, 1 + i data segment i */
	uint8_t amo;		/* enum shm_amo_op */
	uint8_t size;		/* AMO width */
	int32_t status;		/* RQ_EXIT */
	uint64_t off;
	uint64_t len;
	uint64_t val;
	uint64_t cond;
	uint64_t tag;		/* answer or data tag; 0 for none */
};

struct req_msg {
	struct req_hdr h;
	unsigned char data[INLINE_MAX];
};

static struct {
	struct hmc_comm *comm;
	bool remote;
	int timeout_ms;
	pthread_t thread;
	int stop;
	uint64_t seq;
	/* Per PE: requests sent that quiet must cover, and those known applied. */
	uint64_t *sent;
	uint64_t *acked;
	uint8_t *bye;		/* said BYE: its disconnect is no failure */
	/* Requests applied to our memory, and the threads asleep on it. */
	uint32_t applied;
	int sleepers;
	/* 1 + the status a peer's EXIT asked for; 0 while none did. */
	int exit_asked;
	/* Our segments' regions (0: none) and each peer's [pe * NR_SEGS + seg]. */
	uint32_t mr[NR_SEGS];
	uint32_t *rmr;
	/* [pe * NR_SEGS + seg]: AMOs go as the communicator's atomics */
	uint8_t *native;
	bool silent;		/* some peer's writes land unannounced */
	/* Small transfers whose memory here is no region go through this. */
	pthread_mutex_t bounce_lock;
	uint8_t *bounce;
	uint32_t bounce_mr;
	uint8_t *unflushed;	/* per PE: one-sided puts not known to be visible */
} pr = { .bounce_lock = PTHREAD_MUTEX_INITIALIZER };

/*
 * The progress thread's receive buffer, one request at a time. Its
 * blocking receives end (served, or given back at their deadline) before
 * the thread does, so nothing the communicator holds points here after.
 */
static struct req_msg rx;

uint64_t shm_amo_apply(void *p, unsigned int size, enum shm_amo_op op,
		       uint64_t val, uint64_t cond)
{
#define APPLY(T)							\
	do {								\
		T *a = p, v = (T)val, c = (T)cond;			\
									\
		switch (op) {						\
		case SHM_AMO_FETCH:					\
			return __atomic_load_n(a, __ATOMIC_SEQ_CST);	\
		case SHM_AMO_SET:					\
			__atomic_store_n(a, v, __ATOMIC_SEQ_CST);	\
			return 0;					\
		case SHM_AMO_SWAP:					\
			return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); \
		case SHM_AMO_CSWAP:					\
			/* On failure @c receives the value found. */	\
			__atomic_compare_exchange_n(a, &c, v, false,	\
						    __ATOMIC_SEQ_CST,	\
						    __ATOMIC_SEQ_CST);	\
			return c;					\
		case SHM_AMO_ADD:					\
			return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); \
		case SHM_AMO_AND:					\
			return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); \
		case SHM_AMO_OR:					\
			return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); \
		case SHM_AMO_XOR:					\
			return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); \
		case SHM_AMO_NR:					\
			break;						\
		}							\
	} while (0)

	if (size == 4)
		APPLY(uint32_t);
	else
		APPLY(uint64_t);
#undef APPLY
	return 0;
}

static void __attribute__((noreturn)) lost(const char *call, int pe, int err)
{
	if (err == -ETIMEDOUT)
		shm_fatal(call, "PE %d did not answer within %d ms (HMC_WORLD_TIMEOUT)",
			  pe, pr.timeout_ms);
	shm_fatal(call, "PE %d is unreachable: %s", pe, strerror(-err));
}

static uint64_t next_tag(uint64_t space)
{
	return space |
	       (__atomic_fetch_add(&pr.seq, 1, __ATOMIC_RELAXED) & SHM_SEQ_MASK);
}

/* Make our one-sided puts to @pe visible before whatever comes next. */
static void flush_puts(const char *call, int pe)
{
	int err;

	if (!__atomic_load_n(&pr.unflushed[pe], __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&pr.unflushed[pe], 0, __ATOMIC_RELAXED);
	err = hmc_comm_flush(pr.comm, (uint32_t)pe);
	if (err)
		lost(call, pe, err);
}

static void send_req(const char *call, int pe, const struct req_hdr *h,
		     size_t len)
{
	int err;

	flush_puts(call, pe);
	err = hmc_comm_send(pr.comm, (uint32_t)pe, SHM_TAG_REQ, h, len,
			    HMC_MEM_CPU, pr.timeout_ms);
	if (err)
		lost(call, pe, err);
}

/*
 * Wait for the answer of tag @tag from @pe. A blocking receive, not a
 * request waited for: hmc_comm_wait() spins 50 us first and looks at the
 * sockets only now and then while it does, where a small blocking receive
 * sleeps until the answer's frame wakes the communicator. The answer may
 * come before the receive is posted; it then waits in hmc_comm's
 * unexpected queue, a copy of a few bytes.
 */
static void answer_of(const char *call, int pe, uint64_t tag, void *out,
		      size_t len)
{
	struct hmc_msg_status st = { 0 };
	int err = hmc_comm_recv(pr.comm, (uint32_t)pe, tag, out, len,
				HMC_MEM_CPU, &st, pr.timeout_ms);

	if (err)
		lost(call, pe, err);
	if (st.len != len)
		shm_fatal(call, "PE %d answered %llu bytes where %zu were due",
			  pe, (unsigned long long)st.len, len);
}

/* Send @h and wait for its answer of exactly @len bytes into @out. */
static void call_remote(const char *call, int pe, struct req_hdr *h,
			void *out, size_t len)
{
	h->tag = next_tag(SHM_TAG_ANSWER);
	send_req(call, pe, h, sizeof(*h));
	answer_of(call, pe, h->tag, out, len);
}

static uint8_t locate(const char *call, const void *addr, uint64_t *off)
{
	int seg = shm_sym_locate(addr, off);

	if (seg < 0)
		shm_fatal(call, "%p is not a symmetric data object", addr);
	return (uint8_t)seg;
}

static void sent_one(int pe)
{
	__atomic_fetch_add(&pr.sent[pe], 1, __ATOMIC_RELEASE);
}

/* Whether requests we sent @pe may not be applied yet (quiet tells). */
static bool requests_unapplied(int pe)
{
	return __atomic_load_n(&pr.acked[pe], __ATOMIC_ACQUIRE) <
	       __atomic_load_n(&pr.sent[pe], __ATOMIC_ACQUIRE);
}

/*
 * Move [@loc, +@len) of ours and [@off, +@len) of @pe's segment @seg
 * one-sided (a put when @put, else a get) if both ends are regions:
 * whether it did.
 */
static bool one_sided(const char *call, int pe, bool put, uint8_t seg,
		      uint64_t off, void *loc, size_t len)
{
	uint32_t rmr = pr.rmr ? pr.rmr[pe * NR_SEGS + seg] : 0, lmr;
	bool small = len <= INLINE_MAX, bounced = false;
	uint64_t loff;
	hmc_req_t r;
	int lseg, err;

	/*
	 * It would overtake requests not yet applied: those go first. A
	 * small one goes one-sided only where the target's waiters are told
	 * (a request would wake them sooner than their polls).
	 */
	if (!rmr || (small && !pr.native[pe * NR_SEGS + seg]) ||
	    requests_unapplied(pe))
		return false;
	lseg = shm_sym_locate(loc, &loff);
	if (lseg >= 0 && pr.mr[lseg] &&
	    shm_sym_local((unsigned int)lseg, loff, len)) {
		lmr = pr.mr[lseg];
	} else if (small && pr.bounce_mr) {
		/* our side is no region: through the bounce page */
		pthread_mutex_lock(&pr.bounce_lock);
		bounced = true;
		if (put)
			memcpy(pr.bounce, loc, len);
		lmr = pr.bounce_mr;
		loff = 0;
	} else {
		return false;
	}
	if (put) {
		err = hmc_comm_put_mr_nb(pr.comm, (uint32_t)pe, lmr, loff, rmr,
					 off, len, &r);
	} else {
		flush_puts(call, pe);
		err = hmc_comm_get_mr_nb(pr.comm, (uint32_t)pe, lmr, loff, rmr,
					 off, len, &r);
	}
	if (!err)
		err = hmc_comm_wait(pr.comm, r, pr.timeout_ms);
	if (err)
		lost(call, pe, err);
	if (bounced) {
		if (!put)
			memcpy(loc, pr.bounce, len);
		pthread_mutex_unlock(&pr.bounce_lock);
	}
	if (put)
		__atomic_store_n(&pr.unflushed[pe], 1, __ATOMIC_RELEASE);
	return true;
}

_Static_assert(SHM_AMO_FETCH == (int)HMC_AMO_FETCH &&
	       SHM_AMO_SET == (int)HMC_AMO_SET &&
	       SHM_AMO_SWAP == (int)HMC_AMO_SWAP &&
	       SHM_AMO_CSWAP == (int)HMC_AMO_CSWAP &&
	       SHM_AMO_ADD == (int)HMC_AMO_ADD &&
	       SHM_AMO_AND == (int)HMC_AMO_AND &&
	       SHM_AMO_OR == (int)HMC_AMO_OR &&
	       SHM_AMO_XOR == (int)HMC_AMO_XOR, "one numbering of the AMOs");

/*
 * AMO @h on @pe by the communicator's remote atomics, where the transport
 * to @pe has them and counts them in the target's notify word (its
 * waiters must see them): whether it did.
 */
static bool native_amo(const char *call, int pe, const struct req_hdr *h,
		       uint64_t *fetch)
{
	uint32_t rmr = pr.rmr ? pr.rmr[pe * NR_SEGS + h->seg] : 0;
	hmc_req_t r;
	int err;

	/* It would overtake requests not yet applied: those go first. */
	if (!rmr || !pr.native[pe * NR_SEGS + h->seg] || requests_unapplied(pe))
		return false;
	err = hmc_comm_amo_nb(pr.comm, (uint32_t)pe, rmr, h->off, h->size,
			      (enum hmc_amo_op)h->amo, h->val, h->cond, fetch,
			      &r);
	if (err == -EOPNOTSUPP) {
		__atomic_store_n(&pr.native[pe * NR_SEGS + h->seg], 0,
				 __ATOMIC_RELAXED);
		return false;
	}
	if (!err)
		err = hmc_comm_wait(pr.comm, r, pr.timeout_ms);
	if (err)
		lost(call, pe, err);
	if (!fetch)
		__atomic_store_n(&pr.unflushed[pe], 1, __ATOMIC_RELEASE);
	return true;
}

/* Out of line: the mapped path keeps a small frame. */
static void __attribute__((noinline))
remote_put(const char *call, int pe, void *dest, const void *src, size_t len)
{
	struct req_msg m;
	int err;

	memset(&m.h, 0, sizeof(m.h));
	m.h.kind = RQ_PUT;
	m.h.seg = locate(call, dest, &m.h.off);
	m.h.len = len;
	if (one_sided(call, pe, true, m.h.seg, m.h.off, (void *)src, len))
		return;
	if (len <= INLINE_MAX) {
		memcpy(m.data, src, len);
		send_req(call, pe, &m.h, sizeof(m.h) + len);
	} else {
		m.h.tag = next_tag(SHM_TAG_DATA);
		send_req(call, pe, &m.h, sizeof(m.h));
		err = hmc_comm_send(pr.comm, (uint32_t)pe, m.h.tag, src, len,
				    HMC_MEM_CPU, pr.timeout_ms);
		if (err)
			lost(call, pe, err);
	}
	sent_one(pe);
}

void shm_put(const char *call, int pe, void *dest, const void *src,
	     size_t len)
{
	void *p;

	if (!len)
		return;
	p = shm_peer_addr(dest, pe);
	if (p)
		memcpy(p, src, len);
	else
		remote_put(call, pe, dest, src, len);
}

void shm_get(const char *call, int pe, void *dest, const void *src,
	     size_t len)
{
	struct req_hdr h = { .kind = RQ_GET, .len = len };
	const void *p;

	if (!len)
		return;
	p = shm_peer_addr(src, pe);
	if (p) {
		memcpy(dest, p, len);
		return;
	}
	h.seg = locate(call, src, &h.off);
	if (one_sided(call, pe, false, h.seg, h.off, dest, len))
		return;
	call_remote(call, pe, &h, dest, len);
}

void shm_get_all(const char *call, const struct shm_get_req *v, size_t n)
{
	uint64_t *tag = calloc(n ? n : 1, sizeof(*tag));
	size_t i;

	if (!tag)
		shm_fatal(call, "out of memory");
	for (i = 0; i < n; i++) {
		struct req_hdr h = { .kind = RQ_GET, .len = v[i].len };

		/*
		 * An answer above the eager limit waits for its receive, and
		 * the peer's progress thread with it: while we waited for
		 * another peer's, that peer's thread could be waiting on a
		 * third PE doing the same. Those go one at a time below.
		 */
		if (!v[i].len || v[i].len > HMC_MSG_EAGER_MAX ||
		    shm_peer_addr(v[i].src, v[i].pe))
			continue;
		h.seg = locate(call, v[i].src, &h.off);
		h.tag = tag[i] = next_tag(SHM_TAG_ANSWER);
		send_req(call, v[i].pe, &h, sizeof(h));
	}
	for (i = 0; i < n; i++) {
		if (tag[i])
			answer_of(call, v[i].pe, tag[i], v[i].dest, v[i].len);
		else
			shm_get(call, v[i].pe, v[i].dest, v[i].src, v[i].len);
	}
	free(tag);
}

/*
 * Strided transfers to a remote PE move packed elements: as many as a
 * request carries (iput) or IGET_MAX bytes of answer (iget) at a time,
 * instead of a message per element.
 */
static void __attribute__((noinline))
remote_iput(const char *call, int pe, unsigned char *dest,
	    const unsigned char *src, size_t dst, size_t sst, size_t n,
	    size_t size)
{
	size_t per = INLINE_MAX / size, i, k, c;
	struct req_msg m;

	for (i = 0; i < n; i += c) {
		c = n - i < per ? n - i : per;
		if (!c) {	/* an element above INLINE_MAX: a put each */
			c = 1;
			remote_put(call, pe, dest + i * dst, src + i * sst, size);
			continue;
		}
		memset(&m.h, 0, sizeof(m.h));
		m.h.kind = RQ_IPUT;
		m.h.seg = locate(call, dest + i * dst, &m.h.off);
		m.h.len = size;
		m.h.val = c;
		m.h.cond = dst;
		for (k = 0; k < c; k++)
			memcpy(m.data + k * size, src + (i + k) * sst, size);
		send_req(call, pe, &m.h, sizeof(m.h) + c * size);
		sent_one(pe);
	}
}

void shm_iput(const char *call, int pe, void *dest, const void *src,
	      size_t dst, size_t sst, size_t n, size_t size)
{
	unsigned char *d = shm_peer_addr(dest, pe);
	const unsigned char *s = src;
	size_t i;

	dst *= size;
	sst *= size;
	if (!d) {
		if (n)
			remote_iput(call, pe, dest, s, dst, sst, n, size);
		return;
	}
	for (i = 0; i < n; i++)
		memcpy(d + i * dst, s + i * sst, size);
}

static void __attribute__((noinline))
remote_iget(const char *call, int pe, unsigned char *dest,
	    const unsigned char *src, size_t dst, size_t sst, size_t n,
	    size_t size)
{
	size_t per = IGET_MAX / size, i, k, c;
	unsigned char *buf;

	if (!per) {	/* an element above IGET_MAX: a get each */
		for (i = 0; i < n; i++)
			shm_get(call, pe, dest + i * dst, src + i * sst, size);
		return;
	}
	buf = malloc((n < per ? n : per) * size);
	if (!buf)
		shm_fatal(call, "out of memory");
	for (i = 0; i < n; i += c) {
		struct req_hdr h = { .kind = RQ_IGET, .len = size, .cond = sst };

		c = n - i < per ? n - i : per;
		h.seg = locate(call, src + i * sst, &h.off);
		h.val = c;
		call_remote(call, pe, &h, buf, c * size);
		for (k = 0; k < c; k++)
			memcpy(dest + (i + k) * dst, buf + k * size, size);
	}
	free(buf);
}

void shm_iget(const char *call, int pe, void *dest, const void *src,
	      size_t dst, size_t sst, size_t n, size_t size)
{
	const unsigned char *s = shm_peer_addr(src, pe);
	unsigned char *d = dest;
	size_t i;

	dst *= size;
	sst *= size;
	if (!s) {
		if (n)
			remote_iget(call, pe, d, src, dst, sst, n, size);
		return;
	}
	for (i = 0; i < n; i++)
		memcpy(d + i * dst, s + i * sst, size);
}

uint64_t shm_amo(const char *call, int pe, void *addr, unsigned int size,
		 enum shm_amo_op op, uint64_t val, uint64_t cond, bool fetch)
{
	struct req_hdr h = { .kind = RQ_AMO, .amo = (uint8_t)op,
			     .size = (uint8_t)size, .len = size,
			     .val = val, .cond = cond };
	uint64_t old = 0;
	void *p = shm_peer_addr(addr, pe);

	if (p)
		return shm_amo_apply(p, size, op, val, cond);
	h.seg = locate(call, addr, &h.off);
	if (native_amo(call, pe, &h, fetch ? &old : NULL))
		return old;
	if (!fetch) {
		send_req(call, pe, &h, sizeof(h));
		sent_one(pe);
		return 0;
	}
	call_remote(call, pe, &h, &old, sizeof(old));
	return old;
}

void shm_arrive(const char *call, int pe, uint64_t *counter)
{
	struct req_hdr h = { .kind = RQ_AMO, .amo = SHM_AMO_ADD, .size = 8,
			     .len = 8, .val = 1 };
	uint64_t *p = shm_peer_addr(counter, pe);

	if (p) {
		__atomic_fetch_add(p, 1, __ATOMIC_SEQ_CST);
		return;
	}
	h.seg = locate(call, counter, &h.off);
	/* Not counted in pr.sent: the next barrier's quiet skips it. */
	send_req(call, pe, &h, sizeof(h));
}

void shm_peer_fence(void)
{
	int pe;

	for (pe = 0; pr.unflushed && pe < shm.npes; pe++)
		flush_puts("shmem_fence", pe);
}

void shm_quiet(void)
{
	struct req_hdr h = { .kind = RQ_QUIET };
	uint64_t *upto, *tag, dummy;
	int pe;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!pr.remote)
		return;
	upto = calloc((size_t)shm.npes, sizeof(*upto));
	tag = calloc((size_t)shm.npes, sizeof(*tag));
	if (!upto || !tag)
		shm_fatal("shmem_quiet", "out of memory");
	/* Every QUIET out first, so that the peers serve them together. */
	for (pe = 0; pe < shm.npes; pe++) {
		upto[pe] = __atomic_load_n(&pr.sent[pe], __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&pr.acked[pe], __ATOMIC_ACQUIRE) >= upto[pe]) {
			flush_puts("shmem_quiet", pe);
			continue;
		}
		h.tag = tag[pe] = next_tag(SHM_TAG_ANSWER);
		send_req("shmem_quiet", pe, &h, sizeof(h));
	}
	for (pe = 0; pe < shm.npes; pe++) {
		uint64_t seen;

		if (!tag[pe])
			continue;
		/* The answers carry nothing; @dummy takes them all. */
		answer_of("shmem_quiet", pe, tag[pe], &dummy, sizeof(dummy));
		seen = __atomic_load_n(&pr.acked[pe], __ATOMIC_RELAXED);
		while (seen < upto[pe] &&
		       !__atomic_compare_exchange_n(&pr.acked[pe], &seen,
						    upto[pe], false,
						    __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED))
			;
	}
	free(upto);
	free(tag);
}

/* ----------------------------------------------------------------------
 * The target's side.
 */
uint32_t shm_peer_applied(void)
{
	return __atomic_load_n(&pr.applied, __ATOMIC_SEQ_CST);
}

void shm_peer_wait_applied(uint32_t seen, long timeout_ns)
{
	struct timespec ts = { timeout_ns / 1000000000, timeout_ns % 1000000000 };

	/* The kernel sleeps only while the count is still @seen. */
	__atomic_add_fetch(&pr.sleepers, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &pr.applied, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
	__atomic_sub_fetch(&pr.sleepers, 1, __ATOMIC_SEQ_CST);
}

/*
 * After a request that wrote our memory: a waiter that read the count
 * before the write either sees the new count or sleeps already and is
 * woken (both sides' accesses are sequentially consistent, so one sees
 * the other's).
 */
static void applied_one(void)
{
	__atomic_add_fetch(&pr.applied, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&pr.sleepers, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &pr.applied, FUTEX_WAKE_PRIVATE, INT_MAX,
			NULL, NULL, 0);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Every peer answers EXIT before it exits: we wait (up to EXIT_WAIT_MS)
 * for the answers, so that our own exit cannot drop the request before
 * the peer took it (see shm_peer_fini()).
 */
#define EXIT_WAIT_MS	1000

/*
 * A PE told to exit stays until the PE that told it is gone, which
 * happens once every PE has answered (or after EXIT_WAIT_MS): going at
 * once, it could be seen gone by a PE not yet told, which would then end
 * with a failure of its own instead of the status asked for.
 */
static __attribute__((noreturn)) void exit_when_asker_gone(uint32_t from,
							   int status)
{
	uint64_t deadline = now_ms() + 2 * EXIT_WAIT_MS;

	while (hmc_comm_is_connected(pr.comm, from) && now_ms() < deadline)
		usleep(1000);
	shm_boot_exit(status);
}

static void answer(uint32_t to, uint64_t tag, const void *data, size_t len)
{
	/* A requester that is gone is the watch's to report. */
	(void)hmc_comm_send(pr.comm, to, tag, data, len, HMC_MEM_CPU,
			    pr.timeout_ms);
}

static void *target(uint32_t from, const struct req_hdr *h, uint64_t len)
{
	void *p = shm_sym_local(h->seg, h->off, len);

	if (!p)
		shm_fatal("progress", "PE %u asked for %llu bytes at %llu of segment %u, outside this PE's symmetric memory",
			  from, (unsigned long long)len,
			  (unsigned long long)h->off, h->seg);
	return p;
}

/*
 * A put's data into our memory. One aligned word (shmem_p, the usual
 * flag a PE waits on with wait_until) is stored whole, as the CPU's own
 * store of a mapped peer would be, never seen torn by the waiter's atomic
 * loads.
 */
static void copy_in(void *p, const void *data, uint64_t len)
{
	uint64_t v = 0;

	if ((len == 1 || len == 2 || len == 4 || len == 8) &&
	    !((uintptr_t)p & (len - 1))) {
		memcpy(&v, data, len);
		switch (len) {
		case 1:
			__atomic_store_n((uint8_t *)p, (uint8_t)v, __ATOMIC_RELEASE);
			return;
		case 2:
			__atomic_store_n((uint16_t *)p, (uint16_t)v, __ATOMIC_RELEASE);
			return;
		case 4:
			__atomic_store_n((uint32_t *)p, (uint32_t)v, __ATOMIC_RELEASE);
			return;
		default:
			__atomic_store_n((uint64_t *)p, v, __ATOMIC_RELEASE);
			return;
		}
	}
	memcpy(p, data, len);
}

/* Bytes from the first element of a strided request to its last's end. */
static uint64_t strided_span(uint32_t from, const struct req_hdr *h)
{
	if (!h->val || h->cond < h->len ||
	    h->cond > (UINT64_MAX - h->len) / h->val)
		shm_fatal("progress", "PE %u sent a strided request of %llu elements of %llu bytes, %llu apart",
			  from, (unsigned long long)h->val,
			  (unsigned long long)h->len,
			  (unsigned long long)h->cond);
	return (h->val - 1) * h->cond + h->len;
}

/* Apply one request; every write to our memory counts (applied_one()). */
static void serve(uint32_t from, size_t got)
{
	const struct req_hdr *h = &rx.h;
	uint64_t old, zero = 0, i;
	unsigned char *packed;
	void *p;
	int err;

	if (got < sizeof(*h))
		shm_fatal("progress", "PE %u sent a request of %zu bytes", from,
			  got);
	switch (h->kind) {
	case RQ_PUT:
		p = target(from, h, h->len);
		if (h->len <= INLINE_MAX) {
			if (got != sizeof(*h) + h->len)
				shm_fatal("progress", "PE %u sent a put of %zu bytes for %llu",
					  from, got - sizeof(*h),
					  (unsigned long long)h->len);
			copy_in(p, rx.data, h->len);
			applied_one();
			break;
		}
		if (got != sizeof(*h))
			shm_fatal("progress", "PE %u sent a put request of %zu bytes",
				  from, got);
		err = hmc_comm_recv(pr.comm, from, h->tag, p, h->len,
				    HMC_MEM_CPU, NULL, pr.timeout_ms);
		if (err)
			lost("progress", (int)from, err);
		applied_one();
		break;
	case RQ_GET:
		answer(from, h->tag, target(from, h, h->len), h->len);
		break;
	case RQ_IPUT:
		if (!h->len || h->val > INLINE_MAX / h->len ||
		    got != sizeof(*h) + h->val * h->len)
			shm_fatal("progress", "PE %u sent a strided put of %zu bytes for %llu elements of %llu",
				  from, got, (unsigned long long)h->val,
				  (unsigned long long)h->len);
		p = target(from, h, strided_span(from, h));
		for (i = 0; i < h->val; i++)
			copy_in((unsigned char *)p + i * h->cond,
				rx.data + i * h->len, h->len);
		applied_one();
		break;
	case RQ_IGET:
		if (!h->len || h->val > IGET_MAX / h->len)
			shm_fatal("progress", "PE %u asked for %llu elements of %llu bytes",
				  from, (unsigned long long)h->val,
				  (unsigned long long)h->len);
		p = target(from, h, strided_span(from, h));
		packed = malloc(h->val * h->len);
		if (!packed)
			shm_fatal("progress", "out of memory");
		for (i = 0; i < h->val; i++)
			memcpy(packed + i * h->len,
			       (unsigned char *)p + i * h->cond, h->len);
		answer(from, h->tag, packed, h->val * h->len);
		free(packed);
		break;
	case RQ_AMO:
		if ((h->size != 4 && h->size != 8) || h->amo >= SHM_AMO_NR ||
		    h->off & (h->size - 1U))
			shm_fatal("progress", "PE %u sent an invalid atomic operation",
				  from);
		old = shm_amo_apply(target(from, h, h->size), h->size,
				    (enum shm_amo_op)h->amo, h->val, h->cond);
		/* Our waiters first: the requester has its answer waiting. */
		applied_one();
		if (h->tag)
			answer(from, h->tag, &old, sizeof(old));
		break;
	case RQ_QUIET:
		answer(from, h->tag, &zero, sizeof(zero));
		break;
	case RQ_BYE:
		__atomic_store_n(&pr.bye[from], 1, __ATOMIC_RELEASE);
		applied_one();
		break;
	case RQ_EXIT:
		fflush(NULL);
		__atomic_store_n(&pr.exit_asked, 1 + (h->status & 0xff),
				 __ATOMIC_RELEASE);
		answer(from, h->tag, &zero, sizeof(zero));
		exit_when_asker_gone(from, h->status);
	default:
		shm_fatal("progress", "PE %u sent a request of unknown kind %u",
			  from, h->kind);
	}
}

static void watch_peers(void)
{
	int pe;

	for (pe = 0; pe < shm.npes; pe++)
		if (pe != shm.me && !__atomic_load_n(&pr.bye[pe], __ATOMIC_ACQUIRE) &&
		    !hmc_comm_is_connected(pr.comm, (uint32_t)pe))
			shm_fatal("progress", "PE %d is gone (it failed or ended without shmem_finalize); ending the job",
				  pe);
}

/*
 * A blocking receive with a deadline: it sleeps until a request's frame
 * wakes the communicator (hmc_comm_wait() on a posted receive would spin
 * 50 us first, on CPUs the PEs need), and gives the receive back at the
 * deadline, after which the peers are watched.
 */
static void *progress(void *arg)
{
	struct hmc_msg_status st;
	uint64_t watched = now_ms();
	int err;

	while (!__atomic_load_n(&pr.stop, __ATOMIC_ACQUIRE)) {
		/* Busy serving others, still notice a peer gone. */
		if (now_ms() - watched >= POLL_MS) {
			watch_peers();
			watched = now_ms();
		}
		err = hmc_comm_recv(pr.comm, HMC_ANY_SOURCE, SHM_TAG_REQ, &rx,
				    sizeof(rx), HMC_MEM_CPU, &st, POLL_MS);
		if (err == -ETIMEDOUT)
			continue;
		if (err)
			shm_fatal("progress", "receiving a request failed: %s",
				  strerror(-err));
		serve(st.source, st.len);
	}
	return NULL;
}

bool shm_peer_remote(void)
{
	return pr.remote;
}

/*
 * How to reach @pe's segment @s: AMOs as the communicator's atomics only
 * where they count in its notify word. The transport is the same both
 * ways, so where ours land unannounced, @pe's land so here: our waiters
 * must then poll rather than sleep long (shm_peer_silent()).
 */
static void rma_classify(int pe, unsigned int s)
{
	uint32_t rmr = pr.rmr[pe * NR_SEGS + s];
	int notifies = rmr ? hmc_comm_rmr_notifies(pr.comm, (uint32_t)pe, rmr) :
			     0;

	pr.native[pe * NR_SEGS + s] = notifies == 1;
	if (rmr && notifies != 1)
		pr.silent = true;
}

bool shm_peer_silent(void)
{
	return pr.silent;
}

/*
 * Register our segments as regions and swap their descriptors with every
 * remote PE: u8 count, then per segment be16 length and the descriptor
 * (length 0: that segment has none). Any segment without a region on
 * either side moves by requests.
 */
static int rma_setup(char *why, size_t why_len)
{
	HMC_OPTS(hmc_mr_opts, o, .access = HMC_MR_REMOTE_READ |
		 HMC_MR_REMOTE_WRITE, .notify = &pr.applied);
	size_t cap = 1 + NR_SEGS * (2 + HMC_MR_DESC_MAX), len, pos;
	unsigned int nseg = 1 + shm.ndata, s;
	struct hmc_msg_status st;
	uint8_t *out, *in;
	int pe, err = 0;

	out = malloc(cap);
	in = malloc(cap);
	pr.rmr = calloc((size_t)shm.npes * NR_SEGS, sizeof(*pr.rmr));
	pr.native = calloc((size_t)shm.npes * NR_SEGS, sizeof(*pr.native));
	if (!out || !in || !pr.rmr || !pr.native) {
		err = -ENOMEM;
		goto out;
	}
	pr.bounce = malloc(INLINE_MAX);
	if (pr.bounce && hmc_comm_mr_reg(pr.comm, pr.bounce, INLINE_MAX, NULL,
					 &pr.bounce_mr))
		pr.bounce_mr = 0;
	out[0] = (uint8_t)nseg;
	for (pos = 1, s = 0; s < nseg; s++) {
		const struct shm_seg *sg = s ? &shm.data[s - 1] : &shm.heap;

		len = 0;
		if (hmc_comm_mr_reg(pr.comm, (void *)sg->base, sg->len, &o,
				    &pr.mr[s]) ||
		    hmc_comm_mr_pack(pr.comm, pr.mr[s], out + pos + 2,
				     HMC_MR_DESC_MAX, &len))
			len = 0;
		out[pos] = (uint8_t)(len >> 8);
		out[pos + 1] = (uint8_t)len;
		pos += 2 + len;
	}
	for (pe = 0; pe < shm.npes; pe++) {
		if (pe == shm.me || shm_pe_mapped(pe))
			continue;
		err = hmc_comm_send(pr.comm, (uint32_t)pe, SHM_TAG_MR, out, pos,
				    HMC_MEM_CPU, pr.timeout_ms);
		if (err)
			goto fail;
	}
	for (pe = 0; pe < shm.npes; pe++) {
		if (pe == shm.me || shm_pe_mapped(pe))
			continue;
		err = hmc_comm_recv(pr.comm, (uint32_t)pe, SHM_TAG_MR, in, cap,
				    HMC_MEM_CPU, &st, pr.timeout_ms);
		if (err)
			break;
		err = -EPROTO;
		if (!st.len || in[0] != nseg)
			break;
		for (pos = 1, s = 0; s < nseg; s++, pos += 2 + len) {
			if (st.len - pos < 2)
				break;
			len = (size_t)in[pos] << 8 | in[pos + 1];
			if (st.len - pos - 2 < len)
				break;
			/* none, or not over this transport: by requests */
			if (len && hmc_comm_mr_import(pr.comm, (uint32_t)pe,
						      in + pos + 2, len,
						      &pr.rmr[pe * NR_SEGS + s]))
				pr.rmr[pe * NR_SEGS + s] = 0;
			rma_classify(pe, s);
		}
		if (s < nseg || pos != st.len)
			break;
		err = 0;
	}
fail:
	if (err)
		snprintf(why, why_len, "cannot swap memory regions with PE %d: %s",
			 pe, strerror(-err));
out:
	free(out);
	free(in);
	return err;
}

/* Deregister our segments' regions (every peer is done with them). */
static void rma_fini(void)
{
	unsigned int s;

	for (s = 0; s < NR_SEGS; s++)
		if (pr.mr[s])
			hmc_comm_mr_dereg(pr.comm, pr.mr[s]);
	memset(pr.mr, 0, sizeof(pr.mr));
	if (pr.bounce_mr)
		hmc_comm_mr_dereg(pr.comm, pr.bounce_mr);
	pr.bounce_mr = 0;
	free(pr.bounce);
	pr.bounce = NULL;
	free(pr.rmr);
	free(pr.native);
	pr.rmr = NULL;
	pr.native = NULL;
}

int shm_peer_init(char *why, size_t why_len)
{
	int pe, err;

	for (pe = 0; pe < shm.npes; pe++)
		if (!shm_pe_mapped(pe))
			pr.remote = true;
	if (!pr.remote)
		return 0;
	pr.comm = shm_boot_comm();
	pr.timeout_ms = shm_boot_timeout_ms();
	pr.sent = calloc((size_t)shm.npes, sizeof(*pr.sent));
	pr.acked = calloc((size_t)shm.npes, sizeof(*pr.acked));
	pr.bye = calloc((size_t)shm.npes, sizeof(*pr.bye));
	pr.unflushed = calloc((size_t)shm.npes, sizeof(*pr.unflushed));
	if (!pr.sent || !pr.acked || !pr.bye || !pr.unflushed) {
		err = -ENOMEM;
		goto err_free;
	}
	/* Every peer: mapped ones too are watched, and get BYE and EXIT. */
	for (pe = 0; pe < shm.npes; pe++) {
		if (pe == shm.me)
			continue;
		err = shm_boot_connect(pe);
		if (err) {
			snprintf(why, why_len, "cannot connect to PE %d: %s", pe,
				 strerror(-err));
			goto err_free;
		}
	}
	err = rma_setup(why, why_len);
	if (err)
		goto err_rma;
	err = -pthread_create(&pr.thread, NULL, progress, NULL);
	if (err)
		goto err_rma;
	return 0;

err_rma:
	rma_fini();
err_free:
	free(pr.sent);
	free(pr.acked);
	free(pr.bye);
	free(pr.unflushed);
	pr.unflushed = NULL;
	pr.remote = false;
	return err;
}

/*
 * Leaving takes three steps, so that no connection drops while a message
 * on it may still matter (hmc_comm drops the records a peer that leaves
 * put in a same-host ring and we have not taken yet): BYE to every peer,
 * the last request we send; every peer's BYE served, so everything it sent
 * us was; a world barrier, after which every PE has served every BYE.
 */
void shm_peer_fini(void)
{
	static const char call[] = "shmem_finalize";
	struct req_hdr h = { .kind = RQ_BYE };
	uint64_t deadline;
	int pe, err;

	if (!pr.remote)
		return;
	for (pe = 0; pe < shm.npes; pe++)
		if (pe != shm.me)
			send_req(call, pe, &h, sizeof(h));
	deadline = now_ms() + (uint64_t)pr.timeout_ms;
	for (pe = 0; pe < shm.npes; pe++) {
		struct shm_backoff b = { 0 };

		while (pe != shm.me &&
		       !__atomic_load_n(&pr.bye[pe], __ATOMIC_ACQUIRE)) {
			if (now_ms() > deadline)
				lost(call, pe, -ETIMEDOUT);
			shm_backoff(&b);
		}
	}
	err = shm_boot_barrier();
	if (err)
		shm_fatal(call, "the last barrier failed: %s", strerror(-err));
	__atomic_store_n(&pr.stop, 1, __ATOMIC_RELEASE);
	pthread_join(pr.thread, NULL);
	rma_fini();
	free(pr.sent);
	free(pr.acked);
	free(pr.bye);
	free(pr.unflushed);
	pr.unflushed = NULL;
	pr.remote = false;
}

void shm_peer_exit_if_asked(void)
{
	int asked = __atomic_load_n(&pr.exit_asked, __ATOMIC_ACQUIRE);

	if (asked)
		shm_boot_exit(asked - 1);
}

bool shm_peer_exit(int status)
{
	struct req_hdr h = { .kind = RQ_EXIT, .status = status };
	struct hmc_msg_status st;
	uint64_t dummy, deadline;
	hmc_req_t *r;
	int pe;

	if (!pr.remote)
		return false;
	/* Best effort: a peer that is gone already needs no ending. */
	r = calloc((size_t)shm.npes, sizeof(*r));
	deadline = now_ms() + EXIT_WAIT_MS;
	for (pe = 0; r && pe < shm.npes; pe++) {
		if (pe == shm.me)
			continue;
		h.tag = next_tag(SHM_TAG_ANSWER);
		if (hmc_comm_irecv(pr.comm, (uint32_t)pe, h.tag, &dummy,
				   sizeof(dummy), HMC_MEM_CPU, &st, &r[pe]))
			r[pe] = 0;
		else if (hmc_comm_send(pr.comm, (uint32_t)pe, SHM_TAG_REQ, &h,
				       sizeof(h), HMC_MEM_CPU, EXIT_WAIT_MS))
			r[pe] = 0;
	}
	for (pe = 0; r && pe < shm.npes; pe++) {
		uint64_t now = now_ms();

		if (r[pe])
			(void)hmc_comm_wait(pr.comm, r[pe],
					    now < deadline ? (int)(deadline - now) : 0);
	}
	return true;
}
