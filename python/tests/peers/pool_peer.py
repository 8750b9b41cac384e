# SPDX-License-Identifier: MIT
"""One rank of test_pool: hmc.pool over hmc.init_world() with NumPy arrays
and torch tensors as local memory, every copy kind the memory allows,
asynchronous and batched copies, registered memory, refusals, the extra
context, allgather and subgroups, every byte checked. With a device type argument
("cuda", ...), each rank also has a device segment of the mock runtime,
which the others reach too.
Prints "rank N: ok"; raises on the first difference.

    pool_peer.py [DEVICE]
"""

import ctypes
import errno
import mmap
import sys

import numpy as np

import hmc
import hmc.pool as hp

N = 40009


def data(*key):
    return np.random.default_rng(list(key)).integers(0, 256, N,
                                                     dtype=np.uint8)


def main():
    dev = sys.argv[1] if len(sys.argv) > 1 else None
    mem_type = {None: hmc.MemoryType.CPU, "cuda": hmc.MemoryType.CUDA,
                "rocm": hmc.MemoryType.ROCM}[dev]
    world = hmc.init_world(timeout=30)
    me, n = world.rank, world.size
    pool = hp.create(world, host_size=(1 << 20) + 4096 * me,
                     device_size=(1 << 18) if dev else 0,
                     device_type=mem_type, user_mem_size=1 << 17)
    for r in range(n):
        assert pool.size(hp.HOST, r) == (1 << 20) + 4096 * r
        assert pool.rank_of(pool.ptr(hp.HOST, r)) == r

    # H2G from NumPy, then from a torch tensor (NumPy again with a device
    # segment: those runs skip torch's import) asynchronously, batched.
    if dev:
        torch = None
    else:
        import torch
    for t in range(n):
        seg = pool.ptr(hp.HOST, t)
        pool.copy(seg + me * N, data(0, me, t), kind=hp.CopyKind.H2G)
        src = data(1, me, t)
        pool.copy(seg + (n + me) * N, torch.from_numpy(src) if torch else src,
                  kind=hp.CopyKind.H2GH, async_=True)
    pool.wait()
    pool.barrier()
    out = [np.zeros(N, dtype=np.uint8) for _ in range(2 * n * n)]
    copies = []
    for t in range(n):
        seg = pool.ptr(hp.HOST, t)
        for w in range(n):
            copies.append((out[(t * n + w) * 2], seg + w * N, None))
            copies.append((out[(t * n + w) * 2 + 1], seg + (n + w) * N, None))
    pool.copy_batch(copies, hp.CopyKind.G2H, async_=True)
    pool.wait()
    for t in range(n):
        for w in range(n):
            assert np.array_equal(out[(t * n + w) * 2], data(0, w, t))
            assert np.array_equal(out[(t * n + w) * 2 + 1], data(1, w, t))

    # G2G into the next rank, read back into a torch tensor (AUTO).
    nxt = (me + 1) % n
    pool.copy(pool.ptr(hp.HOST, nxt) + (2 * n + me) * N,
              pool.ptr(hp.HOST, me) + me * N, N, hp.CopyKind.G2G)
    back = torch.zeros(N, dtype=torch.uint8) if torch else \
        np.zeros(N, dtype=np.uint8)
    pool.copy(back, pool.ptr(hp.HOST, nxt) + (2 * n + me) * N)
    assert np.array_equal(np.asarray(back), data(0, me, me))

    if dev:
        lib = hmc._lib.lib()
        d = ctypes.c_void_p()
        assert lib.hmc_mem_alloc(int(mem_type), 0, N, ctypes.byref(d)) == 0
        dseg = pool.ptr(hp.DEVICE, me)
        pool.copy(dseg + 5, data(2, me, 0))                       # H2G
        pool.copy(d.value, dseg + 5, N, hp.CopyKind.G2L, device=dev)
        pool.copy(pool.ptr(hp.HOST, nxt) + (3 * n + me) * N, d.value, N,
                  hp.CopyKind.L2GH, device=dev)
        got = np.zeros(N, dtype=np.uint8)
        pool.copy(got, pool.ptr(hp.HOST, nxt) + (3 * n + me) * N,
                  kind=hp.CopyKind.GH2H)
        assert np.array_equal(got, data(2, me, 0))
        assert lib.hmc_mem_free(int(mem_type), 0, d) == 0
        # The next rank's device segment, through its owner, and ours,
        # written by the previous rank once it is done with it above.
        pool.barrier()
        pool.copy(pool.ptr(hp.DEVICE, nxt) + 11, data(3, me, nxt),
                  kind=hp.CopyKind.H2G)
        pool.barrier()
        got = np.zeros(N, dtype=np.uint8)
        pool.copy(got, pool.ptr(hp.DEVICE, nxt) + 11)             # G2H
        assert np.array_equal(got, data(3, me, nxt))
        pool.copy(got, dseg + 11, kind=hp.CopyKind.G2H)
        assert np.array_equal(got, data(3, (me + n - 1) % n, me))

    # Registered page-aligned memory (an anonymous mmap) keeps its bytes
    # while it lives in the ConnBuffer, and copies in place both ways.
    m = mmap.mmap(-1, 1 << 17)
    arr = np.frombuffer(m, dtype=np.uint8)
    arr[:N] = data(4, me, 0)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    pool.register_user_mem(addr, 1 << 17)
    assert np.array_equal(arr[:N], data(4, me, 0))
    pool.copy(pool.ptr(hp.HOST, nxt) + (4 * n + me) * N, arr[:N],
              kind=hp.CopyKind.H2G)
    pool.copy(arr[N:2 * N], pool.ptr(hp.HOST, nxt) + (4 * n + me) * N)
    assert np.array_equal(arr[N:2 * N], data(4, me, 0))
    pool.unregister_user_mem(addr)
    assert np.array_equal(arr[N:2 * N], data(4, me, 0))
    del arr
    m.close()

    # Refusals raise with the errno.
    seg = pool.ptr(hp.HOST, nxt)
    size = pool.size(hp.HOST, nxt)
    for dst, src, nbytes, kind, want in (
            (seg + size - 8, bytes(16), None, hp.CopyKind.H2G, errno.ERANGE),
            (bytearray(16), seg, None, hp.CopyKind.H2G, errno.EINVAL)):
        try:
            pool.copy(dst, src, nbytes, kind)
        except hmc.HMCError as e:
            assert e.errno == want, (e.errno, want)
        else:
            raise AssertionError("copy was not refused")

    pool.set_extra(b"extra of rank %d " % me * (me + 1))
    pool.barrier()
    for r in range(n):
        assert pool.get_extra(r) == b"extra of rank %d " % r * (r + 1)
    assert pool.allgather_bytes(bytes([me]) * 3) == \
        [bytes([r]) * 3 for r in range(n)]
    group = list(range(me % 2, n, 2))
    got = pool.group_allgather_bytes(7 + me % 2, group, b"m%03d" % me)
    assert got == [b"m%03d" % r for r in group], got
    pool.group_barrier(9, group)
    pool.barrier()
    pool.destroy()
    world.finalize()
    print("rank %d: ok" % me, flush=True)


if __name__ == "__main__":
    main()
