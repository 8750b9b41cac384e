// SPDX-License-Identifier: MIT
/*
 * Logging and error text. The library prints nothing unless the
 * application installs a callback or sets HMC_LOG in the environment.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "sys/log.h"

static struct {
	pthread_once_t once;
	pthread_mutex_t lock;
	hmc_log_fn fn;
	void *arg;
	int max_level;		/* -1: silent */
} logger = {
	.once = PTHREAD_ONCE_INIT,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.max_level = -1,
};

static const char *const level_names[] = {
	[HMC_LOG_ERROR] = "error",
	[HMC_LOG_WARN] = "warn",
	[HMC_LOG_INFO] = "info",
	[HMC_LOG_DEBUG] = "debug",
};

static void log_init_env(void)
{
	const char *env = getenv("HMC_LOG");
	size_t i;

	if (!env)
		return;
	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (!strcmp(env, level_names[i]))
			__atomic_store_n(&logger.max_level, (int)i, __ATOMIC_RELAXED);
}

void hmc_set_log(hmc_log_fn fn, enum hmc_log_level max_level, void *arg)
{
	pthread_once(&logger.once, log_init_env);
	pthread_mutex_lock(&logger.lock);
	logger.fn = fn;
	logger.arg = arg;
	__atomic_store_n(&logger.max_level, fn ? (int)max_level : -1,
			 __ATOMIC_RELAXED);
	pthread_mutex_unlock(&logger.lock);
	if (!fn)
		log_init_env();
}

bool log_enabled(enum hmc_log_level level)
{
	pthread_once(&logger.once, log_init_env);
	return (int)level <= __atomic_load_n(&logger.max_level, __ATOMIC_RELAXED);
}

void log_emit(enum hmc_log_level level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	pthread_mutex_lock(&logger.lock);
	if (logger.fn)
		logger.fn(level, msg, logger.arg);
	else
		fprintf(stderr, "hmc %s: %s\n", level_names[level], msg);
	pthread_mutex_unlock(&logger.lock);
}

const char *hmc_version(void)
{
#define STR_(x) #x
#define STR(x) STR_(x)
	return STR(HMC_VERSION_MAJOR) "." STR(HMC_VERSION_MINOR) "."
	       STR(HMC_VERSION_PATCH);
}

const char *hmc_strerror(int err)
{
	const char *s;

	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case ECONNRESET:
		return "peer failed";
	case ENOTCONN:
		return "peer not connected";
	case EISCONN:
		return "peer already connected";
	case EEXIST:
		return "rank already connected";
	case ERANGE:
		return "range outside the buffer";
	case ENODEV:
		return "no such device or runtime";
	case EPROTO:
		return "control protocol error";
	case EACCES:
		return "peer not authenticated";
	case ESRCH:
		return "no such rank at that address";
	}
	s = strerrordesc_np(err);
	return s ? s : "unknown error";
}
