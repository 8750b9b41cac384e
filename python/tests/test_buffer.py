# SPDX-License-Identifier: MIT
"""IOBuffer and payloads, in one process: every kind of payload in and out,
bad destinations, out-of-range offsets, enums and errors."""

import array
import errno
import os
import re
import unittest

import hmc
from support import PEERS, PY_ROOT, Peer, TestCase, pattern, try_import

np = try_import("numpy")
torch = try_import("torch")

SIZE = 1 << 20


class BufferTest(TestCase):
    def setUp(self):
        self.buf = hmc.IOBuffer(size=SIZE)
        self.addCleanup(self.buf.close)

    def test_bytes_like_round_trip(self):
        data = pattern(SIZE // 2 + 3, 1)
        sources = [data, bytearray(data), memoryview(data),
                   array.array("B", data)]
        for i, src in enumerate(sources):
            off = 1000 * i + 7
            self.assertEqual(self.buf.put(src, offset=off), len(data))
            n = len(data)
            for dst in (bytearray(n), array.array("B", bytes(n)),
                        memoryview(bytearray(n))):
                self.assertEqual(self.buf.get_into(dst, offset=off), len(data))
                self.assertBytes(dst, data)
            self.assertBytes(self.buf.get(len(data), off), data)

    def test_prefix_with_nbytes(self):
        data = pattern(4096, 2)
        self.buf.put(bytes(8192))
        self.assertEqual(self.buf.put(data, offset=0, nbytes=100), 100)
        self.assertBytes(self.buf.get(200), data[:100] + bytes(100))
        out = bytearray(4096)
        self.assertEqual(self.buf.get_into(out, nbytes=100), 100)
        self.assertBytes(out, data[:100] + bytes(3996))
        with self.assertRaises(hmc.HMCBufferError):
            self.buf.put(data, nbytes=4097)
        with self.assertRaises(hmc.HMCBufferError):
            self.buf.get_into(out, nbytes=4097)

    def test_out_of_range_loses_nothing(self):
        data = pattern(SIZE, 3)
        self.buf.put(data)
        for off, n in ((SIZE - 10, 11), (SIZE + 1, 0), (1 << 62, 1)):
            with self.assertRaises(hmc.HMCError) as cm:
                self.buf.put(bytes(n), offset=off)
            self.assertEqual(cm.exception.errno, errno.ERANGE)
            self.assertEqual(cm.exception.status, hmc.Status.INVALID_CONFIG)
            self.assertIn("offset %d" % off, str(cm.exception))
            with self.assertRaises(hmc.HMCError) as cm:
                self.buf.get_into(bytearray(n), offset=off)
            self.assertEqual(cm.exception.errno, errno.ERANGE)
        with self.assertRaises(hmc.HMCError) as cm:
            self.buf.put(b"x", offset=-1)
        self.assertEqual(cm.exception.errno, errno.ERANGE)
        with self.assertRaises(hmc.HMCError) as cm:
            self.buf.copy_within(SIZE - 5, 0, 10)
        self.assertEqual(cm.exception.errno, errno.ERANGE)
        self.assertEqual(self.buf.put(b"", offset=SIZE), 0)   # empty, at end
        self.assertBytes(self.buf.get(SIZE), data)

    def test_copy_within_overlapping(self):
        data = pattern(10000, 4)
        self.buf.put(data, offset=100)
        self.buf.copy_within(150, 100, 10000)
        self.assertBytes(self.buf.get(10000, 150), data)
        self.buf.buffer_copy_within(0, 150, 10000)
        self.assertBytes(self.buf.get(10000, 0), data)

    def test_bad_destinations_refused(self):
        self.buf.put(pattern(64, 5))
        bad = [bytes(8), memoryview(bytes(8))]
        if np is not None:
            ro = np.zeros(8, np.uint8)
            ro.flags.writeable = False
            bad += [ro, np.zeros(16, np.uint8)[::2],
                    np.zeros((4, 4), np.uint8, order="F")]
        for dst in bad:
            before = bytes(memoryview(dst).tobytes())
            with self.assertRaises(hmc.HMCBufferError) as cm:
                self.buf.get_into(dst, nbytes=8)
            self.assertIsInstance(cm.exception, ValueError)
            self.assertRegex(str(cm.exception), "read-only|contiguous")
            self.assertEqual(memoryview(dst).tobytes(), before)

    def test_not_buffers_refused(self):
        for obj in ("text", 1.5, None, object()):
            with self.assertRaises(TypeError):
                self.buf.put(obj)
        with self.assertRaises(hmc.HMCBufferError):
            self.buf.put(12345)         # a raw address needs device=, nbytes=

    @unittest.skipIf(np is None, "NumPy is not installed")
    def test_numpy(self):
        rng = np.random.default_rng(6)
        arrays = [rng.integers(0, 1 << 31, 1000, dtype=np.int32),
                  rng.random((33, 17)),
                  rng.integers(0, 255, (5, 7, 9), dtype=np.uint8),
                  np.array(rng.integers(0, 1 << 40, 9), dtype="M8[s]")]
        for a in arrays:
            n = self.buf.put(a, offset=3)
            self.assertEqual(n, a.nbytes)
            out = np.empty_like(a)
            self.assertEqual(self.buf.get_into(out, offset=3), a.nbytes)
            np.testing.assert_array_equal(out, a)
            self.assertBytes(out.tobytes(), a.tobytes())

    @unittest.skipIf(np is None, "NumPy is not installed")
    def test_numpy_noncontiguous_source_copied(self):
        rng = np.random.default_rng(7)
        base = rng.integers(0, 1 << 15, (64, 48), dtype=np.int16)
        for src in (base[::3], base.T, base[:, 5:9], np.asfortranarray(base),
                    np.array(rng.integers(0, 9, 40), dtype="M8[s]")[::2]):
            self.assertFalse(src.flags["C_CONTIGUOUS"])
            self.assertEqual(self.buf.put(src, offset=11), src.nbytes)
            self.assertBytes(self.buf.get(src.nbytes, 11),
                             np.ascontiguousarray(src).tobytes())

    @unittest.skipIf(np is None, "NumPy is not installed")
    def test_numpy_object_arrays_refused(self):
        with self.assertRaises(hmc.HMCBufferError):
            self.buf.put(np.array([1, None, "x"], dtype=object))

    def test_closed_buffer(self):
        buf = hmc.IOBuffer(size=4096)
        buf.close()
        buf.close()
        with self.assertRaises(hmc.HMCError) as cm:
            buf.put(b"x")
        self.assertEqual(cm.exception.errno, errno.EBADF)

    def test_properties(self):
        self.assertEqual(self.buf.size, SIZE)
        self.assertEqual(self.buf.mem_type, hmc.MemoryType.CPU)
        self.assertEqual(self.buf.device_id, 0)
        self.assertIn(self.buf.backing, ("kmod", "memfd", "mlock", "anon"))
        self.assertNotEqual(self.buf.ptr, 0)
        with self.assertRaises(hmc.HMCError):
            hmc.IOBuffer(size=0)
        with self.assertRaises(hmc.HMCError) as cm:
            hmc.IOBuffer(size=4096, mem_type=hmc.MemoryType.MOORE_GPU)
        self.assertEqual(cm.exception.status, hmc.Status.UNSUPPORT)


@unittest.skipIf(torch is None, "PyTorch is not installed")
class TorchCpuTest(unittest.TestCase):
    def test_tensors(self):
        buf = hmc.IOBuffer(size=SIZE)
        self.addCleanup(buf.close)
        g = torch.Generator().manual_seed(8)
        t = torch.randint(0, 1 << 30, (4096,), dtype=torch.int32, generator=g)
        n = buf.put(t, offset=0)
        self.assertEqual(n, t.numel() * t.element_size())
        out = torch.empty_like(t)
        self.assertEqual(buf.get_into(out, nbytes=n, offset=0), n)
        self.assertTrue(torch.equal(out, t))
        m = torch.rand((64, 32), generator=g)
        buf.put(m.t(), offset=100)      # not contiguous: copied
        got = torch.empty((32, 64))
        buf.get_into(got, offset=100)
        self.assertTrue(torch.equal(got, m.t().contiguous()))
        with self.assertRaises(hmc.HMCBufferError):
            buf.get_into(torch.empty((64, 32)).t(), offset=100)


def cuda_skip_reason():
    if torch is None:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    try:
        if hmc._lib.lib().hmc_mem_device_count(int(hmc.MemoryType.CUDA)) < 1:
            return "libhmc finds no CUDA device"
    except ImportError as e:
        return str(e)
    return None


@unittest.skipIf(cuda_skip_reason(), cuda_skip_reason())
class CudaTest(TestCase):
    def test_cuda_tensor_through_cpu_buffer(self):
        buf = hmc.IOBuffer(size=SIZE)
        self.addCleanup(buf.close)
        t = torch.randn(1 << 16, device="cuda")
        n = buf.put(t, offset=64, device="cuda")
        self.assertEqual(n, t.numel() * 4)
        self.assertBytes(buf.get(n, 64), t.cpu().numpy().tobytes())
        out = torch.empty_like(t)
        buf.get_into(out, nbytes=n, offset=64, device="cuda")
        self.assertTrue(torch.equal(out, t))
        with self.assertRaises(hmc.HMCBufferError):
            buf.put(t, device="cpu")

    def test_cuda_buffer(self):
        buf = hmc.IOBuffer(size=SIZE, mem_type=hmc.MemoryType.CUDA)
        self.addCleanup(buf.close)
        self.assertEqual(buf.backing, "device")
        data = pattern(SIZE - 5, 9)
        buf.put(data, offset=5)
        self.assertBytes(buf.get(len(data), 5), data)
        t = torch.randint(0, 100, (1000,), device="cuda", dtype=torch.int64)
        buf.put(t)
        out = torch.empty_like(t)
        buf.get_into(out)
        self.assertTrue(torch.equal(out, t))


GPU_MOCKS = os.path.join(os.environ.get("HMC_BUILD", ""), "tests", "gpu",
                         "mock")


@unittest.skipUnless(os.path.exists(os.path.join(GPU_MOCKS, "libcuda.so.1")),
                     "no mock GPU runtimes in $HMC_BUILD/tests/gpu/mock")
class GpuMockTest(unittest.TestCase):
    """Device ConnBuffers and device pointers against tests/gpu's mock CUDA
    driver, HIP, AscendCL, CNRT and MUSA runtimes, in a child that finds
    them first."""

    def test_mock_runtimes(self):
        for kind in ("cuda", "rocm", "ascend", "cnrt", "musa"):
            with self.subTest(kind=kind):
                env = {"LD_LIBRARY_PATH": GPU_MOCKS, "HMC_GPU_MOCK": "1"}
                peer = Peer([os.path.join(PEERS, "gpu_mock.py"), kind],
                            env=env)
                try:
                    status, out = peer.finish(timeout=60)
                finally:
                    peer.kill()
                self.assertEqual((status, out.splitlines()[-1:]), (0, ["ok"]),
                                 out)


class ApiTest(unittest.TestCase):
    def test_enums(self):
        self.assertIs(hmc.MemoryType.NVIDIA_GPU, hmc.MemoryType.CUDA)
        self.assertIs(hmc.MemoryType.AMD_GPU, hmc.MemoryType.ROCM)
        self.assertIs(hmc.MemoryType.ASCEND_NPU, hmc.MemoryType.ASCEND)
        self.assertIs(hmc.MemoryType.CAMBRICON_MLU, hmc.MemoryType.CNRT)
        self.assertIs(hmc.MemoryType.MOORE_GPU, hmc.MemoryType.MUSA)
        self.assertIs(hmc.ConnType.RDMA, hmc.ConnType.VERBS)
        self.assertEqual(int(hmc.ConnType.UCX), 1)      # enum hmc_transport
        self.assertEqual(int(hmc.ConnType.SHM), 3)
        self.assertEqual(hmc.Status.of_errno(-errno.ETIMEDOUT),
                         hmc.Status.TIMEOUT)
        self.assertEqual(hmc.Status.of_errno(0), hmc.Status.SUCCESS)
        self.assertEqual(hmc.memory_supported(), hmc.MemoryType.CPU
                         if cuda_skip_reason() else hmc.MemoryType.CUDA)

    def test_errors(self):
        e = hmc.HMCError(-errno.ERANGE, "put")
        self.assertEqual((e.errno, e.status), (errno.ERANGE,
                                               hmc.Status.INVALID_CONFIG))
        self.assertEqual(e.strerror,
                         hmc._lib.lib().hmc_strerror(-errno.ERANGE).decode())
        self.assertTrue(str(e).startswith("put: "))
        self.assertIsInstance(e, OSError)
        self.assertIs(hmc.HMCStatusError, hmc.HMCError)
        self.assertTrue(issubclass(hmc.HMCTimeoutError, TimeoutError))

    def test_versions_agree(self):
        with open(os.path.join(PY_ROOT, "pyproject.toml")) as f:
            version = re.search(r'^version = "(.*)"', f.read(), re.M).group(1)
        self.assertEqual(hmc.__version__, version)
        self.assertEqual(hmc.version(), version)

    def test_library_from_build_tree(self):
        build = os.environ.get("HMC_BUILD")
        if os.environ.get("HMC_LIBRARY"):
            self.assertEqual(hmc.library_path(), os.environ["HMC_LIBRARY"])
        elif build:
            self.assertEqual(hmc.library_path(),
                             os.path.join(build, "lib", "libhmc.so.0"))
        else:
            self.skipTest("neither HMC_LIBRARY nor HMC_BUILD is set")


if __name__ == "__main__":
    unittest.main()
