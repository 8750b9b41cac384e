# SPDX-License-Identifier: MIT
"""hmc_world from Python: N ranks from the launcher's environment.

    import hmc
    world = hmc.init_world()          # mpirun, torchrun, hmcrun, HMC_STORE
    print(world.rank, world.size, world.local_rank)
    everyone = world.allgather_object({"host": socket.gethostname()})
    config = world.bcast_object(config, root=0)
    world.barrier()
    world.finalize()

The environment rules are libhmc's (include/hmc/world.h): PMIx under
mpirun or srun, torchrun's RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (HMC's
store listens on MASTER_PORT + 1, so torch.distributed's own store keeps
MASTER_PORT), HMC_STORE with HMC_WORLD_SIZE and HMC_RANK, or a unique id.
Every call takes a timeout in seconds (None: the default, 60 s).
"""

import ctypes
import errno
import pickle
import struct
from ctypes import (POINTER, Structure, byref, c_char_p, c_int, c_int32,
                    c_size_t, c_uint32, c_uint64, c_void_p)

from . import _lib
from .errors import error

DEFAULT_TIMEOUT = 60.0

EVENT_JOINED, EVENT_LEFT, EVENT_FAILED = 1, 2, 3


class WorldOpts(Structure):
    """struct hmc_world_opts."""
    _fields_ = [
        ("sz", c_size_t),
        ("bootstrap", c_uint32),
        ("flags", c_uint32),
        ("rank", c_uint32),
        ("size", c_uint32),
        ("store", c_char_p),
        ("uid", c_void_p),
        ("buf_size", c_size_t),
        ("mem_type", c_uint32),
        ("device", c_int32),
        ("transport", c_uint32),
        ("timeout_ms", c_int32),
        ("ip", c_char_p),
        ("secret", c_char_p),
        ("tls_cert", c_char_p),
        ("tls_key", c_char_p),
        ("tls_ca", c_char_p),
        ("err_msg", c_char_p),
        ("err_msg_len", c_size_t),
    ]


class WorldEvent(Structure):
    """struct hmc_world_event."""
    _fields_ = [("type", c_uint32), ("rank", c_uint32), ("size", c_uint32),
                ("error", c_int32)]


_w = c_void_p
_PROTOTYPES = {
    "hmc_world_init": (c_int, [POINTER(WorldOpts), POINTER(_w)]),
    "hmc_world_finalize": (c_int, [_w]),
    "hmc_world_rank": (c_uint32, [_w]),
    "hmc_world_size": (c_uint32, [_w]),
    "hmc_world_local_rank": (c_uint32, [_w]),
    "hmc_world_local_size": (c_uint32, [_w]),
    "hmc_world_comm": (c_void_p, [_w]),
    "hmc_world_connect": (c_int, [_w, c_uint32, c_int]),
    "hmc_world_barrier": (c_int, [_w, c_int]),
    "hmc_world_allgather": (c_int, [_w, c_void_p, c_size_t, c_void_p,
                                    c_int]),
    "hmc_world_bcast": (c_int, [_w, c_void_p, c_size_t, c_uint32, c_int]),
    "hmc_world_wait_event": (c_int, [_w, POINTER(WorldEvent), c_int]),
    "hmc_world_last_error": (c_char_p, [_w]),
    "hmc_comm_buf": (c_void_p, [c_void_p]),
}


def _api():
    lib = _lib.lib()
    if not getattr(lib, "_world_declared", False):
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        lib._world_declared = True
    return lib


def _ms(timeout):
    return int((DEFAULT_TIMEOUT if timeout is None else timeout) * 1000)


class Comm:
    """The world's communicator: its ConnBuffer and the calls on it."""

    def __init__(self, world):
        self._world = world
        self.handle = _api().hmc_world_comm(world._h)

    @property
    def buffer(self):
        """The ConnBuffer as a writable memoryview (CPU buffers)."""
        lib = _api()
        buf = lib.hmc_comm_buf(self.handle)
        size = lib.hmc_buf_size(buf)
        ptr = lib.hmc_buf_ptr(buf)
        return memoryview((ctypes.c_char * size).from_address(ptr)).cast("B")

    def put_signal(self, peer, local_off, remote_off, length, tag):
        rc = _api().hmc_comm_put_signal(self.handle, peer, local_off,
                                        remote_off, length, tag)
        if rc:
            raise error(rc, "put_signal to rank %d" % peer)

    def send_tag(self, peer, tag):
        rc = _api().hmc_comm_send_tag(self.handle, peer, tag)
        if rc:
            raise error(rc, "send_tag to rank %d" % peer)

    def recv_tag(self, peer, timeout=None):
        tag = c_uint64()
        rc = _api().hmc_comm_recv_tag(self.handle, peer, byref(tag),
                                      _ms(timeout))
        if rc:
            raise error(rc, "recv_tag from rank %d" % peer)
        return tag.value


class World:
    """A member of an hmc_world; use init_world() to get one."""

    def __init__(self, handle):
        self._h = handle
        lib = _api()
        self.rank = lib.hmc_world_rank(handle)
        self.local_rank = lib.hmc_world_local_rank(handle)
        self.local_size = lib.hmc_world_local_size(handle)
        self.comm = Comm(self)

    @property
    def size(self):
        """Ranks in the world (it grows when members join)."""
        return _api().hmc_world_size(self._live())

    def _live(self):
        if self._h is None:
            raise ValueError("the world was finalized")
        return self._h

    def _check(self, rc, what):
        if rc:
            why = _api().hmc_world_last_error(self._h).decode()
            raise error(rc, "%s: %s" % (what, why) if why else what)

    def connect(self, rank, timeout=None):
        """Connect the communicator to @rank now (worlds that connect on
        first use: more than 64 ranks, or HMC_WORLD_LAZY=1)."""
        self._check(_api().hmc_world_connect(self._live(), rank,
                                             _ms(timeout)), "connect")

    def barrier(self, timeout=None):
        self._check(_api().hmc_world_barrier(self._live(), _ms(timeout)),
                    "barrier")

    def allgather_bytes(self, data, timeout=None):
        """Every rank's @data (all of the same length), as a list."""
        data = bytes(data)
        n = self.size
        out = ctypes.create_string_buffer(max(1, n * len(data)))
        self._check(_api().hmc_world_allgather(
            self._live(), data, len(data), out, _ms(timeout)), "allgather")
        raw = out.raw
        return [raw[i * len(data):(i + 1) * len(data)] for i in range(n)]

    def allgather_object(self, obj, timeout=None):
        """Every rank's picklable @obj, as a list indexed by rank."""
        blob = pickle.dumps(obj)
        lens = [struct.unpack("<Q", b)[0] for b in
                self.allgather_bytes(struct.pack("<Q", len(blob)), timeout)]
        width = max(lens)
        parts = self.allgather_bytes(blob.ljust(width, b"\0"), timeout)
        return [pickle.loads(p[:n]) if n else None
                for p, n in zip(parts, lens)]

    def bcast_object(self, obj, root=0, timeout=None):
        """@root's @obj on every rank."""
        lib = _api()
        blob = pickle.dumps(obj) if self.rank == root else b""
        head = ctypes.create_string_buffer(struct.pack("<Q", len(blob)), 8)
        self._check(lib.hmc_world_bcast(self._live(), head, 8, root,
                                        _ms(timeout)), "bcast")
        n = struct.unpack("<Q", head.raw)[0]
        body = ctypes.create_string_buffer(blob, max(1, n))
        self._check(lib.hmc_world_bcast(self._live(), body, n, root,
                                        _ms(timeout)), "bcast")
        return obj if self.rank == root else pickle.loads(body.raw[:n])

    def wait_event(self, timeout=None):
        """(kind, rank, size) of the next membership event, or None."""
        ev = WorldEvent()
        rc = _api().hmc_world_wait_event(self._live(), byref(ev),
                                         _ms(timeout))
        if rc == -errno.ETIMEDOUT:
            return None
        self._check(rc, "wait_event")
        return ({1: "joined", 2: "left", 3: "failed"}[ev.type], ev.rank,
                ev.size)

    def finalize(self):
        """Leave the world and free the communicator."""
        if self._h is None:
            return
        h, self._h = self._h, None
        rc = _api().hmc_world_finalize(h)
        if rc:
            raise error(rc, "finalize")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.finalize()


def init_world(timeout=None, buf_size=0, store=None):
    """Join the world the environment describes (see the module's doc)."""
    lib = _api()
    err = ctypes.create_string_buffer(512)
    opts = WorldOpts(sz=ctypes.sizeof(WorldOpts), buf_size=buf_size,
                     store=store.encode() if store else None,
                     timeout_ms=_ms(timeout) if timeout else 0,
                     err_msg=ctypes.cast(err, c_char_p), err_msg_len=512)
    h = _w()
    rc = lib.hmc_world_init(byref(opts), byref(h))
    if rc:
        raise error(rc, "init_world: " + err.value.decode())
    return World(h)
