#!/bin/bash
# DKMS: the hmc.ko that `make dkms-install` registered for $KVER (under
# updates/dkms) loads with a plain `modprobe hmc`, creates /dev/hmc, answers
# GET_VERSION and unloads. Runs after the kmod suite has unloaded its own.

version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$HMC_SRC/dkms.conf")

check() {		# check NAME CMD...: one TAP line for CMD
	local name=$1
	shift
	if "$@"; then
		echo "ok - dkms: $name"
	else
		echo "not ok - dkms: $name"
		return 1
	fi
}

under_updates() {
	local path
	path=$(modinfo -k "$KVER" -n hmc) || return 1
	echo "# modinfo -n hmc: $path"
	[[ $path == /lib/modules/$KVER/updates/dkms/hmc.ko* ]]
}
modinfo_version() { [ "$(modinfo -k "$KVER" -F version hmc)" = "$version" ]; }
not_loaded() { [ ! -d /sys/module/hmc ]; }
load() { modprobe hmc && [ -d /sys/module/hmc ]; }
dev_node() {		# devtmpfs creates it during misc_register
	local deadline=$((SECONDS + 5))
	until [ -c /dev/hmc ]; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.1
	done
}
get_version() {
	local out
	out=$("$HMC_BUILD/tests/vm/hmc_version") || return 1
	echo "# $out"
}
unload() { modprobe -r hmc && [ ! -d /sys/module/hmc ]; }

check "modinfo -n hmc is under updates/dkms" under_updates
check "module version is $version" modinfo_version
check "hmc not loaded before modprobe" not_loaded || exit 1
check "modprobe hmc" load || exit 1
check "/dev/hmc appears" dev_node
check "GET_VERSION" get_version
check "modprobe -r hmc" unload
