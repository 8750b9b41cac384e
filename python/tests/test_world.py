# SPDX-License-Identifier: MIT
"""hmc.init_world() in processes started with torchrun's environment, next
to torch.distributed (torchrun itself fails on Python 3.11, so the test
sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT itself)."""

import os
import subprocess
import sys
import unittest

from support import CHILD_ENV, PEERS, master_port


class TestWorldNextToTorch(unittest.TestCase):
    def test_three_ranks_torchrun_env(self):
        port = master_port()
        procs = []
        for r in range(3):
            env = dict(CHILD_ENV, RANK=str(r), WORLD_SIZE="3",
                       LOCAL_RANK=str(r), LOCAL_WORLD_SIZE="3",
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       UCX_TLS="posix,cma,self")
            procs.append(subprocess.Popen(
                [sys.executable, os.path.join(PEERS, "world_peer.py")],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        for r, p in enumerate(procs):
            out, _ = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, out.decode())
            self.assertIn("rank %d: ok" % r, out.decode())


if __name__ == "__main__":
    unittest.main()
