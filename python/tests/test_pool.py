# SPDX-License-Identifier: MIT
"""hmc.pool: three ranks (python/tests/peers/pool_peer.py) started with
HMC's variables, host segments, then two with device segments through
tests/gpu's mock CUDA runtime (tests/pool covers the other runtimes)."""

import os
import subprocess
import sys
import unittest

from support import CHILD_ENV, PEERS, free_port

GPU_MOCKS = os.path.join(os.environ.get("HMC_BUILD", "build"), "tests",
                         "gpu", "mock")


def run_ranks(test, n, args, extra_env=None):
    port = free_port()
    procs = []
    for r in range(n):
        env = dict(CHILD_ENV, HMC_RANK=str(r), HMC_WORLD_SIZE=str(n),
                   HMC_STORE="tcp://127.0.0.1:%d" % port,
                   UCX_TLS="posix,cma,self", **(extra_env or {}))
        procs.append(subprocess.Popen(
            [sys.executable, os.path.join(PEERS, "pool_peer.py")] + args,
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    for r, p in enumerate(procs):
        try:
            out, _ = p.communicate(timeout=120)
        finally:
            p.kill()
        test.assertEqual(p.returncode, 0, out.decode())
        test.assertIn("rank %d: ok" % r, out.decode())


class TestPool(unittest.TestCase):
    def test_host_segments_three_ranks(self):
        run_ranks(self, 3, [])

    @unittest.skipUnless(os.path.exists(os.path.join(GPU_MOCKS,
                                                      "libcuda.so.1")),
                         "no mock GPU runtimes in $HMC_BUILD/tests/gpu/mock")
    def test_device_segments_mock(self):
        run_ranks(self, 2, ["cuda"], {"LD_LIBRARY_PATH": GPU_MOCKS,
                                      "HMC_GPU_MOCK": "1"})


if __name__ == "__main__":
    unittest.main()
