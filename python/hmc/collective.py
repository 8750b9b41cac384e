# SPDX-License-Identifier: MIT
"""Collectives over a group of sessions, on two-sided messages.

A Group is this session and the ranks of its members in group order
(``Group(sess, ranks)``; every member lists the same ranks, its own
included), or an hmc.init_world() world (``Group.of_world(world)``). alltoall(), allgather() and broadcast() take payloads as
Session.isend()/irecv() do (bytes-likes, NumPy arrays, torch tensors on
the CPU or a GPU, contiguous), cut into equal blocks, one per member in
group order. Every member calls the same collectives in the same order;
their messages use tags of their own (COLL_TAG), apart from the
application's.

The reference's ring alltoall fetched the wrong blocks (hmc-reference.md,
P5); here both algorithms deliver block j of member i's send to block i of
member j's recv, which the tests check byte for byte.
"""

import ctypes
import errno
from contextlib import ExitStack

from . import _lib
from .enums import MemoryType
from .errors import HMCError
from .messages import Endpoint, post
from .payload import dest, source

COLL_TAG = 0x434F4C4C << 32             # "COLL": bits 63..32 of their tags
_ALLTOALL, _ALLGATHER, _BCAST = 1, 2, 3
_COPY_H2D, _COPY_D2H, _COPY_D2D = 1, 2, 3     # enum hmc_copy_kind


class Group:
    """``session``'s view of a group: ``ranks`` in group order. The
    session is a Session or a messages.Endpoint (of_world())."""

    @classmethod
    def of_world(cls, world, timeout=60.0):
        """Every member of an hmc.init_world() world, in rank order."""
        return cls(Endpoint(world.comm.handle, world.rank, timeout),
                   range(world.size))

    def __init__(self, session, ranks):
        self.session = session
        self.ranks = [int(r) for r in ranks]
        if len(set(self.ranks)) != len(self.ranks):
            raise ValueError("a group lists each rank once: %r" % ranks)
        if session.rank not in self.ranks:
            raise ValueError("rank %s is not in the group %r" %
                             (session.rank, ranks))
        self.rank = self.ranks.index(session.rank)
        self.size = len(self.ranks)

    def peer(self, i):
        """The session rank of member @i (modulo the size)."""
        return self.ranks[i % self.size]

    @property
    def left(self):
        return self.peer(self.rank - 1)

    @property
    def right(self):
        return self.peer(self.rank + 1)

    def __repr__(self):
        return "<hmc.Group member %d of %r>" % (self.rank, self.ranks)


def _blocks(region, n, what):
    if region.nbytes % n:
        raise HMCError(errno.EINVAL, "%s: %d bytes do not split into %d "
                       "equal blocks" % (what, region.nbytes, n))
    return region.nbytes // n


def _xfer(group, sends, recvs, kind, timeout):
    """Post receives (member, address, size) then sends, wait for all."""
    s = group.session
    tag = COLL_TAG | kind
    reqs = [post(s, True, group.peer(i), ptr, tag, n, MemoryType(mem))
            for i, ptr, n, mem in recvs]
    reqs += [post(s, False, group.peer(i), ptr, tag, n, MemoryType(mem))
             for i, ptr, n, mem in sends]
    for r in reqs:
        r.wait(timeout)


def _copy(src, dst, src_off, dst_off, n):
    """A block to ourselves, between the regions' memories."""
    if not n:
        return
    sm, dm = int(src.mem_type), int(dst.mem_type)
    if sm == dm == 0:
        ctypes.memmove(dst.ptr + dst_off, src.ptr + src_off, n)
        return
    kind = (_COPY_H2D if sm == 0 else _COPY_D2D) if dm else _COPY_D2H
    rc = _lib.lib().hmc_mem_copy(dm or sm, dst.device if dm else src.device,
                                 dst.ptr + dst_off, src.ptr + src_off, n,
                                 kind)
    if rc:
        raise HMCError(rc, "copying our own block")


def alltoall(group, send, recv, algo="auto", timeout=None):
    """Block j of our ``send`` goes to member j, whose block i (we are
    member i) of ``recv`` it lands in. ``algo``: "direct" (every pair at
    once), "ring" (size - 1 steps; at step k, to member i + k and from
    member i - k), or "auto" (direct up to 8 members)."""
    if algo == "auto":
        algo = "direct" if group.size <= 8 else "ring"
    if algo not in ("direct", "ring"):
        raise ValueError("algo must be auto, direct or ring, not %r" % algo)
    n, me = group.size, group.rank
    with ExitStack() as st:
        src = st.enter_context(source(send))
        dst = st.enter_context(dest(recv))
        b = _blocks(src, n, "alltoall send")
        if _blocks(dst, n, "alltoall recv") != b:
            raise HMCError(errno.EINVAL, "alltoall: send and recv differ "
                           "in size")
        sm, dm = int(src.mem_type), int(dst.mem_type)
        _copy(src, dst, me * b, me * b, b)
        steps = [range(1, n)] if algo == "direct" else \
            [[k] for k in range(1, n)]
        for ks in steps:
            _xfer(group,
                  [((me + k) % n, src.ptr + (me + k) % n * b, b, sm)
                   for k in ks],
                  [((me - k) % n, dst.ptr + (me - k) % n * b, b, dm)
                   for k in ks], _ALLTOALL, timeout)


def allgather(group, send, recv, timeout=None):
    """Every member's ``send`` lands at block i (member i's) of every
    member's ``recv``, passed along the ring (size - 1 steps)."""
    n, me = group.size, group.rank
    with ExitStack() as st:
        src = st.enter_context(source(send))
        dst = st.enter_context(dest(recv))
        b = src.nbytes
        if dst.nbytes != b * n:
            raise HMCError(errno.EINVAL, "allgather: recv must hold %d "
                           "blocks of %d bytes" % (n, b))
        dm = int(dst.mem_type)
        _copy(src, dst, 0, me * b, b)
        for k in range(n - 1):
            out = (me - k) % n          # the block we pass on
            into = (me - k - 1) % n     # the one the left neighbour passes
            _xfer(group, [(me + 1, dst.ptr + out * b, b, dm)],
                  [(me - 1, dst.ptr + into * b, b, dm)], _ALLGATHER,
                  timeout)


def broadcast(group, buf, root=0, timeout=None):
    """Member ``root``'s ``buf`` into every member's, along a binomial
    tree (ceil(log2 size) rounds)."""
    n, me = group.size, group.rank
    if not 0 <= root < n:
        raise ValueError("root %d is not a member" % root)
    rel = (me - root) % n
    with ExitStack() as st:
        region = st.enter_context(source(buf) if rel == 0 else dest(buf))
        mem = int(region.mem_type)
        mask = 1
        while mask < n:                 # receive from the parent
            if rel & mask:
                _xfer(group, [], [((rel - mask + root) % n, region.ptr,
                                   region.nbytes, mem)], _BCAST, timeout)
                break
            mask <<= 1
        mask >>= 1
        while mask:                     # then send to the children
            if rel + mask < n:
                _xfer(group, [((rel + mask + root) % n, region.ptr,
                               region.nbytes, mem)], [], _BCAST, timeout)
            mask >>= 1
