# SPDX-License-Identifier: MIT
"""libhmc through ctypes: finding the library and declaring its functions.

ctypes releases the GIL around every call into a CDLL, so every libhmc call
made from here lets other Python threads run while it copies or waits.
The library is loaded on first use, so that ``import hmc`` works (enums,
exceptions) on a machine without it.
"""

import ctypes
import os
import sys
import threading
from ctypes import (POINTER, Structure, c_bool, c_char_p, c_int, c_size_t,
                    c_uint32, c_uint64, c_void_p)

SONAME = "libhmc.so.0"

c_req = c_uint64


# Copies of <hmc/hmc.h>, which python/tests/test_layout.py compares with
# the header: field for field, reserved ones included (they must be zero).
class CommOpts(Structure):
    """struct hmc_comm_opts."""
    _fields_ = [
        ("sz", c_size_t),
        ("rank", c_uint32),
        ("flags", c_uint32),
        ("secret", c_char_p),
        ("connect_timeout_ms", c_int),
        ("op_timeout_ms", c_int),
        ("num_chs", c_uint32),
        ("reserved0", c_uint32),
        ("ib_dev", c_char_p),
        ("ib_port", c_uint32),
        ("reserved1", c_uint32),
        ("tls_cert", c_char_p),
        ("tls_key", c_char_p),
        ("tls_ca", c_char_p),
        ("msg_region", c_uint64),
        ("msg_slot_size", c_uint32),
        ("reserved2", c_uint32),
    ]


class MsgStatus(Structure):
    """struct hmc_msg_status."""
    _fields_ = [
        ("tag", c_uint64),
        ("len", c_uint64),
        ("source", c_uint32),
        ("error", ctypes.c_int32),
    ]


class Msg(Structure):
    """struct hmc_msg (one operation of hmc_comm_msg_batch())."""
    _fields_ = [
        ("op", c_uint32),
        ("peer", c_uint32),
        ("tag", c_uint64),
        ("data", c_void_p),
        ("len", c_uint64),
        ("mem_type", c_uint32),
        ("reserved", c_uint32),
        ("status", POINTER(MsgStatus)),
    ]


ANY_SOURCE = (1 << 32) - 1
ANY_TAG = (1 << 64) - 1
MSG_SEND = 0
MSG_RECV = 1


class BufOpts(Structure):
    """struct hmc_buf_opts."""
    _fields_ = [
        ("sz", c_size_t),
        ("flags", c_uint32),
        ("numa_node", c_int),
    ]


class MrOpts(Structure):
    """struct hmc_mr_opts."""
    _fields_ = [
        ("sz", c_size_t),
        ("access", c_uint32),
        ("mem_type", c_uint32),
        ("device", ctypes.c_int32),
        ("reserved", c_uint32),
        ("notify", POINTER(c_uint32)),
    ]


MR_REMOTE_READ = 1 << 0
MR_REMOTE_WRITE = 1 << 1
MR_DESC_MAX = 1024

COMM_F_NO_PROGRESS_THREAD = 1 << 0
COMM_F_NO_UNIX = 1 << 1
BUF_F_REQUIRE_KMOD = 1 << 0
BUF_F_NO_KMOD = 1 << 1

_buf_p = c_void_p
_comm_p = c_void_p

# name: (restype, argtypes)
_PROTOTYPES = {
    "hmc_version": (c_char_p, []),
    "hmc_strerror": (c_char_p, [c_int]),
    "hmc_mem_device_count": (c_int, [c_int]),
    "hmc_mem_copy": (c_int, [c_int, c_int, c_void_p, c_void_p, c_size_t,
                             c_int]),
    "hmc_buf_create": (c_int, [c_int, c_int, c_size_t, POINTER(BufOpts),
                               POINTER(_buf_p)]),
    "hmc_buf_destroy": (None, [_buf_p]),
    "hmc_buf_ptr": (c_void_p, [_buf_p]),
    "hmc_buf_size": (c_size_t, [_buf_p]),
    "hmc_buf_mem_type": (c_int, [_buf_p]),
    "hmc_buf_device": (c_int, [_buf_p]),
    "hmc_buf_backing": (c_int, [_buf_p]),
    "hmc_buf_backing_name": (c_char_p, [c_int]),
    "hmc_buf_write": (c_int, [_buf_p, c_size_t, c_void_p, c_size_t, c_int]),
    "hmc_buf_read": (c_int, [_buf_p, c_size_t, c_void_p, c_size_t, c_int]),
    "hmc_buf_copy_within": (c_int, [_buf_p, c_size_t, c_size_t, c_size_t]),
    "hmc_comm_create": (c_int, [_buf_p, POINTER(CommOpts),
                                POINTER(_comm_p)]),
    "hmc_comm_destroy": (None, [_comm_p]),
    "hmc_comm_rank": (c_uint32, [_comm_p]),
    "hmc_comm_listen": (c_int, [_comm_p, c_char_p, ctypes.c_uint16]),
    "hmc_comm_listen_port": (c_int, [_comm_p]),
    "hmc_comm_connect": (c_int, [_comm_p, c_uint32, c_char_p,
                                 ctypes.c_uint16, c_int]),
    "hmc_comm_disconnect": (c_int, [_comm_p, c_uint32]),
    "hmc_comm_is_connected": (c_bool, [_comm_p, c_uint32]),
    "hmc_comm_peers": (c_int, [_comm_p, POINTER(c_uint32), c_size_t]),
    "hmc_comm_put_nb": (c_int, [_comm_p, c_uint32, c_size_t, c_size_t,
                                c_size_t, POINTER(c_req)]),
    "hmc_comm_get_nb": (c_int, [_comm_p, c_uint32, c_size_t, c_size_t,
                                c_size_t, POINTER(c_req)]),
    "hmc_comm_wait": (c_int, [_comm_p, c_req, c_int]),
    "hmc_comm_test": (c_int, [_comm_p, c_req]),
    "hmc_comm_wait_all": (c_int, [_comm_p, POINTER(c_req), c_size_t, c_int,
                                  POINTER(c_int)]),
    "hmc_comm_flush": (c_int, [_comm_p, c_uint32]),
    "hmc_comm_put_signal": (c_int, [_comm_p, c_uint32, c_size_t, c_size_t,
                                    c_size_t, c_uint64]),
    "hmc_comm_send_tag": (c_int, [_comm_p, c_uint32, c_uint64]),
    "hmc_comm_recv_tag": (c_int, [_comm_p, c_uint32, POINTER(c_uint64),
                                  c_int]),
    "hmc_comm_barrier": (c_int, [_comm_p, c_int]),
    "hmc_comm_progress": (c_int, [_comm_p]),
    "hmc_comm_isend": (c_int, [_comm_p, c_uint32, c_uint64, c_void_p,
                               c_size_t, c_int, POINTER(c_req)]),
    "hmc_comm_irecv": (c_int, [_comm_p, c_uint32, c_uint64, c_void_p,
                               c_size_t, c_int, POINTER(MsgStatus),
                               POINTER(c_req)]),
    "hmc_comm_msg_batch": (c_int, [_comm_p, POINTER(Msg), c_size_t,
                                   POINTER(c_req)]),
    "hmc_comm_mr_reg": (c_int, [_comm_p, c_void_p, c_size_t, POINTER(MrOpts),
                                POINTER(c_uint32)]),
    "hmc_comm_mr_dereg": (c_int, [_comm_p, c_uint32]),
    "hmc_comm_mr_pack": (c_int, [_comm_p, c_uint32, c_void_p, c_size_t,
                                 POINTER(c_size_t)]),
    "hmc_comm_mr_import": (c_int, [_comm_p, c_uint32, c_char_p, c_size_t,
                                   POINTER(c_uint32)]),
    "hmc_comm_rmr_size": (ctypes.c_int64, [_comm_p, c_uint32, c_uint32]),
    "hmc_comm_rmr_notifies": (c_int, [_comm_p, c_uint32, c_uint32]),
    "hmc_comm_put_mr_nb": (c_int, [_comm_p, c_uint32, c_uint32, c_size_t,
                                   c_uint32, c_size_t, c_size_t,
                                   POINTER(c_req)]),
    "hmc_comm_get_mr_nb": (c_int, [_comm_p, c_uint32, c_uint32, c_size_t,
                                   c_uint32, c_size_t, c_size_t,
                                   POINTER(c_req)]),
    "hmc_comm_amo_nb": (c_int, [_comm_p, c_uint32, c_uint32, c_size_t,
                                ctypes.c_uint, c_int, c_uint64, c_uint64,
                                POINTER(c_uint64), POINTER(c_req)]),
}


def _candidates():
    """Where to look for libhmc, in order."""
    env = os.environ.get("HMC_LIBRARY")
    if env:
        return [env]            # asked for explicitly: nothing else
    paths = []
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.dirname(os.path.dirname(here))
    builds = [os.environ.get("HMC_BUILD")]
    if os.path.isfile(os.path.join(src, "include", "hmc", "hmc.h")):
        builds.append(os.path.join(src, "build"))   # the source tree
    for build in filter(None, builds):
        paths.append(os.path.join(build, "lib", SONAME))
    paths.append(SONAME)        # LD_LIBRARY_PATH and the linker's cache
    for prefix in (sys.prefix, "/usr/local", "/usr"):
        paths.append(os.path.join(prefix, "lib", SONAME))
    return paths


_lock = threading.Lock()
_lib = None


def lib():
    """The loaded libhmc, its functions declared."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            _lib = _load()
    return _lib


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (no such file)" % path)
            continue
        try:
            handle = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(handle, name)
            fn.restype = restype
            fn.argtypes = argtypes
        handle.path = path
        return handle
    raise ImportError(
        "hmc: cannot load libhmc; build it (make) or install it "
        "(make install), or set HMC_LIBRARY to its path. Tried: " +
        "; ".join(tried))


def strerror(err):
    """hmc_strerror() of a negative (or positive) errno."""
    try:
        return lib().hmc_strerror(err).decode()
    except ImportError:
        return os.strerror(abs(err))
