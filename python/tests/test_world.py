# SPDX-License-Identifier: MIT
"""hmc.init_world() in processes started with torchrun's environment, next
to torch.distributed (torchrun itself fails on Python 3.11, so the test
sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT itself)."""

import unittest

from support import run_torchrun_ranks


class TestWorldNextToTorch(unittest.TestCase):
    def test_three_ranks_torchrun_env(self):
        run_torchrun_ranks(self, "world_peer.py")


if __name__ == "__main__":
    unittest.main()
