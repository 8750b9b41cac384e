// SPDX-License-Identifier: MIT
/*
 * The PMIx bootstrap (boot.h): libpmix is opened at run time, so libhmc
 * runs where it is not installed; only its headers are needed to build.
 * Rank, size and local rank come from PMIx; rank 0 publishes the world
 * store's URL and secret with PMIx_Put, everyone fences and reads them.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmix.h>

#include "sys/log.h"
#include "world/boot.h"

#define PMIX_LIB	"libpmix.so.2"
#define STORE_KEY	"hmc.world.store"

struct pmix_api {
	void *dl;
	pmix_status_t (*init)(pmix_proc_t *, pmix_info_t[], size_t);
	pmix_status_t (*finalize)(const pmix_info_t[], size_t);
	pmix_status_t (*put)(pmix_scope_t, const char[], pmix_value_t *);
	pmix_status_t (*commit)(void);
	pmix_status_t (*fence)(const pmix_proc_t[], size_t, const pmix_info_t[],
			       size_t);
	pmix_status_t (*get)(const pmix_proc_t *, const char[],
			     const pmix_info_t[], size_t, pmix_value_t **);
	void (*value_destruct)(pmix_value_t *);
	const char *(*error_string)(pmix_status_t);
	pmix_proc_t me;
};

static struct pmix_api api;

bool boot_pmix_detected(void)
{
	return getenv("PMIX_RANK") && getenv("PMIX_NAMESPACE");
}

static int load(void)
{
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
#define SYM(f, n) { n, offsetof(struct pmix_api, f) }
		SYM(init, "PMIx_Init"), SYM(finalize, "PMIx_Finalize"),
		SYM(put, "PMIx_Put"), SYM(commit, "PMIx_Commit"),
		SYM(fence, "PMIx_Fence"), SYM(get, "PMIx_Get"),
		SYM(value_destruct, "PMIx_Value_destruct"),
		SYM(error_string, "PMIx_Error_string"),
#undef SYM
	};
	size_t i;
	void *f;

	api.dl = dlopen(PMIX_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!api.dl) {
		pr_err("world: PMIx bootstrap: cannot load %s: %s", PMIX_LIB,
		       dlerror());
		return -ENOENT;
	}
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		f = dlsym(api.dl, syms[i].name);
		if (!f) {
			pr_err("world: %s lacks %s", PMIX_LIB, syms[i].name);
			dlclose(api.dl);
			api.dl = NULL;
			return -ENOENT;
		}
		memcpy((char *)&api + syms[i].off, &f, sizeof(f));
	}
	return 0;
}

static int get_u32(uint32_t rank, const char *key, uint32_t *out)
{
	pmix_proc_t p;
	pmix_value_t *v = NULL;
	pmix_status_t st;
	int rc = 0;

	memset(&p, 0, sizeof(p));
	memcpy(p.nspace, api.me.nspace, sizeof(p.nspace));
	p.rank = rank;
	st = api.get(&p, key, NULL, 0, &v);
	if (st != PMIX_SUCCESS || !v) {
		pr_err("world: PMIx_Get(%s): %s", key, api.error_string(st));
		return -ENODATA;
	}
	switch (v->type) {
	case PMIX_UINT32:
		*out = v->data.uint32;
		break;
	case PMIX_UINT16:
		*out = v->data.uint16;
		break;
	case PMIX_INT:
		*out = (uint32_t)v->data.integer;
		break;
	default:
		rc = -EPROTO;
	}
	api.value_destruct(v);
	free(v);
	return rc;
}

int boot_pmix_init(struct boot_info *bi)
{
	pmix_status_t st;
	int rc;

	if (!api.dl) {
		rc = load();
		if (rc)
			return rc;
	}
	st = api.init(&api.me, NULL, 0);
	if (st != PMIX_SUCCESS) {
		pr_err("world: PMIx_Init: %s", api.error_string(st));
		return -ENOTCONN;
	}
	bi->rank = api.me.rank;
	rc = get_u32(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, &bi->size);
	if (!rc && get_u32(api.me.rank, PMIX_LOCAL_RANK, &bi->local_rank))
		bi->local_rank = BOOT_UNKNOWN;
	if (!rc && get_u32(PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE,
			   &bi->local_size))
		bi->local_size = BOOT_UNKNOWN;
	if (rc)
		api.finalize(NULL, 0);
	return rc;
}

int boot_pmix_exchange(const char *mine, char *out, size_t out_len,
		       int timeout_ms)
{
	pmix_value_t val, *v = NULL;
	pmix_info_t info[2];
	pmix_proc_t p;
	pmix_status_t st;
	int rc = 0;

	if (mine) {
		memset(&val, 0, sizeof(val));
		val.type = PMIX_STRING;
		val.data.string = (char *)mine;
		st = api.put(PMIX_GLOBAL, STORE_KEY, &val);
		if (st == PMIX_SUCCESS)
			st = api.commit();
		if (st != PMIX_SUCCESS) {
			pr_err("world: PMIx_Put: %s", api.error_string(st));
			return -EIO;
		}
	}
	memset(info, 0, sizeof(info));
	snprintf(info[0].key, sizeof(info[0].key), "%s", PMIX_COLLECT_DATA);
	info[0].value.type = PMIX_BOOL;
	info[0].value.data.flag = true;
	snprintf(info[1].key, sizeof(info[1].key), "%s", PMIX_TIMEOUT);
	info[1].value.type = PMIX_INT;
	info[1].value.data.integer = timeout_ms < 0 ? 0 :
				     (timeout_ms + 999) / 1000;
	memset(&p, 0, sizeof(p));
	memcpy(p.nspace, api.me.nspace, sizeof(p.nspace));
	p.rank = PMIX_RANK_WILDCARD;
	st = api.fence(&p, 1, info, 2);
	if (st != PMIX_SUCCESS) {
		pr_err("world: PMIx_Fence: %s", api.error_string(st));
		return st == PMIX_ERR_TIMEOUT ? -ETIMEDOUT : -EIO;
	}
	p.rank = 0;
	st = api.get(&p, STORE_KEY, NULL, 0, &v);
	if (st != PMIX_SUCCESS || !v) {
		pr_err("world: PMIx_Get(%s): %s", STORE_KEY,
		       api.error_string(st));
		return -ENODATA;
	}
	if (v->type != PMIX_STRING || !v->data.string ||
	    strlen(v->data.string) >= out_len)
		rc = -EPROTO;
	else
		strcpy(out, v->data.string);
	api.value_destruct(v);
	free(v);
	return rc;
}

void boot_pmix_fini(void)
{
	if (api.dl)
		api.finalize(NULL, 0);
}
