# SPDX-License-Identifier: MIT
"""Wait for a peer that never comes, until SIGINT: prints
"KeyboardInterrupt in <what>" and exits 0 when Ctrl-C ends the wait.

    sigint_wait.py get_into|ctrl_recv PORT
"""
import signal
import sys

import hmc

# Python leaves SIGINT ignored when it starts ignored (a background job of
# a non-interactive shell, as CI may be): this test is about Ctrl-C.
signal.signal(signal.SIGINT, signal.default_int_handler)
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
