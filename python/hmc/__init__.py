# SPDX-License-Identifier: MIT
"""HMC for Python: the reference HMC's Session API on libhmc.

    import hmc
    sess = hmc.create_session(mem_type=hmc.MemoryType.CPU)
    sess.connect("10.0.0.1", 2025, conn=hmc.ConnType.UCX)
    sess.put("10.0.0.1", b"hello hmc", conn=hmc.ConnType.UCX)

hmc.init_world() joins the world of the launcher (mpirun, torchrun, hmcrun)
and gives rank, size, collectives and a communicator (hmc.world); a
session's register()/import_region() give one-sided transfers and remote
atomics on memory outside its buffer (hmc.regions); hmc.pool
puts every rank's memory into one global address space over a world.
See hmc.session for the two calling styles and how they map onto libhmc,
hmc.payload for what can be sent. libhmc is found through HMC_LIBRARY (a
path), the source tree's build/lib, the dynamic linker, or <prefix>/lib.
"""

from . import _lib, collective, pool
from .buffer import IOBuffer
from .collective import Group
from .enums import AmoOp, ConnType, MemoryType, Status
from .errors import HMCBufferError, HMCError, HMCStatusError, HMCTimeoutError
from .messages import ANY_SOURCE, ANY_TAG, P2POp, Request
from .regions import MR_DESC_MAX, Region, RemoteRegion
from .session import Session, create_session
from .world import World, init_world

__version__ = "0.1.0"

__all__ = [
    "ANY_SOURCE", "ANY_TAG", "AmoOp", "ConnType", "Group", "HMCBufferError",
    "HMCError", "HMCStatusError", "MR_DESC_MAX", "P2POp", "Region",
    "RemoteRegion", "Request",
    "HMCTimeoutError", "IOBuffer", "MemoryType", "Session", "Status",
    "World", "create_session", "init_world", "library_path",
    "memory_supported", "pool", "version",
]


def version():
    """The version of the libhmc that is loaded."""
    return _lib.lib().hmc_version().decode()


def library_path():
    """The path libhmc was loaded from."""
    return _lib.lib().path


def memory_supported():
    """The first device memory type with a device (CUDA, ROCm, Ascend, CNRT,
    MUSA), else CPU."""
    from .buffer import resolve_mem_type
    return resolve_mem_type(MemoryType.DEFAULT)
