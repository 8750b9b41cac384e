// SPDX-License-Identifier: MIT
/*
 * hmc_world (include/hmc/world.h): a bootstrap finds the rank, size and
 * the world store; the store hands out ranks and runs the collectives;
 * the communicator is built on the public API only: every rank listens,
 * publishes its address, and dials the ranks below it (a joiner dials
 * every member).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>

#include <hmc/world.h>

#include "sys/log.h"
#include "sys/opts.h"
#include "wire/sock.h"
#include "sys/util.h"
#include "world/boot.h"
#include "world/client.h"
#include "world/proto.h"
#include "world/shm.h"
#include "world/store.h"
#include "wire/tls.h"

#define DEFAULT_BUF_SIZE	(4u << 20)
#define DEFAULT_TIMEOUT_MS	60000
#define EAGER_MAX		64	/* ranks connected at start-up, at most */
#define REPLY_SLACK_MS		2000	/* the store answers a timed-out collective */
#define SECRET_HEX_LEN		64
#define UID_MAGIC		0x484d4355u	/* "HMCU" */

struct hmc_world {
	enum hmc_world_bootstrap boot;
	uint32_t rank, local_rank, local_size;
	int timeout_ms;
	bool pmix;
	struct store_cli *cli;
	struct store_srv *srv;		/* the store, when we host it */
	struct hmc_buf *buf;
	struct hmc_comm *comm;
	enum hmc_transport transport;
	uint8_t *recs;			/* start-up members' records, for */
	uint32_t nrecs;			/* hmc_world_connect() */
	struct wshm *shm;		/* mapped segment of the store (shm.h) */
	bool shm_on;			/* every rank mapped it: collect there */
	uint64_t shm_seq;
	char err[256];
};

/* Everything init needs besides the bootstrap's answer. */
struct world_cfg {
	enum hmc_world_bootstrap boot;
	struct boot_info bi;
	char host[256];			/* the store */
	uint16_t port;
	char etcd[512];			/* or etcd's endpoints */
	char secret[256];
	const char *ip;
	const char *tls_cert, *tls_key, *tls_ca;
	size_t buf_size;
	enum hmc_mem_type mem_type;
	int device;
	enum hmc_transport transport;
	bool lazy;
	int timeout_ms;
	int64_t deadline;
	char *err;
	size_t err_len;
};

/* Stores made by hmc_world_get_uid(), until a world of this process adopts one. */
struct uid_store {
	struct uid_store *next;
	struct store_srv *srv;
	uint8_t secret[32];
};

static pthread_mutex_t uid_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uid_store *uid_stores;

static int fail(struct world_cfg *cfg, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct world_cfg *cfg, int rc, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pr_err("world: %s", msg);
	if (cfg->err && cfg->err_len)
		snprintf(cfg->err, cfg->err_len, "%s", msg);
	return rc;
}

static void hex_encode(const uint8_t *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

/* 0, -ENOENT (unset or empty) or -EINVAL (not a number below 2^32). */
static int env_u32(const char *name, uint32_t *out)
{
	const char *v = getenv(name);
	unsigned long long x;
	char *end;

	if (!v || !*v)
		return -ENOENT;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end || x > UINT32_MAX || *v == '-')
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

static int env_u32_req(struct world_cfg *cfg, const char *name, uint32_t *out)
{
	int rc = env_u32(name, out);

	if (rc == -ENOENT)
		return fail(cfg, -EINVAL, "%s is not set", name);
	if (rc)
		return fail(cfg, rc, "%s=%s is not a number", name,
			    getenv(name));
	return 0;
}

/* "tcp://host:port" (also "host:port"); "[v6]:port" for IPv6. */
static int parse_url(struct world_cfg *cfg, const char *url)
{
	const char *p = url, *colon;
	unsigned long port;
	size_t hl;
	char *end;

	if (!strncmp(p, "etcd://", 7)) {
		if (strlen(p + 7) >= sizeof(cfg->etcd) || !p[7])
			return fail(cfg, -EINVAL, "store URL %s: bad endpoints",
				    url);
		strcpy(cfg->etcd, p + 7);
		return 0;
	}
	if (!strncmp(p, "tcp://", 6))
		p += 6;
	else if (strstr(p, "://"))
		return fail(cfg, -EPROTONOSUPPORT,
			    "store URL %s: tcp:// or etcd:// only", url);
	colon = strrchr(p, ':');
	if (!colon || colon == p)
		return fail(cfg, -EINVAL, "store URL %s: no host:port", url);
	hl = (size_t)(colon - p);
	if (*p == '[' && colon[-1] == ']') {
		p++;
		hl -= 2;
	}
	if (hl >= sizeof(cfg->host))
		return fail(cfg, -EINVAL, "store URL %s: host too long", url);
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || !port || port > 65535)
		return fail(cfg, -EINVAL, "store URL %s: bad port", url);
	memcpy(cfg->host, p, hl);
	cfg->host[hl] = '\0';
	cfg->port = (uint16_t)port;
	return 0;
}

static int pick_bootstrap(struct world_cfg *cfg, const struct hmc_world_opts *o)
{
	static const char *const names[] = {
		[HMC_WORLD_BOOT_PMIX] = "pmix", [HMC_WORLD_BOOT_ENV] = "env",
		[HMC_WORLD_BOOT_STORE] = "store", [HMC_WORLD_BOOT_UID] = "uid",
	};
	const char *env = getenv("HMC_BOOTSTRAP");
	uint32_t i;

	if (o && o->bootstrap) {
		if (o->bootstrap > HMC_WORLD_BOOT_UID)
			return fail(cfg, -EINVAL, "unknown bootstrap %u",
				    o->bootstrap);
		cfg->boot = o->bootstrap;
		return 0;
	}
	if (env && *env) {
		for (i = HMC_WORLD_BOOT_PMIX; i <= HMC_WORLD_BOOT_UID; i++)
			if (!strcmp(env, names[i])) {
				cfg->boot = i;
				return 0;
			}
		return fail(cfg, -EINVAL, "HMC_BOOTSTRAP=%s: not one of "
			    "pmix, env, store, uid", env);
	}
	if (boot_pmix_detected())
		cfg->boot = HMC_WORLD_BOOT_PMIX;
	else if ((getenv("RANK") && getenv("WORLD_SIZE")) ||
		 getenv("SLURM_PROCID"))
		cfg->boot = HMC_WORLD_BOOT_ENV;
	else if ((o && o->store) || getenv("HMC_STORE"))
		cfg->boot = HMC_WORLD_BOOT_STORE;
	else if ((o && o->uid) || getenv("HMC_WORLD_UID"))
		cfg->boot = HMC_WORLD_BOOT_UID;
	else
		return fail(cfg, -ENOENT, "no world to join: start under "
			    "hmcrun, mpirun, srun or torchrun, or set "
			    "HMC_STORE, HMC_WORLD_SIZE (and HMC_RANK)");
	return 0;
}

static void random_secret(char *out)
{
	uint8_t b[SECRET_HEX_LEN / 2];

	if (RAND_bytes(b, sizeof(b)) != 1)
		abort();	/* OpenSSL's CSPRNG never fails once seeded */
	hex_encode(b, sizeof(b), out);
}

static int boot_env(struct world_cfg *cfg, const struct hmc_world_opts *o)
{
	struct boot_info *bi = &cfg->bi;
	uint32_t port;
	int rc;

	if (getenv("RANK") && getenv("WORLD_SIZE")) {
		/* torchrun: HMC's store next to torch's TCPStore */
		const char *addr = getenv("MASTER_ADDR");

		if ((rc = env_u32_req(cfg, "RANK", &bi->rank)) ||
		    (rc = env_u32_req(cfg, "WORLD_SIZE", &bi->size)))
			return rc;
		if (env_u32("LOCAL_RANK", &bi->local_rank))
			bi->local_rank = BOOT_UNKNOWN;
		if (env_u32("LOCAL_WORLD_SIZE", &bi->local_size))
			bi->local_size = BOOT_UNKNOWN;
		if (!addr || !*addr)
			return fail(cfg, -EINVAL, "MASTER_ADDR is not set");
		rc = env_u32("HMC_STORE_PORT", &port);
		if (rc == -ENOENT) {
			rc = env_u32_req(cfg, "MASTER_PORT", &port);
			port++;
		}
		if (rc || !port || port > 65535)
			return fail(cfg, -EINVAL, "no store port: set "
				    "HMC_STORE_PORT or MASTER_PORT");
		if (strlen(addr) >= sizeof(cfg->host))
			return fail(cfg, -EINVAL, "MASTER_ADDR too long");
		strcpy(cfg->host, addr);
		cfg->port = (uint16_t)port;
		return 0;
	}
	/* Slurm */
	if ((rc = env_u32_req(cfg, "SLURM_PROCID", &bi->rank)) ||
	    (rc = env_u32_req(cfg, "SLURM_NTASKS", &bi->size)))
		return rc;
	if (env_u32("SLURM_LOCALID", &bi->local_rank))
		bi->local_rank = BOOT_UNKNOWN;
	if (!(o && o->store) && !getenv("HMC_STORE"))
		return fail(cfg, -EINVAL, "under Slurm without PMIx, set "
			    "HMC_STORE=tcp://host:port");
	return parse_url(cfg, o && o->store ? o->store : getenv("HMC_STORE"));
}

/* HMC's own rank and size: the options, else HMC_RANK and HMC_WORLD_SIZE. */
static int rank_size(struct world_cfg *cfg, const struct hmc_world_opts *o,
		     bool join)
{
	struct boot_info *bi = &cfg->bi;
	int rc;

	if (o && (o->flags & HMC_WORLD_F_RANK))
		bi->rank = o->rank;
	else if (join)
		return 0;	/* a joiner takes a free rank, whatever HMC_RANK says */
	else if ((rc = env_u32("HMC_RANK", &bi->rank)) == -EINVAL)
		return fail(cfg, rc, "HMC_RANK=%s is not a number",
			    getenv("HMC_RANK"));
	if (join)
		return 0;
	if (o && o->size)
		bi->size = o->size;
	else if ((rc = env_u32_req(cfg, "HMC_WORLD_SIZE", &bi->size)))
		return rc;
	if (!bi->size)
		return fail(cfg, -EINVAL, "a world of 0 ranks");
	return 0;
}

static int boot_store(struct world_cfg *cfg, const struct hmc_world_opts *o,
		      const char *url, bool join)
{
	int rc;

	if (!url || !*url)
		return fail(cfg, -EINVAL, "no store: set HMC_STORE");
	rc = parse_url(cfg, url);
	return rc ? rc : rank_size(cfg, o, join);
}

/* Layout: be32 magic, u8 version, u8 0, u8 host length, u8 0, host, be16 port, secret. */
#define UID_HOST	8
#define UID_HOST_MAX	54
#define UID_PORT	62
#define UID_SECRET	64

static int uid_parse(struct world_cfg *cfg, const struct hmc_world_uid *uid,
		     uint8_t secret[32])
{
	const uint8_t *b = uid->bytes;
	size_t hl = b[6];

	if (get_be32(b) != UID_MAGIC || b[4] != 1 || !hl || hl > UID_HOST_MAX)
		return fail(cfg, -EINVAL, "not a world unique id");
	memcpy(cfg->host, b + UID_HOST, hl);
	cfg->host[hl] = '\0';
	cfg->port = get_be16(b + UID_PORT);
	memcpy(secret, b + UID_SECRET, 32);
	hex_encode(secret, 32, cfg->secret);
	return 0;
}

static int boot_uid(struct world_cfg *cfg, const struct hmc_world_opts *o,
		    struct store_srv **srv)
{
	struct hmc_world_uid uid;
	struct uid_store **pp, *us;
	const char *hex = getenv("HMC_WORLD_UID");
	uint8_t secret[32];
	int rc;

	if (o && o->uid)
		uid = *o->uid;
	else if (!hex || hmc_world_uid_from_hex(hex, &uid))
		return fail(cfg, -EINVAL, "HMC_WORLD_UID is not a unique id");
	rc = uid_parse(cfg, &uid, secret);
	if (!rc)
		rc = rank_size(cfg, o, false);
	if (rc)
		return rc;
	pthread_mutex_lock(&uid_lock);
	for (pp = &uid_stores; *pp; pp = &(*pp)->next) {
		us = *pp;
		if (store_srv_port(us->srv) == cfg->port &&
		    !memcmp(us->secret, secret, 32)) {
			*pp = us->next;
			*srv = us->srv;
			free(us);
			break;
		}
	}
	pthread_mutex_unlock(&uid_lock);
	return 0;
}

static int boot_pmix(struct world_cfg *cfg, struct store_srv **srv)
{
	struct boot_info *bi = &cfg->bi;
	struct tls_ctx *tls;
	char url[512], *sp;
	int rc;

	rc = boot_pmix_init(bi);
	if (rc)
		return fail(cfg, rc, "PMIx bootstrap failed: %s",
			    rc == -ENOENT ? "libpmix.so.2 is not installed" :
			    "no PMIx server (is this mpirun or srun --mpi=pmix?)");
	url[0] = '\0';
	if (!bi->rank) {
		const char *ip = cfg->ip ? cfg->ip : "127.0.0.1";

		/* The URL travels inside the job only: it may carry the secret. */
		if (!cfg->secret[0])
			random_secret(cfg->secret);
		rc = tls_ctx_from_env(cfg->tls_cert, cfg->tls_key, cfg->tls_ca,
				      true, &tls);
		if (rc)
			goto err;
		rc = store_srv_start(ip, 0, cfg->secret, strlen(cfg->secret),
				     tls, srv);
		if (rc) {
			tls_ctx_destroy(tls);
			fail(cfg, rc, "cannot start the world store on %s: %s",
			     ip, strerror(-rc));
			goto err;
		}
		snprintf(url, sizeof(url), "tcp://%s%s%s:%u %s",
			 strchr(ip, ':') ? "[" : "", ip,
			 strchr(ip, ':') ? "]" : "", store_srv_port(*srv),
			 cfg->secret);
	}
	rc = boot_pmix_exchange(bi->rank ? NULL : url, url, sizeof(url),
				cfg->timeout_ms);
	if (rc) {
		fail(cfg, rc, "PMIx exchange of the store's address failed");
		goto err;
	}
	sp = strchr(url, ' ');
	if (!sp || strlen(sp + 1) >= sizeof(cfg->secret)) {
		rc = fail(cfg, -EPROTO, "malformed store address from PMIx");
		goto err;
	}
	*sp = '\0';
	strcpy(cfg->secret, sp + 1);
	rc = parse_url(cfg, url);
	if (rc)
		goto err;
	return 0;
err:
	boot_pmix_fini();
	return rc;
}

/*
 * Under env and store, a process on the store's host that binds its port
 * first serves it (memfabric's way); the others find it taken.
 */
static int maybe_host_store(struct world_cfg *cfg, struct store_srv **srv)
{
	struct tls_ctx *tls;
	int rc;

	if (*srv || cfg->etcd[0] || !sock_addr_is_local(cfg->host))
		return 0;
	rc = tls_ctx_from_env(cfg->tls_cert, cfg->tls_key, cfg->tls_ca, true,
			      &tls);
	if (rc)
		return fail(cfg, rc, "TLS settings: %s", strerror(-rc));
	rc = store_srv_start(cfg->host, cfg->port, cfg->secret,
			     strlen(cfg->secret), tls, srv);
	if (rc) {
		tls_ctx_destroy(tls);
		if (rc == -EADDRINUSE)
			return 0;	/* another process serves it */
		return fail(cfg, rc, "cannot serve the world store on %s:%u: %s",
			    cfg->host, cfg->port, strerror(-rc));
	}
	pr_info("world: serving the store on %s:%u", cfg->host, cfg->port);
	return 0;
}

static void rec_encode(uint8_t *rec, const char *ip, uint16_t port)
{
	char host[WP_REC_HOST_LEN];

	memset(rec, 0, WP_REC_LEN);
	if (gethostname(host, sizeof(host)))
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	memcpy(rec + WP_REC_HOST, host, strlen(host));
	snprintf((char *)rec + WP_REC_IP, WP_REC_IP_LEN, "%s", ip);
	put_be16(rec + WP_REC_PORT, port);
	put_be32(rec + WP_REC_PID, (uint32_t)getpid());
}

/* Dial @peer at its record, retrying while its old incarnation lingers. */
/*
 * Connect to @peer at its record. -EEXIST or -EALREADY: it dialed us at
 * the same time (then we wait for that connection), or its old
 * incarnation lingers in our communicator (then we try again).
 */
static int connect_rec(struct hmc_world *w, uint32_t peer, const uint8_t *rec,
		       int64_t deadline)
{
	char ip[WP_REC_IP_LEN];
	int rc;

	memcpy(ip, rec + WP_REC_IP, sizeof(ip));
	ip[sizeof(ip) - 1] = '\0';
	for (;;) {
		rc = hmc_comm_connect(w->comm, peer, ip,
				      get_be16(rec + WP_REC_PORT), w->transport);
		if (rc == -EISCONN || ((rc == -EEXIST || rc == -EALREADY) &&
					hmc_comm_is_connected(w->comm, peer)))
			return 0;
		if ((rc != -EEXIST && rc != -EALREADY) ||
		    deadline_passed(deadline))
			break;
		usleep(10000);
	}
	if (rc)
		snprintf(w->err, sizeof(w->err), "rank %u cannot connect to "
			 "rank %u at %s:%u: %s", w->rank, peer, ip,
			 get_be16(rec + WP_REC_PORT), hmc_strerror(rc));
	return rc;
}

static int dial_peer(struct hmc_world *w, struct world_cfg *cfg, uint32_t peer,
		     const uint8_t *rec)
{
	int rc = connect_rec(w, peer, rec, cfg->deadline);

	return rc ? fail(cfg, rc, "%s", w->err) : 0;
}

static void local_from_records(struct hmc_world *w, const uint8_t *self,
			       const uint8_t *recs, uint32_t n, size_t stride,
			       const uint32_t *ranks)
{
	uint32_t i, lr = 0, ls = 0, r;

	for (i = 0; i < n; i++) {
		const uint8_t *rec = recs + i * stride;

		if (strncmp((const char *)rec + WP_REC_HOST,
			    (const char *)self + WP_REC_HOST, WP_REC_HOST_LEN))
			continue;
		r = ranks ? ranks[i] : i;
		ls++;
		if (r < w->rank)
			lr++;
	}
	if (w->local_rank == BOOT_UNKNOWN)
		w->local_rank = lr;
	if (w->local_size == BOOT_UNKNOWN)
		w->local_size = ls;
}

/* The store's form of a timeout: UINT32_MAX never expires. */
static uint32_t wire_timeout(int t)
{
	return t < 0 ? UINT32_MAX : (uint32_t)t;
}

static int coll(struct hmc_world *w, uint32_t kind, uint32_t root,
		const void *send, size_t len, int timeout_ms, uint8_t **reply,
		size_t *rlen)
{
	uint8_t hdr[16];
	int64_t deadline = timeout_ms < 0 ? DEADLINE_NEVER :
			   deadline_after_ms(timeout_ms + REPLY_SLACK_MS);
	int rc;

	put_be32(hdr, kind);
	put_be32(hdr + 4, root);
	put_be32(hdr + 8, wire_timeout(timeout_ms));
	put_be32(hdr + 12, store_cli_nslots(w->cli));
	rc = store_cli_call(w->cli, WP_COLL, hdr, sizeof(hdr), send, len,
			    deadline, reply, rlen);
	if (rc) {
		snprintf(w->err, sizeof(w->err), "%s", store_cli_msg(w->cli));
		pr_warn("world: rank %u: collective failed: %s", w->rank,
			w->err);
		return rc;
	}
	if (*rlen < 4) {
		free(*reply);
		return -EPROTO;
	}
	w->err[0] = '\0';
	return 0;
}

static int init_comm(struct hmc_world *w, struct world_cfg *cfg, char *ip,
		     size_t ip_len, uint16_t *port)
{
	HMC_OPTS(hmc_comm_opts, co, .rank = w->rank,
		 .secret = cfg->secret[0] ? cfg->secret : NULL,
		 .connect_timeout_ms = cfg->timeout_ms);
	int rc;

	if (cfg->ip)
		snprintf(ip, ip_len, "%s", cfg->ip);
	else if ((rc = store_cli_local_ip(w->cli, ip, ip_len)))
		return fail(cfg, rc, "no local address: %s", strerror(-rc));
	rc = hmc_buf_create(cfg->mem_type, cfg->device, cfg->buf_size, NULL,
			    &w->buf);
	if (rc)
		return fail(cfg, rc, "cannot create the world's buffer of "
			    "%zu bytes: %s", cfg->buf_size, hmc_strerror(rc));
	rc = hmc_comm_create(w->buf, &co, &w->comm);
	if (rc)
		return fail(cfg, rc, "cannot create the communicator: %s",
			    hmc_strerror(rc));
	rc = hmc_comm_listen(w->comm, ip, 0);
	if (rc < 0)
		return fail(cfg, rc, "cannot listen on %s: %s", ip,
			    hmc_strerror(rc));
	rc = hmc_comm_listen_port(w->comm);
	if (rc < 0)
		return fail(cfg, rc, "no listening port");
	*port = (uint16_t)rc;
	return 0;
}

/* A start-up member: everyone's record by allgather, dial the lower ranks. */
static int rendezvous(struct hmc_world *w, struct world_cfg *cfg,
		      const uint8_t *rec)
{
	uint8_t *reply = NULL;
	size_t rlen;
	uint32_t n, j;
	int rc;

	rc = coll(w, WP_COLL_ALLGATHER, 0, rec, WP_REC_LEN,
		  deadline_remaining_ms(cfg->deadline), &reply, &rlen);
	if (rc)
		return fail(cfg, rc, "rank %u: world start-up: %s", w->rank,
			    w->err);
	n = get_be32(reply);
	if (rlen != 4 + (size_t)n * WP_REC_LEN) {
		free(reply);
		return fail(cfg, -EPROTO, "malformed start-up records");
	}
	local_from_records(w, rec, reply + 4, n, WP_REC_LEN, NULL);
	/* The same records everywhere: every rank decides the same. */
	w->shm_on = w->shm != NULL;
	for (j = 0; j < n; j++)
		if (!(reply[4 + (size_t)j * WP_REC_LEN + WP_REC_FLAGS] &
		      WP_REC_F_SHM))
			w->shm_on = false;
	/* Large worlds connect on demand (hmc_world_connect()). */
	for (j = 0; j < w->rank && !rc && !cfg->lazy && n <= EAGER_MAX; j++)
		rc = dial_peer(w, cfg, j, reply + 4 + (size_t)j * WP_REC_LEN);
	w->nrecs = n;
	w->recs = reply;
	memmove(w->recs, reply + 4, (size_t)n * WP_REC_LEN);
	if (rc)
		return rc;
	/* Every dial is answered: the communicator is whole after this. */
	rc = coll(w, WP_COLL_ALLGATHER, 0, NULL, 0,
		  deadline_remaining_ms(cfg->deadline), &reply, &rlen);
	if (rc)
		return fail(cfg, rc, "rank %u: world start-up: %s", w->rank,
			    w->err);
	free(reply);
	return 0;
}

/* A joiner: dial every member in the table PUBLISH returned. */
static int join_members(struct hmc_world *w, struct world_cfg *cfg,
			const uint8_t *rec, const uint8_t *table, size_t len)
{
	size_t stride = 4 + WP_REC_LEN, n = len / stride, i;
	uint32_t *ranks;
	int rc = 0;

	ranks = calloc(n + 1, sizeof(*ranks));
	if (!ranks)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		ranks[i] = get_be32(table + i * stride);
	local_from_records(w, rec, table + 4, (uint32_t)n, stride, ranks);
	for (i = 0; i < n && !rc; i++)
		if (ranks[i] != w->rank)
			rc = dial_peer(w, cfg, ranks[i], table + i * stride + 4);
	free(ranks);
	if (rc)
		return rc;
	rc = store_cli_call(w->cli, WP_READY, NULL, 0, NULL, 0, cfg->deadline,
			    NULL, NULL);
	if (rc)
		return fail(cfg, rc, "%s", store_cli_msg(w->cli));
	return 0;
}

static int cfg_defaults(struct world_cfg *cfg, const struct hmc_world_opts *o)
{
	const char *s = o && o->secret ? o->secret : getenv("HMC_SECRET");
	uint32_t v;
	int rc;

	if (o) {
		cfg->err = o->err_msg;
		cfg->err_len = o->err_msg_len;
		if (cfg->err && cfg->err_len)
			cfg->err[0] = '\0';
	}
	cfg->bi = (struct boot_info){ BOOT_UNKNOWN, 0, BOOT_UNKNOWN,
				      BOOT_UNKNOWN };
	if (s && strlen(s) >= sizeof(cfg->secret))
		return fail(cfg, -EINVAL, "secret too long");
	snprintf(cfg->secret, sizeof(cfg->secret), "%s", s ? s : "");
	cfg->ip = o && o->ip ? o->ip : getenv("HMC_WORLD_ADDR");
	if (cfg->ip && !*cfg->ip)
		cfg->ip = NULL;
	if (o) {
		cfg->tls_cert = o->tls_cert;
		cfg->tls_key = o->tls_key;
		cfg->tls_ca = o->tls_ca;
		cfg->mem_type = o->mem_type;
		cfg->device = o->device;
		cfg->transport = o->transport;
		cfg->lazy = o->flags & HMC_WORLD_F_LAZY;
	}
	if (!env_u32("HMC_WORLD_LAZY", &v) && v)
		cfg->lazy = true;
	cfg->buf_size = o && o->buf_size ? o->buf_size : DEFAULT_BUF_SIZE;
	if (!(o && o->buf_size) && !(rc = env_u32("HMC_WORLD_BUF_SIZE", &v)))
		cfg->buf_size = v;
	cfg->timeout_ms = o && o->timeout_ms ? o->timeout_ms :
			  DEFAULT_TIMEOUT_MS;
	if (!(o && o->timeout_ms) && !env_u32("HMC_WORLD_TIMEOUT", &v))
		cfg->timeout_ms = v > INT32_MAX ? INT32_MAX : (int)v;
	cfg->deadline = deadline_after_ms(cfg->timeout_ms);
	return 0;
}

static void world_free(struct hmc_world *w)
{
	if (w->comm)
		hmc_comm_destroy(w->comm);
	if (w->buf)
		hmc_buf_destroy(w->buf);
	store_cli_close(w->cli);
	wshm_close(w->shm);
	free(w->recs);
	if (w->srv)
		store_srv_stop(w->srv);
	if (w->pmix)
		boot_pmix_fini();
	free(w);
}

void hmc_world_detach(struct hmc_world *w)
{
	if (w && __atomic_exchange_n(&w->pmix, false, __ATOMIC_ACQ_REL))
		boot_pmix_fini();
}

static int world_start(const struct hmc_world_opts *o, bool join,
		       const char *join_url, struct hmc_world **out)
{
	struct world_cfg cfg = { 0 };
	struct hmc_world *w;
	struct tls_ctx *tls = NULL;
	uint8_t rec[WP_REC_LEN], jreq[8], *reply = NULL;
	char ip[WP_REC_IP_LEN], msg[256];
	uint16_t port = 0;
	size_t rlen;
	int rc;

	rc = cfg_defaults(&cfg, o);
	if (rc)
		return rc;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->timeout_ms = cfg.timeout_ms;
	w->transport = cfg.transport;
	if (join) {
		uint8_t secret[32];

		cfg.boot = join_url ? HMC_WORLD_BOOT_STORE : HMC_WORLD_BOOT_UID;
		if (join_url) {
			rc = boot_store(&cfg, o, join_url, true);
		} else {
			rc = uid_parse(&cfg, o->uid, secret);
			if (!rc)
				rc = rank_size(&cfg, o, true);
		}
	} else {
		rc = pick_bootstrap(&cfg, o);
		if (!rc) {
			switch (cfg.boot) {
			case HMC_WORLD_BOOT_PMIX:
				rc = boot_pmix(&cfg, &w->srv);
				w->pmix = !rc;
				break;
			case HMC_WORLD_BOOT_ENV:
				rc = boot_env(&cfg, o);
				break;
			case HMC_WORLD_BOOT_STORE:
				rc = boot_store(&cfg, o, o && o->store ?
						o->store : getenv("HMC_STORE"),
						false);
				break;
			default:
				rc = boot_uid(&cfg, o, &w->srv);
				break;
			}
		}
		if (!rc && cfg.boot != HMC_WORLD_BOOT_UID)
			rc = maybe_host_store(&cfg, &w->srv);
	}
	if (rc)
		goto err;
	w->boot = cfg.boot;
	w->local_rank = cfg.bi.local_rank;
	w->local_size = cfg.bi.local_size;

	rc = tls_ctx_from_env(cfg.tls_cert, cfg.tls_key, cfg.tls_ca, false,
			      &tls);
	if (rc) {
		fail(&cfg, rc, "TLS settings: %s", strerror(-rc));
		goto err;
	}
	if (cfg.etcd[0])
		rc = store_cli_connect_etcd(cfg.etcd, cfg.deadline, &w->cli,
					    msg, sizeof(msg));
	else
		rc = store_cli_connect(cfg.host, cfg.port, cfg.secret,
				       strlen(cfg.secret), tls, cfg.deadline,
				       &w->cli, msg, sizeof(msg));
	tls_ctx_destroy(tls);	/* the connection keeps what it needs */
	if (rc) {
		fail(&cfg, rc, "%s", msg);
		goto err;
	}
	put_be32(jreq, cfg.bi.rank == BOOT_UNKNOWN ? WP_RANK_ANY : cfg.bi.rank);
	put_be32(jreq + 4, cfg.bi.size);
	rc = store_cli_call(w->cli, WP_JOIN, jreq, sizeof(jreq), NULL, 0,
			    cfg.deadline, &reply, &rlen);
	if (rc || rlen < 8) {
		if (!rc) {
			free(reply);
			rc = -EPROTO;
		}
		fail(&cfg, rc, "joining the world: %s", store_cli_msg(w->cli));
		goto err;
	}
	w->rank = get_be32(reply);
	store_cli_set_nslots(w->cli, get_be32(reply + 4));
	/* The store's segment: mapped if this host sees it, else not used. */
	if (rlen > 8 && rlen <= 8 + WSHM_NAME_LEN && !reply[rlen - 1] &&
	    wshm_open((char *)reply + 8, get_be32(reply + 4), &w->shm))
		w->shm = NULL;
	free(reply);

	rc = init_comm(w, &cfg, ip, sizeof(ip), &port);
	if (rc)
		goto err;
	rec_encode(rec, ip, port);
	if (w->shm)
		rec[WP_REC_FLAGS] |= WP_REC_F_SHM;
	rc = store_cli_call(w->cli, WP_PUBLISH, rec, sizeof(rec), NULL, 0,
			    cfg.deadline, &reply, &rlen);
	if (rc || rlen < 4) {
		if (!rc) {
			free(reply);
			rc = -EPROTO;
		}
		fail(&cfg, rc, "publishing our address: %s",
		     store_cli_msg(w->cli));
		goto err;
	}
	if (join)
		rc = join_members(w, &cfg, rec, reply + 4, rlen - 4);
	free(reply);
	if (!join)
		rc = rendezvous(w, &cfg, rec);
	if (rc)
		goto err;
	pr_info("world: rank %u of %u (local %u of %u) via %d", w->rank,
		store_cli_nslots(w->cli), w->local_rank, w->local_size, w->boot);
	*out = w;
	return 0;

err:
	world_free(w);
	return rc;
}

int hmc_world_init(const struct hmc_world_opts *opts, struct hmc_world **world)
{
	struct hmc_world_opts o;
	int rc;

	if (!world)
		return -EINVAL;
	rc = OPTS_LOAD(&o, opts, hmc_world_opts, err_msg_len);
	return rc ? rc : world_start(&o, false, NULL, world);
}

int hmc_world_join(const char *store_url, const struct hmc_world_opts *opts,
		   struct hmc_world **world)
{
	struct hmc_world_opts o;
	int rc;

	if (!world)
		return -EINVAL;
	rc = OPTS_LOAD(&o, opts, hmc_world_opts, err_msg_len);
	if (rc)
		return rc;
	if (!store_url && !o.uid)
		return -EINVAL;
	return world_start(&o, true, store_url, world);
}

int hmc_world_finalize(struct hmc_world *w)
{
	int rc = 0, rc2;

	if (!w)
		return -EINVAL;
	/* Our connections go first, so peers never see them fail after LEFT. */
	hmc_comm_destroy(w->comm);
	w->comm = NULL;
	rc = store_cli_call(w->cli, WP_LEAVE, NULL, 0, NULL, 0,
			    deadline_after_ms(w->timeout_ms), NULL, NULL);
	if (rc == -ECONNRESET)
		rc = 0;		/* the store went first: nothing to leave */
	if (w->srv) {
		rc2 = store_srv_wait_idle(w->srv,
					  deadline_after_ms(w->timeout_ms));
		if (rc2)
			pr_warn("world: members still connected to the store "
				"we host after %d ms", w->timeout_ms);
		rc = rc ? rc : rc2;
	}
	world_free(w);
	return rc;
}

int hmc_world_get_uid(const char *ip, struct hmc_world_uid *uid)
{
	struct uid_store *us;
	size_t hl;
	uint8_t *b;
	char hex[SECRET_HEX_LEN + 1];
	struct tls_ctx *tls;
	int rc;

	if (!uid)
		return -EINVAL;
	if (!ip)
		ip = getenv("HMC_WORLD_ADDR");
	if (!ip || !*ip)
		ip = "127.0.0.1";
	hl = strlen(ip);
	if (hl > UID_HOST_MAX)
		return -EINVAL;
	us = calloc(1, sizeof(*us));
	if (!us)
		return -ENOMEM;
	if (RAND_bytes(us->secret, sizeof(us->secret)) != 1) {
		free(us);
		return -EIO;
	}
	hex_encode(us->secret, sizeof(us->secret), hex);
	rc = tls_ctx_from_env(NULL, NULL, NULL, true, &tls);
	if (rc) {
		free(us);
		return rc;
	}
	rc = store_srv_start(ip, 0, hex, strlen(hex), tls, &us->srv);
	if (rc) {
		tls_ctx_destroy(tls);
		free(us);
		return rc;
	}
	b = uid->bytes;
	memset(b, 0, HMC_WORLD_UID_LEN);
	put_be32(b, UID_MAGIC);
	b[4] = 1;
	b[6] = (uint8_t)hl;
	memcpy(b + UID_HOST, ip, hl);
	put_be16(b + UID_PORT, store_srv_port(us->srv));
	memcpy(b + UID_SECRET, us->secret, 32);
	pthread_mutex_lock(&uid_lock);
	us->next = uid_stores;
	uid_stores = us;
	pthread_mutex_unlock(&uid_lock);
	return 0;
}

void hmc_world_uid_to_hex(const struct hmc_world_uid *uid,
			  char hex[2 * HMC_WORLD_UID_LEN + 1])
{
	hex_encode(uid->bytes, HMC_WORLD_UID_LEN, hex);
}

int hmc_world_uid_from_hex(const char *hex, struct hmc_world_uid *uid)
{
	size_t i;
	int hi, lo;

	if (!hex || !uid || strlen(hex) != 2 * HMC_WORLD_UID_LEN)
		return -EINVAL;
	for (i = 0; i < HMC_WORLD_UID_LEN; i++) {
		hi = hex_digit(hex[2 * i]);
		lo = hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		uid->bytes[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

uint32_t hmc_world_rank(const struct hmc_world *w)
{
	return w->rank;
}

uint32_t hmc_world_size(const struct hmc_world *w)
{
	return store_cli_nslots(w->cli);
}

uint32_t hmc_world_local_rank(const struct hmc_world *w)
{
	return w->local_rank;
}

uint32_t hmc_world_local_size(const struct hmc_world *w)
{
	return w->local_size;
}

struct hmc_comm *hmc_world_comm(const struct hmc_world *w)
{
	return w->comm;
}

int hmc_world_connect(struct hmc_world *w, uint32_t rank, int timeout_ms)
{
	if (!w || rank == w->rank)
		return -EINVAL;
	if (hmc_comm_is_connected(w->comm, rank))
		return 0;
	if (rank >= w->nrecs)
		return -ENOENT;
	return connect_rec(w, rank, w->recs + (size_t)rank * WP_REC_LEN,
			   deadline_after_ms(timeout_ms));
}

enum hmc_world_bootstrap hmc_world_bootstrap_used(const struct hmc_world *w)
{
	return w->boot;
}

/*
 * The shared-memory path (shm.h): 0 done, 1 to the store (from now on,
 * on every rank alike), or an error.
 */
static int shm_coll(struct hmc_world *w, enum wshm_kind kind, uint32_t root,
		    const void *send, size_t len, void *recv, int timeout_ms)
{
	int rc;

	if (!w->shm_on || len > WSHM_DATA)
		return 1;
	rc = wshm_coll(w->shm, w->rank, w->shm_seq++, kind, root, send, len,
		       recv, deadline_after_ms(timeout_ms), w->err,
		       sizeof(w->err));
	if (rc == 1)
		w->shm_on = false;	/* membership changed */
	else if (rc == -EINVAL)
		snprintf(w->err, sizeof(w->err), "ranks gave different lengths");
	else if (!rc)
		w->err[0] = '\0';
	return rc;
}

int hmc_world_barrier(struct hmc_world *w, int timeout_ms)
{
	uint8_t *reply;
	size_t rlen;
	int rc;

	rc = shm_coll(w, WSHM_ALLGATHER, 0, NULL, 0, NULL, timeout_ms);
	if (rc <= 0)
		return rc;
	rc = coll(w, WP_COLL_ALLGATHER, 0, NULL, 0, timeout_ms, &reply, &rlen);
	if (!rc)
		free(reply);
	return rc;
}

int hmc_world_allgather(struct hmc_world *w, const void *send, size_t len,
			void *recv, int timeout_ms)
{
	uint8_t *reply;
	size_t rlen;
	uint32_t n;
	int rc;

	if (!w || (len && (!send || !recv)))
		return -EINVAL;
	rc = shm_coll(w, WSHM_ALLGATHER, 0, send, len, recv, timeout_ms);
	if (rc <= 0)
		return rc;
	rc = coll(w, WP_COLL_ALLGATHER, 0, send, len, timeout_ms, &reply,
		  &rlen);
	if (rc)
		return rc;
	n = get_be32(reply);
	if (rlen != 4 + (size_t)n * len) {
		free(reply);
		return -EPROTO;
	}
	if (len)
		memcpy(recv, reply + 4, (size_t)n * len);
	free(reply);
	return 0;
}

int hmc_world_bcast(struct hmc_world *w, void *buf, size_t len, uint32_t root,
		    int timeout_ms)
{
	uint8_t *reply;
	size_t rlen;
	int rc;

	if (!w || (len && !buf) || root >= hmc_world_size(w))
		return -EINVAL;
	rc = shm_coll(w, WSHM_BCAST, root, buf, len, buf, timeout_ms);
	if (rc <= 0)
		return rc;
	rc = coll(w, WP_COLL_BCAST, root, w->rank == root ? buf : NULL,
		  w->rank == root ? len : 0, timeout_ms, &reply, &rlen);
	if (rc)
		return rc;
	if (rlen != 4 + len) {
		free(reply);
		return -EPROTO;
	}
	if (w->rank != root && len)
		memcpy(buf, reply + 4, len);
	free(reply);
	return 0;
}

int hmc_world_wait_event(struct hmc_world *w, struct hmc_world_event *ev,
			 int timeout_ms)
{
	struct store_ev e;
	int rc;

	if (!w || !ev)
		return -EINVAL;
	rc = store_cli_event(w->cli, &e, deadline_after_ms(timeout_ms));
	if (rc) {
		if (rc != -ETIMEDOUT)
			snprintf(w->err, sizeof(w->err), "%s",
				 store_cli_msg(w->cli));
		return rc;
	}
	ev->type = e.type;
	ev->rank = e.rank;
	ev->size = e.nslots;
	ev->error = e.err;
	return 0;
}

const char *hmc_world_event_name(uint32_t type)
{
	switch (type) {
	case HMC_WORLD_EV_JOINED:
		return "joined";
	case HMC_WORLD_EV_LEFT:
		return "left";
	case HMC_WORLD_EV_FAILED:
		return "failed";
	default:
		return "unknown";
	}
}

const char *hmc_world_last_error(const struct hmc_world *w)
{
	return w->err;
}
