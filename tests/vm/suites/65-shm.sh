#!/bin/bash
# The shm transport: peers on one host map each other's ConnBuffer, exported
# from /dev/hmc as a dma-buf and passed over the Unix control connection.
# The communicator suites (data, threads, faults) run over it, every byte
# checked: HMC_TRANSPORT_AUTO must pick shm here, where both buffers come from
# /dev/hmc. Inserts $HMC_KO and removes it.
set -u
bin=$HMC_BUILD/tests/integration
rc=0

loaded() { [ -d /sys/module/hmc ]; }

for p in test_comm test_threads test_faults test_msg; do
	if [ ! -x "$bin/$p" ]; then
		echo "not ok - shm: $bin/$p is missing (make)"
		exit 1
	fi
done
if loaded; then
	echo "not ok - shm: hmc is already loaded, not from $HMC_KO"
	exit 1
fi
trap 'loaded && rmmod hmc' EXIT
if ! insmod "$HMC_KO"; then
	echo "not ok - shm: insmod $HMC_KO"
	exit 1
fi
echo "ok - shm: insmod hmc"

export HMC_REQUIRE_KMOD=1 UCX_TLS=tcp,self UCX_NET_DEVICES=lo
# Smaller than on the host: the guest is emulated (TCG).
for n in 2 4; do
	HMC_TEST_TRANSPORT=auto HMC_TEST_AUTO_IS=shm \
		"$bin/test_comm" -n $n -b $((3 << 20)) -m 1000 -t 200 --kmod \
		-N "shm auto $n ranks" || rc=1
done
HMC_TEST_TRANSPORT=shm "$bin/test_threads" -i 8 -N "shm threads" || rc=1
HMC_TEST_TRANSPORT=shm "$bin/test_faults" -N "shm faults" || rc=1
# Messages: sizes around every boundary, 64 MiB through 4 MiB buffers,
# 4 ranks with wildcards, killed senders and receivers.
HMC_TEST_TRANSPORT=shm "$bin/test_msg" -c sizes -G 0.0625 -t 200 \
	-N "shm msg sizes" || rc=1
HMC_TEST_TRANSPORT=shm "$bin/test_msg" -c mesh -t 200 -N "shm msg mesh" || rc=1
HMC_TEST_TRANSPORT=shm "$bin/test_msg" -c kill -G 0.125 -t 200 \
	-N "shm msg kill" || rc=1
# One process mixing transports: shm to some peers, UCX to others.
HMC_TEST_TRANSPORT=shm,ucx "$bin/test_comm" -n 3 -b $((2 << 20)) -m 500 \
	-t 200 --kmod -N "shm+ucx mixed" || rc=1

if rmmod hmc && ! loaded; then
	echo "ok - shm: rmmod hmc"
else
	echo "not ok - shm: rmmod hmc"
	rc=1
fi
exit $rc
