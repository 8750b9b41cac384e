# SPDX-License-Identifier: MIT
"""Messages by rank: send_data_to/recv_data_from, isend/irecv and
batch_isend_irecv of bytes-likes, NumPy arrays and torch tensors, every
byte checked; and put()s to disjoint ranges that queue instead of waiting.
Sessions of one process, over loopback, with 4 MiB buffers."""

import errno
import threading
import unittest

import hmc
from support import LOOPBACK, TestCase, free_port, pattern, try_import

np = try_import("numpy")
torch = try_import("torch")

SIZE = 4 << 20
EAGER = 32 * 1024
SLOT = 256 * 1024
UCX = hmc.ConnType.UCX


class Pair(TestCase):
    """Rank 0 listens, rank 1 dials; both buffers 4 MiB, half of it the
    message region."""

    def setUp(self):
        self.ports = dict(ucx=free_port(), rdma=free_port(), ctrl=free_port())
        self.r0 = self.new()
        self.r0.init_server(bind_ip=LOOPBACK, ucx_port=self.ports["ucx"],
                            rdma_port=self.ports["rdma"],
                            ctrl_tcp_port=self.ports["ctrl"], self_id=0)
        self.r1 = self.new()
        self.r1.connect(peer_id=0, self_id=1, peer_ip=LOOPBACK,
                        data_port=self.ports["ucx"],
                        ctrl_tcp_port=self.ports["ctrl"], conn=UCX)
        self.r1.ctrl_send(0, 0x5A)              # both sides are up
        self.assertEqual(self.r0.ctrl_recv(1), 0x5A)

    def new(self):
        s = hmc.create_session(buffer_size=SIZE, local_ip=LOOPBACK,
                               timeout=20, msg_region=SIZE // 2,
                               msg_slot_size=SLOT)
        self.addCleanup(s.close)
        return s


class MessagesTest(Pair):
    def test_sizes_around_every_boundary(self):
        sizes = [0, 1, EAGER - 1, EAGER, EAGER + 1, SLOT - 1, SLOT + 1,
                 4 * SLOT, 4 * SLOT + 1, 3 * (1 << 20) + 7]
        sends = [self.r1.isend(pattern(n, n), 0, tag=i)
                 for i, n in enumerate(sizes)]
        for i, n in reversed(list(enumerate(sizes))):   # by tag
            out = bytearray(n + 16)
            got = self.r0.recv_data_from(peer=1, dest_obj=out, tag=i)
            self.assertEqual(got, n)
            self.assertBytes(out[:n], pattern(n, n))
            self.assertBytes(out[n:], bytes(16))        # nothing past it
        self.assertEqual([r.wait() for r in sends], sizes)

    def test_receive_posted_before_the_send(self):
        out = bytearray(SLOT * 3)
        r = self.r0.irecv(out, 1, tag=4)
        self.assertFalse(r.test())
        msg = pattern(len(out), 41)
        self.assertEqual(self.r1.send_data_to(peer=0, data=msg, tag=4),
                         len(msg))
        self.assertEqual(r.wait(), len(msg))
        self.assertEqual((r.source, r.tag), (1, 4))
        self.assertBytes(out, msg)

    def test_by_address_as_the_reference(self):
        msg = pattern(100000, 42)
        t = threading.Thread(target=self.r1.send_data_to,
                             args=(LOOPBACK, self.ports["ucx"], msg))
        t.start()
        out = bytearray(200000)
        n = self.r0.recv_data_from(1, None, out)   # rank 1, the whole cap
        t.join(20)
        self.assertEqual(n, len(msg))
        self.assertBytes(out[:n], msg)

    def test_wildcards_and_order(self):
        sizes = [1000 + k * 50000 for k in range(6)]    # eager and not
        sends = [self.r1.isend(pattern(n, k), 0, tag=k % 2)
                 for k, n in enumerate(sizes)]
        left = list(range(6))
        for i in range(6):
            tag = hmc.ANY_TAG if i % 3 else i % 2
            # one sender: the first message not taken that matches
            k = next(k for k in left if tag == hmc.ANY_TAG or k % 2 == tag)
            left.remove(k)
            out = bytearray(400000)
            r = self.r0.irecv(out, None, tag)
            self.assertEqual(r.wait(), sizes[k])
            self.assertEqual((r.source, r.tag), (1, k % 2))
            self.assertBytes(out[:sizes[k]], pattern(sizes[k], k))
        for r in sends:
            r.wait()

    def test_too_small_fails_on_both_sides(self):
        s = self.r1.isend(pattern(SLOT, 43), 0, tag=1)
        r = self.r0.irecv(bytearray(SLOT - 1), 1, tag=1)
        with self.assertRaises(hmc.HMCError) as cm:
            r.wait()
        self.assertEqual(cm.exception.errno, errno.EMSGSIZE)
        self.assertEqual(r.nbytes, SLOT)
        with self.assertRaises(hmc.HMCError) as cm:
            s.wait()
        self.assertEqual(cm.exception.errno, errno.EMSGSIZE)

    def test_errors(self):
        with self.assertRaises(hmc.HMCError) as cm:
            self.r1.isend(b"x", 7)
        self.assertEqual(cm.exception.errno, errno.ENOTCONN)
        with self.assertRaises(ValueError):
            self.r1.isend(b"x", 0, tag=-1)
        with self.assertRaises(hmc.HMCBufferError):
            self.r0.irecv(b"read-only", 1)
        r = self.r0.irecv(bytearray(8), 1, tag=99)
        with self.assertRaises(hmc.HMCTimeoutError):
            r.wait(timeout=0.2)
        self.r1.isend(b"late", 0, tag=99).wait()
        self.assertEqual(r.wait(), 4)            # still valid after it

    @unittest.skipIf(np is None, "NumPy is not installed")
    def test_numpy(self):
        x = np.random.default_rng(44).standard_normal((513, 257))
        y = np.empty_like(x)
        reqs = self.r0.batch_isend_irecv([hmc.P2POp("irecv", y, 1, tag=2)])
        reqs += self.r1.batch_isend_irecv(
            [hmc.P2POp(hmc.Session.isend, x[::2], 0, tag=3),   # a copy
             hmc.P2POp("isend", x, 0, tag=2)])
        z = np.empty_like(x[::2])
        self.assertEqual(self.r0.recv_data_from(peer=1, dest_obj=z, tag=3),
                         z.nbytes)
        for r in reqs:
            r.wait()
        self.assertBytes(y.tobytes(), x.tobytes())
        self.assertBytes(z.tobytes(), x[::2].tobytes())

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_torch_cpu(self):
        g = torch.Generator().manual_seed(45)
        x = torch.randn(300, 1000, generator=g)
        y = torch.empty_like(x)
        r = self.r0.irecv(y, 1, tag=5)
        self.r1.isend(x, 0, tag=5).wait()
        self.assertEqual(r.wait(), x.numel() * x.element_size())
        self.assertTrue(torch.equal(x, y))

    @unittest.skipIf(torch is None or not torch.cuda.is_available(),
                     "no CUDA device for torch")
    def test_torch_cuda(self):
        x = torch.randn(1 << 20, device="cuda")
        y = torch.empty_like(x)
        r = self.r0.irecv(y, 1, tag=6)
        self.r1.isend(x, 0, tag=6).wait()
        r.wait()
        self.assertTrue(torch.equal(x, y))


class QueuedPutTest(TestCase):
    """put() to disjoint ranges queues; an overlapping one waits."""

    def setUp(self):
        port = free_port()
        self.srv = hmc.create_session(buffer_size=SIZE, timeout=20)
        self.addCleanup(self.srv.close)
        self.srv.init_server(LOOPBACK, port, conn=UCX)
        self.cli = hmc.create_session(buffer_size=SIZE, timeout=20)
        self.addCleanup(self.cli.close)
        self.cli.connect(LOOPBACK, port, conn=UCX)

    def test_disjoint_puts_do_not_wait(self):
        a, b = pattern(100000, 46), pattern(100000, 47)
        self.cli.put(LOOPBACK, a, bias=0)
        done = threading.Event()

        def second():
            self.cli.put(LOOPBACK, b, bias=1 << 20, timeout=5)
            done.set()
        t = threading.Thread(target=second)
        t.start()
        self.assertTrue(done.wait(5))           # nothing taken yet
        t.join()
        self.assertBytes(self.srv.get(LOOPBACK), a)
        self.assertBytes(self.srv.get(LOOPBACK), b)

    def test_overlapping_put_waits_until_taken(self):
        a, b = pattern(100000, 48), pattern(100000, 49)
        self.cli.put(LOOPBACK, a, bias=0)
        self.cli.put(LOOPBACK, b, bias=1 << 20)
        third = threading.Thread(target=self.cli.put,
                                 args=(LOOPBACK, a[:10], UCX, (1 << 20) + 50))
        third.start()
        third.join(0.3)
        self.assertTrue(third.is_alive())       # b there is not taken
        self.assertBytes(self.srv.get(LOOPBACK), a)
        third.join(0.3)
        self.assertTrue(third.is_alive())       # a taken, b not yet
        self.assertBytes(self.srv.get(LOOPBACK), b)
        third.join(20)
        self.assertFalse(third.is_alive())
        self.assertBytes(self.srv.get(LOOPBACK), a[:10])


if __name__ == "__main__":
    unittest.main()
