# SPDX-License-Identifier: MIT
"""Memory regions and remote atomics (Session.register, import_region,
put_region/get_region and their _nb forms, atomic) between sessions of
this process over the tcp transport, each with its own communicator and
rank: descriptors swapped by message, every byte checked, rights, bounds,
deregistration, every atomic op, racing adds from two ranks, the notify
word; over shm, regions and atomics are refused. ProcessTest does the
same with rank 1 in a process of its own (peers/region_peer.py)."""

import errno
import gc
import os
import sys
import threading
import unittest

import hmc
from support import (LOOPBACK, PEERS, Peer, TestCase, free_port, pattern,
                     try_import)

np = try_import("numpy")
torch = try_import("torch")

SIZE = 1 << 20
TCP = hmc.ConnType.TCP
TAG_DESC = 0x3d0
MASK = {4: (1 << 32) - 1, 8: (1 << 64) - 1}


def session():
    return hmc.create_session(buffer_size=SIZE, timeout=20)


def apply(op, size, old, value, compare):
    """What AmoOp @op leaves in a word holding @old."""
    value &= MASK[size]
    return {
        hmc.AmoOp.FETCH: old,
        hmc.AmoOp.SET: value,
        hmc.AmoOp.SWAP: value,
        hmc.AmoOp.CSWAP: value if old == compare else old,
        hmc.AmoOp.ADD: (old + value) & MASK[size],
        hmc.AmoOp.AND: old & value,
        hmc.AmoOp.OR: old | value,
        hmc.AmoOp.XOR: old ^ value,
    }[op]


# (op, size, initial word, value, compare): every op at both sizes, with
# wrap-around, a negative addend, CSWAP matching and not.
AMO_CASES = [
    (hmc.AmoOp.FETCH, 8, 0x1122334455667788, 0, 0),
    (hmc.AmoOp.SET, 8, 5, 0xfedcba9876543210, 0),
    (hmc.AmoOp.SWAP, 8, 0x0102030405060708, 0xabc, 0),
    (hmc.AmoOp.CSWAP, 8, 7, 0x9999999999, 7),
    (hmc.AmoOp.CSWAP, 8, 7, 0x9999999999, 8),
    (hmc.AmoOp.ADD, 8, (1 << 64) - 1, 2, 0),
    (hmc.AmoOp.ADD, 8, 10, -3, 0),
    (hmc.AmoOp.AND, 8, 0xf0f0f0f0f0f0f0f0, 0x3c3c3c3c00ff00ff, 0),
    (hmc.AmoOp.OR, 8, 0xf0f0f0f000000000, 0x3c3c3c3c00ff00ff, 0),
    (hmc.AmoOp.XOR, 8, 0xf0f0f0f0f0f0f0f0, 0x3c3c3c3c00ff00ff, 0),
    (hmc.AmoOp.FETCH, 4, 0x89abcdef, 0, 0),
    (hmc.AmoOp.SET, 4, 5, 0xfedcba98, 0),
    (hmc.AmoOp.SWAP, 4, 0x01020304, 0xabc, 0),
    (hmc.AmoOp.CSWAP, 4, 0xffffffff, 1, 0xffffffff),
    (hmc.AmoOp.CSWAP, 4, 0xffffffff, 1, 0xfffffffe),
    (hmc.AmoOp.ADD, 4, 0xffffffff, 1, 0),
    (hmc.AmoOp.ADD, 4, 3, -5, 0),
    (hmc.AmoOp.AND, 4, 0xf0f0f0f0, 0x3c3c00ff, 0),
    (hmc.AmoOp.OR, 4, 0xf0f00000, 0x3c3c00ff, 0),
    (hmc.AmoOp.XOR, 4, 0xf0f0f0f0, 0x3c3c00ff, 0),
]


class Base(TestCase):
    """Rank 0 listens; rank 1 (and more) connect to it over tcp."""

    def setUp(self):
        self.port = free_port()
        self.a = self.new()
        self.a.init_server(bind_ip=LOOPBACK, ctrl_tcp_port=self.port,
                           self_id=0)
        self.b = self.join(1)

    def new(self):
        s = session()
        self.addCleanup(s.close)
        return s

    def join(self, rank, conn=TCP):
        s = self.new()
        s.connect(peer_id=0, self_id=rank, peer_ip=LOOPBACK,
                  ctrl_tcp_port=self.port, conn=conn)
        # The listener knows the dialer once a tag has come.
        s.ctrl_send(0, 0x5A)
        self.assertEqual(self.a.ctrl_recv(rank), 0x5A)
        return s

    def share(self, owner, owner_rank, user, user_rank, region):
        """Send @region's descriptor from @owner to @user by message; the
        imported RemoteRegion."""
        req = owner.isend(region.pack(), user_rank, TAG_DESC)
        desc = bytearray(hmc.MR_DESC_MAX)
        n = user.recv_data_from(peer=owner_rank, dest_obj=desc, tag=TAG_DESC)
        req.wait()
        self.assertLessEqual(n, hmc.MR_DESC_MAX)
        return user.import_region(owner_rank, desc[:n])

    def assertErrno(self, err, fn, *args, **kw):
        with self.assertRaises(hmc.HMCError) as cm:
            fn(*args, **kw)
        self.assertEqual(cm.exception.errno, err, str(cm.exception))
        return cm.exception


@unittest.skipIf(np is None, "NumPy is not installed")
class TransferTest(Base):
    """Puts and gets between regions at odd addresses and offsets, and the
    ConnBuffers, every byte checked."""

    def setUp(self):
        super().setUp()
        # rank 0: a NumPy array starting at an odd address
        self.base = np.zeros(SIZE + 3, dtype=np.uint8)
        self.x = self.base[3:]
        self.assertEqual(self.x.ctypes.data % 2, 1)
        self.x[:] = np.frombuffer(pattern(SIZE, 1), dtype=np.uint8)
        # rank 1: a bytearray, registered from an odd offset on
        self.ba = bytearray(pattern(SIZE // 2 + 7, 2))
        self.y = memoryview(self.ba)[5:]
        self.mx = self.a.register(self.x, remote_read=True,
                                  remote_write=True)
        self.my = self.b.register(self.y, remote_read=True,
                                  remote_write=True)
        self.addCleanup(self.my.close)
        self.addCleanup(self.mx.close)
        self.rx = self.share(self.a, 0, self.b, 1, self.mx)   # at rank 1
        self.ry = self.share(self.b, 1, self.a, 0, self.my)   # at rank 0

    def test_regions_describe_themselves(self):
        self.assertEqual((self.mx.nbytes, self.my.nbytes),
                         (SIZE, SIZE // 2 + 2))
        self.assertEqual((self.rx.nbytes, self.ry.nbytes),
                         (SIZE, SIZE // 2 + 2))
        self.assertEqual((self.rx.peer, self.ry.peer), (0, 1))
        self.assertNotEqual(self.mx.handle, 0)
        self.assertNotEqual(self.rx.handle, 0)
        self.assertIs(self.mx.obj, self.x)
        self.assertEqual(self.mx.mem_type, hmc.MemoryType.CPU)
        self.assertIsNone(self.mx.writes)               # no notify word
        self.assertFalse(self.rx.notifies)
        self.assertLessEqual(len(self.mx.pack()), hmc.MR_DESC_MAX)
        again = self.b.import_region(0, self.mx.pack())
        self.assertEqual(again.handle, self.rx.handle)  # the same import
        self.assertErrno(errno.EINVAL, self.b.import_region, 0,
                         b"not a descriptor")

    def test_put_and_get_every_byte(self):
        want_x = bytearray(self.x.tobytes())
        want_y = bytearray(self.y)
        src_b = pattern(SIZE // 2, 3)           # rank 1's ConnBuffer
        self.b.buf.put(src_b)
        want_b = bytearray(src_b) + bytearray(SIZE // 2)

        # rank 1's region -> rank 0's array, odd offsets both sides
        self.b.put_region(self.my, 13, self.rx, 1001, 300007)
        want_x[1001:1001 + 300007] = want_y[13:13 + 300007]
        # rank 1's ConnBuffer -> rank 0's array
        self.b.put_region(None, 7, self.rx, SIZE - 65537, 65537)
        want_x[SIZE - 65537:] = src_b[7:7 + 65537]
        # rank 0's array -> rank 1's region (a get)
        self.b.get_region(self.my, 100003, self.rx, 3, 200001)
        want_y[100003:100003 + 200001] = want_x[3:3 + 200001]
        # rank 0's array -> rank 1's ConnBuffer
        self.b.get_region(self.b.buf, SIZE // 2 + 1, self.rx, 999, 4097)
        want_b[SIZE // 2 + 1:SIZE // 2 + 1 + 4097] = want_x[999:999 + 4097]
        # rank 1's region -> rank 0's ConnBuffer (a peer names it)
        self.b.put_region(self.my, 77, 0, 11, 12345)
        # rank 0 gets rank 1's region into its own array
        self.a.get_region(self.mx, 500001, self.ry, 250001, 1)
        self.b.flush(0)
        self.a.flush(1)
        want_x[500001] = want_y[250001]

        self.assertBytes(self.x.tobytes(), want_x)      # zero copy: in x
        self.assertBytes(self.y, want_y)
        self.assertBytes(self.b.buf.get(SIZE), want_b)
        self.assertBytes(self.a.buf.get(12345, 11), want_y[77:77 + 12345])

    def test_nonblocking(self):
        want_x = bytearray(self.x.tobytes())
        chunk = 65536 + 3
        reqs = [self.b.put_region_nb(self.my, i * chunk + 1, self.rx,
                                     SIZE - (i + 1) * chunk, chunk)
                for i in range(4)]
        at = 300001                     # past the puts' sources
        reqs.append(self.b.get_region_nb(self.my, at, self.rx, 5, chunk))
        self.assertEqual(self.b.wait(reqs), hmc.Status.SUCCESS)
        self.b.flush(0)
        want_y = bytearray(pattern(SIZE // 2 + 7, 2))[5:]
        for i in range(4):
            want_x[SIZE - (i + 1) * chunk:SIZE - i * chunk] = \
                want_y[i * chunk + 1:(i + 1) * chunk + 1]
        want_y[at:at + chunk] = self.x.tobytes()[5:5 + chunk]
        self.assertBytes(self.x.tobytes(), want_x)
        self.assertBytes(self.y, want_y)
        req = self.b.get_region_nb(self.my, 0, self.rx, 0, 1)
        self.b.wait(req, timeout=20)
        self.assertErrno(errno.ENOENT, self.b.wait, req)  # collected

    def test_bounds_refused(self):
        before_x, before_y = self.x.tobytes(), bytes(self.y)
        for local_off, remote_off, n in ((0, SIZE - 10, 11),
                                         (SIZE // 2 - 10, 0, 20),
                                         (0, 1 << 62, 1)):
            with self.subTest(local=local_off, remote=remote_off, n=n):
                self.assertErrno(errno.ERANGE, self.b.put_region, self.my,
                                 local_off, self.rx, remote_off, n)
                self.assertErrno(errno.ERANGE, self.b.get_region_nb,
                                 self.my, local_off, self.rx, remote_off, n)
        self.assertErrno(errno.ERANGE, self.b.put_region, self.my, -1,
                         self.rx, 0, 1)
        self.b.flush(0)
        self.assertBytes(self.x.tobytes(), before_x)
        self.assertBytes(self.y, before_y)

    def test_deregistered_region_refused(self):
        fresh = bytearray(pattern(5000, 9))
        with self.b.register(fresh, remote_write=True) as m:
            self.assertFalse(m.closed)
            with self.assertRaises(BufferError):    # pinned: no resizing
                fresh.extend(b"x")
        self.assertTrue(m.closed)
        fresh.extend(b"x")                          # unpinned
        self.assertErrno(errno.ENOENT, self.b.put_region, m, 0, self.rx, 0,
                         1)
        self.assertErrno(errno.ENOENT, self.b.get_region_nb, m, 0, self.rx,
                         0, 1)
        self.assertErrno(errno.ENOENT, m.pack)
        m.close()                                   # again: nothing
        m = self.b.register(fresh, remote_read=True)
        del m
        gc.collect()
        fresh.extend(b"x")                  # collected: deregistered

    def test_raw_address(self):
        """A raw address with device= and nbytes=: host memory registers;
        device memory is refused by tcp, whose kernel would touch it."""
        w = np.frombuffer(pattern(8191, 14), dtype=np.uint8).copy()
        with self.a.register(w.ctypes.data, nbytes=8191, device="cpu",
                             remote_read=True) as m:
            self.assertEqual((m.nbytes, m.mem_type),
                             (8191, hmc.MemoryType.CPU))
            r = self.share(self.a, 0, self.b, 1, m)
            self.b.get_region(self.my, 1, r, 0, 8191)
            self.assertBytes(self.y[1:8192], w.tobytes())
        e = self.assertErrno(errno.EOPNOTSUPP, self.a.register,
                             w.ctypes.data, nbytes=8191, device="cuda")
        self.assertIn("CUDA", str(e))

    def test_packed_before_the_transport_came_up(self):
        """A descriptor has keys for the transports up when it was packed:
        one packed before any peer connected has none (ENOENT); the region
        is registered with the transport once it comes up."""
        port = free_port()
        z = self.new()
        z.init_server(bind_ip=LOOPBACK, ctrl_tcp_port=port, self_id=5)
        w = np.frombuffer(pattern(4099, 13), dtype=np.uint8).copy()
        with z.register(w, remote_read=True) as m:
            early = m.pack()
            self.b.connect(peer_id=5, self_id=1, peer_ip=LOOPBACK,
                           ctrl_tcp_port=port, conn=TCP)
            self.b.ctrl_send(5, 1)
            self.assertEqual(z.ctrl_recv(1), 1)
            self.assertErrno(errno.ENOENT, self.b.import_region, 5, early)
            r = self.b.import_region(5, m.pack())
            self.b.get_region(self.my, 17, r, 0, 4099)
            self.assertBytes(self.y[17:17 + 4099], w.tobytes())

    def test_close_server_releases_regions(self):
        self.b.close_server()
        self.assertTrue(self.my.closed)
        self.y.release()
        self.ba.extend(b"x")                        # unpinned
        self.my.close()                             # nothing left to do
        other = self.new()
        other.init_server(bind_ip=LOOPBACK, ctrl_tcp_port=free_port(),
                          self_id=9)
        self.assertErrno(errno.EINVAL, other.put_region, self.mx, 0, 1, 0,
                         1)


@unittest.skipIf(np is None, "NumPy is not installed")
class RightsTest(Base):
    """Regions reachable only for reads, or only for writes."""

    def setUp(self):
        super().setUp()
        self.ro = np.frombuffer(pattern(8192, 4), dtype=np.uint64).copy()
        self.wo = np.frombuffer(pattern(8192, 5), dtype=np.uint64).copy()
        self.mro = self.a.register(self.ro, remote_read=True)
        self.mwo = self.a.register(self.wo, remote_write=True)
        self.rro = self.share(self.a, 0, self.b, 1, self.mro)
        self.rwo = self.share(self.a, 0, self.b, 1, self.mwo)
        self.b.buf.put(pattern(8192, 6))

    def test_rights_refused(self):
        before = self.ro.tobytes(), self.wo.tobytes()
        self.assertErrno(errno.EACCES, self.b.put_region, None, 0, self.rro,
                         0, 8)
        self.assertErrno(errno.EACCES, self.b.get_region_nb, None, 0,
                         self.rwo, 0, 8)
        self.assertErrno(errno.EACCES, self.b.atomic, 0, self.rro, 0,
                         hmc.AmoOp.ADD, 1)
        self.assertErrno(errno.EACCES, self.b.atomic, 0, self.rwo, 0,
                         hmc.AmoOp.FETCH, 0)
        self.b.flush(0)
        self.assertBytes(self.ro.tobytes(), before[0])
        self.assertBytes(self.wo.tobytes(), before[1])
        # what each allows
        self.b.get_region(None, 100, self.rro, 8, 4000)
        self.assertBytes(self.b.buf.get(4000, 100), self.ro.tobytes()[8:4008])
        self.b.put_region(None, 4100, self.rwo, 4, 4000)  # past the get
        self.assertIsNone(self.b.atomic(0, self.rwo, 8000, hmc.AmoOp.SET,
                                        42, fetch=False))
        self.b.flush(0)
        want = bytearray(before[1])
        want[4:4004] = pattern(8192, 6)[4100:8100]
        want[8000:8008] = (42).to_bytes(8, "little")
        self.assertBytes(self.wo.tobytes(), want)

    def test_read_only_memory(self):
        blob = pattern(10007, 7)
        self.assertRaises(hmc.HMCBufferError, self.a.register, blob,
                          remote_write=True)
        with self.a.register(blob, remote_read=True) as m:
            self.assertFalse(m.writable)
            r = self.share(self.a, 0, self.b, 1, m)
            self.b.get_region(None, 1, r, 0, len(blob))
            self.assertBytes(self.b.buf.get(len(blob), 1), blob)
            # our own gets must not write into it either
            with self.assertRaises(hmc.HMCBufferError):
                self.a.get_region(m, 0, 1, 0, 8)
            self.a.put_region(m, 3, 1, 20000, 10004)    # a source it is
            self.a.flush(1)
            self.assertBytes(self.b.buf.get(10004, 20000), blob[3:])
        self.assertBytes(blob, pattern(10007, 7))


@unittest.skipIf(np is None, "NumPy is not installed")
class AtomicTest(Base):
    """Every op on rank 0's words from rank 1, and adds raced by two
    ranks."""

    def setUp(self):
        super().setUp()
        self.w = np.zeros(4096, dtype=np.uint64)
        self.mw = self.a.register(self.w, remote_read=True,
                                  remote_write=True)
        self.rw = self.share(self.a, 0, self.b, 1, self.mw)

    def slot(self, i, size, init):
        """Byte offset of case @i's word, set to @init; the word after a
        4-byte one holds a sentinel."""
        self.w[2 * i:2 * i + 2] = 0
        words = self.w.view(np.uint32) if size == 4 else self.w
        k = 16 * i // size
        words[k] = init
        if size == 4:
            words[k + 1] = 0xdeadbeef
        return 16 * i

    def word(self, off, size):
        return int((self.w.view(np.uint32) if size == 4 else self.w)
                   [off // size])

    def test_every_op_fetching(self):
        for i, (op, size, init, value, compare) in enumerate(AMO_CASES):
            with self.subTest(op=op.name, size=size, value=value):
                off = self.slot(i, size, init)
                old = self.b.atomic(0, self.rw, off, op, value, compare,
                                    size)
                self.assertEqual(old, init)
                self.assertEqual(self.word(off, size),
                                 apply(op, size, init, value, compare))
                if size == 4:
                    self.assertEqual(self.word(off + 4, 4), 0xdeadbeef)

    def test_every_op_not_fetching(self):
        cases = [(i, c) for i, c in enumerate(AMO_CASES)
                 if c[0] != hmc.AmoOp.FETCH]
        for i, (op, size, init, value, compare) in cases:
            self.slot(i, size, init)
        for i, (op, size, init, value, compare) in cases:
            self.assertIsNone(self.b.atomic(0, self.rw, 16 * i, op, value,
                                            compare, size, fetch=False))
        self.b.ctrl_send(0, 1)          # flushes them first
        self.assertEqual(self.a.ctrl_recv(1), 1)
        for i, (op, size, init, value, compare) in cases:
            with self.subTest(op=op.name, size=size, value=value):
                self.assertEqual(self.word(16 * i, size),
                                 apply(op, size, init, value, compare))

    def test_refused(self):
        self.w[:] = 0
        self.assertErrno(errno.EINVAL, self.b.atomic, 0, self.rw, 4,
                         hmc.AmoOp.ADD, 1)                  # misaligned
        self.assertErrno(errno.EINVAL, self.b.atomic, 0, self.rw, 0,
                         hmc.AmoOp.ADD, 1, size=2)
        self.assertErrno(errno.EINVAL, self.b.atomic, 0, self.rw, 0,
                         hmc.AmoOp.FETCH, 0, fetch=False)
        self.assertErrno(errno.ERANGE, self.b.atomic, 0, self.rw,
                         self.w.nbytes, hmc.AmoOp.ADD, 1)
        self.assertErrno(errno.ERANGE, self.b.atomic, 0, self.rw, 1 << 40,
                         hmc.AmoOp.ADD, 1)
        self.assertErrno(errno.ERANGE, self.b.atomic, 0, self.rw, 0,
                         hmc.AmoOp.ADD, 1 << 32, size=4)    # does not fit
        self.assertErrno(errno.EINVAL, self.b.atomic, 1, self.rw, 0,
                         hmc.AmoOp.ADD, 1)                  # not rank 1's
        self.assertRaises(ValueError, self.b.atomic, 0, self.rw, 0, 99, 1)
        self.b.flush(0)
        self.assertEqual(self.w.tobytes(), bytes(self.w.nbytes))

    def test_on_the_conn_buffer(self):
        self.a.buf.put((0x1234).to_bytes(8, "little"), offset=64)
        self.assertEqual(self.b.atomic(0, None, 64, hmc.AmoOp.SWAP, 0x77),
                         0x1234)
        self.assertEqual(self.a.buf.get(8, 64), (0x77).to_bytes(8, "little"))

    def test_racing_adds_from_two_ranks(self):
        """Ranks 1 and 2 add to rank 0's counter at once, fetching: every
        value from 0 to the total is fetched exactly once."""
        c = self.join(2)
        rc = self.share(self.a, 0, c, 2, self.mw)
        self.w[:] = 0
        n = 1500
        seen = {1: [], 2: []}
        errors = []

        def adder(sess, rank, region):
            try:
                for _ in range(n):
                    seen[rank].append(sess.atomic(0, region, 8,
                                                  hmc.AmoOp.ADD, 1))
            except Exception as e:      # reported below
                errors.append(e)

        threads = [threading.Thread(target=adder, args=args)
                   for args in ((self.b, 1, self.rw), (c, 2, rc))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertFalse(any(t.is_alive() for t in threads))
        self.assertEqual(errors, [])
        self.assertEqual(int(self.w[1]), 2 * n)
        self.assertEqual(sorted(seen[1] + seen[2]), list(range(2 * n)))
        # each rank's own adds come back in order
        for rank in (1, 2):
            self.assertEqual(seen[rank], sorted(seen[rank]))
        self.assertTrue(all(v == 0 for i, v in enumerate(self.w) if i != 1))


@unittest.skipIf(np is None, "NumPy is not installed")
class NotifyTest(Base):
    def test_writes_counted(self):
        x = np.zeros(65536, dtype=np.uint64)
        with self.a.register(x, remote_read=True, remote_write=True,
                             notify=True) as m:
            self.assertEqual(m.writes, 0)
            r = self.share(self.a, 0, self.b, 1, m)
            self.assertTrue(r.notifies)
            data = pattern(4096, 8)
            self.b.buf.put(data)
            puts, amos = 7, 5
            for i in range(puts):
                self.b.put_region(None, 0, r, 4096 * i + 8, 4096)
            self.b.wait([self.b.get_region_nb(None, 8192, r, 0, 4096)
                         for _ in range(3)])            # reads: not counted
            for i in range(amos):
                self.b.atomic(0, r, 0, hmc.AmoOp.ADD, i,
                              fetch=bool(i % 2))
            self.b.ctrl_send(0, 2)                      # after a flush
            self.assertEqual(self.a.ctrl_recv(1), 2)
            self.assertEqual(m.writes, puts + amos)
            self.assertEqual(int(x[0]), sum(range(amos)))
            self.assertBytes(x.tobytes()[8:8 + 4096 * puts], data * puts)


@unittest.skipIf(np is None, "NumPy is not installed")
class ProcessTest(Base):
    """Rank 1 in another process: transfers both ways, its fetching adds
    racing rank 2's (here) on rank 0's counter, the notify word."""

    def setUp(self):
        sys.path.insert(0, PEERS)
        self.addCleanup(sys.path.remove, PEERS)
        import region_peer
        self.rp = region_peer
        self.port = free_port()
        self.a = self.new()
        self.a.init_server(bind_ip=LOOPBACK, ctrl_tcp_port=self.port,
                           self_id=0)

    def test_two_processes(self):
        rp = self.rp
        base = np.zeros(rp.X_LEN + 3, dtype=np.uint8)
        x = base[3:]                                # an odd address
        x[:] = np.frombuffer(rp.x_initial(), dtype=np.uint8)
        # an 8-byte word aligned in memory, not in the region
        counter = rp.X_LEN - 64 - (x.ctypes.data + rp.X_LEN - 64) % 8
        x[counter:counter + 8] = 0
        peer = Peer([os.path.join(PEERS, "region_peer.py"), str(self.port)])
        self.addCleanup(peer.kill)
        self.assertEqual(self.a.ctrl_recv(1), rp.HELLO)
        mx = self.a.register(x, remote_read=True, remote_write=True,
                             notify=True)
        self.addCleanup(mx.close)
        desc = bytearray(hmc.MR_DESC_MAX)
        n = self.a.recv_data_from(peer=1, dest_obj=desc, tag=rp.TAG_DESC1)
        ry = self.a.import_region(1, desc[:n])
        self.assertEqual(ry.nbytes, rp.Y_LEN)
        self.a.send_data_to(peer=1, data=mx.pack(), tag=rp.TAG_DESC0)

        c = self.join(2)
        rc = c.import_region(0, mx.pack())
        mine = []
        adder = threading.Thread(target=lambda: mine.extend(
            c.atomic(0, rc, counter, hmc.AmoOp.ADD, 1)
            for _ in range(rp.ADDS)))
        self.a.ctrl_send(1, counter)                # go
        adder.start()
        theirs = np.empty(rp.ADDS, dtype=np.uint64)
        self.a.recv_data_from(peer=1, dest_obj=theirs, tag=rp.TAG_SEEN)
        adder.join(60)
        self.assertFalse(adder.is_alive())
        self.assertEqual(self.a.ctrl_recv(1), rp.DONE)
        self.assertEqual(sorted(mine + theirs.tolist()),
                         list(range(2 * rp.ADDS)))

        want = bytearray(rp.x_initial())
        want[1001:1001 + rp.PUT] = rp.y_initial()[13:13 + rp.PUT]
        want[counter:counter + 8] = (2 * rp.ADDS).to_bytes(8, "little")
        self.assertBytes(x.tobytes(), want)
        self.assertEqual(mx.writes, 1 + 2 * rp.ADDS)    # the put, the adds

        self.a.buf.put(rp.back())
        self.a.put_region(None, 0, ry, rp.Y_PUT_AT, rp.PUT_BACK)
        self.a.get_region(mx, 0, ry, rp.Y_GOT_AT, rp.GET)   # sees the put
        self.a.ctrl_send(1, rp.CHECK)
        status, out = peer.finish(timeout=60)
        self.assertEqual(status, 0, out)
        self.assertIn("rank 1: ok", out)
        self.assertBytes(x.tobytes()[:rp.GET],
                         rp.x_initial()[rp.X_LEN // 2:rp.X_LEN // 2 + rp.GET])


class TorchTest(Base):
    @unittest.skipIf(torch is None, "PyTorch is not installed")
    def test_cpu_tensor_region(self):
        g = torch.Generator().manual_seed(9)
        t = torch.randint(-1 << 30, 1 << 30, (3, 4099), dtype=torch.int32,
                          generator=g)
        with self.a.register(t, remote_read=True, remote_write=True) as m:
            self.assertEqual(m.nbytes, t.numel() * 4)
            r = self.share(self.a, 0, self.b, 1, m)
            want = bytes(t.numpy().tobytes())
            self.b.get_region(None, 0, r, 0, m.nbytes)
            self.assertBytes(self.b.buf.get(m.nbytes), want)
            self.b.buf.put(pattern(4099 * 4, 10))
            self.b.put_region(None, 0, r, 4099 * 4, 4099 * 4)   # row 1
            self.b.flush(0)
            got = bytearray(want)
            got[4099 * 4:2 * 4099 * 4] = pattern(4099 * 4, 10)
            self.assertBytes(t.numpy().tobytes(), got)


class ShmTest(Base):
    """The shm transport maps ConnBuffers only: no regions, no atomics."""

    def setUp(self):
        self.port = free_port()
        self.a = self.new()
        self.a.init_server(bind_ip=LOOPBACK, ctrl_tcp_port=self.port,
                           self_id=0)
        self.b = self.join(1, conn=hmc.ConnType.SHM)

    def test_refused_cleanly(self):
        ba = bytearray(pattern(4096, 11))
        e = self.assertErrno(errno.EOPNOTSUPP, self.b.register, ba,
                             remote_write=True)
        self.assertEqual(e.status, hmc.Status.UNSUPPORT)
        ba.extend(b"x")                 # nothing kept pinned
        self.assertErrno(errno.EOPNOTSUPP, self.a.register, ba,
                         remote_read=True)
        self.assertErrno(errno.EOPNOTSUPP, self.b.atomic, 0, None, 0,
                         hmc.AmoOp.FETCH, 0)
        data = pattern(4096, 12)        # the session still works
        self.b.buf.put(data)
        self.b.put_remote(peer=0, local_off=0, remote_off=8, nbytes=4096)
        self.b.ctrl_send(0, 3)
        self.assertEqual(self.a.ctrl_recv(1), 3)
        self.assertBytes(self.a.buf.get(4096, 8), data)


if __name__ == "__main__":
    unittest.main()
