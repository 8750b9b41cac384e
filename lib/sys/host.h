/* SPDX-License-Identifier: MIT */
/*
 * Which machine and which network namespace this process runs in: what
 * decides that a peer is on the same host (the shm transport) and that a
 * Unix control socket leads to the listener a dialer meant (wire/sock.c).
 */
#ifndef HMC_LIB_HOST_H
#define HMC_LIB_HOST_H

#include <stdbool.h>
#include <stdint.h>

#define HOST_BOOT_ID_LEN	16

/*
 * The kernel's boot id (/proc/sys/kernel/random/boot_id), the same for
 * every process of one boot of one machine, in every namespace: 0, or
 * -ENOENT (all zero) where it cannot be read.
 */
int host_boot_id(uint8_t id[HOST_BOOT_ID_LEN]);

/* Whether two boot ids name the same boot: both known and equal. */
bool host_same_boot(const uint8_t a[HOST_BOOT_ID_LEN],
		    const uint8_t b[HOST_BOOT_ID_LEN]);

/* The inode of this process's network namespace, or 0 if unknown. */
uint64_t host_netns(void);

#endif
