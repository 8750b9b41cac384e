/* SPDX-License-Identifier: MIT */
/* Internal logging: silent unless the application asked (hmc_set_log, HMC_LOG). */
#ifndef HMC_LIB_LOG_H
#define HMC_LIB_LOG_H

#include <hmc/hmc.h>

__attribute__((format(printf, 2, 3)))
void log_emit(enum hmc_log_level level, const char *fmt, ...);

/* Whether @level would be emitted: skip building costly messages. */
bool log_enabled(enum hmc_log_level level);

#define pr_err(...)	log_emit(HMC_LOG_ERROR, __VA_ARGS__)
#define pr_warn(...)	log_emit(HMC_LOG_WARN, __VA_ARGS__)
#define pr_info(...)	log_emit(HMC_LOG_INFO, __VA_ARGS__)
#define pr_debug(...)	log_emit(HMC_LOG_DEBUG, __VA_ARGS__)

#endif
