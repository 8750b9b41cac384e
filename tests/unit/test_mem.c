// SPDX-License-Identifier: MIT
/*
 * Memory (hmc_mem_*): argument checks, CPU allocation and copies, and the
 * -ENODEV answer of a GPU type whose runtime is missing. Where a runtime is
 * present, its checks are left to the GPU test (tests/gpu).
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "pattern.h"
#include "run_tcase.h"

START_TEST(test_type_names)
{
	ck_assert_str_eq(hmc_mem_type_name(HMC_MEM_CPU), "cpu");
	ck_assert_str_eq(hmc_mem_type_name(HMC_MEM_CUDA), "cuda");
	ck_assert_str_eq(hmc_mem_type_name(HMC_MEM_ROCM), "rocm");
	ck_assert_str_eq(hmc_mem_type_name(HMC_MEM_ASCEND), "ascend");
	ck_assert_str_eq(hmc_mem_type_name(HMC_MEM_CNRT), "cnrt");
	ck_assert_str_eq(hmc_mem_type_name(HMC_MEM_MUSA), "musa");
	ck_assert_str_eq(hmc_mem_type_name((enum hmc_mem_type)42), "unknown");
}
END_TEST

START_TEST(test_bad_args)
{
	void *p = (void *)1;

	ck_assert_int_eq(hmc_mem_device_count(HMC_MEM_CPU), 1);
	ck_assert_int_eq(hmc_mem_device_count((enum hmc_mem_type)42), -EINVAL);
	ck_assert_int_eq(hmc_mem_device_count((enum hmc_mem_type)(HMC_MEM_MUSA + 1)),
			 -EINVAL);
	ck_assert_int_eq(hmc_mem_alloc(HMC_MEM_CPU, 0, 64, NULL), -EINVAL);
	ck_assert_int_eq(hmc_mem_alloc(HMC_MEM_CPU, 0, 0, &p), -EINVAL);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(hmc_mem_alloc((enum hmc_mem_type)42, 0, 64, &p),
			 -EINVAL);
	/* The CPU is device 0 and nothing else. */
	ck_assert_int_eq(hmc_mem_alloc(HMC_MEM_CPU, 1, 64, &p), -ENODEV);
	ck_assert_int_eq(hmc_mem_alloc(HMC_MEM_CPU, -1, 64, &p), -ENODEV);
	ck_assert_int_eq(hmc_mem_free(HMC_MEM_CPU, 1, NULL), -ENODEV);
	ck_assert_int_eq(hmc_mem_free(HMC_MEM_CPU, 0, NULL), 0);
}
END_TEST

START_TEST(test_cpu_alloc)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const size_t sizes[] = { 1, 100, 4096, 65537, 3 << 20 };
	size_t i;
	void *p;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ck_assert_int_eq(hmc_mem_alloc(HMC_MEM_CPU, 0, sizes[i], &p),
				 0);
		ck_assert_uint_eq((uintptr_t)p % page, 0);
		pattern_fill(p, sizes[i], i);
		ck_assert_int_eq(pattern_mismatch(p, sizes[i], i), -1);
		ck_assert_int_eq(hmc_mem_free(HMC_MEM_CPU, 0, p), 0);
	}
}
END_TEST

START_TEST(test_cpu_copy)
{
	const size_t len = 70001;
	uint8_t *src, *dst;

	src = malloc(len);
	dst = malloc(len + 2);
	ck_assert(src && dst);
	pattern_fill(src, len, 11);
	pattern_fill(dst, len + 2, 12);

	ck_assert_int_eq(hmc_mem_copy(HMC_MEM_CPU, 0, dst + 1, src, len,
				      HMC_COPY_H2H), 0);
	ck_assert_int_eq(pattern_mismatch(dst + 1, len, 11), -1);
	/* Nothing outside the range was touched. */
	ck_assert_uint_eq(dst[0], pattern_at(12, 0));
	ck_assert_uint_eq(dst[len + 1], pattern_at(12, len + 1));

	/* The CPU type has no device copies; kinds are checked. */
	ck_assert_int_eq(hmc_mem_copy(HMC_MEM_CPU, 0, dst, src, len,
				      HMC_COPY_H2D), -EINVAL);
	ck_assert_int_eq(hmc_mem_copy(HMC_MEM_CPU, 0, dst, src, len,
				      HMC_COPY_D2H), -EINVAL);
	ck_assert_int_eq(hmc_mem_copy(HMC_MEM_CPU, 0, dst, src, len,
				      (enum hmc_copy_kind)9), -EINVAL);
	ck_assert_int_eq(hmc_mem_copy(HMC_MEM_CPU, 1, dst, src, len,
				      HMC_COPY_H2H), -ENODEV);
	ck_assert_int_eq(hmc_mem_copy(HMC_MEM_CPU, 0, NULL, src, len,
				      HMC_COPY_H2H), -EINVAL);
	ck_assert_int_eq(hmc_mem_copy(HMC_MEM_CPU, 0, dst, NULL, len,
				      HMC_COPY_H2H), -EINVAL);
	/* Zero bytes: nothing to do, whatever the pointers. */
	ck_assert_int_eq(hmc_mem_copy(HMC_MEM_CPU, 0, NULL, NULL, 0,
				      HMC_COPY_H2H), 0);
	free(src);
	free(dst);
}
END_TEST

/* A GPU type whose runtime is missing answers -ENODEV to everything. */
static void check_no_runtime(enum hmc_mem_type type)
{
	char host[64] = { 0 };
	void *p = (void *)1;

	ck_assert_int_eq(hmc_mem_device_count(type), -ENODEV);
	ck_assert_int_eq(hmc_mem_alloc(type, 0, 4096, &p), -ENODEV);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(hmc_mem_free(type, 0, host), -ENODEV);
	ck_assert_int_eq(hmc_mem_copy(type, 0, host, host + 32, 32,
				      HMC_COPY_D2H), -ENODEV);
	ck_assert_int_eq(hmc_mem_copy(type, 0, host, host + 32, 32,
				      HMC_COPY_H2H), -ENODEV);
	ck_assert_int_eq(hmc_mem_copy(type, 0, host, host, 0,
				      HMC_COPY_D2D), -ENODEV);
}

START_TEST(test_cuda_absent)
{
	check_no_runtime(HMC_MEM_CUDA);
}
END_TEST

START_TEST(test_rocm_absent)
{
	check_no_runtime(HMC_MEM_ROCM);
}
END_TEST

START_TEST(test_ascend_absent)
{
	check_no_runtime(HMC_MEM_ASCEND);
}
END_TEST

START_TEST(test_cnrt_absent)
{
	check_no_runtime(HMC_MEM_CNRT);
}
END_TEST

START_TEST(test_musa_absent)
{
	check_no_runtime(HMC_MEM_MUSA);
}
END_TEST

/* Whether any of @libs loads, asked without libhmc's help. */
static bool runtime_present(const char *const *libs)
{
	void *h;

	for (; *libs; libs++) {
		h = dlopen(*libs, RTLD_NOW | RTLD_LOCAL);
		if (h) {
			dlclose(h);
			return true;
		}
	}
	return false;
}

static void add_absent_test(TCase *tc, const TTest *test, const char *name,
			    const char *const *libs)
{
	if (runtime_present(libs))
		printf("SKIP: %s runtime present: no -ENODEV test here, tests/gpu covers it\n",
		       name);
	else
		tcase_add_test(tc, test);
}

int main(void)
{
	static const char *const cuda_libs[] = { "libcuda.so.1", NULL };
	static const char *const rocm_libs[] = {
		"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
		"libamdhip64.so.5", NULL
	};
	static const char *const ascend_libs[] = { "libascendcl.so", NULL };
	static const char *const cnrt_libs[] = { "libcnrt.so", NULL };
	static const char *const musa_libs[] = { "libmusart.so", NULL };
	TCase *tc = tcase_create("mem");

	tcase_add_test(tc, test_type_names);
	tcase_add_test(tc, test_bad_args);
	tcase_add_test(tc, test_cpu_alloc);
	tcase_add_test(tc, test_cpu_copy);
	add_absent_test(tc, test_cuda_absent, "CUDA", cuda_libs);
	add_absent_test(tc, test_rocm_absent, "ROCm", rocm_libs);
	add_absent_test(tc, test_ascend_absent, "AscendCL", ascend_libs);
	add_absent_test(tc, test_cnrt_absent, "CNRT", cnrt_libs);
	add_absent_test(tc, test_musa_absent, "MUSA", musa_libs);
	return run_tcase("mem", tc);
}
