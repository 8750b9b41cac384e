#!/bin/bash
# What only the verbs transport has (tests/verbs/test_verbs): transfers at
# the chunk edges over 1 and 4 channels; the dma-buf registration of a
# /dev/hmc buffer, exported by hmc.ko, which rxe refuses (EOPNOTSUPP),
# falling back to ibv_reg_mr and saying so in the debug log; a CUDA buffer
# (the mock driver of tests/gpu, its memory out of the device's reach)
# staged through host memory, against mlocked and /dev/hmc peers, with
# chunks far more than bounce buffers; peers with different channel
# counts; HMC_IB_DEV naming missing devices or ports; a peer that vanishes
# mid-transfer while its control connection stays up, caught by the queue
# pairs' retry timeout.
SUITE=verbs-cases
# shellcheck source=tests/vm/suites/70-verbs.lib
. "$(dirname "$0")/70-verbs.lib"
prog=$BIN/tests/verbs/test_verbs
verbs_setup "$prog"

run_mlock "$prog" edges --chs 1
run_kmod HMC_VERBS_CHUNK=100003 "$prog" edges --chs 4
MOCK_CUDA=(LD_LIBRARY_PATH=$BIN/tests/gpu/mock MOCK_GPU_UNREACHABLE=1)
run_mlock "${MOCK_CUDA[@]}" HMC_VERBS_CHUNK=100003 "$prog" staged --chs 2
run_kmod "${MOCK_CUDA[@]}" "$prog" staged --chs 1
run_mlock "$prog" mismatch --chs 4
run_mlock "$prog" devices
run_mlock "$prog" vanish --chs 1
run_kmod "$prog" vanish --chs 4
exit $suite_rc
