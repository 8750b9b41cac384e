# SPDX-License-Identifier: MIT
"""The ctypes copies of libhmc's structs and constants (hmc._lib, hmc.enums,
hmc.pool) against <hmc/hmc.h> and <hmc/pool.h> themselves: a small C
program, compiled here against the headers of this tree, prints each
struct's size and each field's offset and size and each constant's value,
which must equal what ctypes and Python have. Every struct the headers
define must have a copy, and the copies must cover their struct byte for
byte (the headers have no padding)."""

import ctypes
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import hmc
import hmc.pool
from hmc import _lib
from support import PY_ROOT

HEADER_DIR = os.path.join(os.path.dirname(PY_ROOT), "include")
HEADERS = [os.path.join(HEADER_DIR, "hmc", h) for h in ("hmc.h", "pool.h")]

STRUCTS = {
    "hmc_comm_opts": _lib.CommOpts,
    "hmc_buf_opts": _lib.BufOpts,
    "hmc_mr_opts": _lib.MrOpts,
    "hmc_msg_status": _lib.MsgStatus,
    "hmc_msg": _lib.Msg,
    "hmc_pool_opts": hmc.pool.PoolOpts,
    "hmc_pool_copy_desc": hmc.pool.CopyDesc,
}

CONSTANTS = {
    "HMC_COMM_F_NO_PROGRESS_THREAD": _lib.COMM_F_NO_PROGRESS_THREAD,
    "HMC_COMM_F_NO_UNIX": _lib.COMM_F_NO_UNIX,
    "HMC_BUF_F_REQUIRE_KMOD": _lib.BUF_F_REQUIRE_KMOD,
    "HMC_BUF_F_NO_KMOD": _lib.BUF_F_NO_KMOD,
    "HMC_MR_REMOTE_READ": _lib.MR_REMOTE_READ,
    "HMC_MR_REMOTE_WRITE": _lib.MR_REMOTE_WRITE,
    "HMC_MR_DESC_MAX": _lib.MR_DESC_MAX,
    "HMC_MEM_CPU": hmc.MemoryType.CPU,
    "HMC_MEM_CUDA": hmc.MemoryType.CUDA,
    "HMC_MEM_ROCM": hmc.MemoryType.ROCM,
    "HMC_MEM_ASCEND": hmc.MemoryType.ASCEND,
    "HMC_MEM_CNRT": hmc.MemoryType.CNRT,
    "HMC_MEM_MUSA": hmc.MemoryType.MUSA,
    "HMC_TRANSPORT_UCX": hmc.ConnType.UCX,
    "HMC_TRANSPORT_VERBS": hmc.ConnType.VERBS,
    "HMC_MSG_SEND": _lib.MSG_SEND,
    "HMC_MSG_RECV": _lib.MSG_RECV,
    "HMC_TRANSPORT_SHM": hmc.ConnType.SHM,
    "HMC_TRANSPORT_TCP": hmc.ConnType.TCP,
    "HMC_POOL_HOST": hmc.pool.HOST,
    "HMC_POOL_DEVICE": hmc.pool.DEVICE,
    "HMC_POOL_COPY_ASYNC": hmc.pool.COPY_ASYNC,
    "HMC_POOL_EXTRA_MAX": hmc.pool.EXTRA_MAX,
}
CONSTANTS.update(("HMC_POOL_" + k.name, k) for k in hmc.pool.CopyKind)
CONSTANTS.update(("HMC_AMO_" + k.name, k) for k in hmc.AmoOp)


def c_program():
    lines = ["#include <stddef.h>", "#include <stdio.h>",
             "#include <hmc/hmc.h>", "#include <hmc/pool.h>",
             "int main(void)", "{"]
    for name, cls in STRUCTS.items():
        lines.append('printf("%s %%zu\\n", sizeof(struct %s));' % (name, name))
        for field, _ in cls._fields_:
            lines.append(
                'printf("%s.%s %%zu %%zu\\n", offsetof(struct %s, %s), '
                'sizeof(((struct %s *)0)->%s));'
                % (name, field, name, field, name, field))
    for name in CONSTANTS:
        lines.append('printf("%s %%lld\\n", (long long)(%s));' % (name, name))
    lines += ["return 0;", "}"]
    return "\n".join(lines) + "\n"


def header_layout():
    """{name: value} as the C compiler sees the header."""
    cc = os.environ.get("CC", "cc")
    if not shutil.which(cc):
        raise AssertionError("no C compiler (%s) to read the header with" % cc)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "layout.c")
        exe = os.path.join(tmp, "layout")
        with open(src, "w") as f:
            f.write(c_program())
        subprocess.run([cc, "-std=gnu11", "-Wall", "-Werror", "-I", HEADER_DIR,
                        src, "-o", exe], check=True)
        out = subprocess.run([exe], check=True, capture_output=True,
                             text=True).stdout
    layout = {}
    for line in out.splitlines():
        key, *values = line.split()
        layout[key] = tuple(int(v) for v in values)
    return layout


class LayoutTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.layout = header_layout()

    def test_every_struct_has_a_copy(self):
        defined = set()
        for header in HEADERS:
            with open(header) as f:
                defined |= set(re.findall(r"^struct (hmc_\w+) \{",
                                          f.read(), re.M))
        self.assertEqual(defined, set(STRUCTS))

    def test_structs(self):
        for name, cls in STRUCTS.items():
            with self.subTest(struct=name):
                size, = self.layout[name]
                self.assertEqual(ctypes.sizeof(cls), size)
                end = 0
                for field, ctype in cls._fields_:
                    offset, fsize = self.layout["%s.%s" % (name, field)]
                    self.assertEqual(getattr(cls, field).offset, offset, field)
                    self.assertEqual(ctypes.sizeof(ctype), fsize, field)
                    # No gap: the copy names every byte of the struct.
                    self.assertEqual(offset, end, "bytes before " + field)
                    end = offset + fsize
                self.assertEqual(end, size, "bytes after the last field")

    def test_constants(self):
        for name, value in CONSTANTS.items():
            with self.subTest(constant=name):
                self.assertEqual(self.layout[name], (int(value),))


if __name__ == "__main__":
    unittest.main()
