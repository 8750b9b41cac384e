#!/bin/sh
# SPDX-License-Identifier: MIT
#
# make bench, section ucx: libhmc over UCX against the reference tools, in
# one invocation, with the same UCX_TLS, sizes, iteration counts and window:
#
#   hmcperf put_bw  64 KiB, 1 MiB   vs  ucx_perftest -t ucp_put_bw
#   hmcperf put_lat 8 B             vs  ucx_perftest -t ucp_put_lat
#   hmcperf tag_lat (8 B tag)       vs  sockpp (8 B blocking send/recv) on the
#                                       socket type libhmc's control plane uses
#   hmcperf tag_lat over TLS 1.3    vs  sockpp over TCP (TLS control is TCP only)
#
# UCX_TLS is tcp,self: there both tools move user memory the same way (RMA
# emulated with active messages over tcp, "rma_am"; the target progresses).
# With posix/sysv, ucx_perftest would put into UCX-allocated shared memory
# with plain stores, which user buffers such as libhmc's cannot use.
# libhmc sets UCX's tcp send segment to 64 KiB for its own context (UCX's
# default is 8 KiB; see ucx_tune_tcp() in lib/xport/ucx.c): ucx_perftest
# gets the same with UCX_TCP_TX_SEG_SIZE, so that both tools run the same
# UCX configuration and the ratios measure libhmc, not the segment size.
# ucx_perftest runs with -e: libhmc's endpoints ask for peer-failure
# handling (a dead peer must be an error, not a hang), which adds a
# keepalive lane; with -e the reference's endpoint has the same lanes, and
# the header prints both so that a difference shows.
#
# Each pair runs BENCH_REPS times, alternating the tools so that both see
# the same background load; the ratio is the median of the pairs' ratios
# (stats.sh). Ratios are printed, never asserted:
# `RATIO <name> <value> <target>`.
set -eu

HMCPERF=${HMCPERF:-build/tools/hmcperf}
SOCKPP=${SOCKPP:-build/tests/bench/sockpp}
REPS=${BENCH_REPS:-3}
UCX_PERFTEST=${UCX_PERFTEST:-ucx_perftest}
export UCX_TLS=tcp,self
UCX_TX_SEG=64K			# libhmc's own choice, for ucx_perftest

BW_WINDOW=32			# ucx_perftest's default for ucp_put_bw
# About a second per bandwidth run: on this kind of shared 2-CPU host the
# loopback rate swings between 1.1 and 1.8 GB/s from one 200 ms stretch to
# the next, and each run ends by draining its window (about 10 ms).
BW64K_ITERS=20000 BW64K_WARM=2000
BW1M_ITERS=2000 BW1M_WARM=100
LAT_ITERS=20000 LAT_WARM=2000
RTT_ITERS=20000 RTT_WARM=2000

die() { echo "bench: $*" >&2; exit 1; }

command -v "$UCX_PERFTEST" >/dev/null || die "$UCX_PERFTEST not found (package ucx-utils)"
[ -x "$HMCPERF" ] || die "$HMCPERF not built"
[ -x "$SOCKPP" ] || die "$SOCKPP not built"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# shellcheck source=tests/bench/stats.sh
. "$(dirname "$0")/stats.sh"

port=$((20000 + $$ % 20000))

# ucx_perftest server and client; the client's final line (-f) goes to
# $tmp/ucx.cli: iterations, typical/avg/overall latency (us), avg/overall bandwidth
# (MB/s meaning 2^20 B/s), avg/overall message rate.
ucx_run() {
	port=$((port + 1))
	UCX_TCP_TX_SEG_SIZE=$UCX_TX_SEG timeout 120 "$UCX_PERFTEST" -p "$port" \
		>"$tmp/ucx.srv" 2>&1 &
	srv=$!
	tries=0
	while :; do
		if UCX_TCP_TX_SEG_SIZE=$UCX_TX_SEG timeout 120 "$UCX_PERFTEST" \
			127.0.0.1 -p "$port" -e -f "$@" >"$tmp/ucx.cli" 2>&1; then
			break
		fi
		tries=$((tries + 1))
		# the server may not listen yet
		if [ $tries -ge 20 ] || ! kill -0 $srv 2>/dev/null; then
			cat "$tmp/ucx.cli" "$tmp/ucx.srv" >&2
			wait $srv || true
			die "ucx_perftest $* failed"
		fi
		sleep 0.1
	done
	wait $srv || die "ucx_perftest server failed: $(cat "$tmp/ucx.srv")"
}

hmc_run() {	# over UCX, as the reference
	"$HMCPERF" --loopback --json -x ucx "$@" >"$tmp/hmc.out" 2>"$tmp/hmc.err" ||
		die "hmcperf $* failed: $(cat "$tmp/hmc.err")"
}

# Lanes each tool's endpoint uses (UCX logs them at info level).
UCX_LOG_LEVEL=info
export UCX_LOG_LEVEL
ucx_run -t ucp_put_lat -s 8 -n 10 -w 1
unset UCX_LOG_LEVEL
lanes_ucx=$(grep -o 'ep_cfg\[[0-9]*\]: .*' "$tmp/ucx.cli" | head -n 1)
lanes_hmc=$(HMC_LOG=debug UCX_LOG_LEVEL=info "$HMCPERF" --loopback -x ucx -t put_lat \
	-s 8 -n 10 -w 1 2>&1 >/dev/null | grep -o 'ep_cfg\[[0-9]*\]: .*' | head -n 1)
ctrl=${HMC_CTRL_TRANSPORT:-unix}
case $ctrl in
tcp) sock_flag=-t ;;
*) ctrl=unix sock_flag=-u ;;
esac

echo "== host benchmarks: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "UCX_TLS=$UCX_TLS, tcp send segment $UCX_TX_SEG (libhmc's default; UCX_TCP_TX_SEG_SIZE for ucx_perftest), $REPS repetitions each (median), tools alternating"
echo "lanes: ucx_perftest ${lanes_ucx:-?}; hmcperf ${lanes_hmc:-?}"
echo "control plane: $ctrl socket (libhmc's choice for a peer on 127.0.0.1; HMC_CTRL_TRANSPORT=tcp for TCP)"
echo "MB/s = 10^6 B/s (ucx_perftest's MB/s, 2^20 B/s, converted); latency: one-way us, median"

# bench_put_bw NAME SIZE ITERS WARMUP (SIZE in bytes: ucx_perftest takes no suffix)
bench_put_bw() {
	ours="" theirs=""
	i=0
	while [ $i -lt "$REPS" ]; do
		hmc_run -t put_bw -s "$2" -n "$3" -w "$4" -O $BW_WINDOW
		ours="$ours $(json_field "$tmp/hmc.out" bw_MBps)"
		ucx_run -t ucp_put_bw -s "$2" -n "$3" -w "$4" -O $BW_WINDOW
		theirs="$theirs $(tail -n 1 "$tmp/ucx.cli" | awk '{ printf "%.2f", $6 * 1.048576 }')"
		i=$((i + 1))
	done
	report "$1" "$ours" "$theirs" ">=0.95" "MB/s" "put_bw $2 B, -n $3 -w $4 -O $BW_WINDOW"
}

bench_put_lat() {
	ours="" theirs=""
	i=0
	while [ $i -lt "$REPS" ]; do
		hmc_run -t put_lat -s 8 -n $LAT_ITERS -w $LAT_WARM
		ours="$ours $(json_field "$tmp/hmc.out" median)"
		ucx_run -t ucp_put_lat -s 8 -n $LAT_ITERS -w $LAT_WARM
		theirs="$theirs $(tail -n 1 "$tmp/ucx.cli" | awk '{ print $2 }')"
		i=$((i + 1))
	done
	report ucx_put_lat_8B "$ours" "$theirs" "<=1.10" "us" "put_lat 8 B, -n $LAT_ITERS -w $LAT_WARM"
}

bench_ctrl_rtt() {
	ours="" theirs=""
	i=0
	while [ $i -lt "$REPS" ]; do
		hmc_run -t tag_lat -n $RTT_ITERS -w $RTT_WARM
		ours="$ours $(json_field "$tmp/hmc.out" median)"
		"$SOCKPP" $sock_flag -s 8 -n $RTT_ITERS -w $RTT_WARM -j >"$tmp/sock.out" ||
			die "sockpp failed"
		theirs="$theirs $(json_field "$tmp/sock.out" median)"
		i=$((i + 1))
	done
	report ctrl_rtt_8B "$ours" "$theirs" "<=1.2" "us" "tag round trip vs $ctrl socket ping-pong, 8 B, -n $RTT_ITERS -w $RTT_WARM"
}

# The control plane with HMC_TLS_* set: certificates made here by openssl.
bench_ctrl_rtt_tls() {
	pki=$tmp/pki
	mkdir -p "$pki"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-days 1 -subj "/CN=hmc bench ca" -keyout "$pki/ca.key" \
		-out "$pki/ca.pem" 2>/dev/null || die "openssl failed"
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "/CN=hmc bench" -keyout "$pki/key.pem" \
		-out "$pki/req.csr" 2>/dev/null || die "openssl failed"
	openssl x509 -req -in "$pki/req.csr" -CA "$pki/ca.pem" \
		-CAkey "$pki/ca.key" -CAcreateserial -days 1 \
		-out "$pki/cert.pem" 2>/dev/null || die "openssl failed"
	ours="" theirs=""
	i=0
	while [ $i -lt "$REPS" ]; do
		HMC_TLS_CERT=$pki/cert.pem HMC_TLS_KEY=$pki/key.pem \
			HMC_TLS_CA=$pki/ca.pem "$HMCPERF" --loopback --json \
			-t tag_lat -n $RTT_ITERS -w $RTT_WARM >"$tmp/hmc.out" \
			2>"$tmp/hmc.err" || die "hmcperf over TLS failed: $(cat "$tmp/hmc.err")"
		ours="$ours $(json_field "$tmp/hmc.out" median)"
		"$SOCKPP" -t -s 8 -n $RTT_ITERS -w $RTT_WARM -j >"$tmp/sock.out" ||
			die "sockpp failed"
		theirs="$theirs $(json_field "$tmp/sock.out" median)"
		i=$((i + 1))
	done
	report ctrl_rtt_tls_8B "$ours" "$theirs" "<=2.0" "us" "tag round trip over TLS 1.3 vs tcp socket ping-pong, 8 B, -n $RTT_ITERS -w $RTT_WARM"
}

RATIOS=""

bench_put_bw ucx_put_bw_64KiB 65536 $BW64K_ITERS $BW64K_WARM
bench_put_bw ucx_put_bw_1MiB 1048576 $BW1M_ITERS $BW1M_WARM
bench_put_lat
bench_ctrl_rtt
bench_ctrl_rtt_tls
printf '%s' "$RATIOS"
