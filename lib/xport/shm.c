// SPDX-License-Identifier: MIT
/*
 * Same-host zero-copy transport. Each side hands the descriptor behind its
 * ConnBuffer to the peer over the Unix control connection (SCM_RIGHTS):
 * the /dev/hmc dma-buf of a kmod buffer or the memfd of a memfd buffer,
 * read-write; the peer maps it. A put is then a copy into the peer's
 * mapping and a get a copy out of it, with no system call per operation;
 * flush is a memory fence. The copy runs in the calling thread, so put_nb
 * and get_nb complete before they return.
 *
 * The control plane passes the descriptor only once the handshake (peer
 * credentials, and the HMAC challenge when a secret is set) has succeeded
 * (ctrl/ctrl.c). Both sides announce their kernel's boot id: a peer that
 * is not on this boot of this machine is refused, so that AUTO moves on.
 *
 * The mapping holds the peer's pages (the dma-buf holds its buffer, the
 * memfd its file; the memfd's size is sealed, so that no truncation can
 * turn a store into SIGBUS), so a peer that dies leaves valid memory
 * behind: its failure is seen by the control connection, never as a fault
 * here. The mapping is dropped with the peer (disconnect or failure).
 *
 * A put writes its last byte last (shm_copy_in_order()), so that a peer
 * polling the end of a message sees the whole of it, as over RDMA.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/peer.h"
#include "mem/buf.h"
#include "sys/host.h"
#include "sys/log.h"
#include "sys/util.h"
#include "xport/xport.h"

#define SHM_BLOB_MAGIC	0x484d4353u	/* "HMCS" */
/* be32 magic, be32 0, be64 size, boot id */
#define SHM_BLOB_LEN	(16 + HOST_BOOT_ID_LEN)

struct shm_ctx {
	struct hmc_comm *comm;
	uint8_t *base;
	uint64_t size;
	int export_fd;		/* our buffer's dma-buf or memfd, for every peer */
	uint8_t boot_id[HOST_BOOT_ID_LEN];
};

struct shm_peer {
	int fd;			/* the peer's dma-buf, until mapped */
	uint8_t *remote;
	uint64_t remote_size;
};

static void shm_fini(void *ctx)
{
	struct shm_ctx *s = ctx;

	close(s->export_fd);
	free(s);
}

static int shm_init(struct hmc_comm *comm, void **ctx)
{
	struct shm_ctx *s;
	int fd, rc;

	if (hmc_buf_mem_type(comm->buf) != HMC_MEM_CPU)
		return -EOPNOTSUPP;
	rc = hmc_buf_export_fd(comm->buf, 0, 0, HMC_BUF_EXPORT_RDWR, &fd);
	if (rc) {
		pr_debug("shm transport: ConnBuffer export: %s",
			 hmc_strerror(rc));
		return rc;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		return -ENOMEM;
	}
	s->comm = comm;
	s->base = hmc_buf_ptr(comm->buf);
	s->size = hmc_buf_size(comm->buf);
	s->export_fd = fd;
	host_boot_id(s->boot_id);
	*ctx = s;
	return 0;
}

static int shm_peer_create(void *ctx, struct peer *peer, void **xpeer)
{
	struct shm_peer *sp = calloc(1, sizeof(*sp));

	if (!sp)
		return -ENOMEM;
	sp->fd = -1;
	*xpeer = sp;
	return 0;
}

static int shm_peer_info(void *ctx, void *xpeer, uint8_t *blob, uint32_t cap,
			 uint32_t *len)
{
	struct shm_ctx *s = ctx;

	if (cap < SHM_BLOB_LEN)
		return -EMSGSIZE;
	put_be32(blob, SHM_BLOB_MAGIC);
	put_be32(blob + 4, 0);
	put_be64(blob + 8, s->size);
	memcpy(blob + 16, s->boot_id, HOST_BOOT_ID_LEN);
	*len = SHM_BLOB_LEN;
	return 0;
}

static int shm_peer_fd(void *ctx, void *xpeer)
{
	return ((struct shm_ctx *)ctx)->export_fd;
}

static int shm_peer_attach_fd(void *ctx, void *xpeer, int fd)
{
	struct shm_peer *sp = xpeer;

	if (sp->fd >= 0)
		close(sp->fd);
	sp->fd = fd;
	return 0;
}

static int shm_peer_connect(void *ctx, void *xpeer, const uint8_t *blob,
			    uint32_t len)
{
	struct shm_peer *sp = xpeer;
	struct shm_ctx *s = ctx;
	struct stat st;
	uint64_t size;
	void *map;

	if (len != SHM_BLOB_LEN || get_be32(blob) != SHM_BLOB_MAGIC ||
	    get_be32(blob + 4))
		return -EPROTO;
	if (sp->fd < 0)		/* only a Unix control connection carries it */
		return -EOPNOTSUPP;
	if (!host_same_boot(s->boot_id, blob + 16)) {
		pr_info("shm transport: the peer runs on another boot id (another host?): refused");
		return -EOPNOTSUPP;
	}
	size = get_be64(blob + 8);
	/*
	 * The descriptor holds the peer's buffer rounded up to pages: it must
	 * cover the size the peer announced (which the core checks every
	 * remote range against), or the announcement is a lie.
	 */
	if (fstat(sp->fd, &st) || !size || (uint64_t)st.st_size < size)
		return -EPROTO;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   sp->fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	close(sp->fd);
	sp->fd = -1;
	sp->remote = map;
	sp->remote_size = (uint64_t)st.st_size;
	return 0;
}

static void shm_peer_destroy(void *ctx, void *xpeer, bool graceful,
			     int64_t deadline)
{
	struct shm_peer *sp = xpeer;

	if (sp->remote)
		munmap(sp->remote, sp->remote_size);
	if (sp->fd >= 0)
		close(sp->fd);
	free(sp);
}

/*
 * A put's last byte becomes visible after all the others, as an RDMA write
 * lands in address order: a peer that polls the end of a message (a
 * sequence number, a flag) then reads a whole one, as it would over verbs.
 * memcpy() alone promises no order (glibc writes the tail of a copy early,
 * and large copies with non-temporal stores, which only a fence orders).
 */
static __hot void shm_copy_in_order(uint8_t *dst, const uint8_t *src,
				    uint64_t len)
{
	if (!len)
		return;
	memcpy(dst, src, len - 1);
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_sfence();	/* plain stores are ordered already */
#else
	__atomic_thread_fence(__ATOMIC_RELEASE);
#endif
	__atomic_store_n(dst + len - 1, src[len - 1], __ATOMIC_RELAXED);
}

static int shm_post(void *ctx, void *xpeer, struct req *r, enum req_op op,
		    uint64_t local_off, uint64_t remote_off, uint64_t len)
{
	struct shm_peer *sp = xpeer;
	struct shm_ctx *s = ctx;

	/*
	 * The core checked the range against the size the peer announced in
	 * the control frame; the mapping is what may really be touched.
	 */
	if (op != REQ_FLUSH && range_check(sp->remote_size, remote_off, len))
		return -ERANGE;
	switch (op) {
	case REQ_PUT:
		shm_copy_in_order(sp->remote + remote_off, s->base + local_off,
				  len);
		break;
	case REQ_GET:
		memcpy(s->base + local_off, sp->remote + remote_off, len);
		break;
	case REQ_FLUSH:
		/* Our stores are visible before anything we do next. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		break;
	case REQ_MSG:	/* lib/msg's, never posted */
	case REQ_AMO:	/* no amo(): never posted */
		return -EINVAL;
	}
	req_complete(r, 0);
	return 0;
}

uint8_t *xport_shm_peer_map(void *xpeer, uint64_t *size)
{
	struct shm_peer *sp = xpeer;

	*size = sp->remote ? sp->remote_size : 0;
	return sp->remote;
}

static int shm_idle(void *ctx)
{
	return 0;
}

const struct xport_ops xport_shm_ops = {
	.type = HMC_TRANSPORT_SHM,
	.init = shm_init,
	.fini = shm_fini,
	.peer_create = shm_peer_create,
	.peer_info = shm_peer_info,
	.peer_connect = shm_peer_connect,
	.peer_fd = shm_peer_fd,
	.peer_attach_fd = shm_peer_attach_fd,
	.peer_destroy = shm_peer_destroy,
	.post = shm_post,
	.progress = shm_idle,
	.arm = shm_idle,
};
