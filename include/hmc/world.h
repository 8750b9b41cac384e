/* SPDX-License-Identifier: MIT */
/*
 * hmc_world: N ranks started by the launchers people already use, with a
 * communicator connected between all of them.
 *
 * Bootstraps, chosen by HMC_BOOTSTRAP=pmix|env|store|uid (or the options),
 * else detected in this order:
 *  pmix   started by mpirun (Open MPI) or srun --mpi=pmix: rank, size and
 *         local rank from PMIx (libpmix is loaded at run time); rank 0
 *         hosts the world store on HMC_WORLD_ADDR (default 127.0.0.1: set
 *         it for a job across hosts) and publishes it through PMIx.
 *  env    torchrun's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and
 *         MASTER_ADDR, with the store at MASTER_ADDR:HMC_STORE_PORT
 *         (default MASTER_PORT + 1); or Slurm's SLURM_PROCID,
 *         SLURM_NTASKS, SLURM_LOCALID with HMC_STORE.
 *  store  HMC_STORE=tcp://host:port with HMC_WORLD_SIZE and, optionally,
 *         HMC_RANK (without it the store hands out ranks in arrival
 *         order). hmcrun sets these. HMC_STORE=etcd://host:port[,...]
 *         keeps the store in etcd instead (lib/world/etcd.h): nobody
 *         hosts it, so the world survives any member; its collectives
 *         are slower.
 *  uid    a unique id from hmc_world_get_uid() (opts->uid, or HMC_WORLD_UID
 *         in hex), with rank and size from the options or HMC_RANK and
 *         HMC_WORLD_SIZE.
 * Under env and store, the process whose host has the store's address
 * and binds its port first hosts the store inside itself; the others
 * connect to it. The store runs the world's membership and its
 * collectives; finalize of the process hosting it waits (up to the
 * world's timeout) for the others to leave.
 *
 * Security: HMC_SECRET (or opts->secret) authenticates store and control
 * connections with HMAC-SHA256; with HMC_TLS_CERT, HMC_TLS_KEY and
 * HMC_TLS_CA (or the options) store connections run TLS 1.3 and both
 * sides must hold a certificate from that CA. A unique id carries a fresh
 * secret of its own.
 *
 * Membership: hmc_world_join() enters a running world (taking the rank of
 * a member that left or failed, or a new one); hmc_world_finalize() leaves
 * it. Members see JOINED, LEFT and FAILED events; a member whose process
 * dies is reported FAILED at once (with etcd: when its lease expires), one
 * whose host vanishes within HMC_WORLD_FAIL_DETECT_MS. Nothing hangs on a
 * dead member: a collective it had not entered when it failed fails with
 * -ECONNRESET (with etcd, or once the failure is known when it starts, the
 * collective goes on without it; its allgather slot is zeros). The communicator reports its peers to
 * hmc.ko where it is loaded, so hmcstat -w shows members coming and going.
 *
 * Collectives: through the store, or, when every rank shares the store's
 * host (up to 64 ranks, 1 KiB per rank), through a shared segment the
 * store made, until membership changes.
 *
 * Every call takes a deadline and returns 0 or a negative errno; after a
 * failure hmc_world_last_error() says why in words (the ranks that never
 * came, the rank that failed, ...).
 */
#ifndef HMC_WORLD_H
#define HMC_WORLD_H

#include <hmc/hmc.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hmc_world;

#define HMC_WORLD_FAIL_DETECT_MS	5000

enum hmc_world_bootstrap {
	HMC_WORLD_BOOT_AUTO,		/* HMC_BOOTSTRAP, else detect */
	HMC_WORLD_BOOT_PMIX,
	HMC_WORLD_BOOT_ENV,
	HMC_WORLD_BOOT_STORE,
	HMC_WORLD_BOOT_UID,
};

/* An opaque unique id: the store's address and a fresh secret. */
#define HMC_WORLD_UID_LEN	96
struct hmc_world_uid {
	uint8_t bytes[HMC_WORLD_UID_LEN];
};

#define HMC_WORLD_F_RANK	(1U << 0)	/* @rank is set */
/* Connect to peers on demand only (HMC_WORLD_LAZY=1; always above 64 ranks). */
#define HMC_WORLD_F_LAZY	(1U << 1)

struct hmc_world_opts {
	size_t sz;
	uint32_t bootstrap;		/* enum hmc_world_bootstrap */
	uint32_t flags;			/* HMC_WORLD_F_* */
	uint32_t rank;			/* with HMC_WORLD_F_RANK */
	uint32_t size;			/* 0: from the environment */
	const char *store;		/* "tcp://host:port"; NULL: HMC_STORE */
	const struct hmc_world_uid *uid;
	/* The communicator's ConnBuffer: 0 takes HMC_WORLD_BUF_SIZE, else 4 MiB. */
	size_t buf_size;
	uint32_t mem_type;		/* enum hmc_mem_type of the buffer */
	int32_t device;
	uint32_t transport;		/* enum hmc_transport, to every peer */
	/* Init and finalize deadline: 0 takes HMC_WORLD_TIMEOUT, else 60000 ms. */
	int32_t timeout_ms;
	/* Address our communicator listens on: NULL takes HMC_WORLD_ADDR, else
	 * the address that reaches the store. */
	const char *ip;
	const char *secret;		/* NULL: HMC_SECRET */
	const char *tls_cert;		/* NULL: HMC_TLS_CERT, ... */
	const char *tls_key;
	const char *tls_ca;
	/* If not NULL, receives why hmc_world_init() or _join() failed. */
	char *err_msg;
	size_t err_msg_len;
};

/* Start or enter a world as the environment (or @opts, may be NULL) says. */
int hmc_world_init(const struct hmc_world_opts *opts, struct hmc_world **world);

/*
 * Enter the running world whose store is at @store_url ("tcp://host:port"),
 * or, with a NULL @store_url, the one of opts->uid, taking a free rank
 * (opts->rank with HMC_WORLD_F_RANK; HMC_RANK is not read). The others see
 * a JOINED event once the joiner is connected to all of them.
 */
int hmc_world_join(const char *store_url, const struct hmc_world_opts *opts,
		   struct hmc_world **world);

/*
 * Leave the world (the others see LEFT), destroy the communicator and its
 * buffer. The process hosting the store first waits for the others to
 * leave, up to the world's timeout (-ETIMEDOUT then, after tearing down).
 */
int hmc_world_finalize(struct hmc_world *world);

/*
 * For a process about to end without hmc_world_finalize() (an abort, an
 * exit every rank was told to take): let the launcher that started it
 * count the exit as clean. Under mpirun or srun this finalizes the PMIx
 * client, without a collective; otherwise it does nothing. Nothing else is
 * released, no other rank is told, and the world must not be used again
 * but for exiting. Safe to call from any thread, more than once.
 */
void hmc_world_detach(struct hmc_world *world);

/*
 * A unique id for a world whose store this process hosts from now on, on
 * @ip (NULL: HMC_WORLD_ADDR, else 127.0.0.1). Pass it to the other
 * processes by any channel; every process, this one included, then calls
 * hmc_world_init() with it. The store stays until the world that uses it
 * here is finalized.
 */
int hmc_world_get_uid(const char *ip, struct hmc_world_uid *uid);

/* The uid as text (2 * HMC_WORLD_UID_LEN hex digits and a NUL) and back. */
void hmc_world_uid_to_hex(const struct hmc_world_uid *uid,
			  char hex[2 * HMC_WORLD_UID_LEN + 1]);
int hmc_world_uid_from_hex(const char *hex, struct hmc_world_uid *uid);

uint32_t hmc_world_rank(const struct hmc_world *world);
/* Ranks in the world, departed ones included (they stay free for joiners). */
uint32_t hmc_world_size(const struct hmc_world *world);
uint32_t hmc_world_local_rank(const struct hmc_world *world);
uint32_t hmc_world_local_size(const struct hmc_world *world);

/*
 * The communicator (rank = world rank), connected to every member at
 * start-up in worlds of up to 64 ranks; larger ones, and those started
 * with HMC_WORLD_F_LAZY, connect a pair on first use: call
 * hmc_world_connect() (either side, or both) before talking to a peer.
 */
struct hmc_comm *hmc_world_comm(const struct hmc_world *world);

/*
 * Connect our communicator to start-up member @rank, unless it is already:
 * 0, -ENOENT (not a start-up member: a joiner dials the others itself), or
 * hmc_comm_connect()'s errors.
 */
int hmc_world_connect(struct hmc_world *world, uint32_t rank, int timeout_ms);

/* The bootstrap that made the world. */
enum hmc_world_bootstrap hmc_world_bootstrap_used(const struct hmc_world *world);

/* Wait until every member has entered the barrier. */
int hmc_world_barrier(struct hmc_world *world, int timeout_ms);

/*
 * Gather @len bytes from every rank: @recv receives hmc_world_size() * @len
 * bytes, rank r's at r * @len (zeros for a rank without a member). -ESTALE
 * if the world's size changed under the call: read the events and retry.
 */
int hmc_world_allgather(struct hmc_world *world, const void *send, size_t len,
			void *recv, int timeout_ms);

/* Copy @len bytes of @buf on @root into @buf on every rank. */
int hmc_world_bcast(struct hmc_world *world, void *buf, size_t len,
		    uint32_t root, int timeout_ms);

enum hmc_world_event_type {
	HMC_WORLD_EV_JOINED = 1,
	HMC_WORLD_EV_LEFT,
	HMC_WORLD_EV_FAILED,
};

struct hmc_world_event {
	uint32_t type;			/* enum hmc_world_event_type */
	uint32_t rank;
	uint32_t size;			/* the world's size after it */
	int32_t error;			/* FAILED: a positive errno */
};

/*
 * The next membership event, waiting up to @timeout_ms (0: poll):
 * 0, -ETIMEDOUT, or -ECONNRESET once the store is gone.
 */
int hmc_world_wait_event(struct hmc_world *world, struct hmc_world_event *ev,
			 int timeout_ms);

/* "joined", "left", "failed". */
const char *hmc_world_event_name(uint32_t type);

/* Why the last call on @world failed, in words ("" if none did). */
const char *hmc_world_last_error(const struct hmc_world *world);

#ifdef __cplusplus
}
#endif

#endif /* HMC_WORLD_H */
