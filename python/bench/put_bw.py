# SPDX-License-Identifier: MIT
"""Python put bandwidth of a 1 MiB NumPy array against hmcperf put_bw, with
the methodology of tests/bench/bench.sh: UCX_TLS=tcp,self, 1 MiB puts,
-n 2000 -w 100 -O 32 (about a second per run), 7 repetitions alternating the
two tools, medians.

The Python side does what hmcperf's put_bw does, through the bindings:
a server process (rank 0) that spins on progress until the end tag, as
hmcperf's target does (over UCX tcp the puts are active messages that the
target must progress), and a client
(rank 1) that keeps a window of 32 put_nb() requests in flight from one
local slot to one remote range, waiting for the oldest before reusing its
place, then waits for all and flushes; MB/s = 10^6 bytes per second of
that timed phase. The slot holds a NumPy array staged with sess.buf.put()
once, as hmcperf's is filled once. Like hmcperf without -P (as bench.sh
runs it), both sessions run without libhmc's progress thread: the waiting
caller drives progress. A second line reports the same loop with the
array staged into a slot of its own before every put (the copy included),
for information.

    put_bw.py --hmcperf build/tools/hmcperf [--reps 7] [--transport shm]
prints `RATIO py_vs_c_put_bw_1MiB <py/c> >=0.9`; with --transport shm, both
run over the shm transport instead (no UCX_TLS; both servers wait for the
end tag without spinning, the puts needing no target) and the line is
`RATIO py_vs_c_shm_put_bw_1MiB`.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np                                      # noqa: E402

import hmc                                              # noqa: E402

SIZE = 1 << 20
ITERS, WARMUP, WINDOW = 2000, 100, 32
END_TAG = 1


def serve(transport):
    """Rank 0: listen on a free port, print it, spin on progress until the
    end tag comes (looking for it every 1000 rounds). Over shm the puts
    need no target, so it waits for the tag instead, as hmcperf's server
    does there: a spinning server would take a CPU from the client."""
    with hmc.create_session(buffer_size=SIZE, timeout=300,
                            progress_thread=False) as sess:
        sess.init_server(bind_ip="127.0.0.1", ctrl_tcp_port=0, self_id=0)
        print(sess.listen_port, flush=True)
        if transport == "shm":
            assert sess.ctrl_recv(peer=1, timeout=300) == END_TAG
            return
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            for _ in range(1000):
                sess.progress()
            try:
                tag = sess.ctrl_recv(peer=1, timeout=0)
            except hmc.HMCTimeoutError:
                continue
            assert tag == END_TAG
            return
        raise SystemExit("no end tag within 300 s")


def timed_puts(sess, iters, stage):
    """One phase of @iters windowed puts: its duration in seconds."""
    reqs = [0] * WINDOW
    array = stage
    start = time.perf_counter()
    for i in range(iters):
        slot = i % WINDOW
        if reqs[slot]:
            sess.wait(reqs[slot])
        local = 0
        if array is not None:           # a fresh copy of the array each time
            local = slot * SIZE
            sess.buf.put(array, offset=local)
        reqs[slot] = sess.put_nb(peer=0, local_off=local, remote_off=0,
                                 nbytes=SIZE)
    sess.wait([r for r in reqs if r])
    sess.flush(0)
    return time.perf_counter() - start


CONN = {"ucx": hmc.ConnType.UCX, "shm": hmc.ConnType.SHM}


def python_run(stage_each, transport):
    """Bandwidth (MB/s) of one Python client against a fresh server."""
    server = subprocess.Popen([sys.executable, __file__, "--serve",
                               "--transport", transport],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        array = np.random.default_rng(1).integers(0, 256, SIZE,
                                                  dtype=np.uint8)
        with hmc.create_session(buffer_size=WINDOW * SIZE, timeout=300,
                                progress_thread=False) as sess:
            sess.connect(peer_id=0, self_id=1, peer_ip="127.0.0.1",
                         data_port=port, conn=CONN[transport])
            sess.buf.put(array, offset=0)
            stage = array if stage_each else None
            timed_puts(sess, WARMUP, stage)
            seconds = timed_puts(sess, ITERS, stage)
            sess.ctrl_send(0, END_TAG)
        if server.wait(timeout=60):
            raise RuntimeError("the Python server failed")
        return ITERS * SIZE / seconds / 1e6
    finally:
        if server.poll() is None:
            server.kill()
        server.stdout.close()


def hmcperf_run(hmcperf, transport):
    out = subprocess.run([hmcperf, "--loopback", "--json", "-x", transport,
                          "-t", "put_bw",
                          "-s", str(SIZE), "-n", str(ITERS), "-w", str(WARMUP),
                          "-O", str(WINDOW)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])["bw_MBps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hmcperf", default="build/tools/hmcperf")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--transport", choices=sorted(CONN), default="ucx")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        return serve(args.transport)
    if args.transport == "ucx":
        os.environ["UCX_TLS"] = "tcp,self"
        how, ratio = "UCX_TLS=tcp,self", "py_vs_c_put_bw_1MiB"
    else:
        how, ratio = "over shm", "py_vs_c_shm_put_bw_1MiB"
    py, py_staged, c = [], [], []
    for _ in range(args.reps):
        c.append(hmcperf_run(args.hmcperf, args.transport))
        py.append(python_run(False, args.transport))
        py_staged.append(python_run(True, args.transport))
    med = statistics.median
    print("== Python put_bw: 1 MiB NumPy array, %s, -n %d -w %d "
          "-O %d, no progress thread, %d repetitions (median), tools "
          "alternating" %
          (how, ITERS, WARMUP, WINDOW, args.reps))
    for name, runs in (("hmcperf", c), ("python", py),
                       ("python+copy", py_staged)):
        print("  %-12s %9.1f MB/s   runs: %s" %
              (name, med(runs), " ".join("%.1f" % r for r in runs)))
    print("python+copy stages the array before each put "
          "(%.3f of hmcperf; information only)" % (med(py_staged) / med(c)))
    print("RATIO %s %.3f >=0.9" % (ratio, med(py) / med(c)))


if __name__ == "__main__":
    main()
