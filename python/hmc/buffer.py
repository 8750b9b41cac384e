# SPDX-License-Identifier: MIT
"""IOBuffer: a ConnBuffer (struct hmc_buf), the staging area of every
transfer. put() copies a payload in (external -> buffer), get_into() copies
out (buffer -> external); both check offset + nbytes <= size (ERANGE)."""

import ctypes
import errno
import os
import weakref

from . import _lib
from .enums import MemoryType
from .errors import HMCError, check, error
from .payload import dest, source


def _release(buf, pid):
    # A forked child must not free its parent's buffer.
    if buf and pid == os.getpid():
        _lib.lib().hmc_buf_destroy(buf)


class IOBuffer:
    """A registered buffer of ``size`` bytes of ``mem_type`` memory.

    CPU buffers are pinned pages from /dev/hmc when hmc.ko is loaded, else
    a sealed memfd, mlocked where RLIMIT_MEMLOCK allows (``backing`` says
    which).
    """

    def __init__(self, device_id=0, size=128 << 20, mem_type=MemoryType.CPU,
                 require_kmod=False, no_kmod=False):
        if size <= 0:
            raise HMCError(errno.EINVAL, "ConnBuffer of %d bytes" % size)
        mem_type = resolve_mem_type(mem_type, device_id)
        lib = _lib.lib()
        opts = _lib.BufOpts(sz=ctypes.sizeof(_lib.BufOpts))
        if require_kmod:
            opts.flags |= _lib.BUF_F_REQUIRE_KMOD
        if no_kmod:
            opts.flags |= _lib.BUF_F_NO_KMOD
        handle = ctypes.c_void_p()
        check(lib.hmc_buf_create(int(mem_type), int(device_id), int(size),
                                 ctypes.byref(opts), ctypes.byref(handle)),
              "creating a %d-byte %s ConnBuffer on device %d" %
              (size, mem_type.name, device_id))
        self._lib = lib
        self._h = handle.value
        self._finalizer = weakref.finalize(self, _release, self._h,
                                           os.getpid())

    @classmethod
    def create(cls, device_id, size, mem_type=MemoryType.CPU):
        """The reference's constructor."""
        return cls(device_id=device_id, size=size, mem_type=mem_type)

    # ----------------------------------------------------------- state

    @property
    def handle(self):
        if not self._finalizer.alive:
            raise HMCError(errno.EBADF, "the ConnBuffer is closed")
        return self._h

    def close(self):
        """Free the buffer (its communicator must be gone)."""
        self._finalizer()

    @property
    def closed(self):
        return not self._finalizer.alive

    @property
    def ptr(self):
        """The buffer's address (device memory for GPU buffers)."""
        return self._lib.hmc_buf_ptr(self.handle) or 0

    @property
    def size(self):
        return self._lib.hmc_buf_size(self.handle)

    buffer_size = size

    @property
    def mem_type(self):
        return MemoryType(self._lib.hmc_buf_mem_type(self.handle))

    @property
    def device_id(self):
        return self._lib.hmc_buf_device(self.handle)

    @property
    def backing(self):
        """"kmod", "memfd", "mlock", "anon" or "device"."""
        lib = self._lib
        backing = lib.hmc_buf_backing(self.handle)
        return lib.hmc_buf_backing_name(backing).decode()

    def __repr__(self):
        if self.closed:
            return "<hmc.IOBuffer closed>"
        return "<hmc.IOBuffer %d bytes %s (%s) device %d>" % (
            self.size, self.mem_type.name, self.backing, self.device_id)

    # ----------------------------------------------------------- copies

    def put(self, data, offset=0, nbytes=None, device=None):
        """Copy ``data`` (or its first ``nbytes``) to ``offset``; returns
        the number of bytes copied. ``device`` names where a raw address or
        tensor lives ("cpu", "cuda")."""
        with source(data, nbytes, device) as r:
            return self._copy(self._lib.hmc_buf_write, "put", r, offset)

    def get_into(self, dst, nbytes=None, offset=0, device=None):
        """Copy ``nbytes`` (default: the size of ``dst``) from ``offset``
        into ``dst``, which must be writable and contiguous; returns the
        number of bytes copied."""
        with dest(dst, nbytes, device) as r:
            return self._copy(self._lib.hmc_buf_read, "get_into", r, offset)

    def _copy(self, fn, op, region, offset):
        """hmc_buf_write/read of @region at @offset: the bytes copied."""
        rc = fn(self.handle, _offset(offset), region.ptr, region.nbytes,
                int(region.mem_type))
        if rc:
            raise error(rc, "%s of %d bytes (%s) at offset %d of a %d-byte "
                        "%s ConnBuffer" % (op, region.nbytes,
                                           region.mem_type.name, offset,
                                           self.size, self.mem_type.name))
        return region.nbytes

    def get(self, nbytes, offset=0):
        """``nbytes`` bytes from ``offset``, as bytes."""
        out = bytearray(nbytes)
        self.get_into(out, nbytes, offset)
        return bytes(out)

    def copy_within(self, dst_offset, src_offset, nbytes):
        """Copy ``nbytes`` inside the buffer; the ranges may overlap."""
        check(self._lib.hmc_buf_copy_within(self.handle, _offset(dst_offset),
                                            _offset(src_offset), int(nbytes)),
              "copy_within(%d <- %d, %d bytes) in a %d-byte ConnBuffer" %
              (dst_offset, src_offset, nbytes, self.size))

    # The reference's name (hmc-readme.md's cheat sheet).
    buffer_copy_within = copy_within


def _offset(offset):
    offset = int(offset)
    if offset < 0:
        raise HMCError(errno.ERANGE, "negative offset %d" % offset)
    return offset


def resolve_mem_type(mem_type, device_id=0):
    """MemoryType.DEFAULT becomes the first GPU type with a device, or CPU."""
    mem_type = MemoryType(mem_type)
    if mem_type != MemoryType.DEFAULT:
        return mem_type
    lib = _lib.lib()
    for gpu in (MemoryType.CUDA, MemoryType.ROCM, MemoryType.ASCEND,
                MemoryType.CNRT, MemoryType.MUSA):
        if lib.hmc_mem_device_count(int(gpu)) > device_id:
            return gpu
    return MemoryType.CPU
