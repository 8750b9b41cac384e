#!/bin/bash
# A world's membership reaches hmc.ko: `hmcstat -w -j` watches the churn
# run of tests/world/world_test (a uid world of 3: rank 1 SIGKILLed during
# traffic, rank 2 leaves, a joiner takes rank 1 and leaves) and must see,
# from rank 0's process: peer-connected for ranks 1 and 2, peer-failed of
# rank 1 with an errno, then peer-connected of rank 1 again (the joiner),
# and both departures. Inserts $HMC_KO and removes it.
SUITE=world-events
# shellcheck source=tests/vm/suites/hmc-ko.lib
. "$(dirname "$0")/hmc-ko.lib"
run=$HMC_BUILD/tests/world/world_test

ko_insert "$run" "$hmcstat"
out=$(mktemp) log=$(mktemp)
tmpfiles+=("$out" "$log")
events_watch "$out"

# Not under timeout(1): $! must be rank 0 itself (the suite has a limit).
UCX_TLS=tcp,self "$run" churn >"$log" 2>&1 &
me=$!
if wait "$me"; then
	ok "churn run ($(grep -c '^ok' "$log") checks)"
else
	nok "churn run"
	grep '^not ok' "$log" | sed 's/^/# /'
fi
events_stop

# "event peer errno" for rank 0's peer events, in order.
lines=$(events_of "$out" "$me" 'field("event") ~ /^peer-/' event peer errno)
echo "$lines" | sed 's/^/# /'
# at EVENT PEER [N]: the line number of the Nth such event (default 1st).
at() {
	echo "$lines" | awk -v e="$1" -v p="$2" -v n="${3:-1}" \
		'$1 == e && $2 == p && ++seen == n { print NR; exit }'
}
c1=$(at peer-connected 1) c2=$(at peer-connected 2)
f1=$(at peer-failed 1)
j1=$(at peer-connected 1 2)
[ -n "$c1" ] && [ -n "$c2" ] && ok "ranks 1 and 2 connected" ||
	nok "ranks 1 and 2 connected"
errno=$(echo "$lines" | sed -n "${f1:-0}p" | awk '{ print $3 }')
[ -n "$f1" ] && [ "$f1" -gt "$c1" ] && [ "$errno" != - ] &&
	ok "rank 1 failed (errno $errno)" || nok "rank 1 failed"
[ -n "$j1" ] && [ "$j1" -gt "$f1" ] && ok "the joiner connected as rank 1" ||
	nok "the joiner connected as rank 1"
[ "$(echo "$lines" | grep -c '^peer-disconnected')" -ge 2 ] &&
	ok "rank 2 and the joiner left" || nok "rank 2 and the joiner left"

ko_remove
