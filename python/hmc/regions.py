# SPDX-License-Identifier: MIT
"""Memory regions: one-sided transfers to and from memory outside the
ConnBuffer (libhmc's hmc_comm_mr_*), and remote atomics on it.

    # the target: register, then hand the descriptor to the peer
    x = np.zeros(1 << 20, dtype=np.uint64)
    mr = sess.register(x, remote_read=True, remote_write=True)
    sess.send_data_to(peer=1, data=mr.pack(), tag=1)

    # the initiator: import it, then put, get and atomics by offset
    desc = bytearray(hmc.MR_DESC_MAX)
    n = sess.recv_data_from(peer=0, dest_obj=desc, tag=1)
    rr = sess.import_region(0, desc[:n])
    mine = sess.register(np.arange(1024, dtype=np.uint64))
    sess.put_region(mine, 0, rr, 4096, 8192)   # mine[0:] -> x's byte 4096
    old = sess.atomic(0, rr, 0, hmc.AmoOp.ADD, 1)

A Region keeps its object (anything hmc.payload takes: bytes-likes, NumPy
arrays, PyTorch tensors, raw addresses with device=) and a pinned view of
it until close(), the end of its ``with`` block, its session's
close_server(), or its own garbage collection (as a UCX memory handle
unmaps its memory when freed): keep it while peers use it. The object must
not be resized meanwhile (a bytearray refuses to be while pinned). Objects that cannot be written (bytes, a
read-only array) may be registered for remote reads and puts from them,
never as the target of a get. A RemoteRegion is valid until the connection
to its peer ends. Over the shm transport there are no regions (EOPNOTSUPP).
"""

import ctypes
import errno
import os
import weakref
from contextlib import ExitStack

from . import _lib
from .errors import HMCBufferError, HMCError, check
from .payload import dest, source

MR_DESC_MAX = _lib.MR_DESC_MAX


class _Pin:
    """What outlives a Region until libhmc has let go of its memory: the
    pinned view, the notify word. The session's communicator lists them
    (``pins``, by handle) and releases the rest when it is destroyed."""

    def __init__(self, comm, mr, stack, counter):
        self.comm = comm
        self.mr = mr
        self.stack = stack
        self.counter = counter

    @property
    def live(self):
        return self.comm.pins.get(self.mr) is self

    def release(self):
        """Deregister (0 also when already gone), or libhmc's error; after
        -ETIMEDOUT the region stays registered and its memory pinned."""
        c = self.comm
        if c.pid != os.getpid() or not self.live:
            return 0            # a forked child's, or gone with the comm
        rc = c.lib.hmc_comm_mr_dereg(c.handle, self.mr)
        if rc and rc != -errno.ENOENT:
            return rc
        with c.lock:
            if self.live:
                del c.pins[self.mr]
        self.stack.close()
        return 0


def _read_only(obj):
    """Whether @obj is C-contiguous memory that cannot be written."""
    try:
        with memoryview(obj) as mv:
            return mv.readonly and mv.c_contiguous
    except (TypeError, ValueError):
        flags = getattr(obj, "flags", None)     # NumPy without a buffer
        return flags is not None and not flags["WRITEABLE"] and \
            flags["C_CONTIGUOUS"]


class Region:
    """A range of this process's memory that peers may reach by offset
    (Session.register() makes one).

    ``handle`` is libhmc's, ``nbytes`` its size, ``pack()`` the descriptor
    a peer imports; ``writes`` counts peers' puts and atomics landing in
    it when registered with notify=True (where the peer's
    RemoteRegion.notifies says they are counted). A context manager:
    leaving the block deregisters it.
    """

    def __init__(self, pin, obj, nbytes, mem_type, access, writable):
        self._pin = pin
        self.obj = obj
        self.nbytes = nbytes
        self.mem_type = mem_type
        self.access = access
        self.writable = writable
        weakref.finalize(self, pin.release)

    @property
    def handle(self):
        return self._pin.mr

    @property
    def closed(self):
        return not self._pin.live

    @property
    def writes(self):
        """Peers' puts and atomics into the region so far, or None without
        notify=True."""
        counter = self._pin.counter
        return None if counter is None else counter.value

    def _handle_in(self, comm):
        """The handle, for a transfer on @comm."""
        if self._pin.comm is not comm:
            raise HMCError(errno.EINVAL, "%r belongs to another session's "
                           "communicator" % self)
        if not self._pin.live:
            raise HMCError(errno.ENOENT, "%r is deregistered" % self)
        return self._pin.mr

    def pack(self):
        """The descriptor (bytes, at most MR_DESC_MAX) that a peer passes
        to its import_region(): keys for the transports up now, so pack
        once the peers that will import it are connected."""
        c = self._pin.comm
        desc = ctypes.create_string_buffer(MR_DESC_MAX)
        n = ctypes.c_size_t()
        check(c.lib.hmc_comm_mr_pack(c.handle, self._handle_in(c), desc,
                                     MR_DESC_MAX, ctypes.byref(n)),
              "packing %r" % self)
        return desc.raw[:n.value]

    def close(self):
        """Deregister, once the transfers posted with it are done (waiting
        up to the session timeout; HMCTimeoutError leaves it registered).
        Peers' later accesses fail on their side: deregister after they
        are done. Closing again does nothing."""
        check(self._pin.release(), "deregistering %r" % self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = " closed" if self.closed else ""
        return "<hmc.Region %#x, %d bytes %s%s>" % (
            self._pin.mr, self.nbytes, self.mem_type.name, state)


class RemoteRegion:
    """A peer's region, imported (Session.import_region()): ``peer`` (its
    rank), ``handle``, ``nbytes``, and ``notifies``: whether our puts and
    atomics into it count in the peer's notify word."""

    def __init__(self, comm, peer, handle, nbytes, notifies):
        self._comm = comm
        self.peer = peer
        self.handle = handle
        self.nbytes = nbytes
        self.notifies = notifies

    def _handle_in(self, comm):
        if self._comm is not comm:
            raise HMCError(errno.EINVAL, "%r was imported by another "
                           "communicator" % self)
        return self.handle

    def __repr__(self):
        return "<hmc.RemoteRegion %#x of rank %d, %d bytes>" % (
            self.handle, self.peer, self.nbytes)


def register(c, obj, nbytes, access, notify, device):
    """Register @obj's memory (its first @nbytes) with communicator state
    @c: a Region."""
    read_only = _read_only(obj)
    if read_only and access & _lib.MR_REMOTE_WRITE:
        raise HMCBufferError("remote_write=True needs writable memory; the "
                             "%s is read-only" % type(obj).__name__)
    with ExitStack() as stack:
        # Never a copy: a destination must be the object's own memory.
        region = stack.enter_context(
            (source if read_only else dest)(obj, nbytes, device))
        if not region.nbytes:
            raise HMCBufferError("cannot register an empty %s" %
                                 type(obj).__name__)
        counter = ctypes.c_uint32(0) if notify else None
        opts = _lib.MrOpts(sz=ctypes.sizeof(_lib.MrOpts), access=access,
                           mem_type=int(region.mem_type),
                           device=region.device,
                           notify=ctypes.pointer(counter) if notify else None)
        mr = ctypes.c_uint32()
        check(c.lib.hmc_comm_mr_reg(c.handle, region.ptr, region.nbytes,
                                    ctypes.byref(opts), ctypes.byref(mr)),
              "registering %d bytes of %s memory" % (region.nbytes,
                                                    region.mem_type.name))
        pin = _Pin(c, mr.value, stack.pop_all(), counter)
    with c.lock:
        c.pins[pin.mr] = pin
    return Region(pin, obj, region.nbytes, region.mem_type, access,
                  not read_only)


def import_region(c, rank, desc):
    """Import @desc, a descriptor of @rank's region: a RemoteRegion."""
    desc = bytes(memoryview(desc))
    if len(desc) > MR_DESC_MAX:
        raise HMCError(errno.EINVAL, "a %d-byte region descriptor (at most "
                       "%d)" % (len(desc), MR_DESC_MAX))
    rmr = ctypes.c_uint32()
    rc = c.lib.hmc_comm_mr_import(c.handle, rank, desc, len(desc),
                                  ctypes.byref(rmr))
    if rc:
        raise c.fail(rc, "importing a region descriptor of", rank)
    size = c.lib.hmc_comm_rmr_size(c.handle, rank, rmr.value)
    notifies = c.lib.hmc_comm_rmr_notifies(c.handle, rank, rmr.value)
    for rc in (size, notifies):
        if rc < 0:
            raise c.fail(rc, "an imported region of", rank)
    return RemoteRegion(c, rank, rmr.value, size, bool(notifies))


def word(value, size, what):
    """@value as the @size-byte word of an atomic (negative: two's
    complement)."""
    if size not in (4, 8):
        raise HMCError(errno.EINVAL, "atomics are 4 or 8 bytes, not %r" %
                       (size,))
    value, bits = int(value), 8 * size
    if not -(1 << bits - 1) <= value < 1 << bits:
        raise HMCError(errno.ERANGE, "%s %d does not fit %d bytes" %
                       (what, value, size))
    return value & ((1 << bits) - 1)
