# ratelimit: PGXS build, plus the project's own targets.
#
#   make run    build, install into ./tmp, start a throwaway cluster, run the demo
#               (KEEP=1 leaves the cluster running; make stop stops it)
#   make test   every test suite on every major that can be tested here (the
#               host's directly, the others in Debian roots, as root);
#               make test PG=18 runs one major; non-zero on failure
#   make bench  a throwaway cluster and the benchmarks, printed as one table
#   make bench-memory  only its memory-store section: issue 25's targets
#               (installs redis-tools for itself)
#   make bench-long  only its long-transaction section (a snapshot held in
#               another session while the calls run; six minutes)
#   make bench-wait  how evenly waiting calls (rl_limit's wait) share one
#               key between clients, on both stores
#   make bench-sql-edition  only its SQL edition section: issue 37's
#               targets (BASE=REV: also the SQL edition of REV, same rounds)
#   make bench-external  only its last section: rl_limit against
#               rate-limiter-flexible and Redis (installs Node packages and
#               redis-tools for itself; make test needs none of it)
#   make bench BASE=REV  this build against git revision REV's, both
#               installed side by side and interleaved round by round:
#               each figure for both and this/base (test/bench/versions.sh;
#               BENCH_ROUNDS, default 5); make bench-memory BASE=REV only
#               the memory store's figures
#   make bench-instructions [BASE=REV]  instructions per call under
#               valgrind (callgrind), for this build or REV's and this one:
#               deterministic where timing is noise (test/bench/instructions.sh;
#               INSTR_CALLS, default 1000)
#   make profile  perf profiles of one backend running make bench's per-call
#               statements (root, or perf_event_paranoid <= 1)
#   make sql-edition  the SQL edition (sql-edition/, for managed services
#               that load no C library) into tmp/sql-edition: the install
#               script and its pg_tle form; prints the install's path last
#   make dist   the PGXN release archive of HEAD: ratelimit-X.Y.Z.zip, the
#               version read from META.json (docs/packaging.md)
#
# Packagers: plain `make && make install` (PG_CONFIG=...) builds against any
# pg_config, and `make installcheck` runs the regression suites against a
# server that is already running; debian/ builds postgresql-NN-ratelimit
# (docs/packaging.md).

EXTENSION = ratelimit
MODULE_big = ratelimit
OBJS = src/access.o src/adjust.o src/algebra.o src/calendar.o src/call_cache.o src/clock.o src/concurrency.o \
	src/definitions.o src/direct.o src/errors.o src/fields.o src/functions.o src/gc.o \
	src/held.o src/http.o src/kinds.o src/limit.o src/memory.o src/memory_file.o src/memory_gc.o \
	src/memory_names.o src/memory_table.o src/memory_xact.o src/names.o src/plans.o src/policy.o src/refused.o \
	src/sha256.o src/shmem.o src/stats.o src/storage.o src/storage_access.o src/storage_overrides.o src/store.o src/store_memory.o \
	src/store_table.o src/target.o src/trigger.o src/wait.o
DATA = ratelimit--1.0.sql ratelimit--1.0--1.1.sql ratelimit--1.1.sql \
	ratelimit--1.1--1.2.sql ratelimit--1.2.sql \
	ratelimit--1.2--1.3.sql ratelimit--1.3.sql
# The PL/Proxy router script is run on a proxy database, not installed as an
# extension: it goes with the documentation.
DOCS = router/ratelimit_router.sql
PGFILEDESC = "ratelimit - transactional rate limits"

REGRESS = define limit fixed_window reserve keys errors transactions privileges \
	search_path shards limit_all trigger jitter gc status upgrade settings \
	read_only table_features cache_coherence schema_rename redefine \
	boundaries limit_all_prefixes time_extremes adjust http_headers \
	concurrency stats new_keys inline_policies trigger_keys memory memory_prepared memory_commit_window \
	policies calendar wait overrides override_state sliding \
	row_hints memory_retry public_bounds canonical memory_quota reset result refused \
	inet_keys inet_forms \
	settle partial plans plans_zones plans_moves memory_caches
REGRESS_OPTS = --inputdir=. --outputdir=. --dbname=contrib_regression

# Isolation specs live in test/specs, their expected output in test/expected.
ISOLATION = last_token new_key savepoint isolation_levels reads_never_block \
	reservations timeouts limit_all_order shards_skip gc_skip_locked \
	definition_cache hand_edits definition_races limit_all_prefixes gc_recheck \
	cache_reset gc_definition cache_miss_race refund_race block_race \
	concurrency stats_waits concurrency_lowered refund_order \
	lease_release_rr refusal_unlocked held_grant new_key_levels \
	shards_both_busy shards_create_order shards_multixact lock_strength \
	shards_holder_nowait shards_shrink concurrency_redefine lease_redefine \
	memory_last_token memory_lowered memory_gc_undefined memory_drop_extension row_hints \
	policies_mixed_recheck policies_block_race overrides overrides_untracked \
	wait_race redefine_store_wait access_lists access_wait \
	settle_race partial_race settle_block_race plans plans_moves \
	memory_redefine_session
ISOLATION_OPTS = --inputdir=test

# No JIT bitcode: it would make clang a build dependency for no gain.
override with_llvm = no

# The host's major when it is there, else the pg_config on PATH (a Debian
# root of another major, pg_buildext's clean, a PGXN client).
PG_CONFIG ?= $(firstword $(wildcard /usr/lib/postgresql/15/bin/pg_config) pg_config)
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# make installcheck against a server that cannot run every suite, such as a
# packager's plain cluster: on PostgreSQL 15 and 16 without ratelimit in
# shared_preload_libraries the memory store and the statistics do not work,
# and without max_prepared_transactions no transaction can be prepared.
# The suites and specs that need what the server lacks (the server that
# EXTRA_REGRESS_OPTS's --host, --port and --user, or PGHOST, PGPORT and
# PGUSER, name; test/installcheck-lacks.sql asks it) are left out, and one
# line says which.  make test's cluster lacks nothing.
PRELOAD_REGRESS = trigger stats memory memory_prepared memory_commit_window \
	policies calendar wait overrides override_state sliding memory_retry \
	public_bounds canonical memory_quota reset result refused inet_keys \
	settle partial inet_forms plans plans_zones plans_moves memory_caches
PRELOAD_ISOLATION = stats_waits memory_last_token memory_lowered \
	memory_gc_undefined memory_drop_extension policies_mixed_recheck \
	policies_block_race overrides wait_race redefine_store_wait access_lists \
	settle_race partial_race settle_block_race plans plans_moves \
	memory_redefine_session
PREPARED_REGRESS = memory_prepared
ifneq ($(filter installcheck,$(MAKECMDGOALS)),)
comma := ,
RL_SERVER_ENV = $(patsubst --host=%,PGHOST=%,$(filter --host=%,$(EXTRA_REGRESS_OPTS))) \
	$(patsubst --port=%,PGPORT=%,$(filter --port=%,$(EXTRA_REGRESS_OPTS))) \
	$(patsubst --user=%,PGUSER=%,$(filter --user=%,$(EXTRA_REGRESS_OPTS)))
RL_LACKS := $(shell env $(RL_SERVER_ENV) '$(bindir)/psql' -XAtq -d template1 \
	-f test/installcheck-lacks.sql 2>/dev/null)
RL_SKIP_REGRESS = $(filter $(REGRESS),$(sort \
	$(if $(filter preload,$(RL_LACKS)),$(PRELOAD_REGRESS)) \
	$(if $(filter prepared,$(RL_LACKS)),$(PREPARED_REGRESS))))
RL_SKIP_ISOLATION = $(filter $(ISOLATION),$(if $(filter preload,$(RL_LACKS)),$(PRELOAD_ISOLATION)))
ifneq ($(strip $(RL_SKIP_REGRESS) $(RL_SKIP_ISOLATION)),)
RL_LACKS_TEXT = $(if $(filter preload,$(RL_LACKS)),shared_preload_libraries = ratelimit$(if $(filter prepared,$(RL_LACKS)),$(comma) ))$(if $(filter prepared,$(RL_LACKS)),max_prepared_transactions > 0)
$(info installcheck: skipped, as the server lacks $(RL_LACKS_TEXT): $(strip $(RL_SKIP_REGRESS) $(RL_SKIP_ISOLATION)))
override REGRESS := $(filter-out $(RL_SKIP_REGRESS),$(REGRESS))
override ISOLATION := $(filter-out $(RL_SKIP_ISOLATION),$(ISOLATION))
endif
endif

# Warnings CI builds with; not forced on packagers.
STRICT_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter \
	-Wno-missing-field-initializers -Wno-sign-compare

.PHONY: run stop test unit sql-edition bench bench-memory bench-long bench-wait bench-sql-edition bench-external bench-instructions profile dist
run:
	test/run-demo.sh

stop:
	test/stop-cluster.sh

test:
	RL_TEST_MAJORS="$(or $(PG),$(RL_TEST_MAJORS))" test/run-tests.sh

sql-edition:
	@sql-edition/build.sh tmp/sql-edition

bench:
	$(if $(BASE),test/bench/versions.sh '$(BASE)' bench,test/bench/run.sh)

bench-memory:
	$(if $(BASE),test/bench/versions.sh '$(BASE)' memory,test/bench/memory.sh)
bench-long:
	$(if $(BASE),test/bench/versions.sh '$(BASE)' long,test/bench/long.sh)
bench-wait:
	$(if $(BASE),test/bench/versions.sh '$(BASE)' wait,test/bench/wait.sh)

bench-sql-edition:
	BASE='$(BASE)' test/bench/sql_edition.sh

bench-external:
	$(if $(BASE),test/bench/versions.sh '$(BASE)' external,test/bench/external/run.sh)

bench-instructions:
	test/bench/instructions.sh '$(BASE)'

profile:
	test/bench/profile.sh

# PGXN's archive: the committed tree (git archive of HEAD, so nothing
# uncommitted or ignored), one top directory ratelimit-X.Y.Z/.
DIST_VERSION = $(shell perl -MJSON::PP -0777 -ne 'print decode_json($$_)->{version}' META.json)
DIST = $(EXTENSION)-$(DIST_VERSION).zip
dist:
	@test -n "$(DIST_VERSION)" || { echo "make dist: no version in META.json" >&2; exit 1; }
	git archive --format=zip --prefix=$(EXTENSION)-$(DIST_VERSION)/ -o $(DIST) HEAD
	@git diff --quiet HEAD -- || echo "make dist: uncommitted changes are not in $(DIST) (it archives HEAD)" >&2
	@echo "$(DIST)"

unit: test/unit/test_algebra test/unit/random_depth test/unit/test_sha256 test/unit/sliding_trace
	test/unit/test_sha256
	test/unit/test_algebra
	test/unit/random_depth 20000 1
	test/unit/sliding_trace 100000 1

test/unit/test_algebra: test/unit/test_algebra.c src/algebra.c src/adjust.c src/kinds.c src/algebra.h src/algebra_internal.h src/fields.c src/fields.h
	$(CC) -std=c99 -O1 $(STRICT_CFLAGS) -Isrc -o $@ test/unit/test_algebra.c src/algebra.c src/adjust.c src/kinds.c src/fields.c -lm

test/unit/test_sha256: test/unit/test_sha256.c src/sha256.c src/sha256.h
	$(CC) -std=c99 -O1 $(STRICT_CFLAGS) -Isrc -o $@ test/unit/test_sha256.c src/sha256.c

test/unit/sliding_trace: test/unit/sliding_trace.c src/algebra.c src/adjust.c src/kinds.c src/algebra.h src/algebra_internal.h
	$(CC) -std=c99 -O1 $(STRICT_CFLAGS) -Isrc -o $@ test/unit/sliding_trace.c src/algebra.c src/adjust.c src/kinds.c -lm

test/unit/random_depth: test/unit/random_depth.c src/algebra.c src/adjust.c src/kinds.c src/algebra.h src/algebra_internal.h
	$(CC) -std=c99 -O1 $(STRICT_CFLAGS) -Isrc -o $@ test/unit/random_depth.c src/algebra.c src/adjust.c src/kinds.c -lm

EXTRA_CLEAN = test/unit/test_algebra test/unit/random_depth test/unit/sliding_trace test/unit/test_sha256 results regression.diffs regression.out output_iso

# For test/packaging/: the scripts this Makefile installs, and the name
# make dist gives the archive.
.PHONY: print-data print-dist
print-data:
	@echo $(DATA)
print-dist:
	@echo $(DIST)

# PGXS installs DOCS under their base names but uninstalls them under the
# names given (router/...), which would leave the router script behind.
.PHONY: uninstall-router
uninstall: uninstall-router
uninstall-router:
	rm -f '$(DESTDIR)$(docdir)/$(docmoduledir)/ratelimit_router.sql'

# PGXS tracks no header dependencies (without --enable-depend): rebuild
# every object when a header changes, since they share struct layouts.
$(OBJS): $(wildcard src/*.h)
