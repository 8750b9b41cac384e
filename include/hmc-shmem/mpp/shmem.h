/* SPDX-License-Identifier: MIT */
/*
 * <mpp/shmem.h>: the header path of SGI SHMEM and OpenSHMEM 1.0, which
 * 1.1 deprecated but 1.5 still keeps (Annex F, "Header Directory: mpp"),
 * so that programs and test suites written for it (Cray's sma1 tests,
 * tests-uh's examples) build unchanged. The library's own header, by a
 * path relative to this file so that no other implementation's shmem.h on
 * the include path is picked up instead.
 */
#include "../shmem.h"
