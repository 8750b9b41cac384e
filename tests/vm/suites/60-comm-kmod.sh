#!/bin/bash
# The communicator over ConnBuffers backed by /dev/hmc: the 2-rank loopback
# test (tests/integration/test_comm --kmod) with HMC_REQUIRE_KMOD=1, over UCX
# tcp on lo and over shared memory (posix + cma), every byte checked; after
# each run the module's global live counters are back to zero. Inserts
# $HMC_KO and removes it: leaves hmc unloaded, as it must find it.
SUITE=comm-kmod
# shellcheck source=tests/vm/suites/hmc-ko.lib
. "$(dirname "$0")/hmc-ko.lib"
prog=$HMC_BUILD/tests/integration/test_comm

ko_insert "$prog"

# Smaller than on the host: the guest is emulated (TCG).
for tls in tcp,self posix,cma,self; do
	HMC_REQUIRE_KMOD=1 UCX_TLS=$tls UCX_NET_DEVICES=lo \
		"$prog" -n 2 -b $((3 << 20)) -m 1000 -t 200 --kmod \
		-N "comm-kmod ${tls%%,*}" || rc=1
done

ko_remove
