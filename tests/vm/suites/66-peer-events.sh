#!/bin/bash
# libhmc tells hmc.ko about its peers: `hmcstat -w -j` watches a scripted
# libhmc run (tests/integration/peer_events) and must see, for the run's
# pid and in order, buf-created, buf-exported (the shm transport's export),
# peer-connected (rank 1 over shm, at its pid), peer-failed (killed) and
# buf-freed, with strictly increasing sequence numbers. Inserts $HMC_KO and
# removes it.
SUITE=peer-events
# shellcheck source=tests/vm/suites/hmc-ko.lib
. "$(dirname "$0")/hmc-ko.lib"
run=$HMC_BUILD/tests/integration/peer_events

ko_insert "$run" "$hmcstat"
out=$(mktemp) pids=$(mktemp)
tmpfiles+=("$out" "$pids")
events_watch "$out"

if HMC_REQUIRE_KMOD=1 UCX_TLS=tcp,self timeout 60 "$run" >"$pids"; then
	ok "scripted run"
else
	nok "scripted run"
fi
events_stop

read -r me child <"$pids"
# One line per event of our pid: "seq event peer transport errno addr".
lines=$(events_of "$out" "${me:-0}" 1 seq event peer transport errno addr)
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

ko_remove
