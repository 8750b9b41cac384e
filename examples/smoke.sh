#!/bin/sh
# Runs the quick start on loopback and checks that the message arrived.
set -eu
dir=$1
port=$((20000 + $$ % 20000))
msg="hello hmc $$ $(date +%s%N)"
out=$(mktemp)
trap 'rm -f "$out"; kill "$srv" 2>/dev/null || true' EXIT
timeout 60 "$dir/hmc_server" -a 127.0.0.1 -p "$port" >"$out" 2>&1 &
srv=$!
i=0
until grep -q "server ready" "$out" || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
timeout 60 "$dir/hmc_client" -a 127.0.0.1 -p "$port" "$msg"
wait "$srv"
if grep -qxF "received ${#msg} bytes: $msg" "$out"; then
	echo "ok - examples: quick start delivered the message"
else
	echo "not ok - examples: quick start"; cat "$out"; exit 1
fi
