# Helpers for the review reproducers: psql sessions kept open as coprocesses.
# Usage: source test/review/lib.sh; open_session A; q A "SELECT 1"; close_session A
RL_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export PATH=$RL_REPO/tmp/install/usr/lib/postgresql/15/bin:$PATH
export PGHOST=${PGHOST:-$RL_REPO/tmp/sock} PGPORT=${PGPORT:-55581} PGUSER=${PGUSER:-postgres}
export PGDATABASE=${PGDATABASE:-r}
declare -A SIN SOUT SPID
open_session() {
	local name=$1 db=${2:-$PGDATABASE}
	local dir; dir=$(mktemp -d)
	mkfifo "$dir/in"
	psql -X -At -v ON_ERROR_STOP=0 -d "$db" <"$dir/in" >"$dir/out" 2>&1 &
	SPID[$name]=$!
	exec {fd}>"$dir/in"
	SIN[$name]=$fd
	SOUT[$name]=$dir/out
}
# Send SQL to a session without waiting.
send() { printf '%s\n' "$2" >&"${SIN[$1]}"; }
# Send SQL and wait until it is done (a marker echoed after it); print new output.
q() {
	local name=$1 sql=$2 marker="__done_$RANDOM$RANDOM"
	local before; before=$(wc -c <"${SOUT[$name]}")
	printf '%s\n\\echo %s\n' "$sql" "$marker" >&"${SIN[$name]}"
	for _ in $(seq 1 600); do
		grep -q "$marker" "${SOUT[$name]}" && break
		sleep 0.05
	done
	tail -c +$((before + 1)) "${SOUT[$name]}" | grep -v "$marker" | sed "s/^/[$name] /"
}
close_session() { printf "\\q\n" >&"${SIN[$1]}"; wait "${SPID[$1]}" 2>/dev/null || true; eval "exec ${SIN[$1]}>&-"; }
# Restart the review cluster (mode: fast, immediate; "kill" kills the postmaster).
restart_cluster() {
	local mode=${1:-fast} data=$RL_REPO/tmp/data
	if [ "$mode" = kill ]; then
		kill -9 "$(head -1 "$data/postmaster.pid")"
		# its children exit when they notice; then the start succeeds
		for _ in $(seq 1 100); do
			runuser -u postgres -- pg_ctl -D "$data" -l "$RL_REPO/tmp/log/postgresql.log" -w start >/dev/null 2>&1 && return 0
			sleep 0.3
		done
		return 1
	else
		runuser -u postgres -- pg_ctl -D "$data" -m "$mode" -w stop >/dev/null
	fi
	runuser -u postgres -- pg_ctl -D "$data" -l "$RL_REPO/tmp/log/postgresql.log" -w start >/dev/null
}
