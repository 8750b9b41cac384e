/* SPDX-License-Identifier: MIT */
/* <mpp/shmemx.h>: the deprecated path of shmemx.h; see mpp/shmem.h. */
#include "../shmemx.h"
