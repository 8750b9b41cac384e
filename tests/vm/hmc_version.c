// SPDX-License-Identifier: GPL-2.0
/*
 * hmc_version: GET_VERSION on /dev/hmc, printed on one line. Fails unless
 * the loaded module speaks this header's ABI major and this page size.
 * Used by the DKMS suite to prove that the modprobe'd module answers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/hmc.h>

int main(void)
{
	struct hmc_version v = { 0 };
	long page = sysconf(_SC_PAGESIZE);
	int fd;

	fd = open(HMC_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "hmc_version: %s: %s\n", HMC_DEVICE_PATH,
			strerror(errno));
		return 1;
	}
	if (ioctl(fd, HMC_IOC_GET_VERSION, &v) < 0) {
		fprintf(stderr, "hmc_version: GET_VERSION: %s\n",
			strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	printf("abi %u.%u features 0x%llx page_size %u max_buf_size %llu\n",
	       v.abi_major, v.abi_minor, (unsigned long long)v.features,
	       v.page_size, (unsigned long long)v.max_buf_size);
	if (v.abi_major != HMC_ABI_MAJOR || v.page_size != page) {
		fprintf(stderr, "hmc_version: want abi %u.x, page size %ld\n",
			HMC_ABI_MAJOR, page);
		return 1;
	}
	return 0;
}
