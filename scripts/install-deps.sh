#!/bin/sh
# Installs the Debian packages in scripts/deps.list that are missing.
# Idempotent and quiet when everything is present.
set -eu
list=$(dirname "$0")/deps.list
want=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list")
missing=""
for p in $want; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing="$missing $p"
done
[ -n "$missing" ] || exit 0
echo "install-deps: installing$missing" >&2
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q -o DPkg::Lock::Timeout=600 >/dev/null ||
	$SUDO apt-get update -o DPkg::Lock::Timeout=600
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends \
	-o DPkg::Lock::Timeout=600 $missing >/dev/null
