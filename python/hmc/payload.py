# SPDX-License-Identifier: MIT
"""Payloads: the memory behind a Python object, for copies into and out of a
ConnBuffer.

Accepted: anything with the buffer protocol (bytes, bytearray, memoryview,
array.array, NumPy arrays, mmap ...), NumPy arrays of dtypes the buffer
protocol cannot export (through __array_interface__), PyTorch tensors on
the CPU or a GPU (through data_ptr()), and raw addresses given with
``device=``. Sources that are not C-contiguous are copied to C order first;
destinations must be writable and C-contiguous (no silent copy that would
leave the caller's object unchanged).

source() and dest() are context managers that yield a Region whose pointer
stays valid inside the ``with`` block. Host memory is reached through
PyObject_GetBuffer, so no payload is copied on the way.
"""

import ctypes
from collections import namedtuple
from contextlib import contextmanager

from .enums import MemoryType
from .errors import HMCBufferError

# device: the GPU of a tensor (its index), for copies that need one
Region = namedtuple("Region", "ptr nbytes mem_type device", defaults=(0,))

_PyBUF_SIMPLE = 0
_PyBUF_WRITABLE = 1


class _PyBuffer(ctypes.Structure):
    """Py_buffer (stable ABI since Python 3.11, unchanged since 3.3)."""
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    ]


# pythonapi holds the GIL and raises the Python error a failed call sets.
_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer),
                        ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_release_buffer.restype = None

_DEVICES = {
    "cpu": MemoryType.CPU,
    "cuda": MemoryType.CUDA,
    "rocm": MemoryType.ROCM,
    "hip": MemoryType.ROCM,
    "npu": MemoryType.ASCEND,
    "ascend": MemoryType.ASCEND,
    "mlu": MemoryType.CNRT,
    "cnrt": MemoryType.CNRT,
    "musa": MemoryType.MUSA,
}


def _device_type(device):
    if device is None:
        return None
    if isinstance(device, MemoryType):
        return device
    name = str(device).split(":")[0].lower()
    if name not in _DEVICES:
        raise HMCBufferError("unknown device %r (cpu, cuda, rocm, npu, mlu or musa)" % device)
    return _DEVICES[name]


def _length(total, nbytes, what):
    if nbytes is None:
        return total
    nbytes = int(nbytes)
    if nbytes < 0 or nbytes > total:
        raise HMCBufferError("nbytes=%d does not fit the %d-byte %s" %
                             (nbytes, total, what))
    return nbytes


def _is_torch_tensor(obj):
    return any(c.__name__ == "Tensor" and c.__module__.startswith("torch")
               for c in type(obj).__mro__)


def _torch_region(t, nbytes, device, writable):
    import torch

    kind = t.device.type
    if kind == "cpu":
        mem_type = MemoryType.CPU
    elif kind == "cuda":
        mem_type = MemoryType.ROCM if torch.version.hip else MemoryType.CUDA
    elif kind in ("npu", "mlu", "musa"):   # torch_npu, torch_mlu, torch_musa
        mem_type = _DEVICES[kind]
    else:
        raise HMCBufferError("tensors on %s are not supported" % t.device)
    want = _device_type(device)
    if want is not None and want != mem_type:
        raise HMCBufferError("device=%r but the tensor is on %s" %
                             (device, t.device))
    if not t.is_contiguous():
        if writable:
            raise HMCBufferError(
                "destination tensor is not contiguous: pass a contiguous "
                "tensor (the data would land in a copy)")
        t = t.contiguous()
    if mem_type != MemoryType.CPU:
        # Work queued on the tensor's stream must be done before we copy.
        torch.cuda.current_stream(t.device).synchronize()
    n = _length(t.numel() * t.element_size(), nbytes, "tensor")
    return t, Region(t.data_ptr(), n, mem_type, t.device.index or 0)


def _array_interface_region(obj, nbytes, writable):
    ai = obj.__array_interface__
    if obj.dtype.hasobject:
        raise HMCBufferError("object arrays hold pointers, not data")
    ptr, readonly = ai["data"]
    if writable and readonly:
        raise HMCBufferError("destination array is read-only")
    if not obj.flags["C_CONTIGUOUS"]:
        if writable:
            raise HMCBufferError("destination array is not C-contiguous")
        obj = obj.copy(order="C")
        ptr = obj.__array_interface__["data"][0]
    n = _length(obj.nbytes, nbytes, "array")
    return obj, Region(ptr, n, MemoryType.CPU)


@contextmanager
def _host_region(mv, nbytes, writable):
    n = _length(mv.nbytes, nbytes, "buffer")
    view = _PyBuffer()
    _get_buffer(mv, ctypes.byref(view),
                _PyBUF_WRITABLE if writable else _PyBUF_SIMPLE)
    try:
        yield Region(view.buf or 0, n, MemoryType.CPU)
    finally:
        _release_buffer(ctypes.byref(view))


@contextmanager
def _region(obj, nbytes, device, writable):
    role = "destination" if writable else "source"
    if _is_torch_tensor(obj):
        keep, region = _torch_region(obj, nbytes, device, writable)
        yield region
        del keep
        return
    if isinstance(obj, int) and not isinstance(obj, bool):
        if device is None or nbytes is None:
            raise HMCBufferError("a raw address needs device= and nbytes=")
        if obj <= 0 and nbytes:
            raise HMCBufferError("%s address %#x" % (role, obj))
        yield Region(obj, _length(int(nbytes), nbytes, "range"),
                     _device_type(device))
        return
    if isinstance(obj, str):
        raise TypeError("%s is a str: encode it to bytes first" % role)
    if _device_type(device) not in (None, MemoryType.CPU):
        raise HMCBufferError("device=%r but the %s is in host memory" %
                             (device, role))
    try:
        mv = memoryview(obj)
    except (TypeError, ValueError):     # NumPy: "cannot include dtype 'M'"
        if not hasattr(obj, "__array_interface__"):
            raise TypeError(
                "%s of type %s is not a buffer (bytes, bytearray, memoryview, "
                "NumPy array, PyTorch tensor)" % (role, type(obj).__name__))
        keep, region = _array_interface_region(obj, nbytes, writable)
        yield region
        del keep
        return
    with mv:
        if "O" in mv.format:
            raise HMCBufferError("object arrays hold pointers, not data")
        if writable and mv.readonly:
            raise HMCBufferError(
                "destination %s is read-only: pass a bytearray or a writable "
                "array" % type(obj).__name__)
        if not mv.c_contiguous:
            if writable:
                raise HMCBufferError(
                    "destination %s is not C-contiguous: pass a contiguous "
                    "one (the data would land in a copy)" % type(obj).__name__)
            mv = memoryview(mv.tobytes())   # C order
        with _host_region(mv, nbytes, writable) as region:
            yield region


def source(obj, nbytes=None, device=None):
    """Context manager: the Region to copy from (@nbytes: a prefix of it)."""
    return _region(obj, nbytes, device, False)


def dest(obj, nbytes=None, device=None):
    """Context manager: the Region to copy into, which must be writable."""
    return _region(obj, nbytes, device, True)

