#!/bin/sh
# pshmem.sh OBJCOPY IN.o OUT.o: the profiling interface of OpenSHMEM 1.5
# (section "OpenSHMEM Profiling Interface"): every OpenSHMEM routine has a
# second, name-shifted entry point pshmem_NAME, and a profiler may define
# its own shmem_NAME that calls pshmem_NAME. So each routine defined in IN
# gets a global pshmem_ alias at the same address and its shmem_ name turns
# weak: a definition in the program or a profiling library takes its place,
# in a static link too, while pshmem_ still reaches ours. Done on the
# objects because a C alias must sit in the defining file and the routines
# are made by type-expanding macros; shmemx_ extensions are not shifted.
set -e
objcopy=$1 in=$2 out=$3
args=$(objdump -t "$in" | awk '
	$2 == "g" && $3 == "F" {
		name = $NF
		if (name ~ /^shmemx_/ || name !~ /^(shmem_|start_pes$|_my_pe$|_num_pes$|shmalloc$|shfree$|shrealloc$|shmemalign$)/)
			next
		printf " --add-symbol p%s=%s:0x%s,global,function --weaken-symbol=%s", name, $4, $1, name
	}')
# shellcheck disable=SC2086 # args is a list of options
$objcopy $args "$in" "$out"
