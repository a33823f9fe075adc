# Sourced by the benchmarks that hold the xmin horizon (long.sh, memory.sh):
# start_holder starts a session that reads rate_limits in a REPEATABLE
# READ transaction and then sleeps, holding its snapshot as pg_dump holds
# one, until stop_holder.  Needs q (a query's one value) and rl_die.
holder_pid=
start_holder() {
	PGAPPNAME=rl_bench_holder "$RL_BIN/psql" -X -q >/dev/null 2>&1 <<'SQL' &
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM rate_limits;
SELECT pg_sleep(86400);
SQL
	holder_pid=$!
	for _ in $(seq 100); do
		[ "$(q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'rl_bench_holder' AND backend_xmin IS NOT NULL AND query LIKE '%pg_sleep%'")" = 1 ] && return 0
		sleep 0.1
	done
	rl_die "the session holding a snapshot did not start"
}
stop_holder() {
	[ -n "$holder_pid" ] || return 0
	q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'rl_bench_holder'" >/dev/null 2>&1 || true
	wait "$holder_pid" 2>/dev/null || true
	holder_pid=
}
