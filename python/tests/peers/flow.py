# SPDX-License-Identifier: MIT
"""One side of the quick-start flow between two processes, with
non-uniform payloads whose every byte the receiver checks.

    flow.py server|client ip|rank PORT

ip-keyed: the client put()s byte strings of several sizes and a NumPy
array; the server get()s/get_into()s each, checks it and sends the array
back, transformed (x * 3 + 1), which the client checks.
rank-keyed: the client stages with buf.put, put_remote()s, and tells the
server the length with a tag; the server checks its buffer, writes the
transformed array at ARRAY_AT, and the client get_remote()s it.
Both print "verified <bytes>" and exit 0, or print FAIL and exit 1.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np                                      # noqa: E402

import hmc                                              # noqa: E402
from support import first_difference, pattern          # noqa: E402

HOST = "127.0.0.1"
SIZES = [1, 7, 4096, 65537, (1 << 20) + 3, 8 << 20]
ARRAY_AT = 64 << 20
DONE = 99


def array():
    return np.random.default_rng(5).integers(-1 << 40, 1 << 40, (512, 300),
                                             dtype=np.int64)


def transformed(x):
    return x * 3 + 1


def check(what, got, want):
    diff = first_difference(got, want)
    if diff:
        print("FAIL", what, diff, flush=True)
        sys.exit(1)
    print("ok", what, flush=True)
    return len(want)


def ip_server(sess, port):
    sess.init_server(HOST, port, conn=hmc.ConnType.UCX)
    print("ready", flush=True)
    checked = 0
    for i, n in enumerate(SIZES):
        checked += check("bytes %d" % n, sess.get(HOST, conn=hmc.ConnType.UCX),
                         pattern(n, i))
    x = np.empty((512, 300), dtype=np.int64)
    sess.get_into(HOST, x, conn=hmc.ConnType.UCX)
    checked += check("array", x.tobytes(), array().tobytes())
    sess.put(HOST, transformed(x)[:, ::2], conn=hmc.ConnType.UCX)
    assert sess.ctrl_recv(HOST) == DONE
    return checked


def ip_client(sess, port):
    sess.connect(HOST, port, conn=hmc.ConnType.UCX)
    for i, n in enumerate(SIZES):
        assert sess.put(HOST, pattern(n, i), conn=hmc.ConnType.UCX) == n
    sess.put(HOST, array(), conn=hmc.ConnType.UCX)
    y = np.zeros((512, 150), dtype=np.int64)
    sess.get_into(HOST, y, conn=hmc.ConnType.UCX)
    checked = check("array back", y.tobytes(),
                    transformed(array())[:, ::2].tobytes())
    sess.ctrl_send(HOST, DONE)
    return checked


def rank_server(sess, port):
    sess.init_server(bind_ip=HOST, ucx_port=port, rdma_port=port + 1,
                     ctrl_tcp_port=port, self_id=0, ctrl_uds_dir="/tmp")
    print("ready", flush=True)
    checked = 0
    for i, n in enumerate(SIZES):
        assert sess.ctrl_recv(peer=1) == n
        out = bytearray(n)
        sess.buf.get_into(out, nbytes=n, offset=0)
        checked += check("bytes %d" % n, out, pattern(n, i))
        sess.ctrl_send(peer=1, tag=n)           # the client may reuse 0
    x = np.empty((512, 300), dtype=np.int64)
    assert sess.ctrl_recv(peer=1) == x.nbytes
    sess.buf.get_into(x, nbytes=x.nbytes, offset=0)
    checked += check("array", x.tobytes(), array().tobytes())
    sess.buf.put(transformed(x), offset=ARRAY_AT)
    sess.ctrl_send(peer=1, tag=x.nbytes)
    assert sess.ctrl_recv(peer=1) == DONE
    return checked


def rank_client(sess, port):
    sess.connect(peer_id=0, self_id=1, peer_ip=HOST, data_port=port,
                 ctrl_tcp_port=port, conn=hmc.ConnType.UCX)
    for i, n in enumerate(SIZES):
        assert sess.buf.put(pattern(n, i), offset=0) == n
        sess.put_remote(HOST, port, local_off=0, remote_off=0, nbytes=n,
                        conn=hmc.ConnType.UCX)
        sess.ctrl_send(peer=0, tag=n)
        assert sess.ctrl_recv(peer=0) == n
    x = array()
    n = sess.buf.put(x, offset=0)
    sess.put_remote(HOST, port, local_off=0, remote_off=0, nbytes=n)
    sess.ctrl_send(peer=0, tag=n)
    assert sess.ctrl_recv(peer=0) == n
    sess.buf.put(bytes(n), offset=0)            # the get must fill it
    sess.get_remote(HOST, port, local_off=0, remote_off=ARRAY_AT, nbytes=n,
                    conn=hmc.ConnType.UCX)
    y = np.empty_like(x)
    sess.buf.get_into(y, nbytes=n, offset=0)
    checked = check("array back", y.tobytes(), transformed(x).tobytes())
    sess.ctrl_send(peer=0, tag=DONE)
    return checked


def main():
    role, style, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    fn = {("server", "ip"): ip_server, ("client", "ip"): ip_client,
          ("server", "rank"): rank_server,
          ("client", "rank"): rank_client}[(role, style)]
    with hmc.create_session(mem_type=hmc.MemoryType.CPU, timeout=60) as sess:
        print("verified", fn(sess, port), flush=True)


if __name__ == "__main__":
    main()
