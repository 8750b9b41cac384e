# SPDX-License-Identifier: MIT
"""The GPU paths of the bindings against tests/gpu's mock runtimes (fake
devices in host memory that check how they are driven): run with the
mocks on LD_LIBRARY_PATH.

    gpu_mock.py cuda|rocm|ascend|cnrt|musa
Prints "ok" and exits 0, or raises.
"""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hmc                                      # noqa: E402
from support import first_difference, pattern  # noqa: E402

kind = sys.argv[1]
mem_type = {"cuda": hmc.MemoryType.CUDA, "rocm": hmc.MemoryType.ROCM,
            "ascend": hmc.MemoryType.ASCEND, "cnrt": hmc.MemoryType.CNRT,
            "musa": hmc.MemoryType.MUSA}[kind]
runtime = {"cuda": "libcuda.so.1", "rocm": "libamdhip64.so",
           "ascend": "libascendcl.so", "cnrt": "libcnrt.so",
           "musa": "libmusart.so"}[kind]
SIZE = 1 << 20


def same(got, want):
    diff = first_difference(got, want)
    assert diff is None, diff


if kind == "cuda":
    assert hmc.memory_supported() == hmc.MemoryType.CUDA
    default = hmc.IOBuffer(size=4096, mem_type=hmc.MemoryType.DEFAULT)
    assert default.mem_type == hmc.MemoryType.CUDA
    default.close()

gpu = hmc.IOBuffer(size=SIZE, mem_type=mem_type, device_id=1)
other = hmc.IOBuffer(size=SIZE, mem_type=mem_type, device_id=1)
cpu = hmc.IOBuffer(size=SIZE)
assert (gpu.backing, gpu.device_id, gpu.mem_type) == ("device", 1, mem_type)

data = pattern(SIZE - 100, 30)
assert gpu.put(data, offset=100) == len(data)               # host to device
same(gpu.get(len(data), 100), data)                         # device to host
out = bytearray(SIZE)
gpu.get_into(out, nbytes=len(data), offset=100)
same(out[:len(data)], data)
gpu.copy_within(0, 100, len(data))                          # overlapping
same(gpu.get(len(data), 0), data)

# Device pointers (what a CUDA tensor's data_ptr() gives).
assert cpu.put(gpu.ptr, nbytes=4096, device=kind) == 4096   # device to host
same(cpu.get(4096), data[:4096])
other.put(gpu.ptr + 4096, offset=8, nbytes=65536, device=kind)  # to device
same(other.get(65536, 8), data[4096:4096 + 65536])
cpu.get_into(other.ptr, nbytes=4096, offset=0, device=kind)     # from host
same(other.get(4096), data[:4096])

for b in (gpu, other, cpu):
    b.close()
msg = ctypes.create_string_buffer(4096)
if ctypes.CDLL(runtime).mock_report(msg, len(msg)):
    raise AssertionError("mock %s: %s" % (runtime, msg.value.decode()))
print("ok", flush=True)
