# SPDX-License-Identifier: MIT
"""Helpers for the hmc tests: payloads, ports, peer processes."""

import os
import queue
import random
import socket
import subprocess
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PY_ROOT = os.path.dirname(HERE)         # python/: the package's parent
PEERS = os.path.join(HERE, "peers")
EXAMPLES = os.path.join(PY_ROOT, "examples")
LOOPBACK = "127.0.0.1"

# Children find the package the way this process did.
CHILD_ENV = dict(os.environ)
CHILD_ENV["PYTHONPATH"] = os.pathsep.join(
    [PY_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                 if p])
CHILD_ENV["PYTHONUNBUFFERED"] = "1"


def pattern(n, seed):
    """@n non-uniform bytes, the same for the same seed."""
    return random.Random(seed).randbytes(n)


def first_difference(a, b):
    """Where two byte strings first differ (every byte is compared)."""
    a, b = bytes(a), bytes(b)
    if a == b:
        return None
    if len(a) != len(b):
        return "lengths %d and %d" % (len(a), len(b))
    i = next(i for i in range(len(a)) if a[i] != b[i])
    return "byte %d is %#04x, expected %#04x" % (i, a[i], b[i])


class TestCase(unittest.TestCase):
    def assertBytes(self, got, want):
        """Every byte of @got is @want's."""
        self.assertIsNone(first_difference(got, want))


def free_port():
    """A TCP port that nothing listens on right now."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def master_port():
    """A MASTER_PORT for torchrun's variables whose next port, where
    hmc.init_world() puts its store, is free as well."""
    while True:
        port = free_port()
        with socket.socket() as s:
            try:
                s.bind((LOOPBACK, port + 1))
            except OSError:
                continue
        return port


def run_torchrun_ranks(test, peer, n=3):
    """Start @n ranks of PEERS/@peer with torchrun's variables (torchrun
    itself fails on Python 3.11) and check that each exits 0 after
    printing "rank R: ok"."""
    port = master_port()
    procs = []
    for r in range(n):
        env = dict(CHILD_ENV, RANK=str(r), WORLD_SIZE=str(n),
                   LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(n),
                   MASTER_ADDR=LOOPBACK, MASTER_PORT=str(port),
                   UCX_TLS="posix,cma,self")
        procs.append(subprocess.Popen(
            [sys.executable, os.path.join(PEERS, peer)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    for r, p in enumerate(procs):
        out, _ = p.communicate(timeout=120)
        test.assertEqual(p.returncode, 0, out.decode())
        test.assertIn("rank %d: ok" % r, out.decode())


def try_import(name):
    """The module, or None (its tests skip) unless HMC_PY_REQUIRE, a
    comma-separated list, names it: `make test` requires NumPy."""
    try:
        return __import__(name)
    except ImportError:
        if name in os.environ.get("HMC_PY_REQUIRE", "").split(","):
            raise
        return None


class Peer:
    """A Python child process whose output lines can be waited for."""

    def __init__(self, args, env=None):
        self.args = args
        self.proc = subprocess.Popen(
            [sys.executable] + args, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True,
            env=dict(CHILD_ENV, **(env or {})))
        self.lines = []
        self._q = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    def expect(self, text, timeout=30):
        """Wait for a line containing @text; AssertionError otherwise."""
        while True:
            try:
                line = self._q.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError("%s: no %r within %d s; output:\n%s" %
                                     (self.args[0], text, timeout,
                                      self.output()))
            if line is None:
                raise AssertionError("%s exited (%s) before %r; output:\n%s"
                                     % (self.args[0], self.proc.wait(), text,
                                        self.output()))
            self.lines.append(line)
            if text in line:
                return line

    def finish(self, timeout=60):
        """Wait for the exit: (status, all output)."""
        try:
            status = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            status = self.proc.wait()
        while True:
            try:
                line = self._q.get(timeout=5)
            except queue.Empty:
                break
            if line is None:
                break
            self.lines.append(line)
        return status, self.output()

    def output(self):
        return "\n".join(self.lines)

    def kill(self):
        """Kill it if it still runs, and close its output."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(10)
        self.proc.stdout.close()
