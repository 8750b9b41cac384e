// SPDX-License-Identifier: MIT
/* The world store in etcd (see etcd.h). */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>
#include <openssl/evp.h>

#include <hmc/world.h>

#include "sys/log.h"
#include "sys/util.h"
#include "world/etcd.h"
#include "world/proto.h"

/* Expired, plus a watch's latency, within HMC_WORLD_FAIL_DETECT_MS. */
#define LEASE_TTL_S	(HMC_WORLD_FAIL_DETECT_MS / 1000 - 1)
#define KEEPALIVE_MS	1000
#define HTTP_TIMEOUT_MS	3000
#define MAX_EP		8
#define POLL_MAX_MS	20

/* The few libcurl and json-c functions we use, resolved at run time. */
static struct {
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_cleanup)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	CURLcode (*global_init)(long);
	struct json_object *(*parse)(const char *);
	json_bool (*get_ex)(const struct json_object *, const char *,
			    struct json_object **);
	const char *(*get_string)(struct json_object *);
	int64_t (*get_int64)(const struct json_object *);
	json_bool (*get_boolean)(const struct json_object *);
	size_t (*array_length)(const struct json_object *);
	struct json_object *(*array_get)(const struct json_object *, size_t);
	int (*put)(struct json_object *);
} fn;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_rc;

struct kv {
	char *key;		/* without the prefix */
	uint8_t *val;
	size_t len;
	int64_t create_rev;
};

struct kvs {
	struct kv *v;
	size_t n;
	int64_t rev;
};

struct http {
	CURL *curl;
	struct curl_slist *hdrs;
	char *buf;
	size_t len, cap;
	/* a watch stops at its first event */
	bool watch;
};

struct etcd {
	pthread_mutex_t lock;		/* the state below; the main handle */
	char *ep[MAX_EP];
	int nep, cur;
	char prefix[128];
	struct http main_h, ka_h, watch_h;
	pthread_mutex_t watch_lock;	/* one waiter for events at a time */
	int64_t lease;
	uint32_t rank, size, first_seq, seq;
	bool joined, published;
	uint8_t rec[WP_REC_LEN];
	uint8_t *coll_data;		/* our part of the collective under way */
	size_t coll_len;
	int64_t coll_seq;		/* -1: none */
	/* membership as last seen: create revision per rank (0: none) */
	int64_t *seen;
	bool have_seen;
	struct store_ev *evq;
	size_t ev_n, ev_cap;
	pthread_t ka;
	bool ka_started, stop;
	pthread_cond_t cond;
	bool lost;			/* another member took our rank */
	char msg[256];
};

static void set_msg(struct etcd *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_msg(struct etcd *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
}

static void load(void)
{
	static const struct {
		const char *lib, *name;
		size_t off;
	} syms[] = {
#define C(f, n) { "libcurl.so.4", n, offsetof(__typeof__(fn), f) }
#define J(f, n) { "libjson-c.so.5", n, offsetof(__typeof__(fn), f) }
		C(easy_init, "curl_easy_init"),
		C(easy_setopt, "curl_easy_setopt"),
		C(easy_perform, "curl_easy_perform"),
		C(easy_getinfo, "curl_easy_getinfo"),
		C(easy_cleanup, "curl_easy_cleanup"),
		C(easy_strerror, "curl_easy_strerror"),
		C(slist_append, "curl_slist_append"),
		C(slist_free_all, "curl_slist_free_all"),
		C(global_init, "curl_global_init"),
		J(parse, "json_tokener_parse"),
		J(get_ex, "json_object_object_get_ex"),
		J(get_string, "json_object_get_string"),
		J(get_int64, "json_object_get_int64"),
		J(get_boolean, "json_object_get_boolean"),
		J(array_length, "json_object_array_length"),
		J(array_get, "json_object_array_get_idx"),
		J(put, "json_object_put"),
#undef C
#undef J
	};
	void *curl = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	void *json = dlopen("libjson-c.so.5", RTLD_NOW | RTLD_LOCAL);
	size_t i;
	void *f;

	if (!curl || !json) {
		pr_err("world: etcd needs libcurl.so.4 and libjson-c.so.5: %s",
		       dlerror());
		load_rc = -ENOENT;
		return;
	}
	for (i = 0; i < ARRAY_SIZE(syms); i++) {
		f = dlsym(syms[i].lib[3] == 'c' ? curl : json, syms[i].name);
		if (!f) {
			pr_err("world: %s lacks %s", syms[i].lib, syms[i].name);
			load_rc = -ENOENT;
			return;
		}
		memcpy((char *)&fn + syms[i].off, &f, sizeof(f));
	}
	if (fn.global_init(CURL_GLOBAL_DEFAULT))
		load_rc = -ENOMEM;
}

/* ---- encoding */

static char *b64(const void *p, size_t n)
{
	char *out = malloc(4 * ((n + 2) / 3) + 1);

	if (out)
		EVP_EncodeBlock((unsigned char *)out, p, (int)n);
	return out;
}

static uint8_t *unb64(const char *s, size_t *n)
{
	size_t sl = strlen(s);
	uint8_t *out = malloc(sl / 4 * 3 + 1);
	int len;

	if (!out)
		return NULL;
	len = sl ? EVP_DecodeBlock(out, (const unsigned char *)s, (int)sl) : 0;
	if (len < 0) {
		free(out);
		return NULL;
	}
	if (sl && s[sl - 1] == '=')
		len--;
	if (sl > 1 && s[sl - 2] == '=')
		len--;
	out[len] = '\0';
	*n = (size_t)len;
	return out;
}

/* ---- HTTP */

static size_t on_data(char *p, size_t sz, size_t nm, void *arg)
{
	struct http *h = arg;
	size_t n = sz * nm;
	char *nb;

	if (h->len + n + 1 > h->cap) {
		size_t cap = (h->len + n + 1) * 2;

		nb = realloc(h->buf, cap);
		if (!nb)
			return 0;
		h->buf = nb;
		h->cap = cap;
	}
	memcpy(h->buf + h->len, p, n);
	h->len += n;
	h->buf[h->len] = '\0';
	/* A watch: its first message with events is all we wait for. */
	if (h->watch && strstr(h->buf, "\"events\""))
		return 0;
	return n;
}

static int http_init(struct http *h)
{
	h->curl = fn.easy_init();
	h->hdrs = fn.slist_append(NULL, "Content-Type: application/json");
	if (!h->curl || !h->hdrs)
		return -ENOMEM;
	fn.easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_data);
	fn.easy_setopt(h->curl, CURLOPT_WRITEDATA, h);
	fn.easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->hdrs);
	fn.easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	fn.easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
	fn.easy_setopt(h->curl, CURLOPT_TCP_NODELAY, 1L);
	return 0;
}

static void http_fini(struct http *h)
{
	if (h->curl)
		fn.easy_cleanup(h->curl);
	if (h->hdrs)
		fn.slist_free_all(h->hdrs);
	free(h->buf);
}

/*
 * POST @body to @path, trying each endpoint from the current one; the
 * reply parsed into *@out. A watch (@watch) returns at its first event or
 * at @timeout_ms with whatever came.
 */
static int post(struct etcd *e, struct http *h, const char *path,
		const char *body, long timeout_ms, bool watch,
		struct json_object **out)
{
	char url[320];
	CURLcode cc = CURLE_OK;
	int i, ep;

	for (i = 0; i < e->nep; i++) {
		ep = (e->cur + i) % e->nep;
		snprintf(url, sizeof(url), "http://%s%s", e->ep[ep], path);
		h->len = 0;
		h->watch = watch;
		fn.easy_setopt(h->curl, CURLOPT_URL, url);
		fn.easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
		fn.easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
		cc = fn.easy_perform(h->curl);
		if (watch && (cc == CURLE_WRITE_ERROR ||
			      cc == CURLE_OPERATION_TIMEDOUT))
			cc = CURLE_OK;	/* we ended it, or nothing happened */
		if (cc == CURLE_OK) {
			e->cur = ep;
			break;
		}
	}
	if (cc != CURLE_OK) {
		pr_debug("world: etcd %s: %s", path, fn.easy_strerror(cc));
		return cc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT :
		       -ECONNREFUSED;
	}
	if (!out)
		return 0;
	/* A watch may have stopped inside its stream: take the first message. */
	if (watch) {
		char *end = strstr(h->buf ? h->buf : "", "}}\n");

		if (end)
			end[2] = '\0';
	}
	*out = h->len ? fn.parse(h->buf) : NULL;
	if (!*out)
		return watch ? 0 : -EPROTO;
	return 0;
}

static struct json_object *jget(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;

	if (!o || !fn.get_ex(o, k, &v))
		return NULL;
	return v;
}

static int64_t jint(struct json_object *o, const char *k)
{
	struct json_object *v = jget(o, k);

	return v ? fn.get_int64(v) : 0;
}

static void kvs_free(struct kvs *k)
{
	size_t i;

	for (i = 0; i < k->n; i++) {
		free(k->v[i].key);
		free(k->v[i].val);
	}
	free(k->v);
	k->v = NULL;
	k->n = 0;
}

/* Parse "kvs" of a range reply, keys made relative to our prefix. */
static int parse_kvs(struct etcd *e, struct json_object *r, struct kvs *out)
{
	struct json_object *arr = jget(r, "kvs"), *kv;
	size_t i, n = arr ? fn.array_length(arr) : 0, pl = strlen(e->prefix);
	uint8_t *key;
	size_t kl;

	out->rev = jint(jget(r, "header"), "revision");
	out->n = 0;
	out->v = calloc(n + 1, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct kv *d = &out->v[out->n];
		const char *v;

		kv = fn.array_get(arr, i);
		key = unb64(fn.get_string(jget(kv, "key")), &kl);
		if (!key)
			return -ENOMEM;
		if (kl < pl || memcmp(key, e->prefix, pl)) {
			free(key);
			continue;
		}
		d->key = strdup((char *)key + pl);
		free(key);
		v = jget(kv, "value") ? fn.get_string(jget(kv, "value")) : "";
		d->val = unb64(v, &d->len);
		d->create_rev = jint(kv, "create_revision");
		if (!d->key || !d->val)
			return -ENOMEM;
		out->n++;
	}
	return 0;
}

/* Base64 of our prefix + @rel and of the end of the keys under it. */
static int prefix_range(struct etcd *e, const char *rel, char **k,
			char **end)
{
	char full[192], endk[192];
	size_t l;

	l = (size_t)snprintf(full, sizeof(full), "%s%s", e->prefix, rel);
	memcpy(endk, full, l + 1);
	endk[l - 1]++;
	*k = b64(full, l);
	*end = b64(endk, l);
	if (*k && *end)
		return 0;
	free(*k);
	free(*end);
	return -ENOMEM;
}

/* Everything under our prefix. */
static int range_all(struct etcd *e, struct http *h, struct kvs *out)
{
	struct json_object *r;
	char *k, *end, body[512];
	int rc;

	rc = prefix_range(e, "", &k, &end);
	if (rc)
		return rc;
	snprintf(body, sizeof(body), "{\"key\":\"%s\",\"range_end\":\"%s\"}",
		 k, end);
	free(k);
	free(end);
	rc = post(e, h, "/v3/kv/range", body, HTTP_TIMEOUT_MS, false, &r);
	if (rc)
		return rc;
	rc = parse_kvs(e, r, out);
	fn.put(r);
	if (rc)
		kvs_free(out);
	return rc;
}

static const struct kv *kv_find(const struct kvs *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static const struct kv *kv_find(const struct kvs *k, const char *fmt, ...)
{
	char key[96];
	va_list ap;
	size_t i;

	va_start(ap, fmt);
	vsnprintf(key, sizeof(key), fmt, ap);
	va_end(ap);
	for (i = 0; i < k->n; i++)
		if (!strcmp(k->v[i].key, key))
			return &k->v[i];
	return NULL;
}

/* A JSON request op: put (@val, @lease), delete, or nothing, on key @rel. */
static int op_json(struct etcd *e, char *out, size_t len, const char *what,
		   const char *rel, const void *val, size_t vlen, int64_t lease)
{
	char full[192], *k, *v = NULL;
	int n;

	snprintf(full, sizeof(full), "%s%s", e->prefix, rel);
	k = b64(full, strlen(full));
	if (val)
		v = b64(val, vlen);
	if (!k || (val && !v)) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	if (!strcmp(what, "put"))
		n = snprintf(out, len, "{\"request_put\":{\"key\":\"%s\","
			     "\"value\":\"%s\",\"lease\":\"%" PRId64 "\"}}",
			     k, v ? v : "", lease);
	else if (!strcmp(what, "delete"))
		n = snprintf(out, len, "{\"request_delete_range\":{\"key\":"
			     "\"%s\"}}", k);
	else	/* compare: the key does not exist */
		n = snprintf(out, len, "{\"key\":\"%s\",\"target\":\"CREATE\","
			     "\"create_revision\":\"0\"}", k);
	free(k);
	free(v);
	return n < 0 || (size_t)n >= len ? -E2BIG : 0;
}

static int put_key(struct etcd *e, struct http *h, const char *rel,
		   const void *val, size_t vlen, int64_t lease)
{
	char full[192], *k, *v, *body;
	size_t bl;
	int rc;

	snprintf(full, sizeof(full), "%s%s", e->prefix, rel);
	k = b64(full, strlen(full));
	v = b64(val, vlen);
	bl = (k ? strlen(k) : 0) + (v ? strlen(v) : 0) + 96;
	body = malloc(bl);
	rc = -ENOMEM;
	if (k && v && body) {
		snprintf(body, bl, "{\"key\":\"%s\",\"value\":\"%s\","
			 "\"lease\":\"%" PRId64 "\"}", k, v, lease);
		rc = post(e, h, "/v3/kv/put", body, HTTP_TIMEOUT_MS, false,
			  NULL);
	}
	free(k);
	free(v);
	free(body);
	return rc;
}

static int grant_lease(struct etcd *e, struct http *h, int64_t *id)
{
	struct json_object *r;
	char body[64];
	int rc;

	snprintf(body, sizeof(body), "{\"TTL\":%d}", LEASE_TTL_S);
	rc = post(e, h, "/v3/lease/grant", body, HTTP_TIMEOUT_MS, false, &r);
	if (rc)
		return rc;
	*id = jint(r, "ID");
	fn.put(r);
	return *id ? 0 : -EPROTO;
}

/* The rank key's value: be32 first collective, then the record. */
static void rank_value(struct etcd *e, uint8_t *v)
{
	put_be32(v, e->first_seq);
	memcpy(v + 4, e->rec, WP_REC_LEN);
}

/*
 * Claim rank @r under @lease: the rank key if nobody holds it, joined/r,
 * and no gone/r, in one transaction that also reads the collectives (so a
 * joiner knows where the world's collectives are). 1 if claimed.
 */
static int claim(struct etcd *e, struct http *h, uint32_t r, int64_t lease,
		 struct kvs *colls)
{
	char rel[64], cmp[512], put[1024], joined[512], gone[512], rng[512];
	char *body, *k, *end;
	uint8_t val[4 + WP_REC_LEN];
	struct json_object *res, *resp;
	size_t i, n;
	int rc;

	snprintf(rel, sizeof(rel), "rank/%08u", r);
	rank_value(e, val);
	if ((rc = op_json(e, cmp, sizeof(cmp), "cmp", rel, NULL, 0, 0)) ||
	    (rc = op_json(e, put, sizeof(put), "put", rel, val, sizeof(val),
			  lease)))
		return rc;
	snprintf(rel, sizeof(rel), "joined/%08u", r);
	if ((rc = op_json(e, joined, sizeof(joined), "put", rel, "1", 1, 0)))
		return rc;
	snprintf(rel, sizeof(rel), "gone/%08u", r);
	if ((rc = op_json(e, gone, sizeof(gone), "delete", rel, NULL, 0, 0)))
		return rc;
	if ((rc = prefix_range(e, "coll/", &k, &end)))
		return rc;
	snprintf(rng, sizeof(rng), "{\"request_range\":{\"key\":\"%s\","
		 "\"range_end\":\"%s\",\"keys_only\":true}}", k, end);
	free(k);
	free(end);
	n = strlen(cmp) + strlen(put) + strlen(joined) + strlen(gone) +
	    strlen(rng) + 128;
	body = malloc(n);
	if (!body)
		return -ENOMEM;
	snprintf(body, n, "{\"compare\":[%s],\"success\":[%s,%s,%s,%s]}", cmp,
		 put, joined, gone, rng);
	rc = post(e, h, "/v3/kv/txn", body, HTTP_TIMEOUT_MS, false, &res);
	free(body);
	if (rc)
		return rc;
	if (!jget(res, "succeeded") || !fn.get_boolean(jget(res, "succeeded"))) {
		fn.put(res);
		return 0;
	}
	resp = jget(res, "responses");
	colls->n = 0;
	colls->v = NULL;
	for (i = 0; resp && i < fn.array_length(resp); i++) {
		struct json_object *rr = jget(fn.array_get(resp, i),
					      "response_range");

		if (rr) {
			rc = parse_kvs(e, rr, colls);
			break;
		}
	}
	fn.put(res);
	return rc ? rc : 1;
}

static bool kv_find_prefix(const struct kvs *k, const char *pfx)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		if (!strncmp(k->v[i].key, pfx, strlen(pfx)))
			return true;
	return false;
}

/*
 * What an ended world left (joined/, gone/, size) goes, in a transaction
 * that holds only while no rank key exists. A start-up member that claims
 * its rank between our read and this wipe keeps its joined/ key, which
 * collectives read to tell a rank that left from one that never came.
 */
static int wipe_ended_world(struct etcd *e)
{
	static const char *const rel[] = { "rank/", "joined/", "gone/",
					   "size" };
	char *k[4] = { 0 }, *end[4] = { 0 }, body[1536];
	int i, n, rc = 0;

	for (i = 0; i < 4 && !rc; i++)
		rc = prefix_range(e, rel[i], &k[i], &end[i]);
	if (!rc) {
		n = snprintf(body, sizeof(body),
			     "{\"compare\":[{\"key\":\"%s\",\"range_end\":"
			     "\"%s\",\"target\":\"CREATE\",\"result\":"
			     "\"EQUAL\",\"create_revision\":\"0\"}],"
			     "\"success\":[", k[0], end[0]);
		for (i = 1; i < 4; i++)
			n += snprintf(body + n, sizeof(body) - (size_t)n,
				      "%s{\"request_delete_range\":{\"key\":"
				      "\"%s\",\"range_end\":\"%s\"}}",
				      i > 1 ? "," : "", k[i], end[i]);
		snprintf(body + n, sizeof(body) - (size_t)n, "]}");
		rc = post(e, &e->main_h, "/v3/kv/txn", body, HTTP_TIMEOUT_MS,
			  false, NULL);
	}
	for (i = 0; i < 4; i++) {
		free(k[i]);
		free(end[i]);
	}
	return rc;
}

/* The size key: create it with @size, or check that it says @size. */
static int agree_size(struct etcd *e, struct http *h, uint32_t size,
		      struct kvs *all)
{
	const struct kv *kv = kv_find(all, "size");
	char v[16];

	if (kv) {
		if (size && (uint32_t)atol((char *)kv->val) != size) {
			set_msg(e, "the world in etcd has %s ranks, not %u",
				(char *)kv->val, size);
			return -EINVAL;
		}
		e->size = (uint32_t)atol((char *)kv->val);
		return 0;
	}
	if (!size) {
		set_msg(e, "no world in etcd under %s to join", e->prefix);
		return -ENOENT;
	}
	snprintf(v, sizeof(v), "%u", size);
	e->size = size;
	return put_key(e, h, "size", v, strlen(v), 0);
}

static int do_join(struct etcd *e, const uint8_t *b, size_t len,
		   int64_t deadline, uint8_t **reply, size_t *rlen)
{
	uint32_t want = get_be32(b), size = get_be32(b + 4), r, first, last;
	struct kvs all = { 0 }, colls = { 0 };
	bool initial = false;
	size_t i;
	int rc;

	if (len != 8)
		return -EPROTO;
	rc = range_all(e, &e->main_h, &all);
	if (!rc && size && !kv_find_prefix(&all, "rank/")) {
		/* Nobody was here: read again after the wipe, or after
		 * a member who came first made it refuse. */
		rc = wipe_ended_world(e);
		if (!rc) {
			kvs_free(&all);
			rc = range_all(e, &e->main_h, &all);
		}
	}
	if (!rc)
		rc = agree_size(e, &e->main_h, size, &all);
	if (!rc)
		rc = grant_lease(e, &e->main_h, &e->lease);
	if (rc)
		goto out;
	first = want == WP_RANK_ANY ? 0 : want;
	last = want == WP_RANK_ANY ? e->size : want + 1;
	rc = -ENOSPC;
	if (first >= e->size) {
		set_msg(e, "rank %u is outside the world of %u", want, e->size);
		rc = -EINVAL;
		goto out;
	}
	for (r = first; r < last; r++) {
		/* A start-up member takes part from the first collective. */
		initial = size && !kv_find(&all, "joined/%08u", r);
		e->first_seq = 0;
		rc = claim(e, &e->main_h, r, e->lease, &colls);
		if (rc < 0)
			goto out;
		if (rc == 1)
			break;
	}
	if (r == last) {
		set_msg(e, want == WP_RANK_ANY ? "every rank is taken" :
			"rank %u is already a member", want);
		rc = want == WP_RANK_ANY ? -ENOSPC : -EADDRINUSE;
		goto out;
	}
	/* Anyone else starts after the last collective that has begun. */
	if (!initial)
		for (i = 0; i < colls.n; i++) {
			uint32_t s = (uint32_t)atol(colls.v[i].key + 5) + 1;

			if (s > e->first_seq)
				e->first_seq = s;
		}
	e->rank = r;
	e->seq = e->first_seq;
	e->joined = true;
	if (e->first_seq) {
		uint8_t val[4 + WP_REC_LEN];
		char rel[32];

		snprintf(rel, sizeof(rel), "rank/%08u", r);
		rank_value(e, val);
		rc = put_key(e, &e->main_h, rel, val, sizeof(val), e->lease);
		if (rc)
			goto out;
	}
	*reply = malloc(8);
	if (!*reply) {
		rc = -ENOMEM;
		goto out;
	}
	put_be32(*reply, r);
	put_be32(*reply + 4, e->size);
	*rlen = 8;
	rc = 0;
out:
	kvs_free(&all);
	kvs_free(&colls);
	return rc;
}

static int do_publish(struct etcd *e, const uint8_t *b, size_t len,
		      uint8_t **reply, size_t *rlen)
{
	uint8_t val[4 + WP_REC_LEN], *p;
	struct kvs all = { 0 };
	char rel[32];
	uint32_t r;
	int rc;

	if (len != WP_REC_LEN || !e->joined)
		return -EPROTO;
	memcpy(e->rec, b, WP_REC_LEN);
	rank_value(e, val);
	snprintf(rel, sizeof(rel), "rank/%08u", e->rank);
	rc = put_key(e, &e->main_h, rel, val, sizeof(val), e->lease);
	if (!rc)
		rc = range_all(e, &e->main_h, &all);
	if (rc)
		return rc;
	e->published = true;
	*reply = malloc(4 + (size_t)e->size * (4 + WP_REC_LEN));
	if (!*reply) {
		kvs_free(&all);
		return -ENOMEM;
	}
	p = *reply + 4;
	put_be32(*reply, e->size);
	for (r = 0; r < e->size; r++) {
		const struct kv *kv = kv_find(&all, "rank/%08u", r);

		/* published members only: their port is set */
		if (!kv || kv->len != sizeof(val) ||
		    !get_be16(kv->val + 4 + WP_REC_PORT))
			continue;
		put_be32(p, r);
		memcpy(p + 4, kv->val + 4, WP_REC_LEN);
		p += 4 + WP_REC_LEN;
	}
	*rlen = (size_t)(p - *reply);
	kvs_free(&all);
	return 0;
}

/* Who collective @seq waits for, and whether everyone is there. */
static int coll_state(struct etcd *e, const struct kvs *all, uint32_t seq,
		      uint8_t *part, uint8_t *arrived, char *missing,
		      size_t mlen)
{
	const struct kv *rk;
	uint32_t r, waiting = 0;
	size_t n = 0;

	missing[0] = '\0';
	for (r = 0; r < e->size; r++) {
		rk = kv_find(all, "rank/%08u", r);
		part[r] = rk ? rk->len >= 4 && get_be32(rk->val) <= seq :
			       !kv_find(all, "joined/%08u", r) &&
			       !kv_find(all, "gone/%08u", r);
		arrived[r] = !!kv_find(all, "coll/%08u/%08u", seq, r);
		if (part[r] && !arrived[r]) {
			waiting++;
			n += (size_t)snprintf(missing + n, mlen - n, "%s%u%s",
					      waiting > 1 ? ", " : "", r,
					      rk ? "" : " (never joined)");
			if (n >= mlen)
				n = mlen - 1;
		}
	}
	return (int)waiting;
}

static int do_coll(struct etcd *e, const uint8_t *hdr, const uint8_t *data,
		   size_t len, int64_t deadline, uint8_t **reply, size_t *rlen)
{
	uint32_t kind = get_be32(hdr), root = get_be32(hdr + 4);
	uint32_t timeout = get_be32(hdr + 8), seq = e->seq++, r;
	int64_t coll_deadline = timeout == UINT32_MAX ? DEADLINE_NEVER :
				deadline_after_ms((int)timeout);
	uint8_t *part = calloc(e->size + 1, 1), *arrived = calloc(e->size + 1, 1);
	char rel[64], missing[512];
	struct kvs all = { 0 };
	int wait_ms = 1, rc;
	size_t out;

	if (!part || !arrived) {
		rc = -ENOMEM;
		goto out;
	}
	if (kind == WP_COLL_BCAST && root >= e->size) {
		set_msg(e, "root %u outside the world of %u", root, e->size);
		rc = -EINVAL;
		goto out;
	}
	snprintf(rel, sizeof(rel), "coll/%08u/%08u", seq, e->rank);
	free(e->coll_data);
	e->coll_data = malloc(len + 1);
	if (!e->coll_data) {
		rc = -ENOMEM;
		goto out;
	}
	if (len)	/* a barrier has no data */
		memcpy(e->coll_data, data, len);
	e->coll_len = len;
	e->coll_seq = seq;
	rc = put_key(e, &e->main_h, rel, data, len, e->lease);
	if (rc)
		goto out;
	/* Our part of the one before last is no longer read by anyone. */
	if (seq >= 2) {
		char old[192], body[320], *k;

		snprintf(old, sizeof(old), "%scoll/%08u/%08u", e->prefix,
			 seq - 2, e->rank);
		k = b64(old, strlen(old));
		if (k) {
			snprintf(body, sizeof(body), "{\"key\":\"%s\"}", k);
			post(e, &e->main_h, "/v3/kv/deleterange", body,
			     HTTP_TIMEOUT_MS, false, NULL);
			free(k);
		}
	}
	for (;;) {
		kvs_free(&all);
		rc = range_all(e, &e->main_h, &all);
		if (rc == -ECONNREFUSED || rc == -ETIMEDOUT) {
			rc = 1;		/* etcd is away: keep waiting */
		} else if (rc) {
			goto out;
		} else {
			rc = coll_state(e, &all, seq, part, arrived, missing,
					sizeof(missing));
			if (!rc)
				break;
		}
		if (deadline_passed(coll_deadline) || deadline_passed(deadline)) {
			set_msg(e, "timed out waiting for ranks %s", missing);
			rc = -ETIMEDOUT;
			goto out;
		}
		pthread_mutex_unlock(&e->lock);
		usleep((useconds_t)wait_ms * 1000);
		pthread_mutex_lock(&e->lock);
		if (wait_ms < POLL_MAX_MS)
			wait_ms *= 2;
	}
	if (kind == WP_COLL_BCAST) {
		const struct kv *kv = kv_find(&all, "coll/%08u/%08u", seq, root);

		/* The root's part is there: it is a participant that arrived. */
		len = kv ? kv->len : 0;
	}
	out = kind == WP_COLL_ALLGATHER ? (size_t)e->size * len : len;
	*reply = calloc(1, 4 + out + 1);
	if (!*reply) {
		rc = -ENOMEM;
		goto out;
	}
	put_be32(*reply, e->size);
	for (r = 0; r < e->size; r++) {
		const struct kv *kv = kv_find(&all, "coll/%08u/%08u", seq, r);

		if (!kv || (kind == WP_COLL_BCAST && r != root))
			continue;
		if (kv->len != len) {
			free(*reply);
			*reply = NULL;
			set_msg(e, "rank %u gave %zu bytes, we %zu", r, kv->len,
				len);
			rc = -EINVAL;
			goto out;
		}
		memcpy(*reply + 4 + (kind == WP_COLL_ALLGATHER ? r * len : 0),
		       kv->val, len);
	}
	*rlen = 4 + out;
	rc = 0;
	/* The rendezvous is over: membership events count from here. */
	if (!e->have_seen) {
		for (r = 0; r < e->size; r++) {
			const struct kv *rk = kv_find(&all, "rank/%08u", r);

			e->seen[r] = rk ? rk->create_rev : 0;
		}
		e->have_seen = true;
	}
out:
	e->coll_seq = -1;
	kvs_free(&all);
	free(part);
	free(arrived);
	return rc;
}

static int do_leave(struct etcd *e)
{
	char body[2048], del[512], gone[512], rel[32];
	int rc;

	snprintf(rel, sizeof(rel), "rank/%08u", e->rank);
	rc = op_json(e, del, sizeof(del), "delete", rel, NULL, 0, 0);
	snprintf(rel, sizeof(rel), "gone/%08u", e->rank);
	if (!rc)
		rc = op_json(e, gone, sizeof(gone), "put", rel, "left", 4, 0);
	if (rc)
		return rc;
	snprintf(body, sizeof(body), "{\"success\":[%s,%s]}", gone, del);
	rc = post(e, &e->main_h, "/v3/kv/txn", body, HTTP_TIMEOUT_MS, false,
		  NULL);
	snprintf(body, sizeof(body), "{\"ID\":\"%" PRId64 "\"}", e->lease);
	post(e, &e->main_h, "/v3/lease/revoke", body, HTTP_TIMEOUT_MS, false,
	     NULL);
	e->joined = false;
	return rc;
}

/*
 * The keep-alive thread: renews our lease every second; when etcd no
 * longer knows it (etcd came back without its data, or we were cut off
 * longer than the TTL) it takes a new lease and publishes us again.
 */
static void republish(struct etcd *e)
{
	uint8_t val[4 + WP_REC_LEN];
	struct kvs colls = { 0 }, all = { 0 };
	char rel[48], v[16];
	int64_t lease;
	int rc;

	if (grant_lease(e, &e->ka_h, &lease))
		return;
	pthread_mutex_lock(&e->lock);
	e->lease = lease;
	if (!range_all(e, &e->ka_h, &all) && !kv_find(&all, "size")) {
		snprintf(v, sizeof(v), "%u", e->size);
		put_key(e, &e->ka_h, "size", v, strlen(v), 0);
	}
	rc = claim(e, &e->ka_h, e->rank, lease, &colls);
	if (rc == 0) {
		/* The key is still there: ours under the old lease, or another's. */
		const struct kv *kv = kv_find(&all, "rank/%08u", e->rank);

		rank_value(e, val);
		if (kv && kv->len == sizeof(val) && !memcmp(kv->val, val,
							    sizeof(val))) {
			snprintf(rel, sizeof(rel), "rank/%08u", e->rank);
			put_key(e, &e->ka_h, rel, val, sizeof(val), lease);
		} else if (kv) {
			e->lost = true;
			pr_err("world: etcd gave our rank %u to another member",
			       e->rank);
		}
	}
	if (e->coll_seq >= 0) {
		snprintf(rel, sizeof(rel), "coll/%08u/%08u",
			 (uint32_t)e->coll_seq, e->rank);
		put_key(e, &e->ka_h, rel, e->coll_data, e->coll_len, lease);
	}
	pr_info("world: rank %u published again in etcd (lease %" PRId64 ")",
		e->rank, lease);
	pthread_mutex_unlock(&e->lock);
	kvs_free(&colls);
	kvs_free(&all);
}

static void *keepalive(void *arg)
{
	struct etcd *e = arg;
	struct json_object *r;
	struct timespec ts;
	char body[64];
	int64_t lease;
	int rc;

	pthread_mutex_lock(&e->lock);
	while (!e->stop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += KEEPALIVE_MS / 1000;
		pthread_cond_timedwait(&e->cond, &e->lock, &ts);
		if (e->stop || !e->joined)
			continue;
		lease = e->lease;
		pthread_mutex_unlock(&e->lock);
		snprintf(body, sizeof(body), "{\"ID\":\"%" PRId64 "\"}", lease);
		rc = post(e, &e->ka_h, "/v3/lease/keepalive", body,
			  HTTP_TIMEOUT_MS, false, &r);
		if (!rc) {
			/* An unknown lease comes back without a TTL. */
			if (!jint(jget(r, "result"), "TTL"))
				republish(e);
			fn.put(r);
		}
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

/* ---- events: snapshots of rank keys, compared; watches to wait */

static int queue_ev(struct etcd *e, uint32_t type, uint32_t rank, int err)
{
	struct store_ev *q;

	if (e->ev_n == e->ev_cap) {
		q = realloc(e->evq, (e->ev_cap * 2 + 8) * sizeof(*q));
		if (!q)
			return -ENOMEM;
		e->evq = q;
		e->ev_cap = e->ev_cap * 2 + 8;
	}
	e->evq[e->ev_n++] = (struct store_ev){ type, rank, e->size, err };
	return 0;
}

static int diff(struct etcd *e, const struct kvs *all)
{
	uint32_t r;
	int rc = 0;

	for (r = 0; r < e->size && !rc; r++) {
		const struct kv *rk = kv_find(all, "rank/%08u", r);
		int64_t now = rk && rk->len > 4 + WP_REC_PORT &&
			      get_be16(rk->val + 4 + WP_REC_PORT) ?
			      rk->create_rev : 0;

		if (r == e->rank || now == e->seen[r])
			continue;
		if (rk && !now)
			continue;	/* claimed, not published yet */
		if (e->seen[r])
			rc = queue_ev(e, kv_find(all, "gone/%08u", r) ?
				      WP_EV_LEFT : WP_EV_FAILED, r,
				      kv_find(all, "gone/%08u", r) ? 0 :
				      ETIMEDOUT);
		if (!rc && now)
			rc = queue_ev(e, WP_EV_JOINED, r, 0);
		e->seen[r] = now;
	}
	return rc;
}

int etcd_event(struct etcd *e, struct store_ev *ev, int64_t deadline)
{
	char body[512], *k, *end;
	struct json_object *w;
	struct kvs all = { 0 };
	int rc = 0, ms;

	pthread_mutex_lock(&e->watch_lock);
	pthread_mutex_lock(&e->lock);
	while (!e->ev_n) {
		rc = range_all(e, &e->main_h, &all);
		if (!rc && !e->have_seen) {
			uint32_t r;

			for (r = 0; r < e->size; r++) {
				const struct kv *rk = kv_find(&all, "rank/%08u", r);

				e->seen[r] = rk ? rk->create_rev : 0;
			}
			e->have_seen = true;
		} else if (!rc) {
			rc = diff(e, &all);
		}
		if (rc == -ECONNREFUSED)
			rc = 0;		/* etcd is away: wait for it */
		if (rc || e->ev_n)
			break;
		ms = deadline_remaining_ms(deadline);
		if (!ms) {
			rc = -ETIMEDOUT;
			break;
		}
		/* Sleep in a watch from the revision we saw until anything moves. */
		rc = prefix_range(e, "", &k, &end);
		if (rc)
			break;
		snprintf(body, sizeof(body), "{\"create_request\":{\"key\":\"%s\","
			 "\"range_end\":\"%s\",\"start_revision\":\"%" PRId64
			 "\"}}", k, end, all.rev + 1);
		free(k);
		free(end);
		kvs_free(&all);
		pthread_mutex_unlock(&e->lock);
		w = NULL;
		rc = post(e, &e->watch_h, "/v3/watch", body, ms < 0 || ms > 1000 ? 1000 : ms,
			  true, &w);
		if (w)
			fn.put(w);
		pthread_mutex_lock(&e->lock);
		if (rc == -ECONNREFUSED) {
			pthread_mutex_unlock(&e->lock);
			usleep(100000);
			pthread_mutex_lock(&e->lock);
		}
		rc = 0;
	}
	kvs_free(&all);
	if (e->ev_n) {
		*ev = e->evq[0];
		memmove(e->evq, e->evq + 1, --e->ev_n * sizeof(*e->evq));
		rc = 0;
	}
	pthread_mutex_unlock(&e->lock);
	pthread_mutex_unlock(&e->watch_lock);
	return rc;
}

int etcd_call(struct etcd *e, uint16_t op, const void *a, size_t alen,
	      const void *b, size_t blen, int64_t deadline, uint8_t **reply,
	      size_t *rlen)
{
	uint8_t *tmp = NULL;
	size_t tl = 0;
	int rc;

	pthread_mutex_lock(&e->lock);
	e->msg[0] = '\0';
	if (e->lost) {
		set_msg(e, "etcd gave our rank to another member");
		rc = -ECONNRESET;
		goto out;
	}
	switch (op) {
	case WP_JOIN:
		rc = do_join(e, a, alen, deadline, &tmp, &tl);
		if (!rc && !e->seen) {
			e->seen = calloc(e->size + 1, sizeof(*e->seen));
			if (!e->seen)
				rc = -ENOMEM;
		}
		if (!rc && !e->ka_started) {
			rc = -pthread_create(&e->ka, NULL, keepalive, e);
			e->ka_started = !rc;
		}
		break;
	case WP_PUBLISH:
		rc = do_publish(e, a, alen, &tmp, &tl);
		break;
	case WP_READY:
		rc = 0;		/* the others see our published rank key */
		break;
	case WP_COLL:
		rc = alen == 16 ? do_coll(e, a, b, blen, deadline, &tmp, &tl) :
		     -EPROTO;
		break;
	case WP_LEAVE:
		rc = do_leave(e);
		break;
	default:
		rc = -EOPNOTSUPP;
	}
	if (rc && !e->msg[0])
		set_msg(e, "etcd: %s", strerror(-rc));
out:
	pthread_mutex_unlock(&e->lock);
	if (!rc && reply) {
		*reply = tmp ? tmp : calloc(1, 1);
		*rlen = tl;
		if (!*reply)
			rc = -ENOMEM;
	} else {
		free(tmp);
	}
	return rc;
}

uint32_t etcd_nslots(struct etcd *e)
{
	return e->size;
}

const char *etcd_msg(struct etcd *e)
{
	return e->msg;
}

int etcd_local_ip(struct etcd *e, char *ip, size_t len)
{
	char *p = NULL;

	pthread_mutex_lock(&e->lock);
	if (fn.easy_getinfo(e->main_h.curl, CURLINFO_LOCAL_IP, &p) != CURLE_OK ||
	    !p || !*p) {
		pthread_mutex_unlock(&e->lock);
		return -ENOTCONN;
	}
	snprintf(ip, len, "%s", p);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

int etcd_open(const char *endpoints, int64_t deadline, struct etcd **out,
	      char *msg, size_t msg_len)
{
	const char *pfx = getenv("HMC_ETCD_PREFIX");
	struct json_object *r = NULL;
	pthread_condattr_t attr;
	struct etcd *e;
	char *list, *tok, *save;
	int rc;

	pthread_once(&load_once, load);
	if (load_rc) {
		snprintf(msg, msg_len, "etcd store: libcurl or json-c missing");
		return load_rc;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->watch_lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cond, &attr);
	pthread_condattr_destroy(&attr);
	e->coll_seq = -1;
	snprintf(e->prefix, sizeof(e->prefix), "%s", pfx && *pfx ? pfx :
		 "hmc/world/");
	if (e->prefix[strlen(e->prefix) - 1] != '/')
		strncat(e->prefix, "/", sizeof(e->prefix) - strlen(e->prefix) - 1);
	list = strdup(endpoints);
	rc = -ENOMEM;
	if (!list)
		goto err;
	for (tok = strtok_r(list, ",", &save); tok && e->nep < MAX_EP;
	     tok = strtok_r(NULL, ",", &save))
		e->ep[e->nep++] = strdup(tok);
	free(list);
	rc = -EINVAL;
	if (!e->nep)
		goto err;
	rc = http_init(&e->main_h);
	if (!rc)
		rc = http_init(&e->ka_h);
	if (!rc)
		rc = http_init(&e->watch_h);
	if (rc)
		goto err;
	/* etcd answers before the deadline, or the world cannot start. */
	do {
		rc = post(e, &e->main_h, "/v3/maintenance/status", "{}",
			  HTTP_TIMEOUT_MS, false, &r);
		if (rc && !deadline_passed(deadline))
			usleep(100000);
	} while (rc && !deadline_passed(deadline));
	if (r)
		fn.put(r);
	if (rc) {
		snprintf(msg, msg_len, "no etcd answers at %s", endpoints);
		goto err;
	}
	*out = e;
	return 0;
err:
	etcd_close(e);
	return rc;
}

void etcd_close(struct etcd *e)
{
	int i;

	if (!e)
		return;
	if (e->ka_started) {
		pthread_mutex_lock(&e->lock);
		e->stop = true;
		pthread_cond_broadcast(&e->cond);
		pthread_mutex_unlock(&e->lock);
		pthread_join(e->ka, NULL);
	}
	http_fini(&e->main_h);
	http_fini(&e->ka_h);
	http_fini(&e->watch_h);
	for (i = 0; i < e->nep; i++)
		free(e->ep[i]);
	free(e->coll_data);
	free(e->seen);
	free(e->evq);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->watch_lock);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
