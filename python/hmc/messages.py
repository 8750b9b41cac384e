# SPDX-License-Identifier: MIT
"""Two-sided messages between ranks (libhmc's hmc_comm_send/recv): the
Request a Session's isend()/irecv() return, and P2POp for
batch_isend_irecv().

A message goes from any payload (bytes-likes, NumPy arrays, PyTorch tensors
on the CPU or a GPU; see hmc.payload) into any writable one, of any size;
libhmc stages it through the message region at the end of the session's
buffer (create_session(msg_region=...)). Receives match the sender's rank
and tag, ANY_SOURCE and ANY_TAG matching any; messages of one sender with
one tag arrive in the order sent.
"""

import ctypes
import errno
from contextlib import ExitStack

from . import _lib
from .errors import HMCTimeoutError, check, error
from .payload import dest, source


def _deadline(seconds):
    from .session import _Deadline
    return _Deadline(seconds)

ANY_SOURCE = _lib.ANY_SOURCE
ANY_TAG = _lib.ANY_TAG


class Request:
    """A send or receive in flight. It holds the payload (and, for a
    receive, its status) until it completes; wait() returns the number of
    bytes moved. A receive's ``source``, ``tag`` and ``nbytes`` say what
    arrived once it has completed."""

    def __init__(self, session, what, is_recv):
        self._session = session
        self._what = what
        self._is_recv = is_recv
        self._hold = ExitStack()
        self._status = _lib.MsgStatus() if is_recv else None
        self._nbytes = None
        self.req = 0
        self.done = False
        self.result = None

    def _finish(self, rc):
        self.done = True
        self.result = rc
        self._hold.close()              # the payload may go now
        if self._is_recv:
            st = self._status
            self.source, self.tag, self._nbytes = st.source, st.tag, st.len
        if rc:
            raise error(rc, self._what)

    @property
    def nbytes(self):
        """Bytes of the message (a receive's, once complete)."""
        return self._nbytes

    def test(self):
        """True once complete (raising its error), False while pending."""
        if self.done:
            return True
        rc = self._session._lib.hmc_comm_test(self._session.comm, self.req)
        if rc == -errno.EINPROGRESS:
            return False
        self._finish(rc)
        return True

    def wait(self, timeout=None):
        """Wait up to ``timeout`` seconds (default: the session's) and
        return the bytes moved; on HMCTimeoutError it stays pending."""
        s = self._session
        dl = _deadline(s.timeout if timeout is None else timeout)
        while not self.done:
            ms = dl.slice_ms()
            if ms is None:
                raise HMCTimeoutError(errno.ETIMEDOUT, "%s: still pending "
                                      "after %g s" % (self._what, dl.seconds))
            rc = s._lib.hmc_comm_wait(s.comm, self.req, ms)
            # The wait's deadline, or the operation's own result?
            if rc == -errno.ETIMEDOUT:
                rc = s._lib.hmc_comm_test(s.comm, self.req)
                if rc == -errno.EINPROGRESS:
                    continue
            self._finish(rc)
        return self._nbytes

    def is_completed(self):
        """torch.distributed's name for test()."""
        return self.test()

    def __repr__(self):
        state = "done" if self.done else "pending"
        return "<hmc.Request %s, %s>" % (self._what, state)


class P2POp:
    """One operation of Session.batch_isend_irecv(): ``op`` is "isend" or
    "irecv" (or a Session's isend/irecv, or torch.distributed's, as
    torch.distributed.P2POp takes them), ``peer`` a rank (ANY_SOURCE for a
    receive from anyone)."""

    def __init__(self, op, buf, peer, tag=0, size=None, device=None):
        name = op if isinstance(op, str) else getattr(op, "__name__", "")
        if name not in ("isend", "irecv"):
            raise ValueError("P2POp: op must be isend or irecv, not %r" %
                             (op,))
        self.is_recv = name == "irecv"
        self.buf = buf
        self.peer = peer
        self.tag = tag
        self.size = size
        self.device = device


class Endpoint:
    """Messages on a bare communicator, such as an hmc.init_world()
    world's (``world.comm.handle``): isend(), irecv() and
    batch_isend_irecv() as a Session has them, peers by rank only."""

    def __init__(self, handle, rank, timeout=60.0):
        self._lib = _lib.lib()
        self.comm = self.handle = handle
        self.rank = int(rank)
        self.timeout = float(timeout)
        self._cs = self

    def _rank(self, peer):
        if isinstance(peer, bool) or not isinstance(peer, int):
            raise TypeError("a peer is a rank (int), not %r" % (peer,))
        return peer

    def fail(self, rc, what, rank):
        return error(rc, "%s rank %d" % (what, rank))

    def isend(self, data, peer, tag=0, *, size=None, device=None):
        """As Session.isend()."""
        return post(self, False, peer, data, tag, size, device)

    def irecv(self, dest_obj, peer=None, tag=ANY_TAG, *, size=None,
              device=None):
        """As Session.irecv()."""
        return post(self, True, peer, dest_obj, tag, size, device)

    def batch_isend_irecv(self, ops):
        """As Session.batch_isend_irecv()."""
        return post_batch(self, ops)


def post(session, is_recv, peer, obj, tag, size, device):
    """Start a send or receive of @obj: a Request."""
    c = session._cs
    tag = int(tag)
    if not 0 <= tag <= ANY_TAG:
        raise ValueError("tag %d is not a u64" % tag)
    rank = ANY_SOURCE if is_recv and peer in (None, ANY_SOURCE) else \
        session._rank(peer)
    what = "%s of %s" % ("receive" if is_recv else "send",
                         "any rank" if rank == ANY_SOURCE else
                         "rank %d" % rank)
    r = Request(session, what, is_recv)
    with ExitStack() as stack:
        region = stack.enter_context((dest if is_recv else source)(
            obj, size, device))
        req = _lib.c_req()
        if is_recv:
            rc = session._lib.hmc_comm_irecv(
                c.handle, rank, tag, region.ptr, region.nbytes,
                int(region.mem_type), ctypes.byref(r._status),
                ctypes.byref(req))
        else:
            rc = session._lib.hmc_comm_isend(
                c.handle, rank, tag, region.ptr, region.nbytes,
                int(region.mem_type), ctypes.byref(req))
        if rc:
            raise c.fail(rc, what + " with tag %d:" % tag, rank) \
                if rank != ANY_SOURCE else error(rc, what)
        r._hold = stack.pop_all()
    r.req = req.value
    if not is_recv:
        r._nbytes = region.nbytes
    return r


def post_batch(session, ops):
    """Post @ops (P2POp) in one hmc_comm_msg_batch(): their Requests."""
    c = session._cs
    ops = list(ops)
    reqs = [Request(session, "%s of %s" % (
        "receive" if o.is_recv else "send",
        "any rank" if o.is_recv and o.peer in (None, ANY_SOURCE) else
        "rank %d" % session._rank(o.peer)), o.is_recv) for o in ops]
    msgs = (_lib.Msg * max(len(ops), 1))()
    ids = (_lib.c_req * max(len(ops), 1))()
    with ExitStack() as stack:
        for i, (o, r) in enumerate(zip(ops, reqs)):
            region = r._hold.enter_context((dest if o.is_recv else source)(
                o.buf, o.size, o.device))
            stack.callback(r._hold.close)   # undone unless posted
            rank = ANY_SOURCE if o.is_recv and o.peer in (None, ANY_SOURCE) \
                else session._rank(o.peer)
            msgs[i] = _lib.Msg(
                op=_lib.MSG_RECV if o.is_recv else _lib.MSG_SEND, peer=rank,
                tag=int(o.tag), data=region.ptr, len=region.nbytes,
                mem_type=int(region.mem_type),
                status=ctypes.pointer(r._status) if o.is_recv else None)
            if not o.is_recv:
                r._nbytes = region.nbytes
        rc = session._lib.hmc_comm_msg_batch(c.handle, msgs, len(ops), ids)
        posted = [r for i, r in enumerate(reqs) if ids[i]]
        for i, r in enumerate(reqs):
            r.req = ids[i]
        if rc:
            # Those before the failed one are posted: let them finish.
            for r in posted:
                try:
                    r.wait()
                except Exception:
                    pass
            check(rc, "batch_isend_irecv")
        stack.pop_all()
    return reqs
