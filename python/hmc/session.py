# SPDX-License-Identifier: MIT
"""Session: a ConnBuffer (sess.buf) plus a libhmc communicator, with both
calling styles of the reference HMC's documents.

libhmc's model: one communicator per session, created on the first
init_server() or connect(), with one rank; it listens on one TCP port (and
a Unix socket named after it); a peer is a rank, reached over one transport.

Rank-keyed style (hmc-readme.md): init_server(self_id=...) and
connect(peer_id=, self_id=, peer_ip=, data_port=, ctrl_tcp_port=) name the
ranks. The server listens on ctrl_tcp_port (else ucx_port, else rdma_port);
the client dials ctrl_tcp_port (else data_port), and remembers
(peer_ip, data_port) -> peer_id so that put_remote(ip, port, ...) finds it.

Ip-keyed style (hmc-python-sdk.md): init_server(ip, port) and
connect(ip, port) name no ranks, so they are derived: a server's rank is
its port, and any other session's rank is its IP address (IPv4 as a 32-bit
number; a hash of 2^32 - 2^16 values above 65535 for IPv6). The client
knows both from connect(ip, port) (its own address is local_ip, else the
one its route to the server uses), and the server finds a client from the
IP it is given. put(ip, data) stages the payload at ``bias`` in our buffer,
puts it at the same ``bias`` in the peer's and signals it (put_signal with
its length, so the signal arrives after the data, then a tag with the
bias); get_into(ip, dest)/get(ip) wait for that signal, copy the message
out of our own buffer and acknowledge it. put()s to disjoint ranges of a
peer queue; one whose range overlaps a message the peer has not taken yet
waits for its acknowledgement, so it never overwrites a message that has
not been taken, and closing the session waits up to ``linger`` seconds
(default 10) for them. Two senders to one receiver must use different
biases.

Messages by rank (libhmc's hmc_comm_send/recv, any size, any payload, any
memory, staged through the message region at the end of the buffer):
send_data_to()/recv_data_from() (the reference's names), isend()/irecv()
and batch_isend_irecv() with their Requests (hmc.messages).

Memory regions (hmc.regions): register() pins any payload's memory for
one-sided transfers by offset, import_region() takes a peer's descriptor,
put_region()/get_region() (and their _nb forms, whose requests wait()
takes) move bytes between a region or the ConnBuffer on either side, and
atomic() applies a remote atomic to a peer's word.

The signals use u64 tags whose top 16 bits are 0x484D ("HM"); they share
the peer's tag stream with ctrl_send()/ctrl_recv() and are sorted out here,
so ctrl_recv() never sees them and ctrl_send() refuses that range.

Every wait releases the GIL, is cut into slices of SLICE_MS (so that Ctrl-C
raises KeyboardInterrupt between them) and has a deadline: ``timeout=``
seconds, else the session's (create_session(timeout=...), default 60 s);
float("inf") waits until interrupted.
"""

import ctypes
import errno
import hashlib
import ipaddress
import math
import os
import socket
import threading
import time
import weakref
from collections import deque

from . import _lib
from .buffer import IOBuffer
from .enums import AmoOp, ConnType, MemoryType, Status
from .errors import HMCBufferError, HMCError, HMCTimeoutError, check, error
from . import messages, regions
from .payload import dest, source

SLICE_MS = 100
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_LINGER_S = 10.0

TAG_MAGIC = 0x484D              # "HM": bits 63..48 of protocol tags
TAG_DATA = 1                    # bits 47..40: kind; 39..0: a value:
TAG_BIAS = 2                    #   the length, the bias of a put(),
TAG_ACK = 3                     #   0 (taken)
TAG_VALUE_MASK = (1 << 40) - 1

_RETRY_CONNECT = (errno.ECONNREFUSED,)   # the server is not listening yet


def _tag(kind, length):
    return TAG_MAGIC << 48 | kind << 40 | length


def _timeout_ms(seconds):
    """libhmc's op timeout for a session timeout (inf: libhmc's longest)."""
    if math.isinf(seconds):
        return 0x7fffffff
    return max(1, int(seconds * 1000))


class _Deadline:
    """Slices of at most SLICE_MS until @seconds have passed (inf: never)."""

    def __init__(self, seconds):
        if seconds < 0:
            raise ValueError("timeout must be >= 0, not %r" % seconds)
        self.seconds = seconds
        self.end = None if math.isinf(seconds) else time.monotonic() + seconds
        self.started = False

    def slice_ms(self):
        """The next wait in ms, or None once the deadline has passed (one
        wait happens even with a zero timeout)."""
        if self.end is None:
            return SLICE_MS
        left = self.end - time.monotonic()
        if left <= 0:
            if self.started:
                return None
            left = 0
        self.started = True
        return min(SLICE_MS, math.ceil(left * 1000))


def normalize_ip(ip):
    """The numeric form of an address or host name."""
    try:
        return str(ipaddress.ip_address(ip))
    except ValueError:
        pass
    try:
        info = socket.getaddrinfo(ip, None, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise HMCError(errno.EHOSTUNREACH, "resolving %r: %s" % (ip, e))
    return info[0][4][0]


def ip_rank(ip):
    """The rank of an ip-keyed session at @ip (never below 65536)."""
    addr = ipaddress.ip_address(normalize_ip(ip))
    if addr.version == 6 and addr.ipv4_mapped:
        addr = addr.ipv4_mapped
    if addr.version == 4:
        return int(addr)
    h = int.from_bytes(hashlib.sha256(addr.packed).digest()[:4], "big")
    return (1 << 16) + h % ((1 << 32) - (1 << 16))


def route_source_ip(ip, port):
    """Our address on the route to @ip (nothing is sent)."""
    ip = normalize_ip(ip)
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.connect((ip, port or 9))
        return s.getsockname()[0]


class _Peer:
    """What the session knows about one rank."""

    def __init__(self):
        self.ip = None
        self.conn = None        # the transport, when we dialed it
        self.dirty = False      # puts not yet flushed
        self.untaken = deque()  # (bias, size) of our put()s not yet taken
        self.tags = deque()     # ctrl tags read while looking for signals
        self.marks = {TAG_DATA: deque(), TAG_BIAS: deque(), TAG_ACK: deque()}


class _Comm:
    """A communicator and what the session knows about its peers. The
    session's finalizer calls destroy(), so nothing here refers back to the
    Session; it holds the buffer, which must outlive the communicator."""

    def __init__(self, lib, handle, buf, timeout, linger):
        self.lib = lib
        self.handle = handle
        self.buf = buf
        self.timeout = timeout
        self.linger = linger
        self.pid = os.getpid()
        self.lock = threading.RLock()
        self.endpoints = {}     # (ip, port) -> rank, from connect()
        self.peers = {}         # rank -> _Peer
        self.orphans = {}       # requests whose waiter gave up: what
                                # they write into (a fetch's word)
        self.pins = {}          # our regions: handle -> regions._Pin

    def peer(self, rank):
        with self.lock:
            p = self.peers.get(rank)
            if p is None:
                p = self.peers[rank] = _Peer()
            return p

    def what(self, op, rank):
        p = self.peers.get(rank)
        at = " (%s)" % p.ip if p is not None and p.ip else ""
        return "%s rank %d%s" % (op, rank, at)

    def connected(self):
        n = check(self.lib.hmc_comm_peers(self.handle, None, 0), "peers")
        ranks = (ctypes.c_uint32 * max(n, 1))()
        n = check(self.lib.hmc_comm_peers(self.handle, ranks, n), "peers")
        return sorted(ranks[:n])

    def fail(self, rc, op, rank):
        what = self.what(op, rank)
        if -rc == errno.ENOTCONN:
            what += "; connected ranks: %s" % self.connected()
        return error(rc, what)

    def recv(self, rank, kind, timeout, op):
        """The next ctrl tag (kind None) or protocol signal of @kind from
        @rank, waiting in slices up to @timeout seconds (None: default)."""
        p = self.peer(rank)
        dl = _Deadline(self.timeout if timeout is None else timeout)
        tag = ctypes.c_uint64()
        while True:
            with self.lock:
                queue = p.tags if kind is None else p.marks[kind]
                if queue:
                    return queue.popleft()
            ms = dl.slice_ms()
            if ms is None:
                raise HMCTimeoutError(errno.ETIMEDOUT, "%s: nothing after "
                                      "%g s" % (self.what(op, rank),
                                                dl.seconds))
            rc = self.lib.hmc_comm_recv_tag(self.handle, rank,
                                            ctypes.byref(tag), ms)
            if rc == -errno.ETIMEDOUT:
                continue
            if rc:
                raise self.fail(rc, op, rank)
            t = tag.value
            with self.lock:
                if t >> 48 == TAG_MAGIC:
                    k = t >> 40 & 0xff
                    if k not in p.marks:
                        raise HMCError(errno.EPROTO, "%s: unknown signal "
                                       "%#x" % (self.what(op, rank), t))
                    p.marks[k].append(t & TAG_VALUE_MASK)
                else:
                    p.tags.append(t)

    def destroy(self):
        """Wait up to @linger seconds for peers to take our last put(),
        then destroy the communicator (not in a forked child)."""
        if self.pid != os.getpid():
            return
        try:
            end = time.monotonic() + self.linger
            for rank, p in list(self.peers.items()):
                while p.untaken and self.lib.hmc_comm_is_connected(
                        self.handle, rank):
                    left = end - time.monotonic()
                    if left <= 0:
                        break
                    try:
                        self.recv(rank, TAG_ACK, left,
                                  "lingering for our put()s to")
                    except HMCError:
                        break
                    p.untaken.popleft()
        finally:                        # Ctrl-C cuts the linger short
            self.lib.hmc_comm_destroy(self.handle)
            # Its regions went with it: their memory may go now.
            with self.lock:
                pins, self.pins = self.pins, {}
            for pin in pins.values():
                pin.stack.close()


class Session:
    """A ConnBuffer plus the communicator built over it (see the module
    documentation for the two calling styles)."""

    def __init__(self, buf, num_chs=1, local_ip="", ctrl_uds_dir="/tmp", *,
                 timeout=DEFAULT_TIMEOUT_S,
                 connect_timeout=DEFAULT_CONNECT_TIMEOUT_S,
                 linger=DEFAULT_LINGER_S, secret=None, progress_thread=True,
                 ib_dev=None, ib_port=0, msg_region=0, msg_slot_size=0):
        self.buf = buf
        self.num_chs = int(num_chs)
        self.local_ip = local_ip or ""
        self.ctrl_uds_dir = ctrl_uds_dir   # libhmc names its Unix sockets
        self.timeout = float(timeout)
        self.connect_timeout = float(connect_timeout)
        self.linger = float(linger)
        self._secret = secret
        self._progress_thread = progress_thread
        self._ib_dev = ib_dev
        self._ib_port = int(ib_port)
        self._msg_region = int(msg_region)
        self._msg_slot_size = int(msg_slot_size)
        self._lib = _lib.lib()
        self._lock = threading.RLock()  # creating and closing _c
        self._c = None
        self._finalizer = None

    # ---------------------------------------------------------- lifetime

    def _ensure_comm(self, rank):
        with self._lock:
            if self._c is not None:
                current = self._lib.hmc_comm_rank(self._c.handle)
                if current != rank:
                    raise HMCError(errno.EINVAL,
                                   "this session is rank %d, not %d (a rank "
                                   "is fixed until close_server())" %
                                   (current, rank))
                return
            if not 0 <= rank < 1 << 32:
                raise HMCError(errno.EINVAL, "rank %d is not a u32" % rank)
            flags = 0
            if not self._progress_thread:
                flags |= _lib.COMM_F_NO_PROGRESS_THREAD
            if os.environ.get("CTRL_TRANSPORT") == "tcp":   # the reference's
                flags |= _lib.COMM_F_NO_UNIX
            secret = self._secret
            opts = _lib.CommOpts(
                sz=ctypes.sizeof(_lib.CommOpts), rank=rank, flags=flags,
                secret=secret.encode() if isinstance(secret, str) else secret,
                connect_timeout_ms=_timeout_ms(self.connect_timeout),
                op_timeout_ms=_timeout_ms(self.timeout),
                num_chs=self.num_chs,
                ib_dev=self._ib_dev.encode() if self._ib_dev else None,
                ib_port=self._ib_port, msg_slot_size=self._msg_slot_size,
                msg_region=self._msg_region)
            comm = ctypes.c_void_p()
            check(self._lib.hmc_comm_create(self.buf.handle,
                                            ctypes.byref(opts),
                                            ctypes.byref(comm)),
                  "creating a communicator for rank %d" % rank)
            self._c = _Comm(self._lib, comm.value, self.buf, self.timeout,
                            self.linger)
            self._finalizer = weakref.finalize(self, self._c.destroy)

    @property
    def _cs(self):
        """The communicator's state; ENOTCONN before there is one."""
        c = self._c
        if c is None:
            raise HMCError(errno.ENOTCONN,
                           "no communicator yet: call init_server() or "
                           "connect() first")
        return c

    @property
    def comm(self):
        """The struct hmc_comm pointer."""
        return self._cs.handle

    @property
    def rank(self):
        """This session's rank, or None before init_server()/connect()."""
        c = self._c
        return None if c is None else self._lib.hmc_comm_rank(c.handle)

    @property
    def listen_port(self):
        """The TCP port init_server() listens on, or None."""
        c = self._c
        port = -1 if c is None else self._lib.hmc_comm_listen_port(c.handle)
        return None if port < 0 else port

    @property
    def peers(self):
        """Ranks of the connected peers."""
        return self._cs.connected()

    def close_server(self):
        """Stop listening. libhmc stops listening only with its
        communicator, so every peer is disconnected too (after waiting up
        to ``linger`` seconds for each to take our last put()); the session
        and its buffer stay usable and a new init_server()/connect() may
        pick another rank."""
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
            self._c = None
            self._finalizer = None
        return Status.SUCCESS

    def close(self):
        """close_server(), then free the buffer."""
        self.close_server()
        self.buf.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<hmc.Session rank %s, %r>" % (self.rank, self.buf)

    # -------------------------------------------------------- addressing

    def _rank(self, who, port=None, conn=None):
        """The rank of @who: a rank (int) or an address, with the port the
        peer was connected with when there are several at that address."""
        if isinstance(who, bool) or not isinstance(who, (int, str)):
            raise TypeError("a peer is a rank (int) or an address (str), "
                            "not %r" % (who,))
        c = self._cs
        if isinstance(who, int):
            rank = who
        else:
            ip = normalize_ip(who)
            with c.lock:
                rank = c.endpoints.get((ip, port))
                if rank is None:
                    ranks = {r for (i, _), r in c.endpoints.items()
                             if i == ip}
                    if len(ranks) > 1:
                        raise HMCError(errno.EINVAL,
                                       "several peers at %s (ranks %s): give "
                                       "the port or the rank" %
                                       (ip, sorted(ranks)))
                    rank = ranks.pop() if ranks else ip_rank(ip)
        p = c.peer(rank)
        if conn is not None and p.conn is not None and \
           ConnType(conn) != p.conn:
            raise HMCError(errno.EPROTONOSUPPORT,
                           "rank %d is connected over %s, not %s (libhmc "
                           "runs one transport per peer)" %
                           (rank, p.conn.name, ConnType(conn).name))
        return rank

    # ------------------------------------------------------- connections

    def init_server(self, bind_ip=None, ucx_port=None, rdma_port=None,
                    ctrl_tcp_port=None, self_id=None, ctrl_uds_dir=None,
                    conn=None):
        """Listen for peers.

        Ip-keyed: init_server(ip, port, conn=...): rank = port.
        Rank-keyed: init_server(bind_ip=, ucx_port=, rdma_port=,
        ctrl_tcp_port=, self_id=, ctrl_uds_dir=): rank = self_id, listening
        on ctrl_tcp_port (else ucx_port, else rdma_port; 0 picks one, see
        listen_port). The transport is the dialer's choice, so ``conn`` and
        the data ports only document intent; ctrl_uds_dir is unused
        (libhmc's Unix socket is named after the port and checks the
        peer's credentials).
        """
        if conn is not None:
            ConnType(conn)
        port = next((p for p in (ctrl_tcp_port, ucx_port, rdma_port)
                     if p), 0)
        if not 0 <= port <= 65535:
            raise HMCError(errno.EINVAL, "port %d" % port)
        if self_id is None:
            if not port:
                raise HMCError(errno.EINVAL,
                               "init_server(ip, port): the port is the "
                               "server's rank in the ip-keyed style, so it "
                               "cannot be 0 (or give self_id=)")
            self_id = port
        self._ensure_comm(int(self_id))
        check(self._lib.hmc_comm_listen(
            self.comm, bind_ip.encode() if bind_ip else None, port),
            "listening on %s:%d" % (bind_ip or "*", port))
        return Status.SUCCESS

    def connect(self, peer_id=None, self_id=None, peer_ip=None,
                data_port=None, ctrl_tcp_port=None, uds_dir=None,
                conn=ConnType.UCX, *, timeout=None):
        """Connect to a server, waiting up to ``timeout`` (default: the
        session's connect_timeout) for it to listen.

        Ip-keyed: connect(ip, port, conn=...).
        Rank-keyed: connect(peer_id=, self_id=, peer_ip=, data_port=,
        ctrl_tcp_port=, conn=...): dials ctrl_tcp_port (else data_port).
        Connecting again to a connected peer is a no-op.
        """
        conn = ConnType(conn)
        if isinstance(peer_id, str):            # connect(ip, port, ...)
            ip, port = normalize_ip(peer_id), self_id
            if port is None or peer_ip is not None:
                raise TypeError("connect(ip, port, conn=...) or "
                                "connect(peer_id=, self_id=, peer_ip=, "
                                "data_port=, ...)")
            port = int(port)
            rank, data_port, dial_port = port, port, port
            with self._lock:
                if self._c is None:
                    local = self.local_ip or route_source_ip(ip, port)
                    self._ensure_comm(ip_rank(local))
        else:
            if None in (peer_id, self_id, peer_ip) or \
               not (ctrl_tcp_port or data_port):
                raise TypeError("connect() needs peer_id, self_id, peer_ip "
                                "and data_port or ctrl_tcp_port")
            ip, rank = normalize_ip(peer_ip), int(peer_id)
            dial_port = int(ctrl_tcp_port or data_port)
            self._ensure_comm(int(self_id))
        self._dial(rank, ip, dial_port, conn, timeout)
        c = self._cs
        with c.lock:
            c.endpoints[(ip, data_port and int(data_port))] = rank
            if ctrl_tcp_port:
                c.endpoints[(ip, int(ctrl_tcp_port))] = rank
            p = c.peer(rank)
            p.ip, p.conn = ip, conn
        return Status.SUCCESS

    def _dial(self, rank, ip, port, conn, timeout):
        seconds = self.connect_timeout if timeout is None else timeout
        end = time.monotonic() + seconds
        what = "connecting to rank %d at %s:%d over %s" % (rank, ip, port,
                                                          conn.name)
        delay = 0.01
        while True:
            rc = self._lib.hmc_comm_connect(self.comm, rank, ip.encode(),
                                            port, int(conn))
            if rc == 0:
                return
            if rc == -errno.EISCONN:
                p = self._cs.peers.get(rank)
                if p is not None and p.conn not in (None, conn):
                    raise HMCError(errno.EPROTONOSUPPORT,
                                   "%s: already connected over %s" %
                                   (what, p.conn.name))
                return
            left = end - time.monotonic()
            if -rc in _RETRY_CONNECT and left > 0:
                time.sleep(min(delay, left))    # Ctrl-C interrupts it
                delay = min(delay * 2, 0.2)
                continue
            if -rc == errno.ESRCH:
                what += " (the listener there has another rank)"
            raise error(rc, what)

    def disconnect(self, ip=None, conn=None, *, port=None, peer=None):
        """Close the connection to a peer (an address, or ``peer=`` rank)."""
        if isinstance(conn, int) and not isinstance(conn, ConnType):
            port, conn = conn, None             # disconnect(ip, port)
        rank = self._rank(peer if peer is not None else ip, port, conn)
        c = self._cs
        check(self._lib.hmc_comm_disconnect(c.handle, rank),
              c.what("disconnecting", rank))
        with c.lock:
            for key in [k for k, r in c.endpoints.items() if r == rank]:
                del c.endpoints[key]
            c.peers.pop(rank, None)
        return Status.SUCCESS

    def check_conn(self, ip=None, port=None, conn=None, *, peer=None):
        """Whether a peer is connected."""
        if self._c is None:
            return False
        rank = self._rank(peer if peer is not None else ip, port, conn)
        return bool(self._lib.hmc_comm_is_connected(self._c.handle, rank))

    def progress(self):
        """Drive libhmc's progress once, without waiting: for a session
        without the progress thread that polls (a target of UCX transfers
        emulated with active messages must progress for them to land).
        Returns how many events it handled."""
        n = self._lib.hmc_comm_progress(self._cs.handle)
        if n < 0:
            raise HMCError(-n, "progress")
        return n

    # ---------------------------------------------------------- requests

    def _reap(self, c):
        """Collect requests that a timed-out or interrupted waiter left."""
        with c.lock:
            c.orphans = {r: keep for r, keep in c.orphans.items()
                         if self._lib.hmc_comm_test(c.handle, r) ==
                         -errno.EINPROGRESS}

    def _post(self, op, rank, local_off, remote_off, nbytes, mr=0, rmr=0):
        """Post a put or get between our ConnBuffer (or region @mr) and
        the peer's (or its imported region @rmr; handle 0 names the
        ConnBuffer, as in hmc_comm_put_nb()): the request."""
        if local_off < 0 or remote_off < 0 or nbytes < 0:
            raise HMCError(errno.ERANGE, "%s: negative offset or size" % op)
        c = self._cs
        if c.orphans:
            self._reap(c)
        p = c.peer(rank)
        if op == "get" and p.dirty:
            self.flush(rank)            # a get sees our earlier puts
        req = _lib.c_req()
        fn = self._lib.hmc_comm_put_mr_nb if op == "put" else \
            self._lib.hmc_comm_get_mr_nb
        rc = fn(c.handle, rank, mr, int(local_off), rmr, int(remote_off),
                int(nbytes), ctypes.byref(req))
        if rc:
            where = "" if not (mr or rmr) else \
                " between region %#x and region %#x" % (mr, rmr)
            raise c.fail(rc, "%s of %d bytes (local %d, remote %d)%s to" %
                             (op, nbytes, local_off, remote_off, where),
                         rank)
        if op == "put":
            p.dirty = True
        return req.value

    def _wait_one(self, req, timeout, what):
        """Wait for @req in slices; it stays valid if we give up."""
        # Done already (shm completes at post): no deadline to set up.
        rc = self._lib.hmc_comm_test(self.comm, req)
        if rc != -errno.EINPROGRESS:
            check(rc, what)
            return
        dl = _Deadline(self.timeout if timeout is None else timeout)
        while True:
            ms = dl.slice_ms()
            if ms is None:
                raise HMCTimeoutError(errno.ETIMEDOUT,
                                      "%s: still pending after %g s" %
                                      (what, dl.seconds))
            rc = self._lib.hmc_comm_wait(self.comm, req, ms)
            if rc != -errno.ETIMEDOUT:
                check(rc, what)
                return
            # The wait's deadline, or the operation's own result?
            if self._lib.hmc_comm_test(self.comm, req) != -errno.EINPROGRESS:
                raise error(rc, what)

    def _transfer(self, op, rank, local_off, remote_off, nbytes, timeout,
                  mr=0, rmr=0):
        req = self._post(op, rank, local_off, remote_off, nbytes, mr, rmr)
        self._complete(req, self._cs.what(op, rank), timeout)

    def _complete(self, req, what, timeout, keep=None):
        """Wait for @req; if we give up, it stays in the orphans with
        @keep, what it writes into, until it is done."""
        done = False
        try:
            self._wait_one(req, timeout, what)
            done = True
        finally:
            if not done:
                c = self._cs
                with c.lock:
                    c.orphans[req] = keep

    def put_remote(self, ip=None, port=None, local_off=0, remote_off=0,
                   nbytes=0, conn=None, *, peer=None, timeout=None):
        """Put our [local_off, +nbytes) into the peer's [remote_off, ...) and
        wait until our range may be reused. The peer is ``ip`` (with the
        ``port`` it was connected with) or ``peer=`` rank. Before a later
        ctrl_send() or get to that peer, the session flushes, so the peer
        sees the data by the time it gets the tag."""
        rank = self._rank(peer if peer is not None else ip, port, conn)
        self._transfer("put", rank, local_off, remote_off, nbytes, timeout)
        return Status.SUCCESS

    def get_remote(self, ip=None, port=None, local_off=0, remote_off=0,
                   nbytes=0, conn=None, *, peer=None, timeout=None):
        """Get the peer's [remote_off, +nbytes) into our [local_off, ...)."""
        rank = self._rank(peer if peer is not None else ip, port, conn)
        self._transfer("get", rank, local_off, remote_off, nbytes, timeout)
        return Status.SUCCESS

    def put_nb(self, ip=None, port=None, local_off=0, remote_off=0,
               nbytes=0, conn=None, *, peer=None):
        """Start a put; returns the request for wait()."""
        rank = self._rank(peer if peer is not None else ip, port, conn)
        return self._post("put", rank, local_off, remote_off, nbytes)

    def get_nb(self, ip=None, port=None, local_off=0, remote_off=0,
               nbytes=0, conn=None, *, peer=None):
        """Start a get; returns the request for wait()."""
        rank = self._rank(peer if peer is not None else ip, port, conn)
        return self._post("get", rank, local_off, remote_off, nbytes)

    def wait(self, reqs, timeout=None):
        """Wait for a request or a list of them. Raises the first error; on
        timeout, HMCTimeoutError, and the requests still pending stay valid
        (wait for them again)."""
        if isinstance(reqs, int):
            self._wait_one(reqs, timeout, "request %d" % reqs)
            return Status.SUCCESS
        pending = [int(r) for r in reqs]
        results = {}
        dl = _Deadline(self.timeout if timeout is None else timeout)
        while pending:
            ms = dl.slice_ms()
            if ms is None:
                raise HMCTimeoutError(errno.ETIMEDOUT,
                                      "%d of %d requests still pending after "
                                      "%g s" % (len(pending), len(results) +
                                                len(pending), dl.seconds))
            arr = (_lib.c_req * len(pending))(*pending)
            status = (ctypes.c_int * len(pending))()
            self._lib.hmc_comm_wait_all(self.comm, arr, len(pending), ms,
                                        status)
            left = []
            for req, st in zip(pending, status):
                if st == -errno.EINPROGRESS:
                    left.append(req)
                else:
                    results[req] = st
            pending = left
        for req, st in results.items():
            check(st, "request %d" % req)
        return Status.SUCCESS

    def flush(self, peer):
        """Wait until every earlier put to @peer is visible in its buffer
        (bounded by the session timeout)."""
        rank = self._rank(peer)
        check(self._lib.hmc_comm_flush(self.comm, rank),
              self._cs.what("flushing puts to", rank))
        self._cs.peer(rank).dirty = False
        return Status.SUCCESS

    def barrier(self, timeout=None):
        """Wait until every connected peer enters the barrier."""
        seconds = self.timeout if timeout is None else timeout
        check(self._lib.hmc_comm_barrier(self.comm, _timeout_ms(seconds)),
              "barrier")
        return Status.SUCCESS

    # --------------------------------------------------- memory regions

    def register(self, obj, *, remote_read=False, remote_write=False,
                 notify=False, nbytes=None, device=None):
        """Register ``obj``'s memory (its first ``nbytes``) for one-sided
        transfers: a Region (see hmc.regions), which keeps ``obj`` alive
        and pinned until closed. ``remote_read``/``remote_write`` let
        peers get from/put into it; with ``notify`` its ``writes`` counts
        peers' puts and atomics landing in it (where the transport places
        the bytes itself: tcp). Register once the peers are connected
        (EOPNOTSUPP where the only transport up is shm)."""
        access = (_lib.MR_REMOTE_READ if remote_read else 0) | \
            (_lib.MR_REMOTE_WRITE if remote_write else 0)
        return regions.register(self._cs, obj, nbytes, access, notify,
                                device)

    def import_region(self, peer, desc):
        """A RemoteRegion for ``desc``, the descriptor (Region.pack()) of
        a region of connected ``peer`` (a rank or address): EINVAL for one
        that does not parse, ENOENT for one without a key for the
        transport that reaches the peer."""
        return regions.import_region(self._cs, self._rank(peer), desc)

    def _regions(self, op, local, remote):
        """(rank, mr, rmr) of a transfer between @local (a Region, or None
        or sess.buf: the ConnBuffer) and @remote (a RemoteRegion, or a
        peer: its ConnBuffer)."""
        c = self._cs
        if local is None or local is self.buf:
            mr = 0
        elif isinstance(local, regions.Region):
            mr = local._handle_in(c)
            if op == "get" and not local.writable:
                raise HMCBufferError("cannot get into %r: its %s is "
                                     "read-only" % (local,
                                                    type(local.obj).__name__))
        else:
            raise TypeError("local is a Region, or None (or sess.buf) for "
                            "the ConnBuffer, not %r" % (local,))
        if isinstance(remote, regions.RemoteRegion):
            return remote.peer, mr, remote._handle_in(c)
        return self._rank(remote), mr, 0

    def put_region(self, local, local_off, remote, remote_off, nbytes, *,
                   timeout=None):
        """Put ``nbytes`` from ``local`` (a Region, or None: the
        ConnBuffer) at ``local_off`` into ``remote`` (a RemoteRegion, or a
        peer: its ConnBuffer) at ``remote_off``, and wait until our range
        may be reused. ERANGE past either end, EACCES where the remote
        region does not allow writes, ENOENT for a deregistered one."""
        rank, mr, rmr = self._regions("put", local, remote)
        self._transfer("put", rank, local_off, remote_off, nbytes, timeout,
                       mr, rmr)
        return Status.SUCCESS

    def get_region(self, local, local_off, remote, remote_off, nbytes, *,
                   timeout=None):
        """Get ``nbytes`` of ``remote`` at ``remote_off`` into ``local`` at
        ``local_off`` (as put_region(); EACCES where the remote region does
        not allow reads)."""
        rank, mr, rmr = self._regions("get", local, remote)
        self._transfer("get", rank, local_off, remote_off, nbytes, timeout,
                       mr, rmr)
        return Status.SUCCESS

    def put_region_nb(self, local, local_off, remote, remote_off, nbytes):
        """Start a put_region(); returns the request for wait()."""
        rank, mr, rmr = self._regions("put", local, remote)
        return self._post("put", rank, local_off, remote_off, nbytes, mr, rmr)

    def get_region_nb(self, local, local_off, remote, remote_off, nbytes):
        """Start a get_region(); returns the request for wait()."""
        rank, mr, rmr = self._regions("get", local, remote)
        return self._post("get", rank, local_off, remote_off, nbytes, mr, rmr)

    def atomic(self, peer, region, offset, op, value, compare=0, size=8,
               fetch=True, *, timeout=None):
        """Apply ``op`` (AmoOp) with ``value`` (and ``compare`` for CSWAP)
        to the ``size``-byte (4 or 8) word at ``offset`` of ``peer``'s
        ``region`` (a RemoteRegion, or None: its ConnBuffer), atomically
        with respect to the peer's own and its other peers' atomics there.
        Returns the old value (unsigned) with ``fetch``, else None once
        sent (a flush, or the next ctrl_send(), makes it visible). Negative
        values are two's complement. The word must be aligned to ``size``
        (EINVAL); the region must allow writes, and reads to fetch
        (EACCES); EOPNOTSUPP where the transport has no atomics (shm)."""
        op = AmoOp(op)
        rank = self._rank(peer)
        c = self._cs
        rmr = 0
        if region is not None:
            if not isinstance(region, regions.RemoteRegion):
                raise TypeError("region is a RemoteRegion, or None for the "
                                "peer's ConnBuffer, not %r" % (region,))
            if region.peer != rank:
                raise HMCError(errno.EINVAL, "%r is not rank %d's" %
                               (region, rank))
            rmr = region._handle_in(c)
        if offset < 0:
            raise HMCError(errno.ERANGE, "negative offset %d" % offset)
        operand = regions.word(value, size, "value")
        cmp = regions.word(compare, size, "compare")
        old = ctypes.c_uint64() if fetch else None
        req = _lib.c_req()
        what = "atomic %s of %d bytes at %d of %s of" % (
            op.name, size, offset,
            "region %#x" % rmr if rmr else "the ConnBuffer")
        if c.orphans:
            self._reap(c)
        rc = self._lib.hmc_comm_amo_nb(
            c.handle, rank, rmr, int(offset), size, int(op), operand, cmp,
            ctypes.byref(old) if fetch else None, ctypes.byref(req))
        if rc:
            raise c.fail(rc, what, rank)
        if not fetch:
            c.peer(rank).dirty = True
        self._complete(req.value, c.what(what, rank), timeout, old)
        return old.value if fetch else None

    # ---------------------------------------------------------- control

    def ctrl_send(self, peer, tag, timeout=None):
        """Send a u64 tag to @peer (a rank or address), after flushing our
        puts to it. ``timeout`` is accepted for symmetry; sends are
        bounded by the session timeout."""
        tag = int(tag)
        if not 0 <= tag < 1 << 64:
            raise HMCError(errno.ERANGE, "tag %d is not a u64" % tag)
        if tag >> 48 == TAG_MAGIC:
            raise HMCError(errno.EINVAL,
                           "tags 0x484D<<48 and up are reserved for "
                           "put()/get_into() signals")
        rank = self._rank(peer)
        c = self._cs
        if c.peer(rank).dirty:
            self.flush(rank)
        rc = self._lib.hmc_comm_send_tag(c.handle, rank, tag)
        if rc:
            raise c.fail(rc, "sending tag %d to" % tag, rank)
        return Status.SUCCESS

    def ctrl_recv(self, peer, timeout=None):
        """The next tag from @peer (a rank or address), waiting for it
        (and for the peer to connect) up to ``timeout`` seconds."""
        rank = self._rank(peer)
        return self._cs.recv(rank, None, timeout, "waiting for a tag from")

    # ------------------------------------------- ip-keyed messages

    def put(self, ip, data, conn=ConnType.UCX, bias=0, size=None, *,
            timeout=None, device=None):
        """Copy ``data`` (its first ``size`` bytes) to ``bias`` in our
        buffer, put it at ``bias`` in the peer's and signal it; returns the
        size. Messages to disjoint ranges queue; one whose range overlaps a
        message the peer has not taken yet waits (up to ``timeout``) until
        the peer has taken it. The put and its signal are bounded by the
        session timeout."""
        rank = self._rank(ip, None, conn)
        c = self._cs
        p = c.peer(rank)
        if bias > TAG_VALUE_MASK:
            raise HMCError(errno.EMSGSIZE, "put() at bias %d" % bias)
        with source(data, size, device) as region:
            n = region.nbytes
        self._taken(c, rank, p, 0)              # what has been taken since
        while any(b < bias + n and bias < b + m for b, m in p.untaken):
            self._taken(c, rank, p, timeout)
        self.buf.put(data, bias, size, device)
        rc = self._lib.hmc_comm_put_signal(c.handle, rank, bias, bias, n,
                                           _tag(TAG_DATA, n))
        if not rc:
            rc = self._lib.hmc_comm_send_tag(c.handle, rank,
                                             _tag(TAG_BIAS, bias))
        if rc:
            raise c.fail(rc, "put of %d bytes at %d to" % (n, bias),
                             rank)
        p.untaken.append((bias, n))
        return n

    @staticmethod
    def _taken(c, rank, p, timeout):
        """Note the peer's acknowledgements (it takes our messages in
        order): all that came (timeout 0), or at least one."""
        while p.untaken:
            try:
                c.recv(rank, TAG_ACK, timeout,
                       "waiting for an earlier message to be taken by")
            except HMCTimeoutError:
                if timeout == 0:
                    return
                raise
            p.untaken.popleft()
            if timeout != 0:
                return

    def _take(self, rank, bias, timeout):
        """Wait for the peer's next put(): its length and bias, which must
        be @bias unless that is None."""
        c = self._cs
        n = c.recv(rank, TAG_DATA, timeout, "waiting for a put() from")
        at = c.recv(rank, TAG_BIAS, timeout, "waiting for a put() from")
        if bias is not None and bias != at:
            self._ack(rank)
            raise HMCError(errno.EINVAL, "%s: the %d-byte message is at bias "
                           "%d, not %d" % (c.what("receiving from", rank),
                                           n, at, bias))
        return n, at

    def _ack(self, rank):
        c = self._cs
        rc = self._lib.hmc_comm_send_tag(c.handle, rank, _tag(TAG_ACK, 0))
        # A peer that has gone no longer needs the acknowledgement.
        if rc and -rc not in (errno.ENOTCONN, errno.ECONNRESET, errno.EPIPE):
            raise c.fail(rc, "acknowledging a put() to", rank)

    def get_into(self, ip, dest_obj, conn=ConnType.UCX, bias=None,
                 size=None, *, timeout=None, device=None, one_sided=False):
        """Receive the peer's next put() into ``dest_obj`` (writable,
        contiguous, at least ``size`` or its own size); returns the
        message's size. ``bias``, if given, is where the message must be.
        With ``one_sided=True``: read the peer's [bias, bias + size)
        instead, without waiting for a put()."""
        rank = self._rank(ip, None, conn)
        if one_sided:
            bias = bias or 0
            with dest(dest_obj, size, device) as r:
                n = r.nbytes
            self._transfer("get", rank, bias, bias, n, timeout)
            return self.buf.get_into(dest_obj, n, bias, device)
        n, at = self._take(rank, bias, timeout)
        try:
            with dest(dest_obj, size, device) as r:
                if n > r.nbytes:
                    raise HMCBufferError(
                        "a %d-byte message from %s does not fit %d bytes; "
                        "it stays at offset %d of sess.buf" %
                        (n, ip, r.nbytes, at))
            return self.buf.get_into(dest_obj, n, at, device)
        finally:
            self._ack(rank)

    def get(self, ip, size=None, conn=ConnType.UCX, bias=None, *,
            timeout=None, one_sided=False):
        """Receive the peer's next put() as bytes (at most ``size``); with
        ``one_sided=True``, read ``size`` bytes at ``bias`` of its buffer."""
        if isinstance(ip, int) and isinstance(size, str):
            ip, size = size, ip                 # get(size, ip)
        rank = self._rank(ip, None, conn)
        if one_sided:
            if size is None:
                raise TypeError("a one-sided get() needs size")
            bias = bias or 0
            self._transfer("get", rank, bias, bias, size, timeout)
            return self.buf.get(size, bias)
        n, at = self._take(rank, bias, timeout)
        try:
            if size is not None and n > size:
                raise HMCBufferError(
                    "a %d-byte message from %s is larger than size=%d; it "
                    "stays at offset %d of sess.buf" % (n, ip, size, at))
            return self.buf.get(n, at)
        finally:
            self._ack(rank)

    # ------------------------------------------------ messages by rank

    def isend(self, data, peer, tag=0, *, size=None, device=None):
        """Start sending ``data`` (its first ``size`` bytes) to rank
        ``peer`` with ``tag``: a Request (wait() it; ``data`` must not
        change until then)."""
        return messages.post(self, False, peer, data, tag, size, device)

    def irecv(self, dest_obj, peer=None, tag=messages.ANY_TAG, *, size=None,
              device=None):
        """Start receiving the next message from rank ``peer`` (None or
        ANY_SOURCE: anyone) with ``tag`` (ANY_TAG: any) into ``dest_obj``
        (writable, contiguous; at most ``size`` bytes of it): a Request
        whose wait() returns the message's size and whose ``source`` and
        ``tag`` then say whose it was. A message larger than the
        destination fails with EMSGSIZE on both sides."""
        return messages.post(self, True, peer, dest_obj, tag, size, device)

    def batch_isend_irecv(self, ops):
        """Post a list of P2POp in order (one libhmc call): their Requests."""
        return messages.post_batch(self, ops)

    def send_data_to(self, ip=None, port=None, data=None, size=None,
                     mem_type=None, conn=None, *, peer=None, tag=0,
                     timeout=None):
        """The reference's sendDataTo: send ``data`` (a payload, or with
        ``mem_type`` a raw address of ``size`` bytes) to the peer at ``ip``
        (or ``peer=`` rank) and wait until it has all of it; returns the
        size."""
        rank = self._rank(peer if peer is not None else ip, port, conn)
        r = messages.post(self, False, rank, data, tag, size, mem_type)
        return r.wait(timeout)

    def recv_data_from(self, ip=None, port=None, dest_obj=None, size=None,
                       mem_type=None, conn=None, *, peer=None, tag=0,
                       timeout=None):
        """The reference's recvDataFrom: receive the next message with
        ``tag`` from the peer at ``ip`` (or ``peer=`` rank; ANY_SOURCE for
        anyone) into ``dest_obj`` (a writable payload, or with ``mem_type``
        a raw address of ``size`` bytes); returns its size (the reference's
        ``flag``)."""
        who = peer if peer is not None else ip
        rank = who if who == messages.ANY_SOURCE else \
            self._rank(who, port, conn)
        r = messages.post(self, True, rank, dest_obj, tag, size, mem_type)
        return r.wait(timeout)

    def put_torch_cuda(self, ip, tensor, conn=ConnType.RDMA, bias=0):
        """put() of a CUDA tensor (its device pointer)."""
        _require_gpu_tensor(tensor)
        return self.put(ip, tensor, conn, bias)

    def get_torch_cuda(self, ip, tensor, conn=ConnType.RDMA, bias=None):
        """get_into() a CUDA tensor (its device pointer)."""
        _require_gpu_tensor(tensor)
        return self.get_into(ip, tensor, conn, bias)


def _require_gpu_tensor(t):
    if getattr(getattr(t, "device", None), "type", None) != "cuda":
        raise HMCBufferError("expected a CUDA tensor")


def create_session(device_id=0, buffer_size=128 * 1024 * 1024,
                   mem_type=MemoryType.CPU, num_chs=1, local_ip="",
                   **options):
    """A Session over a new ConnBuffer of ``buffer_size`` bytes.

    ``local_ip`` is this host's address in the ip-keyed style (its rank);
    options: timeout (s, default 60), connect_timeout (s, default 10),
    linger (s, default 10: how long closing waits for peers to take our
    last put()), secret (default: HMC_SECRET), progress_thread (default
    True), ib_dev, ib_port (verbs), ctrl_uds_dir (unused: see init_server),
    msg_region and msg_slot_size (the bytes at the end of the buffer that
    messages stage through, and their slots; 0: libhmc's defaults).
    """
    buf = IOBuffer(device_id=device_id, size=buffer_size, mem_type=mem_type)
    return Session(buf, num_chs=num_chs, local_ip=local_ip, **options)
