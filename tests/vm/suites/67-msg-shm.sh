#!/bin/bash
# Messages (hmc_comm_send/recv) over the shm transport: sizes around every
# boundary and 64 MiB through 4 MiB ConnBuffers, 4 ranks with interleaved
# tags and wildcards, a sender and a receiver killed mid-message (128 MiB
# messages), every byte checked. Inserts $HMC_KO and removes it.
SUITE="msg shm"
# shellcheck source=tests/vm/suites/hmc-ko.lib
. "$(dirname "$0")/hmc-ko.lib"
bin=$HMC_BUILD/tests/integration

ko_insert "$bin/test_msg"

export HMC_REQUIRE_KMOD=1 HMC_TEST_TRANSPORT=shm UCX_TLS=tcp,self \
	UCX_NET_DEVICES=lo
"$bin/test_msg" -c sizes -G 0.0625 -t 200 -N "shm msg sizes" || rc=1
"$bin/test_msg" -c mesh -t 200 -N "shm msg mesh" || rc=1
"$bin/test_msg" -c kill -G 0.125 -t 200 -N "shm msg kill" || rc=1

ko_remove
