/* SPDX-License-Identifier: MIT */
/*
 * libhmc: heterogeneous memory communication.
 *
 * Every transfer moves bytes between registered buffers (ConnBuffers) of
 * peers, addressed by offset: put writes a range of the local buffer into
 * the peer's buffer, get reads the peer's range into the local one. A small
 * control plane addressed by rank carries handshakes, transport metadata,
 * u64 tags and barriers.
 *
 * Conventions:
 *  - every call returns 0 (or a count) on success and a negative errno on
 *    failure; hmc_strerror() turns it into text;
 *  - option structs start with their own size (use HMC_OPTS()), so they can
 *    grow without breaking callers: a shorter struct (an older build) reads
 *    as zero-extended, a longer one (a newer header) is refused with -E2BIG
 *    unless everything after the fields this library knows is zero. They
 *    have no implicit padding; reserved fields must be zero (-EINVAL);
 *  - timeouts are in milliseconds; HMC_TIMEOUT_INFINITE waits forever and is
 *    never a default;
 *  - the library never exits, never installs signal handlers and prints
 *    nothing unless asked (hmc_set_log() or HMC_LOG=error|warn|info|debug).
 */
#ifndef HMC_HMC_H
#define HMC_HMC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HMC_VERSION_MAJOR	0
#define HMC_VERSION_MINOR	1
#define HMC_VERSION_PATCH	0

#define HMC_TIMEOUT_INFINITE	(-1)

/* Declares an option struct with its size set: HMC_OPTS(hmc_comm_opts, o, .rank = 1); */
#define HMC_OPTS(TYPE, NAME, ...)					\
	struct TYPE NAME = { .sz = sizeof(struct TYPE), __VA_ARGS__ }

/* "major.minor.patch" of the library that is running. */
const char *hmc_version(void);

/* Text for a negative errno returned by libhmc (or a positive errno). */
const char *hmc_strerror(int err);

/* ----------------------------------------------------------------------
 * Logging. Off by default; HMC_LOG=<level> in the environment prints to
 * stderr when no callback is set.
 */
enum hmc_log_level {
	HMC_LOG_ERROR,
	HMC_LOG_WARN,
	HMC_LOG_INFO,
	HMC_LOG_DEBUG,
};

typedef void (*hmc_log_fn)(enum hmc_log_level level, const char *msg,
			   void *arg);

/* Route messages up to @max_level to @fn (NULL restores the default). */
void hmc_set_log(hmc_log_fn fn, enum hmc_log_level max_level, void *arg);

/* ----------------------------------------------------------------------
 * Memory: CPU, CUDA, ROCm (AMD and Hygon), Ascend NPUs (AscendCL),
 * Cambricon MLUs (CNRT) and Moore Threads GPUs (MUSA). Device runtimes are
 * loaded at run time, so one build runs everywhere; a missing runtime or
 * device gives -ENODEV.
 */
enum hmc_mem_type {
	HMC_MEM_CPU,
	HMC_MEM_CUDA,
	HMC_MEM_ROCM,
	HMC_MEM_ASCEND,		/* libascendcl.so */
	HMC_MEM_CNRT,		/* libcnrt.so */
	HMC_MEM_MUSA,		/* libmusart.so */
};

enum hmc_copy_kind {
	HMC_COPY_H2H,
	HMC_COPY_H2D,
	HMC_COPY_D2H,
	HMC_COPY_D2D,
};

/* "cpu", "cuda", "rocm", "ascend", "cnrt", "musa". */
const char *hmc_mem_type_name(enum hmc_mem_type type);

/* Number of devices of @type (1 for CPU), or -ENODEV without a runtime. */
int hmc_mem_device_count(enum hmc_mem_type type);

/*
 * Allocate @size bytes on device @device of @type (CPU memory is page aligned
 * and only device 0 exists). Copies between two different GPU runtimes give
 * -EOPNOTSUPP; freeing with another device than the allocation's, -EINVAL.
 */
int hmc_mem_alloc(enum hmc_mem_type type, int device, size_t size, void **ptr);

/* Free memory from hmc_mem_alloc() with the same type and device. */
int hmc_mem_free(enum hmc_mem_type type, int device, void *ptr);

/* Synchronous copy of @len bytes using the runtime of @type on @device. */
int hmc_mem_copy(enum hmc_mem_type type, int device, void *dst,
		 const void *src, size_t len, enum hmc_copy_kind kind);

/* ----------------------------------------------------------------------
 * ConnBuffer: one stable registered region, addressed by (offset, size).
 * CPU buffers come from /dev/hmc (pinned kernel pages) when the module is
 * present (libhmc loads it with libkmod if it is installed and the caller
 * may load modules), else from a memfd mapped shared and mlocked (where
 * RLIMIT_MEMLOCK allows; else only faulted in); HMC_REQUIRE_KMOD=1 in the
 * environment, or HMC_BUF_F_REQUIRE_KMOD, makes the fallback an error;
 * HMC_BUF_F_NO_KMOD wins over the environment (skipping the module is not a
 * fallback). New CPU buffers are zeroed, GPU buffers are not. A buffer
 * belongs to the process that created it: a /dev/hmc or memfd mapping is
 * not inherited across fork().
 */
struct hmc_buf;

enum hmc_buf_backing {
	HMC_BUF_BACKING_KMOD = 1,	/* /dev/hmc pages, mapped */
	HMC_BUF_BACKING_MLOCK,		/* anonymous memory, mlocked */
	HMC_BUF_BACKING_ANON,		/* anonymous memory, mlock refused */
	HMC_BUF_BACKING_DEVICE,		/* GPU memory */
	/*
	 * A sealed memfd mapped shared, mlocked where RLIMIT_MEMLOCK allows:
	 * the CPU buffer without the module (MLOCK and ANON only where
	 * memfd_create() is unavailable). Peers on this host map it.
	 */
	HMC_BUF_BACKING_MEMFD,
};

#define HMC_BUF_F_REQUIRE_KMOD	(1U << 0)	/* fail rather than fall back */
#define HMC_BUF_F_NO_KMOD	(1U << 1)	/* never use /dev/hmc */
#define HMC_BUF_F_NUMA		(1U << 2)	/* CPU pages on @numa_node */

struct hmc_buf_opts {
	size_t sz;
	uint32_t flags;			/* HMC_BUF_F_* */
	int numa_node;			/* with HMC_BUF_F_NUMA, else must be 0 */
};

/* Create a buffer of @size bytes of @type on @device (opts may be NULL). */
int hmc_buf_create(enum hmc_mem_type type, int device, size_t size,
		   const struct hmc_buf_opts *opts, struct hmc_buf **buf);

/* Destroy a buffer; it must no longer be used by a communicator. */
void hmc_buf_destroy(struct hmc_buf *buf);

void *hmc_buf_ptr(const struct hmc_buf *buf);
size_t hmc_buf_size(const struct hmc_buf *buf);
enum hmc_mem_type hmc_buf_mem_type(const struct hmc_buf *buf);
int hmc_buf_device(const struct hmc_buf *buf);
enum hmc_buf_backing hmc_buf_backing(const struct hmc_buf *buf);

/* "kmod", "mlock", "anon", "device", "memfd". */
const char *hmc_buf_backing_name(enum hmc_buf_backing backing);

/*
 * Copy @len bytes from @src into the buffer at @offset; @src_type says
 * where @src lives (HMC_MEM_CPU or a GPU type). -ERANGE if the range does
 * not fit in the buffer (an offset past the end is refused even when @len
 * is 0).
 */
int hmc_buf_write(struct hmc_buf *buf, size_t offset, const void *src,
		  size_t len, enum hmc_mem_type src_type);

/* Copy @len bytes at @offset out of the buffer into @dst of @dst_type. */
int hmc_buf_read(struct hmc_buf *buf, size_t offset, void *dst, size_t len,
		 enum hmc_mem_type dst_type);

/* Copy within the buffer; the ranges may overlap. */
int hmc_buf_copy_within(struct hmc_buf *buf, size_t dst_offset,
			size_t src_offset, size_t len);

#define HMC_BUF_EXPORT_RDWR	(1U << 0)	/* importers may write */

/*
 * A dma-buf of [@offset, @offset + @len) of @buf (page aligned; @len 0 means
 * to the end) in a new close-on-exec descriptor *@fd: for another driver
 * (ibv_reg_dmabuf_mr, a GPU) or, over a Unix socket, another process.
 * Returns 0, -EINVAL (bad flags, NULL @fd, an unaligned part), -ERANGE (a
 * part outside the buffer) or -EOPNOTSUPP (the memory cannot be exported).
 *
 * Buffers from /dev/hmc are exported by hmc.ko: the dma-buf can be mapped,
 * is read-only for importers unless HMC_BUF_EXPORT_RDWR, and stays valid
 * after the buffer is destroyed, until its last user closes it. GPU
 * buffers are exported by their runtime (cuMemGetHandleForAddressRange of
 * CUDA 11.7 and later, hipMemGetHandleForAddressRange of ROCm 7) where the
 * device supports dma-bufs; importers may then always write, and the
 * buffer must outlive every use of the dma-buf. memfd buffers hand out the
 * memfd itself (not a dma-buf: mmap it; its size is sealed), whole only
 * (@offset 0, @len 0 or the buffer's size, else -EOPNOTSUPP), read-only
 * unless HMC_BUF_EXPORT_RDWR; it too outlives the buffer. MLOCK and ANON
 * buffers cannot be exported.
 */
int hmc_buf_export_fd(struct hmc_buf *buf, size_t offset, size_t len,
		      uint32_t flags, int *fd);

/* ----------------------------------------------------------------------
 * Communicator: one ConnBuffer, a rank, the control plane and the
 * transports. Peers are addressed by rank.
 *
 * Thread safety: every hmc_comm_* call may be made from several threads at
 * once on one communicator, except hmc_comm_destroy(), which must not race
 * with any other call on it, and hmc_comm_barrier(), which one thread at a
 * time may call. A communicator belongs to the process that created it (a
 * forked child must create its own).
 *
 * Progress: a background thread accepts connections, runs handshakes and
 * serves passive-target transport work while the application computes;
 * callers that wait drive progress themselves, without a thread hand-off.
 */
struct hmc_comm;

/* A non-blocking operation; 0 is never a valid request. */
typedef uint64_t hmc_req_t;

enum hmc_transport {
	/*
	 * The first of these that both ends can bring up:
	 *  - shm, for a peer on this host (its Unix control socket reached,
	 *    in any network namespace, and the same kernel boot id) whose
	 *    buffer can be shared: CPU buffers from /dev/hmc or a memfd;
	 *  - verbs, for a peer reached over TCP control when our RDMA port is
	 *    up and its address (RoCE GID) is the one the control connection
	 *    leaves from (InfiniBand: an active port), and the peer's port is
	 *    up too;
	 *  - else tcp (CPU buffers);
	 *  - else ucx (device memory that tcp cannot carry).
	 * hmc_comm_peer_transport() says which one a peer got.
	 */
	HMC_TRANSPORT_AUTO,
	HMC_TRANSPORT_UCX,		/* UCX (posix/cma on one host, tcp, ...) */
	/*
	 * ibverbs RC queue pairs. The ConnBuffer is registered as a dma-buf
	 * where it exports one and the device takes it, else as is (GPU
	 * memory: peer memory). A GPU buffer the device can reach neither
	 * way is staged: our puts, gets and put_signals go through a few
	 * registered host bounce buffers per peer (with every ordering
	 * guarantee kept), but the buffer cannot be a target: a peer's put,
	 * get or put_signal to it fails with -EOPNOTSUPP.
	 */
	HMC_TRANSPORT_VERBS,
	/*
	 * Same host: copies into the peer's mapped buffer (its /dev/hmc
	 * dma-buf or memfd, passed over the Unix control socket once the
	 * handshake has succeeded). CPU buffers only; needs Unix control.
	 */
	HMC_TRANSPORT_SHM,
	/*
	 * Plain TCP streams (num_chs of them per peer, large transfers
	 * striped): one-sided, served by the target's progress engine; CPU
	 * ConnBuffers.
	 */
	HMC_TRANSPORT_TCP,
};

/* "auto", "ucx", "verbs", "shm", "tcp". */
const char *hmc_transport_name(enum hmc_transport transport);

#define HMC_COMM_F_NO_PROGRESS_THREAD	(1U << 0) /* caller drives progress */
#define HMC_COMM_F_NO_UNIX		(1U << 1) /* control over TCP only */

struct hmc_comm_opts {
	size_t sz;
	uint32_t rank;			/* this process's rank */
	uint32_t flags;			/* HMC_COMM_F_* */
	/*
	 * Shared secret for the HMAC-SHA256 challenge-response on every
	 * control connection; NULL takes HMC_SECRET from the environment;
	 * none means peers are not authenticated.
	 */
	const char *secret;
	int connect_timeout_ms;		/* dial + handshake (default 10000) */
	int op_timeout_ms;		/* blocking put/get/flush (default 30000) */
	/*
	 * Verbs: RC queue pairs per peer (default 1, at most
	 * HMC_VERBS_MAX_CHANNELS); large transfers are striped across them.
	 * TCP: streams per peer, the larger of both sides' num_chs.
	 */
	uint32_t num_chs;
	uint32_t reserved0;		/* must be 0 */
	/* Verbs: device name; NULL takes HMC_IB_DEV, else the first active port. */
	const char *ib_dev;
	uint32_t ib_port;		/* verbs: port on ib_dev (0: first active) */
	uint32_t reserved1;		/* must be 0 */
	/*
	 * TLS 1.3 on every control connection, with certificates verified
	 * both ways against @tls_ca: PEM files of this process's certificate
	 * chain, its key, and the CA; NULL takes HMC_TLS_CERT, HMC_TLS_KEY and
	 * HMC_TLS_CA. With TLS, control runs over TCP only (no Unix sockets,
	 * hence no shm transport), a peer without a certificate from that CA
	 * is refused (-EACCES at its connect), and the secret, if any, is
	 * still checked inside TLS.
	 */
	const char *tls_cert;
	const char *tls_key;
	const char *tls_ca;
	/*
	 * Messages (hmc_comm_send() and the like) stage data through the last
	 * msg_region bytes of the ConnBuffer (default: a quarter of it, at
	 * most 64 MiB; rounded down to whole slots), in slots of msg_slot_size
	 * bytes (default 256 KiB; a multiple of 4096, halved while fewer than
	 * two fit; a region without two 4 KiB slots makes every message
	 * -ENOSPC). A region of 576 KiB or more in a CPU ConnBuffer starts
	 * with the rings of same-host peers' small messages (64 KiB per peer,
	 * up to 8, within an eighth of it); the slots take the rest.
	 * One-sided users keep the rest; messages never touch it unless the
	 * caller's own data lies there.
	 */
	uint64_t msg_region;
	uint32_t msg_slot_size;
	uint32_t reserved2;		/* must be 0 */
};

#define HMC_VERBS_MAX_CHANNELS	64

/* Create a communicator over @buf (which must outlive it). */
int hmc_comm_create(struct hmc_buf *buf, const struct hmc_comm_opts *opts,
		    struct hmc_comm **comm);

/* Disconnect every peer (as hmc_comm_disconnect()), stop listening, free it. */
void hmc_comm_destroy(struct hmc_comm *comm);

uint32_t hmc_comm_rank(const struct hmc_comm *comm);
struct hmc_buf *hmc_comm_buf(const struct hmc_comm *comm);

/*
 * Accept control connections on @ip:@port (TCP; port 0 picks one) and, for
 * peers on this host, on a Unix socket named after the port whose peer
 * credentials are checked: $HMC_RUNTIME_DIR/ctrl.<port>, by default
 * /tmp/hmc-<euid>/ctrl.<port>, which peers in other network namespaces of
 * the host reach too (else an abstract name, this namespace only).
 */
int hmc_comm_listen(struct hmc_comm *comm, const char *ip, uint16_t port);

/* The TCP port hmc_comm_listen() bound, or -ENOTCONN. */
int hmc_comm_listen_port(const struct hmc_comm *comm);

/*
 * Connect to rank @peer listening on @ip:@port and bring up @transport to it.
 * On return both sides count each other as connected. The listener's Unix
 * socket is tried first (its path, then, when @ip is an address of this
 * host, its abstract name); a listener there that is not the one at
 * @ip:@port refuses, and TCP is used (HMC_CTRL_TRANSPORT=tcp|unix forces
 * one). -EISCONN if
 * already connected, -EACCES if authentication fails, -EEXIST if the peer
 * already has a connection from our rank, -ETIMEDOUT.
 */
int hmc_comm_connect(struct hmc_comm *comm, uint32_t peer, const char *ip,
		     uint16_t port, enum hmc_transport transport);

/*
 * Close the connection to @peer: operations in flight get up to 2 s (or
 * op_timeout_ms if shorter) to finish, then fail with -ENOTCONN.
 */
int hmc_comm_disconnect(struct hmc_comm *comm, uint32_t peer);

/* Whether @peer is connected and has not failed. */
bool hmc_comm_is_connected(struct hmc_comm *comm, uint32_t peer);

/* The transport a connected @peer uses, or a negative errno. */
int hmc_comm_peer_transport(struct hmc_comm *comm, uint32_t peer);

/* Ranks of connected peers: fills up to @max, returns how many there are. */
int hmc_comm_peers(struct hmc_comm *comm, uint32_t *ranks, size_t max);

/* The size of @peer's ConnBuffer, or a negative errno. */
int64_t hmc_comm_peer_buf_size(struct hmc_comm *comm, uint32_t peer);

/*
 * One-sided transfers between [local_off, local_off + len) of our buffer
 * and [remote_off, remote_off + len) of @peer's. The blocking forms wait up
 * to op_timeout_ms. -ERANGE for ranges outside either buffer.
 */
int hmc_comm_put(struct hmc_comm *comm, uint32_t peer, size_t local_off,
		 size_t remote_off, size_t len);
int hmc_comm_get(struct hmc_comm *comm, uint32_t peer, size_t local_off,
		 size_t remote_off, size_t len);

/*
 * Start a transfer and return its request in @req. A put request completes
 * when the local range may be reused (use hmc_comm_flush() for remote
 * visibility); a get request completes when the data is in our buffer.
 */
int hmc_comm_put_nb(struct hmc_comm *comm, uint32_t peer, size_t local_off,
		    size_t remote_off, size_t len, hmc_req_t *req);
int hmc_comm_get_nb(struct hmc_comm *comm, uint32_t peer, size_t local_off,
		    size_t remote_off, size_t len, hmc_req_t *req);

/*
 * Wait for @req: its result (0 or the error of the operation), after which
 * the request is released; -ETIMEDOUT leaves it pending; -ENOENT for a
 * request that is unknown or already released.
 */
int hmc_comm_wait(struct hmc_comm *comm, hmc_req_t req, int timeout_ms);

/* Like hmc_comm_wait() without waiting: -EINPROGRESS while pending. */
int hmc_comm_test(struct hmc_comm *comm, hmc_req_t req);

/*
 * Wait for all @n requests. @status (optional) receives each result,
 * -EINPROGRESS for those still pending at the deadline (they stay valid).
 * Returns 0, -ETIMEDOUT, or the first error.
 */
int hmc_comm_wait_all(struct hmc_comm *comm, const hmc_req_t *reqs, size_t n,
		      int timeout_ms, int *status);

/* Wait until every earlier put to @peer is visible in its buffer. */
int hmc_comm_flush(struct hmc_comm *comm, uint32_t peer);

/*
 * Put, then deliver @tag to @peer, which receives it with
 * hmc_comm_recv_tag() only once the data is visible in its buffer.
 */
int hmc_comm_put_signal(struct hmc_comm *comm, uint32_t peer,
			size_t local_off, size_t remote_off, size_t len,
			uint64_t tag);

/* Send a u64 tag to @peer over the control plane. */
int hmc_comm_send_tag(struct hmc_comm *comm, uint32_t peer, uint64_t tag);

/*
 * Receive the next tag from @peer, in order, waiting up to @timeout_ms (for
 * a rank that has not connected yet too). Tags that arrived before the peer
 * disconnected or failed are still delivered; then its error.
 */
int hmc_comm_recv_tag(struct hmc_comm *comm, uint32_t peer, uint64_t *tag,
		      int timeout_ms);

/*
 * Wait until every connected peer has entered the same barrier (each pair
 * of ranks counts its barriers; a global barrier needs every pair connected).
 */
int hmc_comm_barrier(struct hmc_comm *comm, int timeout_ms);

/* ----------------------------------------------------------------------
 * Memory regions: one-sided transfers to and from memory outside the
 * ConnBuffer.
 *
 * A communicator registers ranges of this process's memory (heap, static
 * data, another buffer's pages) with every transport it has brought up, and
 * with each one it brings up later. A region's descriptor
 * (hmc_comm_mr_pack(): keys, never a pointer a peer could misuse) travels
 * to peers by any means; a peer imports it for one connection and then
 * puts into it or gets from it by offset, as with the ConnBuffer. The
 * owner's side checks every access against the region's bounds and
 * rights: a put to a region registered without HMC_MR_REMOTE_WRITE, or
 * past its end, fails on the initiator and writes nothing.
 *
 * Transports: tcp, ucx and verbs carry regions (over verbs the NIC does
 * the owner's checks; UCX has no owner's side, and the initiator checks
 * bounds and rights against the descriptor). The shm transport maps the
 * peer's ConnBuffer only; a peer reached through it has no regions to
 * import (-EOPNOTSUPP): peers on one host share memory with
 * hmc_buf_export_fd() or their own mappings instead.
 *
 * Register and pack once the peers that will import the region are
 * connected: a descriptor holds keys for the transports up at that time
 * (importing it over another one is -ENOENT).
 */
#define HMC_MR_REMOTE_READ	(1U << 0)	/* peers may get from it */
#define HMC_MR_REMOTE_WRITE	(1U << 1)	/* peers may put into it */

/* A descriptor from hmc_comm_mr_pack() is at most this long. */
#define HMC_MR_DESC_MAX		1024

struct hmc_mr_opts {
	size_t sz;
	uint32_t access;		/* HMC_MR_REMOTE_* (0: local use only) */
	uint32_t mem_type;		/* enum hmc_mem_type (default CPU) */
	int32_t device;			/* for device memory */
	uint32_t reserved;		/* must be 0 */
	/*
	 * Optional: a word that counts peers' puts and atomics landing in
	 * the region, for a thread that sleeps on it (futex, process
	 * private) until remote writes come. Where our side's transport
	 * places the bytes itself (tcp), it adds one and wakes the word's
	 * sleepers after each; where the NIC does (verbs, ucx) nobody can:
	 * hmc_comm_rmr_notifies() tells the peer which it is.
	 */
	uint32_t *notify;
};

/*
 * Register [@addr, @addr + @len) (page-aligned or not; @len > 0): a
 * handle in @mr, never 0 (which names the ConnBuffer in the transfers
 * below). -EOPNOTSUPP when no transport that is up can register such
 * memory.
 */
int hmc_comm_mr_reg(struct hmc_comm *comm, void *addr, size_t len,
		    const struct hmc_mr_opts *opts, uint32_t *mr);

/*
 * Deregister @mr once the transfers we posted with it are done (waiting up
 * to op_timeout_ms for them: -ETIMEDOUT leaves it registered). Peers'
 * later accesses fail on their side (tcp, verbs) or are undefined (ucx,
 * as with ucp_mem_unmap()): deregister after the peers are done, e.g.
 * after a barrier.
 */
int hmc_comm_mr_dereg(struct hmc_comm *comm, uint32_t mr);

/* Write @mr's descriptor into @desc (@cap bytes): its length in *@len. */
int hmc_comm_mr_pack(struct hmc_comm *comm, uint32_t mr, void *desc,
		     size_t cap, size_t *len);

/*
 * Import the descriptor of a region of connected @peer: a handle for it in
 * *@rmr (never 0, which names the peer's ConnBuffer), valid until the
 * connection to @peer ends. Importing the same region again gives the same
 * handle. -EINVAL for a descriptor that does not parse, -ENOENT for one
 * without a key for the transport that reaches @peer.
 */
int hmc_comm_mr_import(struct hmc_comm *comm, uint32_t peer,
		       const void *desc, size_t len, uint32_t *rmr);

/* The size of imported region @rmr of @peer, or a negative errno. */
int64_t hmc_comm_rmr_size(struct hmc_comm *comm, uint32_t peer, uint32_t rmr);

/*
 * Whether our puts and atomics into @peer's region @rmr count in the
 * notify word it was registered with (1), or land unannounced (0); or a
 * negative errno.
 */
int hmc_comm_rmr_notifies(struct hmc_comm *comm, uint32_t peer, uint32_t rmr);

/*
 * hmc_comm_put_nb() and hmc_comm_get_nb() between any two regions: ours
 * @mr (0: the ConnBuffer) at @local_off and @peer's imported @rmr (0: its
 * ConnBuffer) at @remote_off. -ERANGE for ranges outside either region,
 * -ENOENT for an unknown handle, -EACCES for a region of the peer's whose
 * rights do not allow it. hmc_comm_flush() covers them.
 */
int hmc_comm_put_mr_nb(struct hmc_comm *comm, uint32_t peer, uint32_t mr,
		       size_t local_off, uint32_t rmr, size_t remote_off,
		       size_t len, hmc_req_t *req);
int hmc_comm_get_mr_nb(struct hmc_comm *comm, uint32_t peer, uint32_t mr,
		       size_t local_off, uint32_t rmr, size_t remote_off,
		       size_t len, hmc_req_t *req);

/* ----------------------------------------------------------------------
 * Remote atomics on a peer's memory, applied by the peer's side with the
 * CPU's atomic instructions (tcp: its progress engine; ucx: in UCX's CPU
 * atomic mode; verbs: only where the device's atomics are coherent with
 * the CPU's, IBV_ATOMIC_GLOB), so that they are atomic with respect to
 * the peer's own and its other peers' atomics on that memory. Where the
 * transport that reaches the peer cannot, -EOPNOTSUPP: the caller then
 * falls back to its own emulation.
 */
enum hmc_amo_op {
	HMC_AMO_FETCH,		/* read */
	HMC_AMO_SET,
	HMC_AMO_SWAP,
	HMC_AMO_CSWAP,		/* set @operand where it equals @compare */
	HMC_AMO_ADD,
	HMC_AMO_AND,
	HMC_AMO_OR,
	HMC_AMO_XOR,
};

/*
 * @op on the @size-byte (4 or 8) integer at @remote_off of @peer's
 * region @rmr (0: its ConnBuffer), aligned to @size (-EINVAL otherwise);
 * the region must allow writes, and reads where @fetch is not NULL
 * (-EACCES). With @fetch, the value found there lands in *@fetch (zero
 * extended) before the request completes; without, the request completes
 * once sent, and hmc_comm_flush() makes it visible. AMOs to one peer are
 * applied in the order posted; like puts, they may overtake or be
 * overtaken by earlier puts until a flush.
 */
int hmc_comm_amo_nb(struct hmc_comm *comm, uint32_t peer, uint32_t rmr,
		    size_t remote_off, unsigned int size, enum hmc_amo_op op,
		    uint64_t operand, uint64_t compare, uint64_t *fetch,
		    hmc_req_t *req);

/* ----------------------------------------------------------------------
 * Messages: two-sided, tagged, from and into any memory (CPU or GPU, inside
 * the ConnBuffer or not), of any size.
 *
 * Matching: a receive takes the first message, in the order the sender
 * posted them, from its source with its tag; HMC_ANY_SOURCE and
 * HMC_ANY_TAG match any. Messages from one source never overtake each
 * other; those of different sources are matched in the order they arrive.
 * Receives are matched in the order they were posted.
 *
 * Protocols: messages up to HMC_MSG_EAGER_MAX bytes travel with their
 * envelope on the control connection, or between peers of the shm
 * transport through a ring in the receiver's message region, and are
 * buffered by the receiver until a receive takes them (a send completes
 * once its data has left).
 * Larger ones are announced and pulled by the receiver once matched: with
 * get() straight from the sender's ConnBuffer when the source lies in it,
 * else through the sender's staging slots, which it refills as the
 * receiver takes them; into the destination when it lies in the receiver's
 * ConnBuffer, else through the receiver's slots (see msg_region). Such a
 * send completes once the receiver has all of it. Copies into and out of
 * slots run while the peer's transfers of other slots are in flight.
 *
 * Failures: a peer that fails or disconnects fails the messages in flight
 * with it on both sides; a message is delivered whole or not at all. A
 * receive with too small a buffer fails with -EMSGSIZE on both sides (its
 * status still gives the message's size).
 */
#define HMC_ANY_SOURCE		UINT32_MAX
#define HMC_ANY_TAG		UINT64_MAX	/* not a valid tag to send */
#define HMC_MSG_EAGER_MAX	(32 * 1024)

/* What a receive got. */
struct hmc_msg_status {
	uint64_t tag;
	uint64_t len;			/* bytes of the message */
	uint32_t source;
	int32_t error;			/* 0 or the receive's negative errno */
};

/*
 * Send @len bytes at @data (memory of @mem_type) to connected @peer (not
 * ourselves: -ENOTCONN) with @tag, and wait up to @timeout_ms for it to
 * complete. A blocking send or receive
 * whose message has started moving when it times out fails the connection
 * to the peer (both sides see the error) rather than leave half a message.
 */
int hmc_comm_send(struct hmc_comm *comm, uint32_t peer, uint64_t tag,
		  const void *data, size_t len, enum hmc_mem_type mem_type,
		  int timeout_ms);

/*
 * Receive a message from @source (or HMC_ANY_SOURCE) with @tag (or
 * HMC_ANY_TAG) into up to @len bytes at @data; @status (optional) says who
 * sent what.
 */
int hmc_comm_recv(struct hmc_comm *comm, uint32_t source, uint64_t tag,
		  void *data, size_t len, enum hmc_mem_type mem_type,
		  struct hmc_msg_status *status, int timeout_ms);

/*
 * Non-blocking forms: @req is waited for with hmc_comm_wait(), _test() or
 * _wait_all(); @data (and @status, filled before the request completes,
 * except when the source's failure ends it) must stay valid until then.
 */
int hmc_comm_isend(struct hmc_comm *comm, uint32_t peer, uint64_t tag,
		   const void *data, size_t len, enum hmc_mem_type mem_type,
		   hmc_req_t *req);
int hmc_comm_irecv(struct hmc_comm *comm, uint32_t source, uint64_t tag,
		   void *data, size_t len, enum hmc_mem_type mem_type,
		   struct hmc_msg_status *status, hmc_req_t *req);

enum hmc_msg_op {
	HMC_MSG_SEND,
	HMC_MSG_RECV,
};

/* One operation of hmc_comm_msg_batch(). */
struct hmc_msg {
	uint32_t op;			/* enum hmc_msg_op */
	uint32_t peer;			/* destination, or source */
	uint64_t tag;
	void *data;
	uint64_t len;
	uint32_t mem_type;		/* enum hmc_mem_type */
	uint32_t reserved;		/* must be 0 */
	struct hmc_msg_status *status;	/* receives, optional */
};

/*
 * Post @n operations in order, a request each in @reqs. On an error the
 * ones before it stay posted (to be waited for) and the rest get request 0.
 */
int hmc_comm_msg_batch(struct hmc_comm *comm, const struct hmc_msg *msgs,
		       size_t n, hmc_req_t *reqs);

/*
 * Drive communication once (accepts, handshakes, transport progress) and
 * return the number of events handled. Needed only with
 * HMC_COMM_F_NO_PROGRESS_THREAD, or to poll memory at the lowest latency.
 * Called in a loop, it polls the transports on every call and the control
 * sockets (tags, accepts, peers that leave) every millisecond.
 */
int hmc_comm_progress(struct hmc_comm *comm);

#ifdef __cplusplus
}
#endif

#endif /* HMC_HMC_H */
