# SPDX-License-Identifier: MIT
"""One rank of test_collective's world case: alltoall (direct and ring),
allgather and broadcast over an hmc.init_world() group (torchrun's
variables, set by the test), every byte checked against what each rank
can recompute. Prints "rank R: ok"; exits non-zero on a difference."""

import random
import sys

import hmc
from hmc import collective


def data(rank, n, salt):
    return random.Random(rank * 1000 + salt).randbytes(n)


def main():
    world = hmc.init_world(timeout=30)
    g = collective.Group.of_world(world, timeout=30)
    n, me = world.size, world.rank
    for algo, block in (("direct", 1000), ("ring", 1000),
                        ("direct", 300 * 1024 + 3), ("ring", 300 * 1024 + 3)):
        send = data(me, block * n, block)
        recv = bytearray(block * n)
        collective.alltoall(g, send, recv, algo=algo)
        for i in range(n):          # block i: rank i's block for me
            want = data(i, block * n, block)[me * block:(me + 1) * block]
            assert recv[i * block:(i + 1) * block] == want, (algo, block, i)
    block = 70001
    everyone = bytearray(block * n)
    collective.allgather(g, data(me, block, 7), everyone)
    assert everyone == b"".join(data(i, block, 7) for i in range(n))
    for root in range(n):
        buf = bytearray(data(root, 500000, 9)) if me == root else \
            bytearray(500000)
        collective.broadcast(g, buf, root)
        assert buf == data(root, 500000, 9), root
    world.barrier()
    world.finalize()
    print("rank %d: ok" % me, flush=True)


if __name__ == "__main__":
    sys.exit(main())
