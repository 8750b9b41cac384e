# SPDX-License-Identifier: MIT
"""Collectives (hmc.collective) among 4 sessions of this process, one
thread each: alltoall direct and ring, allgather, broadcast from every
root, every byte checked; with bytes, NumPy arrays and torch tensors."""

import threading
import unittest

import hmc
from hmc import collective
from support import (LOOPBACK, TestCase, free_port, pattern, run_torchrun_ranks,
                     try_import)

np = try_import("numpy")
torch = try_import("torch")

N = 4
UCX = hmc.ConnType.UCX


class CollectiveTest(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sessions = []
        ports = [free_port() for _ in range(N)]
        for r in range(N):
            s = hmc.create_session(buffer_size=4 << 20, local_ip=LOOPBACK,
                                   timeout=30, msg_region=2 << 20)
            s.init_server(bind_ip=LOOPBACK, ucx_port=ports[r],
                          rdma_port=free_port(), ctrl_tcp_port=ports[r],
                          self_id=r)
            cls.sessions.append(s)
        for a in range(N):
            for b in range(a + 1, N):
                cls.sessions[a].connect(peer_id=b, self_id=a,
                                        peer_ip=LOOPBACK, data_port=ports[b],
                                        ctrl_tcp_port=ports[b], conn=UCX)
                cls.sessions[a].ctrl_send(b, 0x5A)
                assert cls.sessions[b].ctrl_recv(a) == 0x5A
        cls.groups = [collective.Group(s, range(N)) for s in cls.sessions]

    @classmethod
    def tearDownClass(cls):
        for s in cls.sessions:
            s.close()

    def run_all(self, fn):
        """fn(member) in one thread per member; re-raise the first error."""
        errors = []

        def body(i):
            try:
                fn(i)
            except BaseException as e:     # noqa: B902 - reported below
                errors.append(e)
        threads = [threading.Thread(target=body, args=(i,)) for i in range(N)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertFalse(any(t.is_alive() for t in threads))
        if errors:
            raise errors[0]

    def alltoall_case(self, algo, block):
        sends = [pattern(block * N, 100 + i) for i in range(N)]
        recvs = [bytearray(block * N) for _ in range(N)]
        self.run_all(lambda i: collective.alltoall(
            self.groups[i], sends[i], recvs[i], algo=algo))
        for j in range(N):
            for i in range(N):          # block i of j's recv: i's block j
                self.assertBytes(recvs[j][i * block:(i + 1) * block],
                                 sends[i][j * block:(j + 1) * block])

    def test_alltoall_direct(self):
        self.alltoall_case("direct", 1000)
        self.alltoall_case("direct", 300 * 1024 + 3)   # rendezvous

    def test_alltoall_ring(self):
        self.alltoall_case("ring", 1000)
        self.alltoall_case("ring", 300 * 1024 + 3)

    def test_allgather(self):
        block = 70001
        sends = [pattern(block, 200 + i) for i in range(N)]
        recvs = [bytearray(block * N) for _ in range(N)]
        self.run_all(lambda i: collective.allgather(self.groups[i], sends[i],
                                                    recvs[i]))
        for j in range(N):
            self.assertBytes(recvs[j], b"".join(sends))

    def test_on_bare_communicators(self):
        """What Group.of_world() builds: Endpoints on the comm handles."""
        groups = [collective.Group(hmc.messages.Endpoint(s.comm, s.rank),
                                   range(N))
                  for s in self.sessions]
        block = 40000
        sends = [pattern(block * N, 400 + i) for i in range(N)]
        recvs = [bytearray(block * N) for _ in range(N)]
        self.run_all(lambda i: collective.alltoall(groups[i], sends[i],
                                                   recvs[i], algo="ring"))
        for j in range(N):
            for i in range(N):
                self.assertBytes(recvs[j][i * block:(i + 1) * block],
                                 sends[i][j * block:(j + 1) * block])

    def test_broadcast_from_every_root(self):
        for root in range(N):
            data = pattern(500000 + root, 300 + root)
            bufs = [bytearray(data) if i == root else bytearray(len(data))
                    for i in range(N)]
            self.run_all(lambda i: collective.broadcast(self.groups[i],
                                                        bufs[i], root))
            for b in bufs:
                self.assertBytes(b, data)

    @unittest.skipIf(np is None, "NumPy is not installed")
    def test_alltoall_numpy(self):
        x = [np.random.default_rng(i).integers(0, 1 << 30, (N, 5000))
             for i in range(N)]
        y = [np.empty_like(a) for a in x]
        self.run_all(lambda i: collective.alltoall(self.groups[i], x[i],
                                                   y[i], algo="ring"))
        for j in range(N):
            for i in range(N):
                self.assertBytes(y[j][i].tobytes(), x[i][j].tobytes())

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_allgather_torch(self):
        x = [torch.full((1000,), float(i)) + torch.arange(1000.)
             for i in range(N)]
        y = [torch.empty(N, 1000) for _ in range(N)]
        self.run_all(lambda i: collective.allgather(self.groups[i], x[i],
                                                    y[i]))
        for j in range(N):
            self.assertTrue(torch.equal(y[j], torch.stack(x)))


class WorldTest(unittest.TestCase):
    """Group.of_world(): 3 processes from hmc.init_world(), started with
    torchrun's variables as test_world does."""

    def test_collectives_over_a_world(self):
        run_torchrun_ranks(self, "world_coll_peer.py")


if __name__ == "__main__":
    unittest.main()
