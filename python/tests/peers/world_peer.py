# SPDX-License-Identifier: MIT
"""One rank of test_world: hmc's world next to torch.distributed (gloo),
both from torchrun's variables set by the test. Prints what it checked;
exits non-zero on the first difference."""

import os
import random
import sys

import torch
import torch.distributed as dist

import hmc

RING = 70001


def main():
    dist.init_process_group("gloo")
    world = hmc.init_world(timeout=30)
    assert world.rank == dist.get_rank(), (world.rank, dist.get_rank())
    assert world.size == dist.get_world_size()
    assert world.local_rank == int(os.environ["LOCAL_RANK"])

    # Non-uniform objects of different sizes; torch's answer is the reference.
    mine = {"rank": world.rank,
            "blob": random.Random(world.rank).randbytes(1000 + 777 * world.rank)}
    ours = world.allgather_object(mine)
    theirs = [None] * world.size
    dist.all_gather_object(theirs, mine)
    assert ours == theirs, "allgather_object differs from torch's"
    for r, obj in enumerate(ours):
        assert obj["blob"] == random.Random(r).randbytes(1000 + 777 * r)

    for root in range(world.size):
        obj = {"root": root, "t": torch.arange(50 + root)} \
            if world.rank == root else None
        got = world.bcast_object(obj, root=root)
        assert got["root"] == root and torch.equal(got["t"],
                                                   torch.arange(50 + root))

    # The communicator: a put_signal ring, every byte checked.
    nxt, prv = (world.rank + 1) % world.size, (world.rank - 1) % world.size
    world.connect(nxt)
    world.connect(prv)
    buf = world.comm.buffer
    buf[:RING] = random.Random(100 + world.rank).randbytes(RING)
    world.comm.put_signal(nxt, 0, 1 << 20, RING, 0xA0 + world.rank)
    assert world.comm.recv_tag(prv, timeout=30) == 0xA0 + prv
    assert bytes(buf[1 << 20:(1 << 20) + RING]) == \
        random.Random(100 + prv).randbytes(RING)

    t = torch.tensor([world.rank + 1.0])
    dist.all_reduce(t)          # torch keeps working next to hmc's world
    assert t.item() == world.size * (world.size + 1) / 2
    world.barrier()
    world.finalize()
    dist.destroy_process_group()
    print("rank %d: ok" % world.rank, flush=True)


if __name__ == "__main__":
    sys.exit(main())
