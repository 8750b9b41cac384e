#!/bin/bash
# A world's membership reaches hmc.ko: `hmcstat -w -j` watches the churn
# run of tests/world/world_test (a uid world of 3: rank 1 SIGKILLed during
# traffic, rank 2 leaves, a joiner takes rank 1 and leaves) and must see,
# from rank 0's process: peer-connected for ranks 1 and 2, peer-failed of
# rank 1 with ECONNRESET, then peer-connected of rank 1 again (the joiner),
# and both departures. Inserts $HMC_KO and removes it.
set -u
run=$HMC_BUILD/tests/world/world_test
hmcstat=$HMC_BUILD/tools/hmcstat
out=$(mktemp) err=$(mktemp) log=$(mktemp)
rc=0

ok() { echo "ok - world-events: $*"; }
nok() { echo "not ok - world-events: $*"; rc=1; }
loaded() { [ -d /sys/module/hmc ]; }

cleanup() {
	[ -n "${watch:-}" ] && kill "$watch" 2>/dev/null
	loaded && rmmod hmc
	rm -f "$out" "$err" "$log"
}
trap cleanup EXIT

for p in "$run" "$hmcstat"; do
	[ -x "$p" ] || { nok "$p is missing (make)"; exit 1; }
done
if loaded || ! insmod "$HMC_KO"; then
	nok "insmod $HMC_KO"
	exit 1
fi
ok "insmod hmc"

"$hmcstat" -w -j >"$out" 2>"$err" &
watch=$!
for _ in $(seq 100); do
	grep -q "watching hmc events" "$err" && break
	sleep 0.1
done
grep -q "watching hmc events" "$err" || { nok "hmcstat -w did not start"; exit 1; }

# Not under timeout(1): $! must be rank 0 itself (the suite has a limit).
UCX_TLS=tcp,self "$run" churn >"$log" 2>&1 &
me=$!
if wait "$me"; then
	ok "churn run ($(grep -c '^ok' "$log") checks)"
else
	nok "churn run"
	grep '^not ok' "$log" | sed 's/^/# /'
fi
sleep 1		# events go out from a workqueue
kill -TERM "$watch"
wait "$watch"
watch=

# "event peer errno" for rank 0's peer events, in order.
lines=$(awk -v pid="$me" '
	function field(k,   m) {
		if (match($0, "\"" k "\":\"[^\"]*\"")) {
			m = substr($0, RSTART, RLENGTH); sub("^\"" k "\":\"", "", m);
			sub("\"$", "", m); return m
		}
		if (match($0, "\"" k "\":[0-9]+")) {
			m = substr($0, RSTART, RLENGTH); sub("^\"" k "\":", "", m);
			return m
		}
		return "-"
	}
	field("pid") == pid && field("event") ~ /^peer-/ {
		print field("event"), field("peer"), field("errno")
	}' "$out")
echo "$lines" | sed 's/^/# /'
has() { echo "$lines" | grep -nx "$1" | head -n 1 | cut -d: -f1; }
c1=$(has "peer-connected 1 -") c2=$(has "peer-connected 2 -")
f1=$(has "peer-failed 1 104")
j1=$(echo "$lines" | grep -nx "peer-connected 1 -" | sed -n 2p | cut -d: -f1)
[ -n "$c1" ] && [ -n "$c2" ] && ok "ranks 1 and 2 connected" ||
	nok "ranks 1 and 2 connected"
[ -n "$f1" ] && [ "$f1" -gt "$c1" ] && ok "rank 1 failed (ECONNRESET)" ||
	nok "rank 1 failed (ECONNRESET)"
[ -n "$j1" ] && [ "$j1" -gt "$f1" ] && ok "the joiner connected as rank 1" ||
	nok "the joiner connected as rank 1"
[ "$(echo "$lines" | grep -c '^peer-disconnected')" -ge 2 ] &&
	ok "rank 2 and the joiner left" || nok "rank 2 and the joiner left"

if rmmod hmc && ! loaded; then
	ok "rmmod hmc"
else
	nok "rmmod hmc"
fi
exit $rc
