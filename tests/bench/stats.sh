# SPDX-License-Identifier: MIT
# Helpers shared by the benchmark scripts (tests/bench/bench.sh,
# tests/vm/bench/*.sh), which source this file. POSIX sh.

# median N...: the median of the numbers.
median() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { if (NR % 2) print v[(NR + 1) / 2];
		      else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

json_field() {	# json_field FILE KEY: the first number after "KEY":
	sed -n "s/.*\"$2\":\([0-9.eE+-]*\).*/\1/p" "$1" | head -n 1
}

# report NAME "OURS..." "THEIRS..." TARGET UNIT WHAT: both medians, and
# `RATIO NAME <ours/theirs> TARGET` appended to $RATIOS for the end.
report() {
	mo=$(median $2)
	mt=$(median $3)
	ratio=$(awk -v a="$mo" -v b="$mt" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "nan" }')
	printf '%-22s %s\n' "$1" "$6"
	printf '  %-10s %10s %s   runs:%s\n' hmcperf "$mo" "$5" "$2"
	printf '  %-10s %10s %s   runs:%s\n' reference "$mt" "$5" "$3"
	RATIOS="${RATIOS}RATIO $1 $ratio $4
"
}
