// SPDX-License-Identifier: MIT
/*
 * UCX transport: one UCP context per communicator, the ConnBuffer mapped
 * once in it, and per peer a worker of that context, an endpoint created
 * from the address of the worker the peer made for us (sent over the
 * control plane, no second port) and the peer's unpacked rkey.
 *
 * A worker per peer, not per communicator: UCX's shared-memory transports
 * deliver into one receive FIFO per worker, and a process killed while it
 * writes an element leaves that element claimed and never completed, which
 * stalls the FIFO for every other sender. With a worker per peer, a peer
 * that dies can wedge only its own worker, which goes with it; the others
 * keep working. A worker's event fd goes into the progress engine's epoll
 * set itself (xport_watch), not into an epoll fd of ours nested in it, and
 * only while somebody may sleep there: from arm() until callers have spun
 * without sleeping for a while (unwatch()). Each level of nesting costs
 * every packet's delivery a wake-up, whether anybody sleeps or not.
 * After a graceful close a worker lingers a while before it is destroyed:
 * its connections close with it, and the peer should read our goodbye on
 * the control connection before it sees them go.
 *
 * Endpoints ask for peer-failure handling so that a dead peer is an error,
 * not a hang; where the transports cannot provide it (UCX 1.13's posix and
 * sysv shared memory), the endpoint is created without it and the control
 * connection, which sees the peer die, fails the peer instead.
 *
 * Memory regions (hmc_comm_mr_reg()) are mapped in the context like the
 * ConnBuffer; a region's key is its base address and its packed rkey. A
 * peer's key is unpacked on the endpoint to that peer, and the rkey lives
 * on the transport peer until it is destroyed, before the endpoint and
 * worker go. UCX has no owner's side that could check an access (cma
 * writes straight into our pages): what the core checks where the
 * transfer starts, rights and bounds against the owner's descriptor, is
 * all there is.
 *
 * The worker runs in SERIALIZED mode under our own lock, taken for every
 * UCX call. UCX's own messages go to our log (HMC_LOG=debug shows them),
 * never straight to stderr.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ucp/api/ucp.h>
#include <ucs/debug/log_def.h>

#include "core/mr.h"
#include "core/peer.h"
#include "sys/log.h"

#define UCX_PROGRESS_BATCH	64
#define UCX_CLOSE_SPIN_NS	(100 * 1000)
#define UCX_LINGER_NS		(500 * 1000 * 1000)

struct ucx_ctx {
	struct hmc_comm *comm;
	pthread_mutex_t lock;
	ucp_context_h context;
	ucp_mem_h memh;
	void *rkey_buf;
	size_t rkey_len;
	uint8_t *base;
	uint32_t tcp_tx_seg;	/* UCX tcp segment sizes, 0 if unknown */
	uint32_t tcp_rx_seg;
	struct list_node peers;	/* struct ucx_peer.node, under lock */
	struct list_node lingering; /* closed gracefully, worker kept a while */
	bool watching;		/* peers' event fds are in the epoll set, under lock */
};

struct ucx_peer {
	struct ucx_ctx *u;
	struct peer *peer;
	struct list_node node;
	ucp_worker_h worker;
	ucp_address_t *addr;
	size_t addr_len;
	int efd;
	bool watched;		/* efd is in the progress epoll set */
	ucp_ep_h ep;
	ucp_rkey_h rkey;
	uint64_t remote_base;
	struct ucx_rmr *rmrs;	/* imported regions, under u->lock */
	unsigned int inflight;	/* our requests UCX still holds, under u->lock */
	bool peer_err_mode;	/* the endpoint reports peer failure */
	bool closed;
	int64_t linger_until;	/* on u->lingering: destroy the worker then */
};

/* A region of ours. */
struct ucx_mr {
	ucp_mem_h memh;
	uint8_t *base;
};

/* A region of a peer's, imported on the endpoint to it. */
struct ucx_rmr {
	struct ucx_rmr *next;	/* ucx_peer.rmrs */
	ucp_rkey_h rkey;
	uint64_t base;
};

/* Region key: be64 base address, the packed rkey. */
#define UCX_KEY_HDR	8

/*
 * Blob: be64 base, be32 address length, be32 rkey length, be32 tcp send
 * segment, be32 tcp receive segment, address, rkey.
 */
#define UCX_BLOB_HDR	24

static int ucx_errno(ucs_status_t st)
{
	switch (st) {
	case UCS_OK:
		return 0;
	case UCS_ERR_NO_MEMORY:
		return -ENOMEM;
	case UCS_ERR_INVALID_PARAM:
	case UCS_ERR_INVALID_ADDR:
		return -EINVAL;
	case UCS_ERR_NO_RESOURCE:
	case UCS_ERR_BUSY:
		return -EAGAIN;
	case UCS_ERR_TIMED_OUT:
		return -ETIMEDOUT;
	case UCS_ERR_CANCELED:
		return -ECANCELED;
	case UCS_ERR_UNSUPPORTED:
	case UCS_ERR_NOT_IMPLEMENTED:
		return -EOPNOTSUPP;
	case UCS_ERR_NO_DEVICE:
		return -ENODEV;
	case UCS_ERR_UNREACHABLE:
		return -EHOSTUNREACH;
	case UCS_ERR_NOT_CONNECTED:
		return -ENOTCONN;
	default:
		if (st == UCS_ERR_CONNECTION_RESET ||
		    UCS_IS_LINK_ERROR(st) || UCS_IS_ENDPOINT_ERROR(st))
			return -ECONNRESET;
		return -EIO;
	}
}

static ucs_log_func_rc_t ucx_log(const char *file, unsigned int line,
				 const char *function, ucs_log_level_t level,
				 const ucs_log_component_config_t *conf,
				 const char *message, va_list ap)
{
	char msg[256];

	if (log_enabled(HMC_LOG_DEBUG)) {
		vsnprintf(msg, sizeof(msg), message, ap);
		pr_debug("ucx %s:%u: %s", file, line, msg);
	}
	return UCS_LOG_FUNC_RC_STOP;
}

static pthread_once_t ucx_log_once = PTHREAD_ONCE_INIT;

static void ucx_log_install(void)
{
	ucs_log_push_handler(ucx_log);
}

/*
 * The memory type UCX must support for memory of @type, HOST, or UNKNOWN
 * for device memory UCX has no type for (Ascend, CNRT, MUSA): such memory
 * is no host memory either, so UCX must not be told it is.
 */
static ucs_memory_type_t ucs_mem_type(enum hmc_mem_type type)
{
	switch (type) {
	case HMC_MEM_CPU:
		return UCS_MEMORY_TYPE_HOST;
	case HMC_MEM_CUDA:
		return UCS_MEMORY_TYPE_CUDA;
	case HMC_MEM_ROCM:
		return UCS_MEMORY_TYPE_ROCM;
	default:
		return UCS_MEMORY_TYPE_UNKNOWN;
	}
}

/*
 * Map [@addr, @addr + @len) of memory @type in the context, with the
 * remote rights @access (HMC_MR_REMOTE_*) where UCX's transports enforce
 * them; lock held or not yet shared. -EOPNOTSUPP for memory UCX cannot
 * reach.
 */
static int ucx_mem_map(struct ucx_ctx *u, void *addr, size_t len,
		       enum hmc_mem_type type, uint32_t access, ucp_mem_h *memh)
{
	ucs_memory_type_t mt = ucs_mem_type(type);
	ucp_context_attr_t attr = { .field_mask = UCP_ATTR_FIELD_MEMORY_TYPES };
	ucp_mem_map_params_t mp = {
		.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
			      UCP_MEM_MAP_PARAM_FIELD_LENGTH |
			      UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE |
			      UCP_MEM_MAP_PARAM_FIELD_PROT,
		.address = addr,
		.length = len,
		.memory_type = mt,
		.prot = UCP_MEM_MAP_PROT_LOCAL_READ |
			UCP_MEM_MAP_PROT_LOCAL_WRITE |
			(access & HMC_MR_REMOTE_READ ?
			 UCP_MEM_MAP_PROT_REMOTE_READ : 0) |
			(access & HMC_MR_REMOTE_WRITE ?
			 UCP_MEM_MAP_PROT_REMOTE_WRITE : 0),
	};
	ucs_status_t st;

	if (mt != UCS_MEMORY_TYPE_HOST) {
		st = mt == UCS_MEMORY_TYPE_UNKNOWN ? UCS_ERR_UNSUPPORTED :
		     ucp_context_query(u->context, &attr);
		if (st != UCS_OK || !(attr.memory_types & UCS_BIT(mt))) {
			pr_info("this UCX build cannot reach %s memory",
				hmc_mem_type_name(type));
			return -EOPNOTSUPP;
		}
	}
	st = ucp_mem_map(u->context, &mp, memh);
	return ucx_errno(st);
}

static int ucx_map_buffer(struct ucx_ctx *u, struct hmc_buf *buf)
{
	ucs_status_t st;
	int rc;

	rc = ucx_mem_map(u, hmc_buf_ptr(buf), hmc_buf_size(buf),
			 hmc_buf_mem_type(buf),
			 HMC_MR_REMOTE_READ | HMC_MR_REMOTE_WRITE, &u->memh);
	if (rc) {
		u->memh = NULL;
		return rc;
	}
	st = ucp_rkey_pack(u->context, u->memh, &u->rkey_buf, &u->rkey_len);
	if (st != UCS_OK) {
		ucp_mem_unmap(u->context, u->memh);
		u->memh = NULL;		/* not twice in ucx_fini() */
		return ucx_errno(st);
	}
	u->base = hmc_buf_ptr(buf);
	return 0;
}

static int peer_watch(struct ucx_peer *up)
{
	int rc;

	if (up->watched)
		return 0;
	rc = xport_watch(up->u->comm, HMC_TRANSPORT_UCX, up->efd);
	up->watched = !rc;
	return rc;
}

static void peer_unwatch(struct ucx_peer *up)
{
	if (!up->watched)
		return;
	xport_unwatch(up->u->comm, up->efd);
	up->watched = false;
}

static void peer_worker_destroy(struct ucx_peer *up)
{
	peer_unwatch(up);
	if (up->addr)
		ucp_worker_release_address(up->worker, up->addr);
	if (up->worker)
		ucp_worker_destroy(up->worker);
}

/* Destroys the lingering workers whose time is up (all of them: @all). */
static void reap_lingering(struct ucx_ctx *u, bool all)
{
	struct list_node *pos, *tmp;
	int64_t now = now_ns();

	list_for_each_safe(pos, tmp, &u->lingering) {
		struct ucx_peer *up = container_of(pos, struct ucx_peer, node);

		if (!all && now < up->linger_until)
			continue;
		list_del(&up->node);
		peer_worker_destroy(up);
		free(up);
	}
}

static void ucx_fini(void *ctx)
{
	struct ucx_ctx *u = ctx;

	reap_lingering(u, true);
	if (u->rkey_buf)
		ucp_rkey_buffer_release(u->rkey_buf);
	if (u->memh)
		ucp_mem_unmap(u->context, u->memh);
	if (u->context)
		ucp_cleanup(u->context);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

/*
 * UCX's tcp transport moves a put or get as active messages of at most
 * TX_SEG_SIZE bytes, each acknowledged by the target; its default, 8 KiB,
 * cuts a 1 MiB transfer into 128 of them. 64 KiB, the receive segment's
 * default (a send segment may not exceed it), doubles the rate of
 * transfers from 16 KiB up and leaves small ones as they were. UCX looks
 * the name up in each transport's table: only tcp has it. A user who sets
 * either size in the environment keeps both as UCX has them.
 */
#define UCX_TCP_TX_SEG		(64u << 10)
#define UCX_TCP_TX_SEG_DEFAULT	(8u << 10)	/* UCX's */
#define UCX_TCP_RX_SEG_DEFAULT	(64u << 10)	/* UCX's */

/* A size as UCX reads it ("65536", "64k", "64KB"), or 0 if not one. */
static uint32_t ucx_size(const char *s)
{
	unsigned int shift = 0;
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || errno)
		return 0;
	switch (*end | 0x20) {
	case 'k':
		shift = 10;
		break;
	case 'm':
		shift = 20;
		break;
	case 'g':
		shift = 30;
		break;
	}
	if (shift)
		end++;
	if ((*end | 0x20) == 'b')
		end++;
	if (*end || v > (UINT32_MAX >> shift))
		return 0;
	return (uint32_t)(v << shift);
}

static ucs_status_t ucx_tune_tcp(struct ucx_ctx *u, ucp_config_t *config)
{
	const char *tx = getenv("UCX_TCP_TX_SEG_SIZE");
	const char *rx = getenv("UCX_TCP_RX_SEG_SIZE");
	char seg[16];

	u->tcp_rx_seg = rx ? ucx_size(rx) : UCX_TCP_RX_SEG_DEFAULT;
	if (tx || rx) {
		u->tcp_tx_seg = tx ? ucx_size(tx) : UCX_TCP_TX_SEG_DEFAULT;
		return UCS_OK;
	}
	u->tcp_tx_seg = UCX_TCP_TX_SEG;
	snprintf(seg, sizeof(seg), "%u", UCX_TCP_TX_SEG);
	return ucp_config_modify(config, "TX_SEG_SIZE", seg);
}

/*
 * UCX 1.13 aborts the process that receives a tcp segment larger than its
 * receive segment, so ranks whose sizes do not fit are refused instead.
 */
static int ucx_check_tcp_segs(struct ucx_peer *up, uint32_t tx, uint32_t rx)
{
	struct ucx_ctx *u = up->u;

	if ((tx && u->tcp_rx_seg && tx > u->tcp_rx_seg) ||
	    (rx && u->tcp_tx_seg && u->tcp_tx_seg > rx)) {
		pr_err("ucx: rank %u's tcp segments (send %u, receive %u) do not fit ours (send %u, receive %u): set UCX_TCP_TX_SEG_SIZE and UCX_TCP_RX_SEG_SIZE alike on every rank",
		       up->peer->rank, tx, rx, u->tcp_tx_seg, u->tcp_rx_seg);
		return -EPROTO;
	}
	return 0;
}

static int ucx_init(struct hmc_comm *comm, void **ctx)
{
	ucp_params_t params = {
		.field_mask = UCP_PARAM_FIELD_FEATURES |
			      UCP_PARAM_FIELD_REQUEST_SIZE,
		.features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP,
		/* a UCX request starts with the ucx_peer that posted it */
		.request_size = sizeof(struct ucx_peer *),
	};
	ucp_config_t *config;
	struct ucx_ctx *u;
	ucs_status_t st;
	int rc;

	pthread_once(&ucx_log_once, ucx_log_install);
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->comm = comm;
	list_init(&u->peers);
	list_init(&u->lingering);
	pthread_mutex_init(&u->lock, NULL);
	st = ucp_config_read(NULL, NULL, &config);
	if (st != UCS_OK) {
		rc = ucx_errno(st);
		goto err;
	}
	st = ucx_tune_tcp(u, config);
	if (st != UCS_OK) {
		ucp_config_release(config);
		rc = ucx_errno(st);
		goto err;
	}
	st = ucp_init(&params, config, &u->context);
	ucp_config_release(config);
	if (st != UCS_OK) {
		rc = ucx_errno(st);
		goto err;
	}
	rc = ucx_map_buffer(u, comm->buf);
	if (rc)
		goto err;
	*ctx = u;
	return 0;
err:
	ucx_fini(u);
	return rc;
}

static int ucx_peer_create(void *ctx, struct peer *peer, void **xpeer)
{
	ucp_worker_params_t wp = {
		.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
		.thread_mode = UCS_THREAD_MODE_SERIALIZED,
	};
	struct ucx_ctx *u = ctx;
	struct ucx_peer *up;
	ucs_status_t st;
	int rc;

	up = calloc(1, sizeof(*up));
	if (!up)
		return -ENOMEM;
	up->u = u;
	up->peer = peer;
	up->efd = -1;
	list_init(&up->node);
	st = ucp_worker_create(u->context, &wp, &up->worker);
	if (st == UCS_OK)
		st = ucp_worker_get_address(up->worker, &up->addr,
					    &up->addr_len);
	if (st == UCS_OK)
		st = ucp_worker_get_efd(up->worker, &up->efd);
	if (st != UCS_OK) {
		rc = ucx_errno(st);
		goto err;
	}
	if (up->addr_len + u->rkey_len + UCX_BLOB_HDR > FRAME_XPORT_MAX_BLOB) {
		rc = -EMSGSIZE;
		goto err;
	}
	pthread_mutex_lock(&u->lock);
	rc = u->watching ? peer_watch(up) : 0;
	if (!rc)
		list_add_tail(&u->peers, &up->node);
	pthread_mutex_unlock(&u->lock);
	if (rc)
		goto err;
	*xpeer = up;
	return 0;
err:
	peer_worker_destroy(up);
	free(up);
	return rc;
}

static int ucx_peer_info(void *ctx, void *xpeer, uint8_t *blob, uint32_t cap,
			 uint32_t *len)
{
	struct ucx_peer *up = xpeer;
	struct ucx_ctx *u = ctx;
	size_t need = UCX_BLOB_HDR + up->addr_len + u->rkey_len;

	if (need > cap)
		return -EMSGSIZE;
	put_be64(blob, (uint64_t)(uintptr_t)u->base);
	put_be32(blob + 8, (uint32_t)up->addr_len);
	put_be32(blob + 12, (uint32_t)u->rkey_len);
	put_be32(blob + 16, u->tcp_tx_seg);
	put_be32(blob + 20, u->tcp_rx_seg);
	memcpy(blob + UCX_BLOB_HDR, up->addr, up->addr_len);
	memcpy(blob + UCX_BLOB_HDR + up->addr_len, u->rkey_buf, u->rkey_len);
	*len = (uint32_t)need;
	return 0;
}

static void ucx_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
	struct ucx_peer *up = arg;

	pr_debug("ucx endpoint to rank %u failed: %s", up->peer->rank,
		 ucs_status_string(status));
	comm_peer_error(up->u->comm, up->peer, ucx_errno(status));
}

static ucs_status_t ep_create(struct ucx_peer *up, const ucp_address_t *addr,
			      ucp_err_handling_mode_t mode)
{
	ucp_ep_params_t ep = {
		.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
			      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
			      UCP_EP_PARAM_FIELD_ERR_HANDLER,
		.address = addr,
		.err_mode = mode,
		.err_handler = { .cb = ucx_ep_error, .arg = up },
	};

	return ucp_ep_create(up->worker, &ep, &up->ep);
}

static int ucx_peer_connect(void *ctx, void *xpeer, const uint8_t *blob,
			    uint32_t len)
{
	struct ucx_peer *up = xpeer;
	struct ucx_ctx *u = ctx;
	uint32_t alen, rlen;
	ucs_status_t st;
	int rc = 0;

	if (len < UCX_BLOB_HDR)
		return -EPROTO;
	alen = get_be32(blob + 8);
	rlen = get_be32(blob + 12);
	if ((uint64_t)alen + rlen != len - UCX_BLOB_HDR || !alen || !rlen)
		return -EPROTO;
	rc = ucx_check_tcp_segs(up, get_be32(blob + 16), get_be32(blob + 20));
	if (rc)
		return rc;
	up->remote_base = get_be64(blob);

	pthread_mutex_lock(&u->lock);
	st = ep_create(up, (const ucp_address_t *)(blob + UCX_BLOB_HDR),
		       UCP_ERR_HANDLING_MODE_PEER);
	up->peer_err_mode = st == UCS_OK;
	if (st == UCS_ERR_UNREACHABLE || st == UCS_ERR_UNSUPPORTED) {
		pr_debug("ucx: no peer-failure handling to rank %u; the control connection watches it",
			 up->peer->rank);
		st = ep_create(up, (const ucp_address_t *)(blob + UCX_BLOB_HDR),
			       UCP_ERR_HANDLING_MODE_NONE);
	}
	if (st != UCS_OK) {
		up->ep = NULL;
		rc = ucx_errno(st);
		goto out;
	}
	st = ucp_ep_rkey_unpack(up->ep, blob + UCX_BLOB_HDR + alen, &up->rkey);
	if (st != UCS_OK) {
		rc = st == UCS_ERR_INVALID_PARAM ? -EPROTO : ucx_errno(st);
		up->rkey = NULL;
	}
out:
	pthread_mutex_unlock(&u->lock);
	return rc;
}

/*
 * Progress until @req completes or @deadline passes; lock held. After a
 * short spin it sleeps on the worker's event fd, so that a peer slow to
 * answer (a close's flush waits for it) costs no CPU.
 */
static void wait_request(struct ucx_peer *up, void *req, int64_t deadline)
{
	int64_t spin_until = now_ns() + UCX_CLOSE_SPIN_NS;
	struct pollfd pfd = { .fd = up->efd, .events = POLLIN };
	int left;

	if (!UCS_PTR_IS_PTR(req))
		return;
	while (ucp_request_check_status(req) == UCS_INPROGRESS &&
	       !deadline_passed(deadline)) {
		if (ucp_worker_progress(up->worker) || now_ns() < spin_until)
			continue;
		if (ucp_worker_arm(up->worker) != UCS_OK)
			continue;
		left = deadline_remaining_ms(deadline);
		poll(&pfd, 1, left < 0 || left > 100 ? 100 : left);
	}
	ucp_request_free(req);	/* completes internally if still going */
}

static void ucx_peer_destroy(void *ctx, void *xpeer, bool graceful,
			     int64_t deadline)
{
	struct ucx_peer *up = xpeer;
	struct ucx_ctx *u = ctx;
	ucp_request_param_t param = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS };
	void *req;

	pthread_mutex_lock(&u->lock);
	up->closed = true;
	if (up->rkey)
		ucp_rkey_destroy(up->rkey);
	while (up->rmrs) {
		struct ucx_rmr *rm = up->rmrs;

		up->rmrs = rm->next;
		ucp_rkey_destroy(rm->rkey);
		free(rm);
	}
	if (up->ep) {
		/*
		 * A forced close cancels what is in flight. UCX asks for
		 * peer-failure handling on both sides because the remote may see
		 * transport errors; a teardown that is not graceful means the
		 * remote failed or already closed its side, and flushing towards
		 * a dead peer would leave its sends pending in the transport,
		 * where they starve other peers' sends (posix shared memory).
		 */
		if (!graceful)
			param.flags = UCP_EP_CLOSE_FLAG_FORCE;
		req = ucp_ep_close_nbx(up->ep, &param);
		wait_request(up, req, deadline);
	}
	list_del(&up->node);
	if (graceful) {
		peer_unwatch(up);
		up->linger_until = now_ns() + UCX_LINGER_NS;
		list_add_tail(&u->lingering, &up->node);
	} else {
		peer_worker_destroy(up);
		free(up);
	}
	pthread_mutex_unlock(&u->lock);
}

/* Runs inside ucp_worker_progress() or ucp_ep_close_nbx(), under u->lock. */
static void ucx_done(void *request, ucs_status_t status, void *user_data)
{
	struct ucx_peer *up = *(struct ucx_peer **)request;

	up->inflight--;
	req_complete(user_data, ucx_errno(status));
	ucp_request_free(request);
}

/*
 * Start @op on @up: a put or get of @len bytes between @laddr (mapped as
 * @memh) and @raddr of @rkey, or a flush.
 */
static __hot int ucx_start(struct ucx_ctx *u, struct ucx_peer *up,
			   struct req *r, enum req_op op, void *laddr,
			   ucp_mem_h memh, uint64_t raddr, ucp_rkey_h rkey,
			   uint64_t len)
{
	ucp_request_param_t param = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
				UCP_OP_ATTR_FIELD_USER_DATA |
				UCP_OP_ATTR_FIELD_MEMH,
		.cb.send = ucx_done,
		.user_data = r,
		.memh = memh,
	};
	void *s;
	int rc = 0;

	pthread_mutex_lock(&u->lock);
	if (up->closed || !up->ep) {
		rc = -ENOTCONN;
		goto out;
	}
	switch (op) {
	case REQ_PUT:
		s = ucp_put_nbx(up->ep, laddr, len, raddr, rkey, &param);
		break;
	case REQ_GET:
		s = ucp_get_nbx(up->ep, laddr, len, raddr, rkey, &param);
		break;
	default:
		s = ucp_ep_flush_nbx(up->ep, &param);
		break;
	}
	if (s == NULL) {
		req_complete(r, 0);
	} else if (UCS_PTR_IS_ERR(s)) {
		rc = ucx_errno(UCS_PTR_STATUS(s));
	} else {
		/* ucx_done() cannot run before we let go of u->lock */
		*(struct ucx_peer **)s = up;
		up->inflight++;
	}
out:
	pthread_mutex_unlock(&u->lock);
	return rc;
}

static __hot int ucx_post(void *ctx, void *xpeer, struct req *r,
			  enum req_op op, uint64_t local_off,
			  uint64_t remote_off, uint64_t len)
{
	struct ucx_peer *up = xpeer;
	struct ucx_ctx *u = ctx;

	return ucx_start(u, up, r, op, u->base + local_off, u->memh,
			 up->remote_base + remote_off, up->rkey, len);
}

/* ------------------------------------------------------------ regions */

static int ucx_mr_reg(void *ctx, const struct comm_mr *mr, void **xmr)
{
	struct ucx_ctx *u = ctx;
	struct ucx_mr *m;
	int rc;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_lock(&u->lock);
	rc = ucx_mem_map(u, mr->addr, mr->len, mr->mem_type, mr->access,
			 &m->memh);
	pthread_mutex_unlock(&u->lock);
	if (rc) {
		free(m);
		return rc;
	}
	m->base = mr->addr;
	*xmr = m;
	return 0;
}

static void ucx_mr_dereg(void *ctx, void *xmr)
{
	struct ucx_ctx *u = ctx;
	struct ucx_mr *m = xmr;

	pthread_mutex_lock(&u->lock);
	ucp_mem_unmap(u->context, m->memh);
	pthread_mutex_unlock(&u->lock);
	free(m);
}

static int ucx_mr_pack(void *ctx, void *xmr, uint8_t *key, uint32_t cap,
		       uint32_t *len)
{
	struct ucx_ctx *u = ctx;
	struct ucx_mr *m = xmr;
	ucs_status_t st;
	size_t rlen;
	void *rkey;
	int rc = 0;

	pthread_mutex_lock(&u->lock);
	st = ucp_rkey_pack(u->context, m->memh, &rkey, &rlen);
	pthread_mutex_unlock(&u->lock);
	if (st != UCS_OK)
		return ucx_errno(st);
	if (cap < UCX_KEY_HDR || rlen > cap - UCX_KEY_HDR) {
		rc = -ENOSPC;
		goto out;
	}
	put_be64(key, (uint64_t)(uintptr_t)m->base);
	memcpy(key + UCX_KEY_HDR, rkey, rlen);
	*len = (uint32_t)(UCX_KEY_HDR + rlen);
out:
	ucp_rkey_buffer_release(rkey);
	return rc;
}

static int ucx_rmr_import(void *ctx, void *xpeer, const uint8_t *key,
			  uint32_t len, uint64_t size, void **xrmr)
{
	struct ucx_peer *up = xpeer;
	struct ucx_ctx *u = ctx;
	struct ucx_rmr *rm;
	ucs_status_t st;
	int rc = 0;

	if (len <= UCX_KEY_HDR || get_be64(key) + size < get_be64(key))
		return -EINVAL;
	rm = calloc(1, sizeof(*rm));
	if (!rm)
		return -ENOMEM;
	rm->base = get_be64(key);
	pthread_mutex_lock(&u->lock);
	if (up->closed || !up->ep) {
		rc = -ENOTCONN;
		goto out;
	}
	st = ucp_ep_rkey_unpack(up->ep, key + UCX_KEY_HDR, &rm->rkey);
	if (st != UCS_OK) {
		rc = st == UCS_ERR_INVALID_PARAM ? -EINVAL : ucx_errno(st);
		goto out;
	}
	rm->next = up->rmrs;
	up->rmrs = rm;
	*xrmr = rm;
out:
	pthread_mutex_unlock(&u->lock);
	if (rc)
		free(rm);
	return rc;
}

static __hot int ucx_post_mr(void *ctx, void *xpeer, struct req *r,
			     enum req_op op, void *xmr, uint64_t local_off,
			     void *xrmr, uint64_t remote_off, uint64_t len)
{
	struct ucx_peer *up = xpeer;
	struct ucx_ctx *u = ctx;
	struct ucx_rmr *rm = xrmr;
	struct ucx_mr *m = xmr;

	return ucx_start(u, up, r, op,
			 m ? m->base + local_off : u->base + local_off,
			 m ? m->memh : u->memh,
			 rm ? rm->base + remote_off :
			      up->remote_base + remote_off,
			 rm ? rm->rkey : up->rkey, len);
}

/*
 * While UCX holds our requests to a peer, its worker is progressed until it
 * finds nothing more (up to a batch), so that a window of puts drains in
 * one call. Otherwise one call: waiting only for arrivals, the caller
 * should see one as soon as it lands, not after another system call (tcp's
 * epoll_wait) that finds nothing more.
 */
static int ucx_progress(void *ctx)
{
	struct ucx_ctx *u = ctx;
	struct list_node *pos, *tmp;
	unsigned int k, rounds;
	int n = 0;

	pthread_mutex_lock(&u->lock);
	if (!list_empty(&u->lingering))
		reap_lingering(u, false);
	list_for_each_safe(pos, tmp, &u->peers) {
		struct ucx_peer *up = container_of(pos, struct ucx_peer, node);

		rounds = 0;
		do {
			k = ucp_worker_progress(up->worker);
			n += (int)k;
		} while (k && up->inflight && ++rounds < UCX_PROGRESS_BATCH);
	}
	pthread_mutex_unlock(&u->lock);
	return n;
}

/*
 * Arms every peer's worker, its event fd in the epoll set; -EBUSY when one
 * has events to progress first. A descriptor the set refuses (no memory)
 * is -EBUSY too: the caller polls instead of sleeping deaf to it.
 */
static int ucx_arm(void *ctx)
{
	struct ucx_ctx *u = ctx;
	struct list_node *pos, *tmp;
	int rc = 0;

	pthread_mutex_lock(&u->lock);
	u->watching = true;
	list_for_each_safe(pos, tmp, &u->peers) {
		struct ucx_peer *up = container_of(pos, struct ucx_peer, node);

		if (peer_watch(up)) {
			pr_debug("ucx: worker event fd not watched: polling");
			rc = -EBUSY;
			break;
		}
		if (ucp_worker_arm(up->worker) != UCS_OK) {
			rc = -EBUSY;
			break;
		}
	}
	pthread_mutex_unlock(&u->lock);
	return rc;
}

static void ucx_unwatch(void *ctx)
{
	struct ucx_ctx *u = ctx;
	struct list_node *pos, *tmp;

	pthread_mutex_lock(&u->lock);
	if (u->watching) {
		list_for_each_safe(pos, tmp, &u->peers)
			peer_unwatch(container_of(pos, struct ucx_peer, node));
		u->watching = false;
	}
	pthread_mutex_unlock(&u->lock);
}

const struct xport_ops xport_ucx_ops = {
	.type = HMC_TRANSPORT_UCX,
	.init = ucx_init,
	.fini = ucx_fini,
	.peer_create = ucx_peer_create,
	.peer_info = ucx_peer_info,
	.peer_connect = ucx_peer_connect,
	.peer_destroy = ucx_peer_destroy,
	.post = ucx_post,
	.progress = ucx_progress,
	.arm = ucx_arm,
	.unwatch = ucx_unwatch,
	.mr_reg = ucx_mr_reg,
	.mr_dereg = ucx_mr_dereg,
	.mr_pack = ucx_mr_pack,
	.rmr_import = ucx_rmr_import,
	.post_mr = ucx_post_mr,
};
