// SPDX-License-Identifier: MIT
/* Host and network-namespace identity (see host.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/host.h"
#include "sys/util.h"

static pthread_once_t boot_once = PTHREAD_ONCE_INIT;
static uint8_t boot_id[HOST_BOOT_ID_LEN];
static int boot_err = -ENOENT;

/* "7b7f248b-b77a-4124-acd7-ed89ce9f46e7\n": 32 hex digits and dashes. */
static void boot_id_read(void)
{
	uint8_t id[HOST_BOOT_ID_LEN] = { 0 };
	char text[64];
	ssize_t n;
	int fd, i, k = 0, hi, lo;

	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return;
	for (i = 0; i < n && k < HOST_BOOT_ID_LEN; i++) {
		if (text[i] == '-')
			continue;
		hi = hex_digit(text[i]);
		lo = i + 1 < n ? hex_digit(text[i + 1]) : -1;
		if (hi < 0 || lo < 0)
			return;
		id[k++] = (uint8_t)(hi << 4 | lo);
		i++;
	}
	if (k != HOST_BOOT_ID_LEN)
		return;
	memcpy(boot_id, id, sizeof(id));
	boot_err = 0;
}

int host_boot_id(uint8_t id[HOST_BOOT_ID_LEN])
{
	pthread_once(&boot_once, boot_id_read);
	memcpy(id, boot_id, HOST_BOOT_ID_LEN);
	return boot_err;
}

bool host_same_boot(const uint8_t a[HOST_BOOT_ID_LEN],
		    const uint8_t b[HOST_BOOT_ID_LEN])
{
	static const uint8_t unknown[HOST_BOOT_ID_LEN];

	return memcmp(a, unknown, HOST_BOOT_ID_LEN) &&
	       !memcmp(a, b, HOST_BOOT_ID_LEN);
}

uint64_t host_netns(void)
{
	struct stat st;

	/* Not cached: a thread may have moved itself with setns(). */
	if (stat("/proc/thread-self/ns/net", &st) &&
	    stat("/proc/self/ns/net", &st))
		return 0;
	return (uint64_t)st.st_ino;
}
