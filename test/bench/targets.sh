# Sourced by the benchmarks that print a table of targets (run.sh,
# memory.sh): ratio, holds and target_row.  target_width sets the width of
# the target column (default 20).

# a / b, to two places
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'
}
# holds VALUE OP TARGET: whether VALUE OP TARGET (OP is <=, >= or <)
holds() {
	awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN { exit !(op == "<=" ? v <= t : op == ">=" ? v >= t : v < t) }'
}
# target_row LABEL TARGET_TEXT MEASURED_TEXT [OP VALUE TARGET]...: one row,
# met when every condition holds, not measured when a value is empty
target_row() {
	local label=$1 target=$2 measured=$3 verdict=met
	shift 3
	while [ $# -gt 0 ]; do
		if [ -z "$2" ]; then
			verdict="not measured" measured="-"
			break
		fi
		holds "$2" "$1" "$3" || verdict="not met"
		shift 3
	done
	printf "%-66s %-${target_width:-20}s %16s  %s\n" "$label" "$target" "$measured" "$verdict"
}
