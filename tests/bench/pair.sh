# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2154 # PORT, HMCPERF, die: the caller's
# Server-client runs for the benchmark sections that source this file
# (bash). The caller defines die, PORT (each hmcperf run takes the next
# one), HMCPERF, and in_srv and in_cli: each runs its arguments where that
# side belongs, with whatever CPU binding and time limit the section wants.
# Two hosts of one machine come from pair_hosts.

# shellcheck source=tests/lib/netns.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/netns.sh"

# pair_hosts TAG DEV NET: two network namespaces joined by a veth pair DEV
# (tests/lib/netns.sh's netns_up), the server's first; SRV the server's
# address, tmp a scratch directory, both removed at exit.
pair_hosts() {
	tmp=$(mktemp -d)
	netns_at_exit 'rm -rf "$tmp"'
	netns_up "$1" 2 "$2" "$3" ||
		die "cannot set up the namespaces: $NETNS_ERR"
	SRV=${NETNS_IPS[0]}
}

# pair SERVER_CMD... -- CLIENT_CMD...: the server in the background, then,
# once it listens on TCP port $PORT, the client; its output in $tmp/cli.
pair() {
	local -a scmd=()
	local tries=0 srv

	while [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	in_srv "${scmd[@]}" >"$tmp/srv" 2>&1 &
	srv=$!
	until [ -n "$(in_srv ss -Hltn "sport = :$PORT")" ]; do
		tries=$((tries + 1))
		if [ $tries -ge 400 ] || ! kill -0 $srv 2>/dev/null; then
			wait $srv
			die "server ${scmd[*]} did not listen: $(cat "$tmp/srv")"
		fi
		sleep 0.05
	done
	if ! in_cli "$@" >"$tmp/cli" 2>&1; then
		kill $srv 2>/dev/null
		wait $srv
		die "$* failed: $(cat "$tmp/cli")"
	fi
	wait $srv || die "server ${scmd[*]} failed: $(cat "$tmp/srv")"
}

# hmc TRANSPORT ARGS...: hmcperf server and client; the client's JSON.
hmc() {
	local x=$1

	shift
	PORT=$((PORT + 1))
	pair "$HMCPERF" -l -a "$SRV" -p $PORT -x "$x" "$@" -- \
		"$HMCPERF" -c "$SRV" -p $PORT -x "$x" --json "$@"
	grep -q "\"transport\":\"$x\"" "$tmp/cli" ||
		die "hmcperf did not run over $x: $(cat "$tmp/cli")"
}
