# SPDX-License-Identifier: MIT
"""Rank 1 of test_regions.ProcessTest, in a process of its own.

    region_peer.py PORT

Connects to rank 0 over tcp, registers a bytearray from an odd offset on
and swaps descriptors with rank 0's NumPy region; puts into and gets from
it, checking every byte it gets; when told the offset of rank 0's counter
(a tag), adds to it with fetching atomics, racing rank 2, and sends the
values it fetched back; then checks what rank 0 put into its region.
Prints "rank 1: ok" and exits 0, or prints FAIL and exits 1.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np                                      # noqa: E402

import hmc                                              # noqa: E402
from support import first_difference, pattern          # noqa: E402

HOST = "127.0.0.1"
X_LEN = 1 << 20         # rank 0's region
Y_LEN = 600000          # ours
PUT, GET, PUT_BACK = 300007, 65539, 200003
Y_GOT_AT, Y_PUT_AT = 300001, 7
ADDS = 1500
HELLO, DONE, CHECK = 0x5A, 3, 4
TAG_DESC0, TAG_DESC1, TAG_SEEN = 2, 1, 5


def x_initial():
    return pattern(X_LEN, 20)


def y_initial():
    return pattern(Y_LEN + 5, 21)[5:]


def back():
    """What rank 0 puts into our region."""
    return pattern(PUT_BACK, 22)


def check(what, got, want):
    diff = first_difference(got, want)
    if diff:
        print("FAIL", what, diff, flush=True)
        sys.exit(1)


def main(port):
    sess = hmc.create_session(buffer_size=1 << 20, timeout=30)
    sess.connect(peer_id=0, self_id=1, peer_ip=HOST, ctrl_tcp_port=port,
                 conn=hmc.ConnType.TCP)
    sess.ctrl_send(0, HELLO)
    ba = bytearray(pattern(Y_LEN + 5, 21))
    y = memoryview(ba)[5:]
    my = sess.register(y, remote_read=True, remote_write=True)
    sess.send_data_to(peer=0, data=my.pack(), tag=TAG_DESC1)
    desc = bytearray(hmc.MR_DESC_MAX)
    n = sess.recv_data_from(peer=0, dest_obj=desc, tag=TAG_DESC0)
    rx = sess.import_region(0, desc[:n])
    if (rx.nbytes, rx.notifies) != (X_LEN, True):
        print("FAIL imported", rx, rx.notifies, flush=True)
        return 1

    sess.put_region(my, 13, rx, 1001, PUT)
    sess.get_region(my, Y_GOT_AT, rx, X_LEN // 2, GET)
    check("get", y[Y_GOT_AT:Y_GOT_AT + GET],
          x_initial()[X_LEN // 2:X_LEN // 2 + GET])

    counter = sess.ctrl_recv(0)             # go: rank 2 adds too
    seen = np.array([sess.atomic(0, rx, counter, hmc.AmoOp.ADD, 1)
                     for _ in range(ADDS)], dtype=np.uint64)
    sess.send_data_to(peer=0, data=seen, tag=TAG_SEEN)
    sess.ctrl_send(0, DONE)                 # after flushing

    if sess.ctrl_recv(0) != CHECK:
        print("FAIL protocol", flush=True)
        return 1
    want = bytearray(y_initial())
    want[Y_GOT_AT:Y_GOT_AT + GET] = x_initial()[X_LEN // 2:X_LEN // 2 + GET]
    want[Y_PUT_AT:Y_PUT_AT + PUT_BACK] = back()
    check("region after rank 0's put", y, want)
    my.close()
    sess.close()
    print("rank 1: ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
