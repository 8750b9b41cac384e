# SPDX-License-Identifier: MIT
# Helpers shared by the benchmark scripts (tests/bench/bench.sh,
# tests/vm/bench/*.sh), which source this file. POSIX sh.

# median N...: the median of the numbers.
median() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { if (NR % 2) print v[(NR + 1) / 2];
		      else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# alternate REPS OURS THEIRS: run the commands OURS and THEIRS (strings,
# eval'd in a subshell of the caller) in turn REPS times, so that the i-th
# of each ran side by side, as report wants; their outputs in $ours and
# $theirs, space-separated.
alternate() {
	ours='' theirs=''
	_i=0
	while [ "$_i" -lt "$1" ]; do
		ours="$ours $(eval "$2")"
		theirs="$theirs $(eval "$3")"
		_i=$((_i + 1))
	done
}

json_field() {	# json_field FILE KEY: the first number after "KEY":
	sed -n "s/.*\"$2\":\([0-9.eE+-]*\).*/\1/p" "$1" | head -n 1
}

# pair_ratios "OURS..." "THEIRS...": ours[i] / theirs[i] for each i, or
# nothing if the lists differ in length or a reference value is not > 0.
pair_ratios() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		n = split(a, x, " "); m = split(b, y, " ")
		if (n != m || n == 0) exit
		for (i = 1; i <= n; i++) if (!(y[i] > 0)) exit
		for (i = 1; i <= n; i++) printf "%.3f ", x[i] / y[i] }'
}

# report NAME "OURS..." "THEIRS..." TARGET UNIT WHAT: both medians, and
# `RATIO NAME <ours/theirs> TARGET` appended to $RATIOS for the end. The
# callers run the tools in turn, so the i-th of each ran side by side:
# the ratio is the median of the pairs' ratios. A shared machine drifts
# across a series (both tools' 1 MiB runs went from 20 to 35 MB/s in one
# guest run), and the ratio of the two medians then depends on where each
# series' middle fell; it is printed too.
report() {
	mo=$(median $2)
	mt=$(median $3)
	of_medians=$(awk -v a="$mo" -v b="$mt" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "nan" }')
	pairs=$(pair_ratios "$2" "$3")
	ratio=nan
	[ -n "$pairs" ] && ratio=$(median $pairs)
	printf '%-22s %s\n' "$1" "$6"
	printf '  %-10s %10s %s   runs:%s\n' "${OURS:-hmcperf}" "$mo" "$5" "$2"
	printf '  %-10s %10s %s   runs:%s\n' reference "$mt" "$5" "$3"
	printf '  %-10s %10s (ratio of the medians %s)   pairs: %s\n' ratio "$ratio" "$of_medians" "$pairs"
	RATIOS="${RATIOS}RATIO $1 $ratio $4
"
}
