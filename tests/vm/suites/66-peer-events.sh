#!/bin/bash
# libhmc tells hmc.ko about its peers: `hmcstat -w -j` watches a scripted
# libhmc run (tests/integration/peer_events) and must see, for the run's
# pid and in order, buf-created, buf-exported (the shm transport's export),
# peer-connected (rank 1 over shm, at its pid), peer-failed (killed) and
# buf-freed, with strictly increasing sequence numbers. Inserts $HMC_KO and
# removes it.
set -u
run=$HMC_BUILD/tests/integration/peer_events
hmcstat=$HMC_BUILD/tools/hmcstat
out=$(mktemp) err=$(mktemp) pids=$(mktemp)
rc=0

ok() { echo "ok - peer-events: $*"; }
nok() { echo "not ok - peer-events: $*"; rc=1; }
loaded() { [ -d /sys/module/hmc ]; }

cleanup() {
	[ -n "${watch:-}" ] && kill "$watch" 2>/dev/null
	loaded && rmmod hmc
	rm -f "$out" "$err" "$pids"
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

if HMC_REQUIRE_KMOD=1 UCX_TLS=tcp,self timeout 60 "$run" >"$pids"; then
	ok "scripted run"
else
	nok "scripted run"
fi
sleep 1		# events go out from a workqueue
kill -TERM "$watch"	# a background job of a script ignores SIGINT
wait "$watch"
watch=

read -r me child <"$pids"
# One line per event of our pid: "seq event peer transport errno addr".
lines=$(awk -v pid="${me:-0}" '
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
	field("pid") == pid {
		print field("seq"), field("event"), field("peer"),
		      field("transport"), field("errno"), field("addr")
	}' "$out")
echo "$lines" | sed 's/^/# /'

events=$(echo "$lines" | awk '{ printf "%s ", $2 }')
want="buf-created buf-exported peer-connected peer-failed buf-freed "
if [ "$events" = "$want" ]; then
	ok "events of the run, in order: $want"
else
	nok "events of the run: '$events', want '$want'"
fi
if echo "$lines" | awk 'NR > 1 && $1 <= prev { bad = 1 } { prev = $1 }
			 END { exit bad }'; then
	ok "sequence numbers strictly increase"
else
	nok "sequence numbers strictly increase"
fi
connected=$(echo "$lines" | awk '$2 == "peer-connected"')
if [ "$(echo "$connected" | awk '{ print $3, $4, $6 }')" = "1 shm unix:pid=$child" ]; then
	ok "peer-connected: rank 1 over shm at unix:pid=$child"
else
	nok "peer-connected: $connected"
fi
failed=$(echo "$lines" | awk '$2 == "peer-failed"')
if [ "$(echo "$failed" | awk '{ print $3, $5 }')" = "1 104" ]; then	# ECONNRESET
	ok "peer-failed: rank 1, ECONNRESET"
else
	nok "peer-failed: $failed"
fi

if rmmod hmc && ! loaded; then
	ok "rmmod hmc"
else
	nok "rmmod hmc"
fi
exit $rc
