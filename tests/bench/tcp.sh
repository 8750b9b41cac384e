#!/bin/bash
# SPDX-License-Identifier: MIT
#
# make bench, section tcp: libhmc's tcp transport between two network
# namespaces joined by a veth pair (made here, removed on exit), against
# references measured in the same run, over the same link:
#
#   hmcperf -x tcp put_bw 1 MiB   vs  sockpp -B: one raw TCP stream of
#                                     1 MiB writes, timed to the last byte
#   hmcperf -x tcp put_lat 8 B    vs  sockpp: a raw TCP ping-pong of 8 B
#   hmcperf -x tcp put_bw 1 MiB   vs  hmcperf -x ucx (UCX_TLS=tcp,self),
#                                     what libhmc used across hosts before
#
# tests/bench/pair.sh makes the namespaces and removes them on exit.
# One stream each (num_chs 1), TCP_NODELAY on both, the server on CPU 1
# and the client on CPU 0 for every tool. In the bandwidth runs every
# side waits for the network asleep, as sockpp's blocking calls do: the
# hmcperf client with its progress thread (-P), the tcp target in
# hmc_comm_recv_tag() (hmcperf's target_sleeps); on this 2-CPU host a
# spinning waiter takes the CPU the network stack needs. The latency runs
# poll, as hmcperf's put_lat always does. The tools take turns, BENCH_REPS
# times; each ratio is the median of the pairs' ratios (stats.sh).
#
# What bounds the bandwidth here is the kernel: perf puts two thirds of
# both ends of the tcp transport in the socket copies and the veth's
# locking, and the user-space share under 1%. For 1.1 GB at a load of 3,
# task-clock summed over both ends was 489 ms for sockpp, 597 ms for the
# tcp transport and 1001 ms for UCX tcp (64 KiB segments, as libhmc sets
# them): over veth UCX reaches 1.3-1.4 GB/s against our 1.6-2.4 and the
# socket's 1.5-2.7, so tcp_vs_ucx_put_bw_1MiB lands near 1.3-2.4, not 3;
# the tenfold gap seen with UCX's 8 KiB default segments is gone.
# Ratios are printed, never asserted: `RATIO <name> <value> <target>`.
set -u

HMCPERF=${HMCPERF:-build/tools/hmcperf}
SOCKPP=${SOCKPP:-build/tests/bench/sockpp}
REPS=${BENCH_REPS:-3}
BW_ITERS=500 BW_WARM=50
UCX_ITERS=200 UCX_WARM=20	# UCX tcp runs at a fraction of the others
LAT_ITERS=10000 LAT_WARM=1000
WINDOW=32

dev=hmcb0
PORT=$((20000 + $$ % 20000))

die() { echo "bench tcp: $*" >&2; exit 1; }

# shellcheck source=tests/bench/pair.sh
. "$(dirname "$0")/pair.sh"
if why=$(netns_unavailable); then
	die "$why"
fi
[ -x "$HMCPERF" ] || die "$HMCPERF not built"
[ -x "$SOCKPP" ] || die "$SOCKPP not built"

# shellcheck source=tests/bench/stats.sh
. "$(dirname "$0")/stats.sh"

pair_hosts "hmcb$$" $dev 10.79.0
in_srv() { ip netns exec "${NETNS[0]}" taskset -c 1 timeout 120 "$@"; }
in_cli() { ip netns exec "${NETNS[1]}" taskset -c 0 timeout 120 "$@"; }

sock() {
	PORT=$((PORT + 1))
	pair "$SOCKPP" -l "$SRV:$PORT" -- "$SOCKPP" -c "$SRV:$PORT" -j "$@"
}

export UCX_TLS=tcp,self UCX_NET_DEVICES=$dev

echo "== tcp transport between two network namespaces (veth $dev, ${NETNS_IPS[*]})"
echo "$REPS repetitions each (median of the pairs' ratios), tools alternating; MB/s = 10^6 B/s; latency: one-way us, median"

bw_ours="" bw_sock="" bw_ucx="" lat_ours="" lat_sock=""
for _ in $(seq "$REPS"); do
	hmc tcp -t put_bw -s 1M -n $BW_ITERS -w $BW_WARM -O $WINDOW -P
	bw_ours="$bw_ours $(json_field "$tmp/cli" bw_MBps)"
	sock -B -s 1048576 -n $BW_ITERS -w $BW_WARM
	bw_sock="$bw_sock $(json_field "$tmp/cli" bw_MBps)"
	hmc tcp -t put_lat -s 8 -n $LAT_ITERS -w $LAT_WARM
	lat_ours="$lat_ours $(json_field "$tmp/cli" median)"
	sock -s 8 -n $LAT_ITERS -w $LAT_WARM
	lat_sock="$lat_sock $(json_field "$tmp/cli" median)"
	hmc ucx -t put_bw -s 1M -n $UCX_ITERS -w $UCX_WARM -O $WINDOW -P
	bw_ucx="$bw_ucx $(json_field "$tmp/cli" bw_MBps)"
done

RATIOS=""
report tcp_put_bw_1MiB_vs_socket "$bw_ours" "$bw_sock" ">=0.9" "MB/s" \
	"hmcperf -x tcp put_bw 1 MiB -O $WINDOW vs sockpp -B 1 MiB writes"
report tcp_put_lat_8B_vs_socket "$lat_ours" "$lat_sock" "<=1.2" "us" \
	"hmcperf -x tcp put_lat 8 B vs sockpp TCP ping-pong 8 B"
report tcp_vs_ucx_put_bw_1MiB "$bw_ours" "$bw_ucx" ">=3" "MB/s" \
	"hmcperf -x tcp vs -x ucx (UCX_TLS=tcp,self) put_bw 1 MiB"
printf '%s' "$RATIOS"
