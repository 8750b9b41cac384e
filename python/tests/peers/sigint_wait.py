# SPDX-License-Identifier: MIT
"""Wait for a peer that never comes, until SIGINT: prints
"KeyboardInterrupt in <what>" and exits 0 when Ctrl-C ends the wait.

    sigint_wait.py get_into|ctrl_recv PORT
"""
import sys

import hmc

what, port = sys.argv[1], int(sys.argv[2])
sess = hmc.create_session(buffer_size=1 << 20, timeout=60)
sess.init_server("127.0.0.1", port)
print("waiting", flush=True)
try:
    if what == "get_into":
        sess.get_into("127.0.0.9", bytearray(16))
    else:
        sess.ctrl_recv(1)
except KeyboardInterrupt:
    print("KeyboardInterrupt in", what, flush=True)
    sys.exit(0)
print("the wait ended without an interrupt", flush=True)
sys.exit(1)
