# SPDX-License-Identifier: MIT
"""Sessions on loopback: both calling styles, the put/get_into protocol,
errors, timeouts, Ctrl-C and the GIL. Pairs of sessions share this process
(each has its own communicator); SIGINT goes to a child process."""

import errno
import os
import signal
import threading
import time
import unittest

import hmc
from support import (LOOPBACK, PEERS, Peer, TestCase, free_port, pattern,
                     try_import)

np = try_import("numpy")

SIZE = 4 << 20
UCX = hmc.ConnType.UCX


def session(**kw):
    kw.setdefault("buffer_size", SIZE)
    kw.setdefault("timeout", 20)
    return hmc.create_session(**kw)


class Base(TestCase):
    def new(self, **kw):
        s = session(**kw)
        self.addCleanup(s.close)
        return s

    def hello(self, cli, srv, srv_peer=LOOPBACK, cli_peer=LOOPBACK):
        """A tag from @cli to @srv: then the listener knows the dialer too
        (hmc_comm_connect() returns before the listener's side is up)."""
        cli.ctrl_send(cli_peer, 0x5A)
        self.assertEqual(srv.ctrl_recv(srv_peer), 0x5A)


class IpKeyedTest(Base):
    """init_server(ip, port) / connect(ip, port) / put / get_into."""

    def setUp(self):
        self.port = free_port()
        self.srv = self.new()
        self.assertEqual(self.srv.init_server(LOOPBACK, self.port, conn=UCX),
                         hmc.Status.SUCCESS)
        self.cli = self.new()                   # address: its route's
        self.cli.connect(LOOPBACK, self.port, conn=UCX)

    def test_ranks_from_port_and_address(self):
        self.assertEqual(self.srv.rank, self.port)
        self.assertEqual(self.cli.rank, 0x7f000001)
        other = self.new(local_ip="127.0.0.2")
        other.connect(LOOPBACK, self.port, conn=UCX)
        self.assertEqual(other.rank, 0x7f000002)
        self.hello(self.cli, self.srv)
        self.hello(other, self.srv, "127.0.0.2")
        self.assertEqual(self.srv.peers, [0x7f000001, 0x7f000002])

    def test_messages_by_address(self):
        other = self.new(local_ip="127.0.0.2")
        other.connect(LOOPBACK, self.port, conn=UCX)
        a, b = pattern(100003, 10), pattern(SIZE // 2, 11)
        self.assertEqual(self.cli.put(LOOPBACK, a, conn=UCX), len(a))
        other.put(LOOPBACK, b, conn=UCX, bias=SIZE // 2)   # not a's bias
        got_b = bytearray(SIZE)                 # the later one first
        self.assertEqual(self.srv.get_into("127.0.0.2", got_b), len(b))
        self.assertBytes(got_b[:len(b)], b)
        got_a = bytearray(SIZE)
        self.assertEqual(self.srv.get_into(LOOPBACK, got_a, bias=0), len(a))
        self.assertBytes(got_a[:len(a)], a)
        self.assertBytes(got_a[len(a):], bytes(SIZE - len(a)))

    def test_echo_and_bias(self):
        msg = pattern(5000, 12)
        self.cli.put(LOOPBACK, msg, bias=4096, size=3000)
        self.assertBytes(self.srv.get(LOOPBACK), msg[:3000])
        self.srv.put(LOOPBACK, msg, bias=8192)
        self.assertBytes(self.cli.get(10000, LOOPBACK, bias=8192),  # size, ip
                         msg)
        self.cli.put(LOOPBACK, msg, bias=100)
        with self.assertRaises(hmc.HMCError) as cm:     # not where it is
            self.srv.get(LOOPBACK, bias=0)
        self.assertIn("at bias 100, not 0", str(cm.exception))
        self.assertBytes(self.srv.buf.get(5000, 100), msg)
        self.cli.put(LOOPBACK, b"acknowledged")
        self.assertEqual(self.srv.get(LOOPBACK), b"acknowledged")

    @unittest.skipIf(np is None, "NumPy is not installed")
    def test_numpy_round_trip(self):
        rng = np.random.default_rng(13)
        x = rng.random((257, 129))
        self.assertEqual(self.cli.put(LOOPBACK, x, conn=UCX), x.nbytes)
        y = np.empty_like(x)
        self.assertEqual(self.srv.get_into(LOOPBACK, y, conn=UCX), x.nbytes)
        self.assertBytes(y.tobytes(), x.tobytes())
        self.srv.put(LOOPBACK, y[::2])          # not contiguous: copied
        z = np.empty((129, 129))
        self.cli.get_into(LOOPBACK, z)
        self.assertBytes(z.tobytes(), x[::2].tobytes())

    def test_second_put_waits_for_the_first_to_be_taken(self):
        m1, m2 = pattern(200000, 14), pattern(200000, 15)
        self.cli.put(LOOPBACK, m1)
        second = threading.Thread(target=self.cli.put, args=(LOOPBACK, m2))
        second.start()
        second.join(0.3)
        self.assertTrue(second.is_alive())      # blocked: m1 not taken
        self.assertBytes(self.srv.get(LOOPBACK), m1)
        second.join(20)
        self.assertFalse(second.is_alive())
        self.assertBytes(self.srv.get(LOOPBACK), m2)

    def test_too_small_destination(self):
        msg = pattern(1000, 16)
        self.cli.put(LOOPBACK, msg)
        with self.assertRaises(hmc.HMCBufferError) as cm:
            self.srv.get_into(LOOPBACK, bytearray(999))
        self.assertIn("1000-byte message", str(cm.exception))
        self.assertBytes(self.srv.buf.get(1000), msg)   # still there
        self.cli.put(LOOPBACK, b"next")                 # it was acknowledged
        self.assertEqual(self.srv.get(LOOPBACK), b"next")

    def test_bad_destination_is_not_received_into(self):
        self.cli.put(LOOPBACK, b"abc")
        with self.assertRaises(hmc.HMCBufferError):
            self.srv.get_into(LOOPBACK, b"xyz")

    def test_tags_and_messages_interleaved(self):
        self.cli.ctrl_send(LOOPBACK, 5)
        self.cli.put(LOOPBACK, b"payload")
        self.cli.ctrl_send(LOOPBACK, 6)
        self.assertEqual(self.srv.get(LOOPBACK), b"payload")
        self.assertEqual(self.srv.ctrl_recv(LOOPBACK), 5)
        self.assertEqual(self.srv.ctrl_recv(LOOPBACK), 6)
        with self.assertRaises(hmc.HMCError) as cm:
            self.cli.ctrl_send(LOOPBACK, 0x484D << 48)
        self.assertEqual(cm.exception.errno, errno.EINVAL)

    def test_one_sided_get_into(self):
        data = pattern(65536, 17)
        self.srv.buf.put(data, offset=512)
        out = bytearray(65536)
        self.cli.get_into(LOOPBACK, out, bias=512, one_sided=True)
        self.assertBytes(out, data)
        self.assertBytes(self.cli.get(LOOPBACK, 100, bias=512,
                                      one_sided=True), data[:100])

    def test_waits_time_out(self):
        t0 = time.monotonic()
        with self.assertRaises(hmc.HMCTimeoutError) as cm:
            self.srv.get_into(LOOPBACK, bytearray(8), timeout=0.3)
        self.assertGreaterEqual(time.monotonic() - t0, 0.3)
        self.assertEqual(cm.exception.errno, errno.ETIMEDOUT)
        self.assertEqual(cm.exception.status, hmc.Status.TIMEOUT)
        with self.assertRaises(hmc.HMCTimeoutError):
            self.srv.ctrl_recv(LOOPBACK, timeout=0)
        self.cli.put(LOOPBACK, b"late")         # nothing was lost
        self.assertEqual(self.srv.get(LOOPBACK, timeout=0.3 + 20), b"late")

    def test_disconnect(self):
        self.assertTrue(self.cli.check_conn(LOOPBACK, conn=UCX))
        self.cli.disconnect(LOOPBACK, UCX)
        self.assertFalse(self.cli.check_conn(LOOPBACK))
        with self.assertRaises(hmc.HMCError) as cm:
            self.cli.put(LOOPBACK, b"x")
        self.assertEqual(cm.exception.errno, errno.ENOTCONN)


class ShmTest(Base):
    """ConnType.SHM: a peer on this host maps our buffer (a memfd without
    hmc.ko); connecting succeeds only if the shm transport comes up."""

    def test_put_and_get_over_shm(self):
        port = free_port()
        srv = self.new()
        srv.init_server(LOOPBACK, port)
        cli = self.new()
        cli.connect(LOOPBACK, port, conn=hmc.ConnType.SHM)
        self.hello(cli, srv)
        payload = pattern(SIZE // 2 + 12345, 31)
        self.assertEqual(cli.put(LOOPBACK, payload, conn=hmc.ConnType.SHM),
                         len(payload))
        out = bytearray(len(payload))
        self.assertEqual(srv.get_into(LOOPBACK, out, conn=hmc.ConnType.SHM),
                         len(payload))
        self.assertBytes(out, payload)


class RankKeyedTest(Base):
    """hmc-readme.md's init_server/connect/put_remote/ctrl_send."""

    def setUp(self):
        self.ports = dict(ucx=free_port(), rdma=free_port(), ctrl=free_port())
        self.srv = self.new(local_ip=LOOPBACK)
        self.srv.init_server(bind_ip=LOOPBACK, ucx_port=self.ports["ucx"],
                             rdma_port=self.ports["rdma"],
                             ctrl_tcp_port=self.ports["ctrl"], self_id=0,
                             ctrl_uds_dir="/tmp")
        self.cli = self.new(local_ip=LOOPBACK)
        self.cli.connect(peer_id=0, self_id=1, peer_ip=LOOPBACK,
                         data_port=self.ports["ucx"],
                         ctrl_tcp_port=self.ports["ctrl"], conn=UCX)
        self.hello(self.cli, self.srv, 1, 0)

    def put_remote(self, **kw):
        return self.cli.put_remote(LOOPBACK, self.ports["ucx"], conn=UCX, **kw)

    def test_quick_start(self):
        self.assertEqual((self.srv.rank, self.cli.rank), (0, 1))
        self.assertEqual(self.srv.listen_port, self.ports["ctrl"])
        payload = pattern(300001, 20)
        n = self.cli.buf.put(payload, offset=0)
        self.put_remote(local_off=0, remote_off=0, nbytes=n)
        self.cli.ctrl_send(peer=0, tag=1)
        self.assertEqual(self.srv.ctrl_recv(peer=1), 1)
        out = bytearray(n)
        self.srv.buf.get_into(out, nbytes=n, offset=0)
        self.assertBytes(out, payload)

    @unittest.skipIf(np is None, "NumPy is not installed")
    def test_numpy_round_trip(self):
        x = np.random.default_rng(21).integers(0, 1 << 31, 1 << 18,
                                               dtype=np.int32)
        n = self.cli.buf.put(x, offset=0)
        self.put_remote(local_off=0, remote_off=0, nbytes=n)
        self.cli.buf.put(bytes(n))              # the get must refill it
        y = np.empty_like(x)
        self.cli.get_remote(LOOPBACK, self.ports["ucx"], local_off=0,
                            remote_off=0, nbytes=y.nbytes, conn=UCX)
        self.cli.buf.get_into(y, nbytes=y.nbytes, offset=0)
        self.assertBytes(y.tobytes(), x.tobytes())

    def test_nonblocking(self):
        data = pattern(8 * 65536, 22)
        self.cli.buf.put(data)
        reqs = [self.cli.put_nb(LOOPBACK, self.ports["ucx"], i * 65536,
                                SIZE - (i + 1) * 65536, 65536, conn=UCX)
                for i in range(8)]
        self.assertEqual(self.cli.wait(reqs), hmc.Status.SUCCESS)
        self.cli.flush(0)
        req = self.cli.get_nb(LOOPBACK, self.ports["ucx"], local_off=SIZE // 2,
                              remote_off=SIZE - 8 * 65536, nbytes=8 * 65536)
        self.cli.wait(req, timeout=20)
        want = b"".join(data[i * 65536:(i + 1) * 65536]
                        for i in reversed(range(8)))
        self.assertBytes(self.cli.buf.get(8 * 65536, SIZE // 2), want)
        with self.assertRaises(hmc.HMCError) as cm:
            self.cli.wait(req)                  # already collected
        self.assertEqual(cm.exception.errno, errno.ENOENT)

    def test_progress(self):
        """progress() polls without waiting and says how many events it
        handled; a target that polls it takes puts undisturbed."""
        data = pattern(65536, 23)
        self.cli.buf.put(data)
        req = self.cli.put_nb(LOOPBACK, self.ports["ucx"], 0, 0, 65536,
                              conn=UCX)
        counts = [self.srv.progress() for _ in range(100)]
        self.assertTrue(all(isinstance(n, int) and n >= 0 for n in counts))
        self.cli.wait(req, timeout=20)
        self.cli.flush(0)
        self.assertBytes(self.srv.buf.get(65536, 0), data)

    def test_server_puts_to_a_rank(self):
        data = pattern(4096, 23)
        self.srv.buf.put(data, offset=100)
        self.srv.put_remote(peer=1, local_off=100, remote_off=200,
                            nbytes=4096)
        self.srv.ctrl_send(1, 9)
        self.assertEqual(self.cli.ctrl_recv(0), 9)
        self.assertBytes(self.cli.buf.get(4096, 200), data)

    def test_out_of_range_writes_nothing(self):
        before = self.srv.buf.get(SIZE)
        for kw in (dict(local_off=0, remote_off=SIZE - 10, nbytes=11),
                   dict(local_off=SIZE - 10, remote_off=0, nbytes=11),
                   dict(local_off=0, remote_off=1 << 62, nbytes=1)):
            with self.assertRaises(hmc.HMCError) as cm:
                self.put_remote(**kw)
            self.assertEqual(cm.exception.errno, errno.ERANGE)
        with self.assertRaises(hmc.HMCError) as cm:
            self.put_remote(local_off=-1, remote_off=0, nbytes=1)
        self.assertEqual(cm.exception.errno, errno.ERANGE)
        self.cli.ctrl_send(0, 1)                # flushes the puts, if any
        self.assertEqual(self.srv.ctrl_recv(1), 1)
        self.assertEqual(self.srv.buf.get(SIZE), before)

    def test_wrong_peer_or_transport(self):
        with self.assertRaises(hmc.HMCError) as cm:
            self.cli.put_remote(LOOPBACK, self.ports["ucx"], 0, 0, 1,
                                conn=hmc.ConnType.RDMA)
        self.assertEqual(cm.exception.errno, errno.EPROTONOSUPPORT)
        with self.assertRaises(hmc.HMCError) as cm:
            self.srv.put_remote(peer=7, local_off=0, remote_off=0, nbytes=1)
        self.assertEqual(cm.exception.errno, errno.ENOTCONN)
        self.assertIn("connected ranks: [1]", str(cm.exception))
        with self.assertRaises(hmc.HMCError) as cm:     # rank is fixed
            self.cli.connect(peer_id=0, self_id=2, peer_ip=LOOPBACK,
                             data_port=self.ports["ucx"])
        self.assertEqual(cm.exception.errno, errno.EINVAL)
        self.cli.connect(peer_id=0, self_id=1, peer_ip=LOOPBACK,   # no-op
                         data_port=self.ports["ucx"],
                         ctrl_tcp_port=self.ports["ctrl"])

    def test_close_server_and_listen_again(self):
        self.srv.close_server()
        self.assertIsNone(self.srv.rank)
        port = free_port()
        self.srv.init_server(bind_ip=LOOPBACK, ctrl_tcp_port=port, self_id=5)
        c = self.new()
        c.connect(peer_id=5, self_id=6, peer_ip=LOOPBACK, data_port=port)
        c.ctrl_send(5, 42)
        self.assertEqual(self.srv.ctrl_recv(6), 42)


class ConnectTest(Base):
    def test_waits_for_the_server_to_listen(self):
        port = free_port()
        srv = self.new()

        def start_later():
            time.sleep(0.5)
            srv.init_server(LOOPBACK, port)

        t = threading.Thread(target=start_later)
        t.start()
        cli = self.new()
        cli.connect(LOOPBACK, port, conn=UCX, timeout=20)
        t.join()
        cli.put(LOOPBACK, b"late server")
        self.assertEqual(srv.get(LOOPBACK), b"late server")

    def test_nobody_listening(self):
        cli = self.new()
        t0 = time.monotonic()
        with self.assertRaises(hmc.HMCError) as cm:
            cli.connect(LOOPBACK, free_port(), timeout=0.5)
        self.assertEqual(cm.exception.errno, errno.ECONNREFUSED)
        self.assertGreaterEqual(time.monotonic() - t0, 0.4)

    def test_ip_keyed_server_needs_a_port(self):
        with self.assertRaises(hmc.HMCError):
            self.new().init_server(LOOPBACK, 0)


class WaitTest(Base):
    def test_gil_released_while_waiting(self):
        srv = self.new()
        srv.init_server(bind_ip=LOOPBACK, ctrl_tcp_port=free_port(),
                        self_id=0)
        waiter = threading.Thread(
            target=lambda: self.assertRaises(hmc.HMCTimeoutError,
                                             srv.ctrl_recv, 1, 1.5))
        waiter.start()
        time.sleep(0.1)
        # Sleeping 1 ms needs the GIL back each time: a waiter holding it
        # through its 100 ms slices would allow about 10 rounds a second.
        rounds, end = 0, time.monotonic() + 1.0
        while time.monotonic() < end:
            time.sleep(0.001)
            rounds += 1
        self.assertTrue(waiter.is_alive())
        waiter.join()
        self.assertGreater(rounds, 100)

    def test_sigint_interrupts_waits(self):
        for what in ("get_into", "ctrl_recv"):
            with self.subTest(what=what):
                peer = Peer([os.path.join(PEERS, "sigint_wait.py"), what,
                             str(free_port())])
                try:
                    peer.expect("waiting")
                    time.sleep(0.3)
                    t0 = time.monotonic()
                    peer.proc.send_signal(signal.SIGINT)
                    status, out = peer.finish(timeout=20)
                    elapsed = time.monotonic() - t0
                finally:
                    peer.kill()
                self.assertEqual(status, 0, out)
                self.assertIn("KeyboardInterrupt in %s" % what, out)
                self.assertLess(elapsed, 10, out)   # not the 60 s timeout


if __name__ == "__main__":
    unittest.main()
