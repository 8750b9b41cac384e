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

for p in test_comm test_threads test_faults test_lifetime; do
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
# Peers disconnecting under posters, and dialers killed at random moments
# (issue 15), with use-after-free made to crash.
uaf=(GLIBC_TUNABLES=glibc.malloc.tcache_count=0 MALLOC_PERTURB_=165)
env "${uaf[@]}" HMC_TEST_TRANSPORT=shm "$bin/test_lifetime" race -t 10 \
	-N "shm race" || rc=1
env "${uaf[@]}" HMC_TEST_TRANSPORT=shm "$bin/test_lifetime" churn -t 90 \
	-d 60 -s 10 -N "shm churn" || rc=1
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
