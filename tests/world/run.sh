#!/bin/bash
# The hmc_world suite: ranks started every supported way, membership churn,
# missing ranks, refused secrets and certificates, hmcrun's own behaviour.
#   O=build tests/world/run.sh [NAME_GLOB]
# Loopback only. Each case has its own deadline; exits 1 on any failure.
set -u
O=${O:-build}
T=$O/tests/world/world_test
RUN=$O/tools/hmcrun
only=${1:-*}
passed=0 failed=0 skipped=0
failures=()
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The communicator's transport on one host; the store is TCP on loopback.
export UCX_TLS=posix,cma,self
# Init fails with its reason well before a case's own limit.
export HMC_WORLD_TIMEOUT=20000
unset HMC_SECRET HMC_STORE HMC_RANK HMC_WORLD_SIZE HMC_BOOTSTRAP \
	HMC_TLS_CERT HMC_TLS_KEY HMC_TLS_CA RANK WORLD_SIZE MASTER_ADDR

# tally NAME OUTFILE RC: count the TAP lines of one case.
tally() {
	local name=$1 out=$2 rc=$3 p f s
	p=$(grep '^ok' "$out" | grep -vc '# SKIP')
	s=$(grep '^ok' "$out" | grep -c '# SKIP')
	f=$(grep -c '^not ok' "$out")
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		echo "not ok - $name: timed out" | tee -a "$out"
		f=$((f + 1))
	elif [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		echo "not ok - $name: exit status $rc" | tee -a "$out"
		f=$((f + 1))
	elif [ "$p" = 0 ] && [ "$f" = 0 ] && [ "$s" = 0 ]; then
		echo "not ok - $name: no checks ran" | tee -a "$out"
		f=1
	fi
	[ "$f" = 0 ] || mapfile -t -O ${#failures[@]} failures < <(
		grep '^not ok' "$out" | sed "s|^|$name: |")
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	echo "# $name: $p passed, $f failed, $s skipped"
}

# case NAME SECONDS COMMAND...: one case, its output checked as TAP.
case_run() {
	local name=$1 limit=$2 out rc
	shift 2
	# shellcheck disable=SC2053
	[[ $name == $only ]] || return 0
	echo "== $name"
	out=$work/$name.out
	if [ "$(type -t "$1")" = function ]; then
		"$@" >"$out" 2>&1	# it bounds each process itself
	else
		timeout -k 5 "$limit" "$@" >"$out" 2>&1
	fi
	rc=$?
	grep -E '^(ok|not ok|#)|rror' "$out" | grep -v '^# rank' | head -200
	tally "$name" "$out" "$rc"
}

# expect NAME WANT_RC SECONDS COMMAND...: a command's exit status is checked.
expect() {
	local name=$1 want=$2 limit=$3 out rc start=$SECONDS
	shift 3
	# shellcheck disable=SC2053
	[[ $name == $only ]] || return 0
	echo "== $name"
	out=$work/$name.out
	timeout -k 5 "$limit" "$@" >"$out" 2>&1
	rc=$?
	if [ "$rc" = "$want" ]; then
		echo "ok - $name: exit status $rc in $((SECONDS - start)) s" >>"$out"
	else
		echo "not ok - $name: exit status $rc, not $want" >>"$out"
	fi
	cat "$out"
	tally "$name" "$out" 0
}

# ranks LIMIT ENV-PER-RANK... -- COMMAND: start one process per ENV word
# (a comma-separated VAR=VALUE list) in the background, wait for all.
ranks() {
	local limit=$1 e rc=0 pids=()
	shift
	local -a envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	for e in "${envs[@]}"; do
		# shellcheck disable=SC2046
		env $(tr , ' ' <<<"$e") timeout -k 5 "$limit" "$@" &
		pids+=($!)
	done
	for e in "${pids[@]}"; do wait "$e" || rc=$?; done
	return $rc
}

# A port nothing listens on now (other jobs share this host), with the one
# above it free too (etcd's peer port), below the kernel's ephemeral ports
# (32768 and up), which an outgoing connection may hold and fail our bind.
port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000))
		[ -z "$(ss -Htln "( sport = :$p or sport = :$((p + 1)) )")" ] &&
			break
	done
	echo $p
}

for n in 1 2 4 8; do
	case_run "hmcrun-$n" 60 "$RUN" -n $n "$T" basic $n
done
case_run hmcrun-lazy-4 60 env HMC_WORLD_LAZY=1 "$RUN" -n 4 "$T" basic 4
case_run hmcrun-tag-output 30 bash -c "
	'$RUN' -n 2 --tag-output '$T' basic 2 > '$work/tag' 2>&1; rc=\$?
	sed 's/^\[[01]\] //' '$work/tag'
	grep -q '^\[0\] ok - rank 0: size 2' '$work/tag' &&
	grep -q '^\[1\] ok - rank 1: size 2' '$work/tag' &&
		echo 'ok - --tag-output prefixes each line with its rank' ||
		echo 'not ok - --tag-output prefixes each line with its rank'
	exit \$rc"

if command -v mpirun >/dev/null; then
	case_run mpirun-pmix-4 90 mpirun --allow-run-as-root --oversubscribe \
		-np 4 -x UCX_TLS "$T" basic 4
else
	echo "not ok - mpirun-pmix-4: mpirun is not installed (make deps)"
	failed=$((failed + 1))
fi

p=$(port)
case_run torchrun-env-4 60 ranks 50 \
	RANK=0,LOCAL_RANK=0,WORLD_SIZE=4,LOCAL_WORLD_SIZE=4,MASTER_ADDR=127.0.0.1,MASTER_PORT=$p \
	RANK=1,LOCAL_RANK=1,WORLD_SIZE=4,LOCAL_WORLD_SIZE=4,MASTER_ADDR=127.0.0.1,MASTER_PORT=$p \
	RANK=2,LOCAL_RANK=2,WORLD_SIZE=4,LOCAL_WORLD_SIZE=4,MASTER_ADDR=127.0.0.1,MASTER_PORT=$p \
	RANK=3,LOCAL_RANK=3,WORLD_SIZE=4,LOCAL_WORLD_SIZE=4,MASTER_ADDR=127.0.0.1,MASTER_PORT=$p \
	-- "$T" basic 4

p=$(port)
case_run slurm-env-3 60 ranks 50 \
	SLURM_PROCID=2,SLURM_NTASKS=3,SLURM_LOCALID=2,HMC_STORE=tcp://127.0.0.1:$p \
	SLURM_PROCID=0,SLURM_NTASKS=3,SLURM_LOCALID=0,HMC_STORE=tcp://127.0.0.1:$p \
	SLURM_PROCID=1,SLURM_NTASKS=3,SLURM_LOCALID=1,HMC_STORE=tcp://127.0.0.1:$p \
	-- "$T" basic 3

p=$(port)
case_run hmc-env-3 60 ranks 50 \
	HMC_RANK=1,HMC_WORLD_SIZE=3,HMC_STORE=tcp://127.0.0.1:$p,HMC_SECRET=s3 \
	HMC_RANK=2,HMC_WORLD_SIZE=3,HMC_STORE=tcp://127.0.0.1:$p,HMC_SECRET=s3 \
	HMC_RANK=0,HMC_WORLD_SIZE=3,HMC_STORE=tcp://127.0.0.1:$p,HMC_SECRET=s3 \
	-- "$T" basic 3

p=$(port)
case_run auto-ranks-4 60 ranks 50 \
	HMC_WORLD_SIZE=4,HMC_STORE=tcp://127.0.0.1:$p \
	HMC_WORLD_SIZE=4,HMC_STORE=tcp://127.0.0.1:$p \
	HMC_WORLD_SIZE=4,HMC_STORE=tcp://127.0.0.1:$p \
	HMC_WORLD_SIZE=4,HMC_STORE=tcp://127.0.0.1:$p \
	-- "$T" basic 4

case_run uid-4 60 "$T" uid 4
case_run churn 90 "$T" churn

p=$(port)
case_run missing-rank 30 ranks 20 \
	HMC_RANK=0,HMC_WORLD_SIZE=4,HMC_STORE=tcp://127.0.0.1:$p,HMC_WORLD_TIMEOUT=1500 \
	HMC_RANK=2,HMC_WORLD_SIZE=4,HMC_STORE=tcp://127.0.0.1:$p,HMC_WORLD_TIMEOUT=1500 \
	-- "$T" missing "1, 3"

# Join, leave and SIGKILL with the store in etcd (loopback): nobody hosts
# it, a dead member's rank expires with its lease.
etcd_churn() {
	local p rc
	p=$(port)
	etcd --data-dir "$work/etcd-churn" --name churn \
		--listen-client-urls "http://127.0.0.1:$p" \
		--advertise-client-urls "http://127.0.0.1:$p" \
		--listen-peer-urls "http://127.0.0.1:$((p + 1))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((p + 1))" \
		--initial-cluster "churn=http://127.0.0.1:$((p + 1))" \
		>"$work/etcd-churn.log" 2>&1 &
	local epid=$! up=0
	# etcd syncs its first writes to disk: slow on a loaded host.
	for _ in $(seq 300); do
		etcdctl --endpoints "127.0.0.1:$p" endpoint health \
			>/dev/null 2>&1 && { up=1; break; }
		sleep 0.1
	done
	if [ $up = 0 ]; then
		echo "not ok - etcd did not come up in 30 s:"
		tail -n 5 "$work/etcd-churn.log"
		kill "$epid"
		return 1
	fi
	HMC_TEST_ETCD=etcd://127.0.0.1:$p timeout -k 5 60 "$T" churn
	rc=$?
	kill "$epid"
	wait "$epid" 2>/dev/null
	return $rc
}
case_run churn-etcd 90 etcd_churn

# The etcd store: three namespaces as three hosts, etcd restarted mid-run
# with its data wiped.
case_run etcd-netns 90 tests/world/etcd_netns.sh "$T"

# A wrong secret is refused while the right ones form their world.
p=$(port)
s=HMC_WORLD_SIZE=2,HMC_STORE=tcp://127.0.0.1:$p
case_run wrong-secret 60 bash -c "
	env HMC_RANK=0 $(tr , ' ' <<<"$s") HMC_SECRET=right '$T' basic 2 &
	a=\$!; sleep 0.3
	env $(tr , ' ' <<<"$s") HMC_SECRET=wrong '$T' refused 13 || rc=1
	env HMC_RANK=1 $(tr , ' ' <<<"$s") HMC_SECRET=right '$T' basic 2 || rc=1
	wait \$a || rc=1; exit \${rc:-0}"

# TLS 1.3: a CA, a member certificate, and a rogue CA's certificate.
tls_setup() {
	local d=$work/pki
	mkdir -p "$d"
	for ca in ca rogue; do
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
			-nodes -days 1 -subj "/CN=hmc test $ca" \
			-keyout "$d/$ca.key" -out "$d/$ca.pem" 2>/dev/null
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-subj "/CN=member of $ca" -keyout "$d/$ca-member.key" \
			-out "$d/$ca-member.csr" 2>/dev/null
		openssl x509 -req -in "$d/$ca-member.csr" -CA "$d/$ca.pem" \
			-CAkey "$d/$ca.key" -CAcreateserial -days 1 \
			-out "$d/$ca-member.pem" 2>/dev/null
	done
}
if [[ tls-hmcrun-4 == $only || tls-wrong-cert == $only ||
      tls-control == $only ]]; then
	tls_setup
fi
good="HMC_TLS_CERT=$work/pki/ca-member.pem HMC_TLS_KEY=$work/pki/ca-member.key HMC_TLS_CA=$work/pki/ca.pem"
bad="HMC_TLS_CERT=$work/pki/rogue-member.pem HMC_TLS_KEY=$work/pki/rogue-member.key HMC_TLS_CA=$work/pki/ca.pem"
# shellcheck disable=SC2086
case_run tls-hmcrun-4 60 env $good "$RUN" -n 4 "$T" basic 4
p=$(port)
s="HMC_WORLD_SIZE=2 HMC_STORE=tcp://127.0.0.1:$p HMC_SECRET=x"
case_run tls-wrong-cert 60 bash -c "
	env HMC_RANK=0 $s $good '$T' basic 2 &
	a=\$!; sleep 0.3
	env $s $bad '$T' refused 13 || rc=1
	env $s '$T' refused 104 || rc=1
	env HMC_RANK=1 $s $good '$T' basic 2 || rc=1
	wait \$a || rc=1; exit \${rc:-0}"

# The communicator's control connections: a rogue CA's certificate and a
# peer without TLS refused while a member's traffic goes on.
case_run tls-control 30 "$O/tests/world/tls_comm" "$work/pki/ca.pem" \
	"$work/pki/ca-member.pem" "$work/pki/ca-member.key" \
	"$work/pki/rogue-member.pem" "$work/pki/rogue-member.key"

# hmcrun: the first failing rank's status, the others stopped; timeouts;
# forwarded signals.
expect hmcrun-first-failure 3 20 "$RUN" -n 3 sh -c \
	'[ "$HMC_RANK" = 1 ] && exit 3; sleep 30'
expect hmcrun-killed-rank 137 20 "$RUN" -n 2 sh -c \
	'[ "$HMC_RANK" = 0 ] && kill -9 $$; sleep 30'
expect hmcrun-timeout 124 20 "$RUN" --timeout 1 -n 2 sleep 30
# A process a rank leaves behind holds the tagged output's pipes: hmcrun
# still ends once the ranks have.
expect hmcrun-orphan-output 0 10 "$RUN" -n 2 --tag-output sh -c \
	'echo up; sleep 20 & echo done'
expect hmcrun-forwards-sigterm 7 20 bash -c "
	'$RUN' -n 2 sh -c 'trap \"exit 7\" TERM; sleep 30 & wait' &
	sleep 0.5; kill -TERM \$!; wait \$!"

echo "# world: $passed passed, $failed failed, $skipped skipped"
if [ "$failed" != 0 ]; then
	printf '#   %s\n' "${failures[@]}"
	exit 1
fi
