# SPDX-License-Identifier: MIT
"""hmc_pool from Python: one global address space over every rank's host
and device memory (include/hmc/pool.h), as memfabric's ``mf_smem.bm`` and
``mf_smem.shm`` offer it.

    import hmc, numpy as np
    world = hmc.init_world()
    pool = hmc.pool.create(world, host_size=64 << 20)
    peer = (world.rank + 1) % world.size
    dst = pool.ptr(hmc.pool.HOST, peer)          # a global address (int)
    pool.copy(dst, np.arange(1024, dtype=np.int64))          # H2G
    out = np.empty(1024, dtype=np.int64)
    pool.copy(out, dst)                                      # G2H
    pool.barrier()
    pool.destroy()

Global addresses are ints; local sources and destinations are anything
hmc.payload takes (bytes, bytearray, NumPy arrays, torch tensors on the
CPU or a GPU, raw addresses with device=). Timeouts are in seconds (None:
the pool's, 30 s by default).
"""

import ctypes
import errno
from ctypes import (POINTER, Structure, byref, c_int, c_int32, c_int64,
                    c_size_t, c_uint32, c_uint64, c_void_p)
from enum import IntEnum

from . import _lib, payload
from .enums import MemoryType
from .errors import check, error

HOST = 1
DEVICE = 2
COPY_ASYNC = 1
EXTRA_MAX = 64 << 10


class CopyKind(IntEnum):
    """enum hmc_pool_copy_kind: L is local device memory, H local host
    memory, G a global address, GH one in a host segment."""
    L2G = 0
    G2L = 1
    H2G = 2
    G2H = 3
    G2G = 4
    L2GH = 5
    GH2L = 6
    GH2H = 7
    H2GH = 8
    AUTO = 9


class PoolOpts(Structure):
    """struct hmc_pool_opts."""
    _fields_ = [
        ("sz", c_size_t),
        ("host_size", c_uint64),
        ("device_size", c_uint64),
        ("device_type", c_uint32),
        ("device_id", c_int32),
        ("timeout_ms", c_int32),
        ("flags", c_uint32),
        ("user_mem_size", c_uint64),
    ]


class CopyDesc(Structure):
    """struct hmc_pool_copy_desc."""
    _fields_ = [("dst", c_void_p), ("src", c_void_p), ("len", c_uint64)]


_p = c_void_p
_PROTOTYPES = {
    "hmc_pool_create": (c_int, [c_void_p, POINTER(PoolOpts), POINTER(_p)]),
    "hmc_pool_destroy": (c_int, [_p]),
    "hmc_pool_ptr": (c_void_p, [_p, c_int, c_uint32]),
    "hmc_pool_size": (c_uint64, [_p, c_int, c_uint32]),
    "hmc_pool_rank_of": (c_int, [_p, c_void_p]),
    "hmc_pool_copy": (c_int, [_p, c_void_p, c_void_p, c_size_t, c_int,
                              c_uint32]),
    "hmc_pool_wait": (c_int, [_p, c_int]),
    "hmc_pool_copy_batch": (c_int, [_p, POINTER(CopyDesc), c_size_t, c_int,
                                    c_uint32]),
    "hmc_pool_register_user_mem": (c_int, [_p, c_void_p, c_size_t, c_int]),
    "hmc_pool_unregister_user_mem": (c_int, [_p, c_void_p]),
    "hmc_pool_barrier": (c_int, [_p, c_int]),
    "hmc_pool_allgather": (c_int, [_p, c_void_p, c_size_t, c_void_p, c_int]),
    "hmc_pool_set_extra": (c_int, [_p, c_void_p, c_size_t]),
    "hmc_pool_get_extra": (c_int64, [_p, c_uint32, c_void_p, c_size_t,
                                     c_int]),
    "hmc_pool_group_barrier": (c_int, [_p, c_uint32, POINTER(c_uint32),
                                       c_size_t, c_int]),
    "hmc_pool_group_allgather": (c_int, [_p, c_uint32, POINTER(c_uint32),
                                         c_size_t, c_void_p, c_size_t,
                                         c_void_p, c_int]),
}


def _api():
    lib = _lib.lib()
    if not getattr(lib, "_pool_declared", False):
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        lib._pool_declared = True
    return lib


class Pool:
    """This rank's view of a pool; create() makes one."""

    def __init__(self, world, handle, timeout):
        self.world = world
        self._h = handle
        self._timeout = timeout
        self._pinned = []       # objects behind asynchronous copies

    def _live(self):
        if self._h is None:
            raise ValueError("the pool was destroyed")
        return self._h

    def _ms(self, timeout):
        t = self._timeout if timeout is None else timeout
        return int(t * 1000)

    @property
    def rank(self):
        return self.world.rank

    def ptr(self, mem, rank):
        """The global address of @rank's segment of @mem (HOST, DEVICE),
        or None if it has none."""
        return _api().hmc_pool_ptr(self._live(), mem, rank)

    def size(self, mem, rank):
        """Size of @rank's segment of @mem; 0 if none or gone."""
        return _api().hmc_pool_size(self._live(), mem, rank)

    def rank_of(self, gaddr):
        return check(_api().hmc_pool_rank_of(self._live(), gaddr), "rank_of")

    def _region(self, obj, nbytes, device, writable, stack):
        """(address, nbytes) of a global int or a local object."""
        if isinstance(obj, int) and device is None:
            return obj, nbytes
        ctx = (payload.dest if writable else payload.source)(obj, nbytes,
                                                             device)
        region = stack.enter_context(ctx)
        return region.ptr, region.nbytes

    def copy(self, dst, src, nbytes=None, kind=CopyKind.AUTO, async_=False,
             device=None):
        """Copy from @src to @dst. Ints are global addresses (or, with
        @device, local raw ones); other objects are local memory. @nbytes
        defaults to the local side's size. With @async_, wait() reports
        the result; the local objects are kept alive until then."""
        self.copy_batch([(dst, src, nbytes)], kind, async_, device)

    def copy_batch(self, copies, kind=CopyKind.AUTO, async_=False,
                   device=None):
        """Several (dst, src, nbytes) copies of one @kind, checked before
        any runs."""
        from contextlib import ExitStack
        copies = list(copies)
        descs = (CopyDesc * max(1, len(copies)))()
        stack = ExitStack()
        with stack:
            for i, (dst, src, nbytes) in enumerate(copies):
                d, dn = self._region(dst, nbytes, device, True, stack)
                s, sn = self._region(src, nbytes, device, False, stack)
                n = nbytes if nbytes is not None else (dn if dn is not None
                                                       else sn)
                if n is None:
                    raise ValueError("two global addresses need nbytes")
                descs[i] = CopyDesc(d, s, n)
            rc = _api().hmc_pool_copy_batch(
                self._live(), descs, len(copies), int(kind),
                COPY_ASYNC if async_ else 0)
            if rc:
                raise error(rc, "pool copy (%s)" % CopyKind(kind).name)
            if async_:
                self._pinned.append((stack.pop_all(), copies))

    def wait(self, timeout=None):
        """Wait for every asynchronous copy; raise the first failure."""
        rc = _api().hmc_pool_wait(self._live(), self._ms(timeout))
        if rc != -errno.ETIMEDOUT:  # still running: keep their memory
            pinned, self._pinned = self._pinned, []
            for stack, _ in pinned:
                stack.close()
        if rc:
            raise error(rc, "pool wait")

    def register_user_mem(self, addr, nbytes, mem_type=MemoryType.CPU):
        """hmc_pool_register_user_mem(): AUTO classifies the range; a
        page-aligned CPU one moves into the room create(user_mem_size=)
        reserved, keeping its address and bytes, and copies use it in place
        (unregister it before freeing it)."""
        check(_api().hmc_pool_register_user_mem(self._live(), addr, nbytes,
                                                int(mem_type)),
              "register_user_mem")

    def unregister_user_mem(self, addr):
        check(_api().hmc_pool_unregister_user_mem(self._live(), addr),
              "unregister_user_mem")

    def barrier(self, timeout=None):
        check(_api().hmc_pool_barrier(self._live(), self._ms(timeout)),
              "pool barrier")

    def allgather_bytes(self, data, timeout=None):
        """Every rank's @data (the same length everywhere), by rank."""
        data = bytes(data)
        n = self.world.size
        out = ctypes.create_string_buffer(max(1, n * len(data)))
        check(_api().hmc_pool_allgather(self._live(), data, len(data), out,
                                        self._ms(timeout)), "pool allgather")
        return [out.raw[i * len(data):(i + 1) * len(data)] for i in range(n)]

    def set_extra(self, data):
        """This rank's extra context (up to EXTRA_MAX bytes)."""
        data = bytes(data)
        check(_api().hmc_pool_set_extra(self._live(), data, len(data)),
              "set_extra")

    def get_extra(self, rank, timeout=None):
        """@rank's extra context, as bytes."""
        out = ctypes.create_string_buffer(EXTRA_MAX)
        n = check(_api().hmc_pool_get_extra(self._live(), rank, out,
                                            EXTRA_MAX, self._ms(timeout)),
                  "get_extra")
        return out.raw[:n]

    @staticmethod
    def _ranks(ranks):
        ranks = list(ranks)
        return (c_uint32 * len(ranks))(*ranks), len(ranks)

    def group_barrier(self, key, ranks, timeout=None):
        arr, n = self._ranks(ranks)
        check(_api().hmc_pool_group_barrier(self._live(), key, arr, n,
                                            self._ms(timeout)),
              "group barrier")

    def group_allgather_bytes(self, key, ranks, data, timeout=None):
        """Each member's @data, in the order of @ranks."""
        arr, n = self._ranks(ranks)
        data = bytes(data)
        out = ctypes.create_string_buffer(max(1, n * len(data)))
        check(_api().hmc_pool_group_allgather(
            self._live(), key, arr, n, data, len(data), out,
            self._ms(timeout)), "group allgather")
        return [out.raw[i * len(data):(i + 1) * len(data)] for i in range(n)]

    def destroy(self):
        if self._h is None:
            return
        h, self._h = self._h, None
        check(_api().hmc_pool_destroy(h), "pool destroy")
        for stack, _ in self._pinned:
            stack.close()
        self._pinned = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()


def create(world, host_size, device_size=0, device_type=MemoryType.CPU,
           device_id=0, timeout=30.0, user_mem_size=0):
    """hmc_pool_create() over @world (collective)."""
    opts = PoolOpts(sz=ctypes.sizeof(PoolOpts), host_size=host_size,
                    device_size=device_size, device_type=int(device_type),
                    device_id=device_id, timeout_ms=int(timeout * 1000),
                    user_mem_size=user_mem_size)
    h = _p()
    rc = _api().hmc_pool_create(world._live(), byref(opts), byref(h))
    if rc:
        raise error(rc, "pool create")
    return Pool(world, h, timeout)
