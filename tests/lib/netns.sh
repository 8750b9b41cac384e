# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034 # NETNS* are for the sourcing script
# Hosts on one machine for the test and benchmark scripts that source this
# file (bash): network namespaces, each with lo up and one interface of the
# same name carrying its address. Two are joined by a veth pair; more by
# veth pairs to a bridge in the first (forward delay 0), so the first
# namespace's interface is the bridge. Only the links made here carry
# traffic, and the namespaces go away with every process in them when the
# script exits, whatever happens.
#
#   . tests/lib/netns.sh
#   if why=$(netns_unavailable); then skip "$why"; fi
#   netns_up TAG N DEV NET || fail "$NETNS_ERR"
#   ip netns exec "${NETNS[1]}" prog "${NETNS_IPS[0]}"
#
# netns_up makes the EXIT trap run netns_down (first the commands given to
# netns_at_exit, then the namespaces' removal) and turns INT, TERM and HUP
# into exit 130, so that the trap runs for them too: a script that sources
# this file sets no EXIT trap of its own.

NETNS=() NETNS_IPS=() NETNS_ERR='' _netns_at_exit=()

# netns_unavailable: why this process cannot make network namespaces, on
# stdout with status 0; status 1, silently, when it can.
netns_unavailable() {
	if [ "$(id -u)" != 0 ]; then
		echo "needs root to create network namespaces"
	elif ! command -v ip >/dev/null; then
		echo "no ip(8) (iproute2)"
	elif ! ip netns list >/dev/null 2>&1; then
		echo "ip netns is not available"
	else
		return 1
	fi
}

# netns_at_exit CMD: eval CMD at exit, before the namespaces go (a server
# started outside them, a scratch directory).
netns_at_exit() {
	_netns_at_exit+=("$1")
}

netns_down() {
	local cmd n

	for cmd in "${_netns_at_exit[@]}"; do
		eval "$cmd"
	done
	for n in "${NETNS[@]}"; do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$n" 2>/dev/null
	done
	return 0
}

# netns_up TAG N DEV NET: namespaces TAG-0 .. TAG-(N-1) in NETNS, each
# with interface DEV at NET.(i+1)/24 (NET: three octets) in NETNS_IPS,
# and returns once the first reaches every other. On failure NETNS_ERR
# says which step failed and the status is 1; what was made goes at exit.
netns_up() {
	local tag=$1 n=$2 dev=$3 net=$4 i

	trap netns_down EXIT
	trap 'exit 130' INT TERM HUP
	for ((i = 0; i < n; i++)); do
		NETNS+=("$tag-$i")
		NETNS_IPS+=("$net.$((i + 1))")
	done
	for ((i = 0; i < n; i++)); do
		ip netns add "${NETNS[$i]}" ||
			{ NETNS_ERR="ip netns add ${NETNS[$i]}"; return 1; }
		ip -n "${NETNS[$i]}" link set lo up ||
			{ NETNS_ERR="lo up in ${NETNS[$i]}"; return 1; }
	done
	if [ "$n" = 2 ]; then
		ip link add "$dev" netns "${NETNS[0]}" type veth peer name "$dev" \
			netns "${NETNS[1]}" || { NETNS_ERR="veth pair $dev"; return 1; }
	else
		ip -n "${NETNS[0]}" link add "$dev" type bridge forward_delay 0 ||
			{ NETNS_ERR="bridge $dev"; return 1; }
		for ((i = 1; i < n; i++)); do
			if ! ip link add "p$i" netns "${NETNS[0]}" type veth \
				peer name "$dev" netns "${NETNS[$i]}" ||
			   ! ip -n "${NETNS[0]}" link set "p$i" master "$dev" up; then
				NETNS_ERR="veth p$i to bridge $dev"
				return 1
			fi
		done
	fi
	for ((i = 0; i < n; i++)); do
		if ! ip -n "${NETNS[$i]}" addr add "${NETNS_IPS[$i]}/24" dev "$dev" ||
		   ! ip -n "${NETNS[$i]}" link set "$dev" up; then
			NETNS_ERR="address of $dev in ${NETNS[$i]}"
			return 1
		fi
	done
	for ((i = 1; i < n; i++)); do
		_netns_reachable "${NETNS_IPS[$i]}" ||
			{ NETNS_ERR="${NETNS[0]} cannot reach ${NETNS_IPS[$i]}"; return 1; }
	done
}

# _netns_reachable IP: whether the first namespace reaches IP within 10 s
# (a refused TCP dial to port 9 means the address answered). Its message
# is matched, not piped to grep: the dial fails, as it should, and under
# pipefail (some sourcing scripts set it) so would the pipe.
_netns_reachable() {
	local until=$((SECONDS + 10)) out

	while [ $SECONDS -lt $until ]; do
		out=$(ip netns exec "${NETNS[0]}" timeout 2 bash -c \
			"exec 3<>/dev/tcp/$1/9" 2>&1)
		[[ $out == *refused* ]] && return 0
		sleep 0.2
	done
	return 1
}
