#!/bin/bash
# dma-buf export and import of hmc.ko (tests/kmod/test_dmabuf), against
# itself, vgem, which this suite loads (and unloads if it loaded it), and
# the test exporter tests/kmod/mover, which moves its memory.
# Leaves hmc unloaded, as it must find it.
set -u
# shellcheck source=tests/vm/suites/hmc-kmod.sh
. "$(dirname "$0")/hmc-kmod.sh"

vgem_was_loaded=no
[ -d /sys/module/vgem ] && vgem_was_loaded=yes
if modprobe vgem; then
	echo "ok - dmabuf: modprobe vgem"
else
	echo "not ok - dmabuf: modprobe vgem"
fi

kmod_suite dmabuf "$HMC_BUILD/tests/kmod/test_dmabuf" \
	"$HMC_SRC/tests/kmod/mover/hmc_test_mover.ko"
rc=$?
[ $vgem_was_loaded = yes ] || modprobe -r vgem
exit $rc
