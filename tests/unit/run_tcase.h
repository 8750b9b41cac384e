/* SPDX-License-Identifier: MIT */
/* The end of every unit test's main(): its test case, run as a suite. */
#ifndef HMC_TESTS_RUN_TCASE_H
#define HMC_TESTS_RUN_TCASE_H

#include <check.h>
#include <stdlib.h>

/* Runs @tc in a suite called @name; returns main()'s exit status. */
static inline int run_tcase(const char *name, TCase *tc)
{
	Suite *s = suite_create(name);
	SRunner *sr;
	int failed;

	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
