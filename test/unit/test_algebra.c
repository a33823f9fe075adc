/*
 * test_algebra.c: the pure algebra against vectors worked out by hand.
 *
 * Each vector's comment shows the arithmetic from the formulas in
 * docs/semantics.md.  No server: build and run with `make unit`.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algebra.h"
#include "fields.h"

#define SEC  INT64_C(1000000)
#define MIN  (60 * SEC)
#define HOUR (60 * MIN)
#define DAY  (24 * HOUR)

static int passed;
static int failed;

static void
expect(int cond, const char *what)
{
	if (cond)
		passed++;
	else
	{
		failed++;
		printf("FAIL: %s\n", what);
	}
}

static int
near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (1 + fabs(b));
}

static RlPolicy
bucket(double rate, int64_t period, double capacity)
{
	RlPolicy	p = {RL_TOKEN_BUCKET, rate, period, capacity, false, 0, 1, false, 0};

	return p;
}

static RlPolicy
window(double rate, int64_t period, double capacity, int64_t start)
{
	RlPolicy	p = {RL_FIXED_WINDOW, rate, period, capacity, false, 0, 1, true, start};

	return p;
}

typedef struct Vector
{
	const char *what;
	RlPolicy	policy;
	int			has_state;
	RlState		state;
	int64_t		now;
	double		count;
	int			reserve;
	/* expected */
	int			ok;
	int			has_retry;
	int64_t		retry_after;
	double		remaining;
	int64_t		reset_after;
	RlState		written;		/* checked when ok */
} Vector;

static void
run_vectors(void)
{
	RlPolicy	tb = bucket(10, MIN, 10);	/* one token per 6 s */
	RlPolicy	tb_max = tb;
	RlPolicy	tb3 = bucket(3, SEC, 3);	/* one token per 333333.3 us */
	RlPolicy	fw = window(5, HOUR, 5, 0);
	RlPolicy	fw_cap = window(5, HOUR, 12, 0);
	RlPolicy	fw_deep = fw;

	tb_max.has_max_reserved = true;
	tb_max.max_reserved = 0.25;
	fw_deep.has_max_reserved = true;
	fw_deep.max_reserved = 10;

	Vector		v[] = {
		/* new key: full bucket 10 - 1 = 9; one token back to full = 6 s */
		{"bucket: first call", tb, 0, {0, 0}, 0, 1, 0,
		1, 0, 0, 9, 6 * SEC, {9, 0}},
		/* 9 - 9 = 0 left; 10 tokens to refill = 60 s */
		{"bucket: takes the last tokens", tb, 1, {9, 0}, 0, 9, 0,
		1, 0, 0, 0, 60 * SEC, {0, 0}},
		/* 3 s refill 0.5; 0.5 - 1 < 0: deny; 0.5 missing = 3 s; 9.5 to full = 57 s */
		{"bucket: deny with retry", tb, 1, {0, 0}, 3 * SEC, 1, 0,
		0, 1, 3 * SEC, 0.5, 57 * SEC, {0, 0}},
		/* same, reserving: -0.5 written at ts 3 s; paid back in 3 s; full in 63 s */
		{"bucket: reservation", tb, 1, {0, 0}, 3 * SEC, 1, 1,
		1, 1, 3 * SEC, -0.5, 63 * SEC, {-0.5, 3 * SEC}},
		/* -0.5 < -0.25: deny; need value >= 0.75, 0.25 more = 1.5 s */
		{"bucket: max_reserved denies", tb_max, 1, {0, 0}, 3 * SEC, 1, 1,
		0, 1, 1500000, 0.5, 57 * SEC, {0, 0}},
		/* clock behind ts: nothing added, ts stays at 10 s; full at 10 + 36 s */
		{"bucket: clock behind ts", tb, 1, {5, 10 * SEC}, 4 * SEC, 1, 0,
		1, 0, 0, 4, 42 * SEC, {4, 10 * SEC}},
		/* 8 + 10 capped at 10, minus 1 */
		{"bucket: refill capped", tb, 1, {8, 0}, 60 * SEC, 1, 0,
		1, 0, 0, 9, 6 * SEC, {9, 60 * SEC}},
		/* 1 token at 3/s: 333333.33 us, rounded up so the retry succeeds */
		{"bucket: retry rounds up", tb3, 1, {0, 0}, 0, 1, 0,
		0, 1, 333334, 0, 1000000, {0, 0}},
		/* window [0, 1h): 5 - 2 = 3, ts at window start; next window in 50 min */
		{"window: first call", fw, 0, {0, 0}, 10 * MIN, 2, 0,
		1, 0, 0, 3, 50 * MIN, {3, 0}},
		/* empty window: retry at the next window start, 30 min away */
		{"window: deny until next window", fw, 1, {0, 0}, 30 * MIN, 1, 0,
		0, 1, 30 * MIN, 0, 30 * MIN, {0, 0}},
		/* two windows elapsed: 0 + 2*5 capped at 5, minus 1; ts = 2h */
		{"window: windows elapsed", fw, 1, {0, 0}, 150 * MIN, 1, 0,
		1, 0, 0, 4, 30 * MIN, {4, 2 * HOUR}},
		/* 1 - 6 = -5, the capacity, as deep as the default goes: at 1h */
		{"window: reservation", fw, 1, {1, 0}, 10 * MIN, 6, 1,
		1, 1, 50 * MIN, -5, 50 * MIN, {-5, 0}},
		/* max_reserved 10: 1 - 8 = -7; ceil(7/5) = 2 windows: at 2h, 110 min away */
		{"window: deep reservation", fw_deep, 1, {1, 0}, 10 * MIN, 8, 1,
		1, 1, 110 * MIN, -7, 50 * MIN, {-7, 0}},
		/* capacity 12 > rate 5: 12 tokens need ceil(12/5) = 3 windows: 3h - 10 min */
		{"window: capacity above rate", fw_cap, 1, {0, 0}, 10 * MIN, 12, 0,
		0, 1, 170 * MIN, 0, 50 * MIN, {0, 0}},
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
	{
		RlDecision	d;
		char		what[200];
		RlStatus	status;

		status = rl_decide(&v[i].policy, 0, v[i].has_state ? &v[i].state : NULL,
						   v[i].now, v[i].count, v[i].reserve, &d);
		snprintf(what, sizeof(what), "%s: decided", v[i].what);
		expect(status == RL_DECIDED, what);
		snprintf(what, sizeof(what), "%s: ok", v[i].what);
		expect(d.ok == v[i].ok, what);
		snprintf(what, sizeof(what), "%s: has_retry", v[i].what);
		expect(d.has_retry == v[i].has_retry, what);
		if (v[i].has_retry)
		{
			snprintf(what, sizeof(what), "%s: retry_after %lld", v[i].what,
					 (long long) d.retry_after);
			expect(d.retry_after == v[i].retry_after, what);
		}
		snprintf(what, sizeof(what), "%s: remaining %g", v[i].what, d.remaining);
		expect(near(d.remaining, v[i].remaining), what);
		snprintf(what, sizeof(what), "%s: reset_after %lld", v[i].what,
				 (long long) d.reset_after);
		expect(d.reset_after == v[i].reset_after, what);
		if (v[i].ok)
		{
			snprintf(what, sizeof(what), "%s: written state (%g, %lld)",
					 v[i].what, d.state.value, (long long) d.state.ts);
			expect(near(d.state.value, v[i].written.value) &&
				   d.state.ts == v[i].written.ts, what);
		}
	}
}

/* A retry at retry_after succeeds, and one microsecond earlier does not. */
static void
run_retry_is_exact(void)
{
	RlPolicy	p = bucket(7, 13 * SEC, 7);

	for (int k = 1; k <= 200; k++)
	{
		RlState		s = {0.1 * (k % 7), 0};
		double		count = 1 + (k % 5);
		RlDecision	d;
		RlDecision	again;
		RlDecision	early;
		char		what[120];

		rl_decide(&p, 0, &s, k * 1000, count, 0, &d);
		if (d.ok)
			continue;
		rl_decide(&p, 0, &s, k * 1000 + d.retry_after, count, 0, &again);
		rl_decide(&p, 0, &s, k * 1000 + d.retry_after - 1, count, 0, &early);
		snprintf(what, sizeof(what), "retry exact, case %d", k);
		expect(again.ok && !early.ok, what);
	}
}

static void
run_windows(void)
{
	/* start 15 min: windows at ..., -45 min, 15 min, ...; 10 min is in [-45, 15) */
	expect(rl_window_start(10 * MIN, 15 * MIN, HOUR) == -45 * MIN,
		   "window start before the origin");
	expect(rl_window_start(-1, 0, 10) == -10, "window start of a negative time");
	expect(rl_window_start(20, 0, 10) == 20, "a window start is its own start");
}

static void
run_origin(void)
{
	RlPolicy	p = window(5, HOUR, 5, 0);
	int64_t		a;
	int64_t		b;
	int64_t		n;
	int64_t		e;

	p.has_start = false;
	a = rl_window_origin(&p, "send", 4, "42", 2, false);
	b = rl_window_origin(&p, "send", 4, "42", 2, false);
	n = rl_window_origin(&p, "send", 4, "", 0, true);
	e = rl_window_origin(&p, "send", 4, "", 0, false);
	expect(a == b, "origin is deterministic");
	expect(a >= 0 && a < HOUR && n >= 0 && n < HOUR, "origin within the period");
	expect(n != e, "the NULL key and the empty key get different phases");
	expect(rl_window_origin(&p, "send", 4, "43", 2, false) != a,
		   "different keys get different phases");
	p.has_start = true;
	p.start = 3 * HOUR + 7;
	expect(rl_window_origin(&p, "send", 4, "42", 2, false) == 7,
		   "a configured start fixes the phase");
}

static void
run_checks(void)
{
	RlPolicy	ok = bucket(10, MIN, 10);
	RlPolicy	p;

	expect(rl_policy_problem(&ok) == NULL, "a valid policy passes");
	p = ok;
	p.rate = 0;
	expect(rl_policy_problem(&p) != NULL, "rate 0 refused");
	p.rate = NAN;
	expect(rl_policy_problem(&p) != NULL, "rate NaN refused");
	p.rate = INFINITY;
	expect(rl_policy_problem(&p) != NULL, "rate infinity refused");
	p = ok;
	p.period = 0;
	expect(rl_policy_problem(&p) != NULL, "period 0 refused");
	p = ok;
	p.capacity = -1;
	expect(rl_policy_problem(&p) != NULL, "negative capacity refused");
	p = ok;
	p.capacity = 0;
	expect(rl_policy_problem(&p) == NULL, "capacity 0 allowed (reserve-only)");
	p = ok;
	p.has_max_reserved = true;
	p.max_reserved = -1;
	expect(rl_policy_problem(&p) != NULL, "negative max_reserved refused");
	p = ok;
	p.shards = 0;
	expect(rl_policy_problem(&p) != NULL, "shards 0 refused");
	p = ok;
	p.has_start = true;
	expect(rl_policy_problem(&p) != NULL, "start on a token bucket refused");

	/* concurrency limits: a whole number of permits, 1 to 1000, nothing else */
	{
		RlPolicy	c = {RL_CONCURRENCY, 0, 0, 5, false, 0, 1, false, 0};
		RlKind		k;

		expect(rl_policy_problem(&c) == NULL, "5 permits allowed");
		c.capacity = 1000;
		expect(rl_policy_problem(&c) == NULL, "1000 permits allowed");
		c.capacity = 1001;
		expect(rl_policy_problem(&c) != NULL, "1001 permits refused");
		c.capacity = 0;
		expect(rl_policy_problem(&c) != NULL, "0 permits refused");
		c.capacity = 2.5;
		expect(rl_policy_problem(&c) != NULL, "a fraction of a permit refused");
		c.capacity = NAN;
		expect(rl_policy_problem(&c) != NULL, "NaN permits refused");
		c.capacity = 2;
		c.shards = 2;
		expect(rl_policy_problem(&c) != NULL, "shards on a concurrency limit refused");
		c.kind = RL_CONCURRENCY_LEASE;
		c.shards = 1;
		c.has_start = true;
		expect(rl_policy_problem(&c) != NULL, "start on a lease limit refused");
		expect(rl_kind_parse("concurrency lease", &k) && k == RL_CONCURRENCY_LEASE &&
			   strcmp(rl_kind_name(RL_CONCURRENCY), "concurrency") == 0,
			   "concurrency kinds parse and print");
	}

	/* 500 tokens at 1 per 100 years: 50,000 years to fill */
	p = bucket(1, 36525 * (INT64_C(86400) * SEC) / 10 * 10, 500);
	expect(rl_policy_problem(&p) != NULL, "a bucket slower than 1000 years to fill refused");
	p.capacity = 10;
	expect(rl_policy_problem(&p) == NULL, "1000 years to fill allowed");
	p.capacity = 1;
	p.has_max_reserved = true;
	p.max_reserved = 10;
	expect(rl_policy_problem(&p) != NULL, "max_reserved counts toward the fill time");
	p = window(1, 36525 * (INT64_C(86400) * SEC), 11, 0);
	expect(rl_policy_problem(&p) != NULL, "a window slower than 1000 years to fill refused");

	expect(rl_count_problem(&ok, 0, 0) != NULL, "count 0 refused");
	expect(rl_count_problem(&ok, -1, 0) != NULL, "negative count refused");
	expect(rl_count_problem(&ok, NAN, 0) != NULL, "count NaN refused");
	expect(rl_count_problem(&ok, 10, 0) == NULL, "count = capacity allowed");
	expect(rl_count_problem(&ok, 10.5, 0) != NULL, "count > capacity refused");
	expect(rl_count_problem(&ok, 20, 1) == NULL,
		   "without max_reserved, a reservation of twice the capacity allowed");
	expect(rl_count_problem(&ok, 20.5, 1) != NULL,
		   "but none deeper than the capacity below zero");
	expect(rl_count_problem(&ok, 1e10, 1) != NULL,
		   "nor a reservation 500 years deep");
	p = ok;
	p.has_max_reserved = true;
	p.max_reserved = 5;
	expect(rl_count_problem(&p, 15, 1) == NULL, "count = capacity + max_reserved");
	expect(rl_count_problem(&p, 15.5, 1) != NULL, "count > capacity + max_reserved");
}

/*
 * Without max_reserved, reservations go no deeper than the capacity below
 * zero, nor deeper than the limit refills from in 500 years, so no state a
 * caller leaves makes a later call's wait pass 1000 years (an error for
 * every caller), or others wait longer than after a full burst.
 */
static void
run_reserve_depth(void)
{
	RlPolicy	tb = bucket(3, HOUR, 3);
	RlPolicy	fw = window(3, HOUR, 3, 0);
	RlPolicy	slow = bucket(1, 36525 * (INT64_C(86400) * SEC), 3);
	RlState		deep;
	RlDecision	d;

	expect(rl_reserve_depth(&tb) == 3, "bucket: depth is the capacity");
	expect(rl_reserve_depth(&fw) == 3, "window: depth is the capacity");
	/* 5 tokens refill in 500 years: 2 below zero, not 3 */
	expect(rl_reserve_depth(&slow) == 2,
		   "slow bucket: depth is what refills in 500 years, less capacity");
	slow.capacity = 5;
	expect(rl_reserve_depth(&slow) == 0,
		   "slow bucket: no depth when the capacity takes 500 years");
	tb.has_max_reserved = true;
	tb.max_reserved = 7;
	expect(rl_reserve_depth(&tb) == 7, "max_reserved is the depth when set");
	tb.has_max_reserved = false;

	/* one reservation of everything allowed, then of one more: an error */
	expect(rl_count_problem(&tb, 3 + rl_reserve_depth(&tb), 1) == NULL,
		   "count = capacity + depth allowed");
	expect(rl_count_problem(&tb, 4 + rl_reserve_depth(&tb), 1) != NULL,
		   "count past capacity + depth refused");
	expect(rl_count_problem(&tb, 1e15, 1) != NULL,
		   "a huge unbounded reservation refused");

	/* at the floor, a further reservation is refused, with a wait in range */
	deep.value = -rl_reserve_depth(&tb);
	deep.ts = 0;
	expect(rl_decide(&tb, 0, &deep, 0, 1, 1, &d) == RL_DECIDED && !d.ok &&
		   llabs(d.retry_after - HOUR / 3) < 10,
		   "a reservation below the floor refused until a token refills");
	{
		int64_t		retry = d.retry_after;

		expect(rl_decide(&tb, 0, &deep, retry - 1, 1, 1, &d) == RL_DECIDED && !d.ok &&
			   rl_decide(&tb, 0, &deep, retry, 1, 1, &d) == RL_DECIDED && d.ok,
			   "and granted exactly at its retry_after");
	}
	expect(rl_decide(&tb, 0, &deep, 0, 3, 0, &d) == RL_DECIDED && !d.ok &&
		   d.retry_after <= RL_MAX_WAIT,
		   "a plain call at the floor still gets an answer within 1000 years");
	expect(rl_decide(&tb, 0, &deep, d.retry_after, 3, 0, &d) == RL_DECIDED && d.ok,
		   "and is granted at its retry_after");
	deep.value = -rl_reserve_depth(&fw);
	expect(rl_decide(&fw, 0, &deep, 0, 3, 0, &d) == RL_DECIDED && !d.ok &&
		   d.retry_after <= RL_MAX_WAIT,
		   "window: a plain call at the floor gets an answer within 1000 years");
}

static void
run_too_long(void)
{
	RlPolicy	slow = bucket(1e-9, HOUR, 1);
	RlState		empty = {0, 0};
	RlDecision	d;

	expect(rl_decide(&slow, 0, &empty, 0, 1, 0, &d) == RL_WAIT_TOO_LONG,
		   "a wait past 1000 years is reported, not wrapped");
}

/* Shards: total 10 a minute, capacity 10, 2 shards of 5 a minute, 5 held. */
static void
run_shards(void)
{
	RlPolicy	whole = bucket(10, MIN, 10);
	RlPolicy	half;
	RlShardDecision d;
	RlState		a;
	RlState		b;
	const RlState *both[2] = {&a, &b};

	whole.shards = 2;
	half = rl_policy_shard(&whole);
	expect(half.rate == 5 && half.capacity == 5, "a shard gets an even split");

	/* (5, 5), 3 asked: the fuller (first) shard alone serves; 2 + 5 left */
	a = (RlState) {5, 0};
	b = (RlState) {5, 0};
	rl_decide_shards(&half, 0, 2, both, 0, 3, false, &d);
	expect(d.ok && d.write[0] && !d.write[1] && near(d.state[0].value, 2) &&
		   near(d.remaining, 7), "shards: the fuller shard serves alone");

	/* (2, 4), 5 asked: neither alone; together 6 - 5 = 1, split 0.5 each */
	a = (RlState) {2, 0};
	b = (RlState) {4, 0};
	rl_decide_shards(&half, 0, 2, both, 0, 5, false, &d);
	expect(d.ok && d.write[0] && d.write[1] && near(d.state[0].value, 0.5) &&
		   near(d.state[1].value, 0.5), "shards: both serve, left balanced");

	/*
	 * (1, 1), 5 asked: denied.  One shard alone needs 4 more at 5 a minute
	 * (48 s); both together need 3 more at 10 a minute (18 s): 18 s.
	 */
	a = (RlState) {1, 0};
	b = (RlState) {1, 0};
	rl_decide_shards(&half, 0, 2, both, 0, 5, false, &d);
	expect(!d.ok && d.has_retry && d.retry_after == 18 * SEC &&
		   near(d.remaining, 2) && !d.write[0] && !d.write[1],
		   "shards: denial reports the shorter achievable wait");

	/* the same, reserving: both go to -1.5, paid back together in 18 s */
	rl_decide_shards(&half, 0, 2, both, 0, 5, true, &d);
	expect(d.ok && near(d.state[0].value, -1.5) && near(d.state[1].value, -1.5) &&
		   d.retry_after == 18 * SEC, "shards: a reservation is split evenly");

	/* bounds: 2 shards grant up to the whole capacity, 4 shards half of it */
	expect(rl_count_problem(&whole, 10, false) == NULL,
		   "2 shards: a count of the whole capacity is grantable");
	whole.shards = 4;
	expect(rl_count_problem(&whole, 5, false) == NULL &&
		   rl_count_problem(&whole, 5.5, false) != NULL,
		   "4 shards: at most two shards' capacity");
}

/*
 * Over a long random run, shards never grant more in total than one
 * unsharded limit could: capacity + rate * elapsed.
 */
static void
run_shard_total(void)
{
	RlPolicy	whole = bucket(8, MIN, 8);
	RlPolicy	shard;
	RlState		s[4];
	bool		stored[4] = {false, false, false, false};
	double		granted = 0;
	int64_t		now = 0;
	unsigned	seed = 12345;

	whole.shards = 4;
	shard = rl_policy_shard(&whole);
	for (int step = 0; step < 20000; step++)
	{
		int			i;
		int			j;
		double		count;
		const RlState *pick[2];
		RlShardDecision d;

		seed = seed * 1103515245 + 12345;
		now += (seed >> 16) % (2 * SEC);
		i = (seed >> 8) % 4;
		j = (i + 1 + (seed >> 4) % 3) % 4;
		count = 0.5 + (seed >> 20) % 8 * 0.5;	/* 0.5 .. 4: all grantable */
		pick[0] = stored[i] ? &s[i] : NULL;
		pick[1] = stored[j] ? &s[j] : NULL;
		rl_decide_shards(&shard, 0, 2, pick, now, count, false, &d);
		if (!d.ok)
			continue;
		granted += count;
		if (d.write[0])
			s[i] = d.state[0], stored[i] = true;
		if (d.write[1])
			s[j] = d.state[1], stored[j] = true;
	}
	expect(granted <= 8 + 8.0 * now / MIN + 1e-6,
		   "shards never grant more than the unsharded limit");
	expect(granted >= 0.9 * (8.0 * now / MIN),
		   "shards still grant most of what was asked under steady load");
}

/*
 * An idle row (what rl_gc deletes) must answer every later call exactly
 * as a missing row does; a row still refilling, a reservation outstanding
 * or a window still running is not idle.
 */
static void
run_idle(void)
{
	RlPolicy	b = bucket(10, MIN, 10);
	RlPolicy	w = window(10, MIN, 10, 0);
	RlState		drained = {4, 0};
	RlState		reserved = {-5, 0};
	RlState		future = {10, 2 * MIN};

	/* 6 tokens at 10/min refill in 36 s */
	expect(!rl_state_is_idle(&b, 0, drained, 35 * SEC), "bucket: still refilling at 35 s");
	expect(rl_state_is_idle(&b, 0, drained, 36 * SEC), "bucket: idle once full at 36 s");
	expect(rl_state_is_idle(&b, 0, drained, HOUR), "bucket: idle long after");
	/* -5 needs 15 tokens: 90 s */
	expect(!rl_state_is_idle(&b, 0, reserved, 89 * SEC), "bucket: reservation outstanding");
	expect(rl_state_is_idle(&b, 0, reserved, 90 * SEC), "bucket: reservation paid back");
	/* a row counted at a later time than now is not what a new row is */
	expect(!rl_state_is_idle(&b, 0, future, MIN), "bucket: row from the future kept");
	/* a window: drained at 0, full again when the next window starts */
	expect(!rl_state_is_idle(&w, 0, drained, 59 * SEC), "window: same window kept");
	expect(rl_state_is_idle(&w, 0, drained, MIN), "window: idle in the next window");
	expect(!rl_state_is_idle(&w, 0, reserved, MIN), "window: -5 + 10 is not full");
	expect(rl_state_is_idle(&w, 0, reserved, 2 * MIN), "window: full after two windows");
	/* a full window in progress is idle: a missing row starts the same */
	expect(rl_state_is_idle(&w, 0, (RlState) {10, MIN}, MIN + 5 * SEC),
		   "window: full in its own window");

	/* idle means every later decision equals a missing row's */
	for (int64_t later = 36 * SEC; later < 5 * MIN; later += 7 * SEC)
	{
		RlDecision	with_row;
		RlDecision	without;

		rl_decide(&b, 0, &drained, later, 3, false, &with_row);
		rl_decide(&b, 0, NULL, later, 3, false, &without);
		expect(with_row.ok == without.ok &&
			   with_row.state.value == without.state.value &&
			   with_row.state.ts == without.state.ts &&
			   with_row.reset_after == without.reset_after,
			   "bucket: an idle row decides like a missing one");
	}
}

/*
 * Near both ends of the timestamptz range.  RL_MIN_TIME (4714-11-24 BC)
 * and RL_END_TIME (294277-01-01) are whole hours from 2000-01-01, and
 * RL_END_TIME is 106751983 days from it; INT64_MAX is only about 8 days
 * past RL_END_TIME, so a wait or window of more than that from near the
 * end overflows unless checked.
 */
static void
run_time_extremes(void)
{
	RlPolicy	tb = bucket(10, MIN, 10);	/* one token per 6 s */
	RlPolicy	slow = bucket(1, 30 * DAY, 1);
	RlPolicy	fw = window(5, HOUR, 5, 0);
	RlPolicy	fw30 = window(1, 30 * DAY, 1, 0);
	RlPolicy	half = tb;
	RlState		empty;
	RlState		s;
	RlState		shard_a;
	RlState		shard_b;
	const RlState *both[2] = {&shard_a, &shard_b};
	RlDecision	d;
	RlShardDecision sd;
	RlStatus	status;

	/* the end: one minute before it, 1 of 10 taken, full again in 6 s */
	empty = (RlState) {10, RL_END_TIME - MIN};
	status = rl_decide(&tb, 0, &empty, RL_END_TIME - MIN, 1, false, &d);
	expect(status == RL_DECIDED && d.ok && near(d.remaining, 9) &&
		   d.reset_after == 6 * SEC && d.state.ts == RL_END_TIME - MIN,
		   "end: a bucket a minute before the end answers");

	/* 30 s before the end, 10 of 10 taken: full again 60 s on, past the end */
	status = rl_decide(&tb, 0, NULL, RL_END_TIME - 30 * SEC, 10, false, &d);
	expect(status == RL_TIME_OUT_OF_RANGE,
		   "end: a bucket's reset past the end is out of range");

	/* one token per 30 days, none held an hour before the end: 30 days on */
	s = (RlState) {0, RL_END_TIME - HOUR};
	status = rl_decide(&slow, 0, &s, RL_END_TIME - HOUR, 1, false, &d);
	expect(status == RL_TIME_OUT_OF_RANGE,
		   "end: a retry 30 days on, past INT64_MAX, is out of range");

	/* windows of an hour from 2000-01-01: the last one starts an hour before the end */
	status = rl_decide(&fw, 0, NULL, RL_END_TIME - 90 * MIN, 1, false, &d);
	expect(status == RL_DECIDED && d.ok && near(d.remaining, 4) &&
		   d.reset_after == 30 * MIN && d.state.ts == RL_END_TIME - 2 * HOUR,
		   "end: a window ending an hour before the end answers");
	status = rl_decide(&fw, 0, NULL, RL_END_TIME - 30 * MIN, 1, false, &d);
	expect(status == RL_TIME_OUT_OF_RANGE,
		   "end: the last window's reset, the end itself, is out of range");

	/*
	 * 30-day windows: the end is day 106751983 = 30 * 3558399 + 13, so the
	 * window holding an hour before it started 13 days before the end and
	 * the next starts 17 days after it, past INT64_MAX.
	 */
	status = rl_decide(&fw30, 0, NULL, RL_END_TIME - HOUR, 1, false, &d);
	expect(status == RL_TIME_OUT_OF_RANGE,
		   "end: a next window past INT64_MAX is out of range");
	expect(rl_window_start(RL_END_TIME - HOUR, 0, 30 * DAY) == RL_END_TIME - 13 * DAY,
		   "end: the last 30-day window starts 13 days before the end");

	/*
	 * Two shards of 5 a minute, both empty, an hour before the end: one
	 * token comes in 6 s from both together; full (10) in 60 s.  The
	 * search must not reach 1000 years past now.
	 */
	half.shards = 2;
	half = rl_policy_shard(&half);
	shard_a = (RlState) {0, RL_END_TIME - HOUR};
	shard_b = shard_a;
	status = rl_decide_shards(&half, 0, 2, both, RL_END_TIME - HOUR, 1, false, &sd);
	expect(status == RL_DECIDED && !sd.ok && sd.retry_after == 6 * SEC &&
		   sd.reset_after == 60 * SEC,
		   "end: shards searching past the end still find a 6 s retry");
	shard_a.ts = shard_b.ts = RL_END_TIME - 30 * SEC;
	status = rl_decide_shards(&half, 0, 2, both, RL_END_TIME - 30 * SEC, 1, false, &sd);
	expect(status == RL_TIME_OUT_OF_RANGE,
		   "end: shards full again past the end are out of range");
	status = rl_decide_shards(&fw, 0, 2, (const RlState *const[]) {NULL, NULL},
							  RL_END_TIME - 30 * MIN, 1, false, &sd);
	expect(status == RL_TIME_OUT_OF_RANGE,
		   "end: sharded windows resetting at the end are out of range");
	status = rl_decide_shards(&fw30, 0, 2, (const RlState *const[]) {NULL, NULL},
							  RL_END_TIME - HOUR, 1, false, &sd);
	expect(status == RL_TIME_OUT_OF_RANGE,
		   "end: sharded windows resetting past INT64_MAX are out of range");

	/* a time at or past the end, or before the start, is no input */
	status = rl_decide(&tb, 0, NULL, RL_END_TIME, 1, false, &d);
	expect(status == RL_TIME_OUT_OF_RANGE, "end: now at the end is refused");
	s = (RlState) {10, RL_MIN_TIME - 1};
	status = rl_decide(&tb, 0, &s, 0, 1, false, &d);
	expect(status == RL_TIME_OUT_OF_RANGE, "start: a stored ts before the start is refused");

	/*
	 * The start: windows of an hour from 00:30 (origin 30 min).  At 00:10
	 * on the first day, the window began at 23:30 the day before, before
	 * the start: no state can be stored.  At 00:40 it began at 00:30.
	 */
	status = rl_initial_state(&fw, 30 * MIN, RL_MIN_TIME + 10 * MIN, &s);
	expect(status == RL_TIME_OUT_OF_RANGE,
		   "start: a first window beginning before the start is out of range");
	status = rl_decide(&fw, 30 * MIN, NULL, RL_MIN_TIME + 10 * MIN, 1, false, &d);
	expect(status == RL_TIME_OUT_OF_RANGE,
		   "start: a call in a window beginning before the start is out of range");
	expect(rl_window_start(RL_MIN_TIME + 10 * MIN, 30 * MIN, HOUR) ==
		   RL_MIN_TIME - 30 * MIN, "start: a window start may precede the start");
	status = rl_decide(&fw, 30 * MIN, NULL, RL_MIN_TIME + 40 * MIN, 1, false, &d);
	expect(status == RL_DECIDED && d.ok && near(d.remaining, 4) &&
		   d.reset_after == 50 * MIN && d.state.ts == RL_MIN_TIME + 30 * MIN,
		   "start: the first window within the range answers");
	expect(!rl_state_is_idle(&fw, 30 * MIN, (RlState) {5, RL_MIN_TIME},
							 RL_MIN_TIME + 10 * MIN),
		   "start: no row is idle where a new one cannot start");

	/* a bucket starts at the first microsecond: 10 - 1, counted from it */
	status = rl_decide(&tb, 0, NULL, RL_MIN_TIME, 1, false, &d);
	expect(status == RL_DECIDED && d.ok && d.state.ts == RL_MIN_TIME &&
		   d.reset_after == 6 * SEC, "start: a bucket at the first microsecond");

	/*
	 * Across the whole range: a window row left at the start and read 90
	 * minutes before the end is further apart than INT64_MAX; it refills
	 * to full (5), counted from the window 2 hours before the end.
	 */
	s = rl_refill(&fw, 0, (RlState) {0, RL_MIN_TIME}, RL_END_TIME - 90 * MIN);
	expect(near(s.value, 5) && s.ts == RL_END_TIME - 2 * HOUR,
		   "range: a window refills across the whole range");
	status = rl_decide(&fw, 0, &(RlState) {0, RL_MIN_TIME}, RL_END_TIME - 90 * MIN,
					   1, false, &d);
	expect(status == RL_DECIDED && d.ok && near(d.remaining, 4) &&
		   d.state.ts == RL_END_TIME - 2 * HOUR,
		   "range: a call on a row left at the start, near the end");

	/* a window start below INT64_MIN saturates rather than wraps */
	expect(rl_window_start(INT64_MIN + 5, 0, HOUR) == INT64_MIN,
		   "a window start before INT64_MIN comes back as INT64_MIN");
}

/* Refunds, penalties and blocks (docs/semantics.md). */
static void
run_adjust(void)
{
	RlPolicy	tb = bucket(10, MIN, 10);	/* one token per 6 s */
	RlPolicy	fw = window(5, HOUR, 5, 0);
	RlState		out;
	RlDecision	d;
	RlStatus	status;
	double		spread[3];
	double		given;

	/* 4 at 0, 6 s later 5; + 3 = 8 at 6 s */
	status = rl_refund_state(&tb, 0, &(RlState) {4, 0}, 6 * SEC, 3, &out);
	expect(status == RL_DECIDED && near(out.value, 8) && out.ts == 6 * SEC,
		   "refund: brought forward, then added");
	/* 5 + 20 capped at the capacity 10 */
	rl_refund_state(&tb, 0, &(RlState) {4, 0}, 6 * SEC, 20, &out);
	expect(near(out.value, 10), "refund: capped at capacity");
	/* no row: a full bucket stays full */
	rl_refund_state(&tb, 0, NULL, 6 * SEC, 1, &out);
	expect(near(out.value, 10) && out.ts == 6 * SEC, "refund: a new key is full");
	/* fixed window: 1 left in [0, 1h); at 30 min + 3 = 4, ts the window */
	rl_refund_state(&fw, 0, &(RlState) {1, 0}, 30 * MIN, 3, &out);
	expect(near(out.value, 4) && out.ts == 0, "refund: fixed window");

	/*
	 * A move keeps what the row held, at most the new capacity, and gains
	 * nothing for the time before it: 0 left in a day's window at 01:30,
	 * moved to hourly windows, is 0 (not the window at 01:00's 5), counted
	 * from 01:00
	 */
	status = rl_move_state(&fw, 0, &(RlState) {0, 0}, 90 * MIN, 0, &out);
	expect(status == RL_DECIDED && near(out.value, 0) && out.ts == HOUR,
		   "move: no refill for the time before it");
	rl_move_state(&tb, 0, &(RlState) {20, 6 * SEC}, 6 * SEC, 20, &out);
	expect(near(out.value, 10), "move: capped at the new capacity");
	rl_move_state(&tb, 0, &(RlState) {-3, 0}, 6 * SEC, -3, &out);
	expect(near(out.value, -3) && out.ts == 6 * SEC, "move: a debt stays");
	rl_move_state(&tb, 0, &(RlState) {0, MIN}, 0, 0, &out);
	expect(near(out.value, 0) && out.ts == MIN, "move: a block stays");

	/* 2 - 5 = -3 at 0; a call of 1 needs 4 tokens = 24 s, exactly */
	status = rl_penalize_state(&tb, 0, &(RlState) {2, 0}, 0, 5, &out);
	expect(status == RL_DECIDED && near(out.value, -3) && out.ts == 0,
		   "penalty: below zero without a check");
	rl_decide(&tb, 0, &out, 0, 1, false, &d);
	expect(!d.ok && d.retry_after == 24 * SEC, "penalty: retry_after 24 s");
	rl_decide(&tb, 0, &out, 24 * SEC - 1, 1, false, &d);
	expect(!d.ok, "penalty: refused a microsecond before retry_after");
	rl_decide(&tb, 0, &out, 24 * SEC, 1, false, &d);
	expect(d.ok && near(d.remaining, 0), "penalty: granted at retry_after");

	/*
	 * 1000 years at 10 a minute is 365250 * 1440 * 10 = 5,259,600,000
	 * tokens: a deficit deeper than that (less the capacity) is refused.
	 */
	status = rl_penalize_state(&tb, 0, &(RlState) {10, 0}, 0, 5259600000.0, &out);
	expect(status == RL_DECIDED, "penalty: full again in exactly 1000 years");
	status = rl_penalize_state(&tb, 0, &(RlState) {10, 0}, 0, 5259600011.0, &out);
	expect(status == RL_WAIT_TOO_LONG, "penalty: beyond 1000 years refused");
	/* fixed window: 5 in [0, 1h), - 12 = -7: two windows, at 2h */
	rl_penalize_state(&fw, 0, NULL, 10 * MIN, 12, &out);
	rl_decide(&fw, 0, &out, 10 * MIN, 1, false, &d);
	expect(near(out.value, -7) && out.ts == 0 && !d.ok &&
		   d.retry_after == 2 * HOUR - 10 * MIN,
		   "penalty: fixed window, whole windows");

	/* block 60 s: empty at 60 s, one token 6 s later */
	status = rl_block_state(&tb, 0, &(RlState) {10, 0}, 0, 60 * SEC, &out);
	expect(status == RL_DECIDED && out.value == 0 && out.ts == 60 * SEC,
		   "block: empty at now + duration");
	rl_decide(&tb, 0, &out, 0, 1, false, &d);
	expect(!d.ok && d.retry_after == 66 * SEC, "block: retry_after 66 s");
	rl_decide(&tb, 0, &out, 66 * SEC - 1, 1, false, &d);
	expect(!d.ok, "block: refused a microsecond before retry_after");
	rl_decide(&tb, 0, &out, 66 * SEC, 1, false, &d);
	expect(d.ok, "block: granted at retry_after");
	/* a reservation during the block runs after it: at 60 + 12 s */
	rl_decide(&tb, 0, &out, 10 * SEC, 2, true, &d);
	expect(d.ok && d.retry_after == 62 * SEC && d.state.ts == 60 * SEC &&
		   near(d.state.value, -2), "block: a reservation waits for its end");
	/* -30 owed at 0; by 60 s 10 repaid: -20 kept */
	rl_block_state(&tb, 0, &(RlState) {-30, 0}, 0, 60 * SEC, &out);
	expect(near(out.value, -20) && out.ts == 60 * SEC,
		   "block: a deficit is not forgiven");
	/* a longer block already in place stays */
	rl_block_state(&tb, 0, &(RlState) {0, 120 * SEC}, 0, 60 * SEC, &out);
	expect(out.value == 0 && out.ts == 120 * SEC, "block: never shortened");
	/* 1000 years of block is the most: a call must be answerable */
	status = rl_block_state(&tb, 0, NULL, 0, RL_MAX_WAIT, &out);
	expect(status == RL_WAIT_TOO_LONG, "block: past 1000 years refused");
	status = rl_block_state(&tb, 0, NULL, 0, RL_MAX_WAIT - MIN, &out);
	expect(status == RL_DECIDED, "block: within 1000 years");
	status = rl_block_state(&tb, 0, NULL, RL_END_TIME - MIN, HOUR, &out);
	expect(status == RL_TIME_OUT_OF_RANGE, "block: past the end of time");

	/*
	 * fixed window: 10 min + 30 min = 40 min, in [0, 1h): refused until 1h;
	 * stored at the block's last microsecond, in the window it empties
	 */
	rl_block_state(&fw, 0, &(RlState) {5, 0}, 10 * MIN, 30 * MIN, &out);
	expect(out.value == 0 && out.ts == 40 * MIN - 1,
		   "block: window until the next start");
	rl_decide(&fw, 0, &out, 10 * MIN, 1, false, &d);
	expect(!d.ok && d.retry_after == 50 * MIN, "block: window retry_after");
	rl_decide(&fw, 0, &out, HOUR - 1, 1, false, &d);
	expect(!d.ok, "block: window refused a microsecond before");
	rl_decide(&fw, 0, &out, HOUR, 1, false, &d);
	expect(d.ok && near(d.remaining, 4), "block: window granted at the start");
	/* ending exactly at a window start: refused until that start */
	rl_block_state(&fw, 0, NULL, 10 * MIN, 50 * MIN, &out);
	expect(out.ts == HOUR - 1, "block: ends on a window start");
	/* a microsecond past it: the whole next window is refused too */
	rl_block_state(&fw, 0, NULL, 10 * MIN, 50 * MIN + 1, &out);
	rl_decide(&fw, 0, &out, 10 * MIN, 1, false, &d);
	expect(out.ts == HOUR && d.retry_after == 110 * MIN,
		   "block: a microsecond past a start takes its window");

	/* blocked: counted from a later time (bucket) or window (window) */
	rl_block_state(&tb, 0, &(RlState) {10, 0}, 0, 60 * SEC, &out);
	expect(rl_state_is_blocked(&tb, 0, out, 0) &&
		   rl_state_is_blocked(&tb, 0, out, 60 * SEC - 1) &&
		   !rl_state_is_blocked(&tb, 0, out, 60 * SEC),
		   "blocked: a bucket until the block's end");
	expect(!rl_state_is_blocked(&tb, 0, (RlState) {-5, 0}, 0),
		   "blocked: an empty bucket is not");
	/*
	 * 10 min + 80 min: stored at 90 min - 1 us, in [1h, 2h): blocked until
	 * 90 min (then refused as an empty window until 2h, not blocked)
	 */
	rl_block_state(&fw, 0, &(RlState) {5, 0}, 10 * MIN, 80 * MIN, &out);
	expect(out.ts == 90 * MIN - 1 && rl_state_is_blocked(&fw, 0, out, 10 * MIN) &&
		   rl_state_is_blocked(&fw, 0, out, HOUR) &&
		   rl_state_is_blocked(&fw, 0, out, 90 * MIN - 2) &&
		   !rl_state_is_blocked(&fw, 0, out, 90 * MIN - 1),
		   "blocked: a window until the block's end");
	/* a block ending within the current window is seen too */
	rl_block_state(&fw, 0, &(RlState) {5, 0}, 10 * MIN, 5 * MIN, &out);
	expect(rl_state_is_blocked(&fw, 0, out, 12 * MIN) &&
		   !rl_state_is_blocked(&fw, 0, out, 15 * MIN),
		   "blocked: a block ending within the window");
	expect(!rl_state_is_blocked(&fw, 0, (RlState) {0, 0}, 10 * MIN),
		   "blocked: an empty window is not");

	/* spread 4 over {5, 1, 3} (capacity 5): 2 each to the two open */
	spread[0] = 5;
	spread[1] = 1;
	spread[2] = 3;
	given = rl_refund_spread(5, 3, spread, 4);
	expect(near(given, 4) && spread[0] == 5 && near(spread[1], 3) &&
		   near(spread[2], 5), "spread: equal parts to shards with room");
	/* 10 over {5, 1, 3}: 4 + 2 fit, the rest is dropped */
	spread[1] = 1;
	spread[2] = 3;
	given = rl_refund_spread(5, 3, spread, 10);
	expect(near(given, 6) && spread[1] == 5 && spread[2] == 5,
		   "spread: no shard above its capacity");
	/* 3 over {0, 4.5}: 1.5 each, the second fills at 0.5, 1 passed on */
	spread[0] = 0;
	spread[1] = 4.5;
	given = rl_refund_spread(5, 2, spread, 3);
	expect(near(given, 3) && near(spread[0], 2.5) && spread[1] == 5,
		   "spread: a full shard passes its share on");

	/* a take of 6 from {0, 10, 4}: the fullest first, down to 4 each */
	spread[0] = 0;
	spread[1] = 10;
	spread[2] = 4;
	rl_take_spread(3, spread, 6);
	expect(spread[0] == 0 && near(spread[1], 4) && near(spread[2], 4),
		   "take: the fullest shard first, an empty one untouched");
	/* 8 from {0, 10, 4}: down to 3 each of the two that hold most */
	spread[1] = 10;
	spread[2] = 4;
	rl_take_spread(3, spread, 8);
	expect(spread[0] == 0 && near(spread[1], 3) && near(spread[2], 3),
		   "take: lowered to one level");
	/* 20 from {0, 10, 4}: all 14 above zero, then 6 more from all alike */
	spread[1] = 10;
	spread[2] = 4;
	rl_take_spread(3, spread, 20);
	expect(near(spread[0], -2) && near(spread[1], -2) && near(spread[2], -2),
		   "take: beyond what they hold, from all alike");
}

/* The time a key's refills paid for, as steps, and what a move pays. */
static void
run_cover(void)
{
	RlCovered	spans[3];
	RlCovered	steps[3];
	int			n;

	/* a short span at a high rate, a long one at a low rate: two steps */
	spans[0] = (RlCovered) {20, 0.5};
	spans[1] = (RlCovered) {10, 1.0};
	n = rl_cover_steps(spans, 2, 0, steps);
	expect(n == 2 && steps[0].until == 10 && steps[0].per_us == 1.0 &&
		   steps[1].until == 20 && steps[1].per_us == 0.5,
		   "cover: steps in order of their ends, rates falling");
	/* a shorter span at a lower rate adds nothing */
	spans[0] = (RlCovered) {20, 1.0};
	spans[1] = (RlCovered) {10, 0.5};
	n = rl_cover_steps(spans, 2, 0, steps);
	expect(n == 1 && steps[0].until == 20 && steps[0].per_us == 1.0,
		   "cover: a span under another adds no step");
	/* two spans that end together: the higher rate */
	spans[0] = (RlCovered) {10, 0.5};
	spans[1] = (RlCovered) {10, 1.0};
	n = rl_cover_steps(spans, 2, 0, steps);
	expect(n == 1 && steps[0].until == 10 && steps[0].per_us == 1.0,
		   "cover: spans that end together keep the higher rate");
	/* cut after 15: the low step alone; after 20, nothing */
	spans[0] = (RlCovered) {10, 1.0};
	spans[1] = (RlCovered) {20, 0.5};
	n = rl_cover_steps(spans, 2, 15, steps);
	expect(n == 1 && steps[0].until == 20 && steps[0].per_us == 0.5,
		   "cover: cut to the part after a time");
	expect(rl_cover_steps(spans, 2, 20, steps) == 0,
		   "cover: nothing after the last end");
	/* a refill at 5 at 0.8: 5 at 0.8 (not 1.0), then 10 at 0.5 */
	n = rl_cover_steps(spans, 2, 5, steps);
	expect(near(rl_cover_payment(steps, n, 5, 0.8), 9),
		   "cover: payment at the lower rate, step by step");
	/*
	 * A month's plan (10 a day, to day 30) left for a day's (1000 a day,
	 * refilled, to day 6), then a window ending at day 5.5 at 2000 a
	 * day: half a day at 1000, then 24 days at 10, not 24.5 days at 1000
	 */
	spans[0] = (RlCovered) {30 * DAY, 10.0 / DAY};
	spans[1] = (RlCovered) {6 * DAY, 1000.0 / DAY};
	n = rl_cover_steps(spans, 2, 11 * DAY / 2, steps);
	expect(near(rl_cover_payment(steps, n, 11 * DAY / 2, 2000.0 / DAY), 740),
		   "cover: a long span at a low rate pays at its own rate");
	/* three steps cut to two, where that covers the least more */
	steps[0] = (RlCovered) {10, 3};
	steps[1] = (RlCovered) {11, 2};
	steps[2] = (RlCovered) {30, 1};
	n = rl_cover_compress(steps, 3);
	expect(n == 2 && steps[0].until == 11 && steps[0].per_us == 3 &&
		   steps[1].until == 30 && steps[1].per_us == 1,
		   "cover: the first two steps made one");
	steps[0] = (RlCovered) {10, 3};
	steps[1] = (RlCovered) {29, 2};
	steps[2] = (RlCovered) {30, 1};
	n = rl_cover_compress(steps, 3);
	expect(n == 2 && steps[0].until == 10 && steps[0].per_us == 3 &&
		   steps[1].until == 30 && steps[1].per_us == 2,
		   "cover: the last two steps made one");
}

/* The HTTP fields: amounts rounded down, times up. */
static void
run_http(void)
{
	RlPolicy	tb = bucket(10, MIN, 20);
	RlPolicy	fw = window(100, HOUR, 100, 0);
	RlPolicy	odd = bucket(0.5, 90500000, 1);
	RlPolicy	huge = bucket(1e15, SEC, 1e15);
	RlHttpFields f;

	/* granted, 7.5 left, full in 15.2 s */
	rl_http_fields(&tb, true, false, 0, 7.5, 15200000, &f);
	expect(f.quota == 10 && f.window == 60 && f.remaining == 7 &&
		   f.reset == 16 && !f.has_retry_after, "http: bucket granted");
	/* denied, 0.4 held, retry in 3.000001 s: t and Retry-After 4 */
	rl_http_fields(&tb, false, true, 3000001, 0.4, 57 * SEC, &f);
	expect(f.remaining == 0 && f.reset == 4 && f.has_retry_after &&
		   f.retry_after == 4, "http: bucket denied");
	/* a reservation: granted, r 0, no Retry-After */
	rl_http_fields(&tb, true, true, 12 * SEC, -2, 132 * SEC, &f);
	expect(f.remaining == 0 && f.reset == 132 && !f.has_retry_after,
		   "http: reservation");
	/* fixed window: 100 an hour, 40 left, next window in 20 min */
	rl_http_fields(&fw, true, false, 0, 40, 20 * MIN, &f);
	expect(f.quota == 100 && f.window == 3600 && f.remaining == 40 &&
		   f.reset == 1200, "http: window granted");
	/* exact seconds stay as they are */
	rl_http_fields(&fw, false, true, 20 * MIN, 0, 20 * MIN, &f);
	expect(f.retry_after == 1200 && f.reset == 1200, "http: whole seconds");
	/* retry_after zero (a busy shard): Retry-After 0 */
	rl_http_fields(&fw, false, true, 0, 3, 20 * MIN, &f);
	expect(f.has_retry_after && f.retry_after == 0 && f.reset == 0,
		   "http: retry now");
	/* 0.5 per 90.5 s: not q 0 (never send), but one per 181 s */
	rl_http_fields(&odd, true, false, 0, 0.5, SEC, &f);
	expect(f.quota == 1 && f.window == 181 && f.remaining == 0,
		   "http: fractions");
	rl_http_fields(&huge, true, false, 0, 1e15, 0, &f);
	expect(f.quota == RL_SF_MAX_INTEGER && f.remaining == RL_SF_MAX_INTEGER &&
		   f.window == 1, "http: capped at the largest sf-integer");
	expect(rl_ceil_ms(1) == 1 && rl_ceil_ms(1000) == 1 && rl_ceil_ms(1001) == 2 &&
		   rl_ceil_ms(0) == 0 && rl_ceil_ms(-5) == 0, "rl_ceil_ms rounds up");
	expect(rl_ceil_seconds(1) == 1 && rl_ceil_seconds(SEC) == 1 &&
		   rl_ceil_seconds(SEC + 1) == 2 && rl_ceil_seconds(0) == 0,
		   "http: seconds round up");
}


/*
 * Calendars for the vectors: UTC months from civil dates (Howard Hinnant's
 * days_from_civil and civil_from_days), and the days of a toy zone whose
 * day 10 lasts 23 hours and day 20 25 hours, as across a spring-forward
 * and a fall-back change.  Times are microseconds from 2000-01-01 00:00
 * UTC, as in the extension; windows are numbered from 2000-01 and from
 * 2000-01-01.
 */
#define EPOCH_DAYS	INT64_C(10957)	/* 1970-01-01 to 2000-01-01 */

static int64_t
floor_div(int64_t a, int64_t d)
{
	return a / d - (a % d != 0 && a < 0);
}

/* Days from 1970-01-01 to y-m-d. */
static int64_t
days_from_civil(int64_t y, int64_t m, int64_t d)
{
	int64_t		era;
	int64_t		yoe;
	int64_t		doy;

	y -= m <= 2;
	era = floor_div(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

/* The year and month of a day from 1970-01-01. */
static void
civil_from_days(int64_t z, int64_t *y, int64_t *m)
{
	int64_t		era;
	int64_t		doe;
	int64_t		yoe;
	int64_t		doy;
	int64_t		mp;

	z += 719468;
	era = floor_div(z, 146097);
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = yoe + era * 400 + (*m <= 2);
}

/* y-m-d hh:00 UTC as a time. */
static int64_t
utc(int64_t y, int64_t m, int64_t d, int64_t h)
{
	return (days_from_civil(y, m, d) - EPOCH_DAYS) * DAY + h * HOUR;
}

static int64_t
month_start(const RlCalendar *c, int64_t index)
{
	return utc(2000 + floor_div(index, 12), index - floor_div(index, 12) * 12 + 1,
			   1, 0);
}

static int64_t
month_index(const RlCalendar *c, int64_t t)
{
	int64_t		y;
	int64_t		m;

	civil_from_days(floor_div(t, DAY) + EPOCH_DAYS, &y, &m);
	return (y - 2000) * 12 + m - 1;
}

/* Day k starts an hour early from day 11 to day 20 (day 10 is short). */
static int64_t
toy_day_start(const RlCalendar *c, int64_t index)
{
	return index * DAY - (index >= 11 && index <= 20 ? HOUR : 0);
}

static int64_t
toy_day_index(const RlCalendar *c, int64_t t)
{
	int64_t		k = floor_div(t, DAY);

	while (toy_day_start(c, k) > t)
		k--;
	while (toy_day_start(c, k + 1) <= t)
		k++;
	return k;
}

/* A fixed window of calendar windows. */
static RlPolicy
calendar(double rate, double capacity, RlCalendarUnit unit)
{
	RlPolicy	p = window(rate, rl_calendar_period(unit), capacity, 0);

	p.has_start = false;
	p.calendar.unit = unit;
	p.calendar.window_index = unit == RL_CALENDAR_MONTH ? month_index :
		toy_day_index;
	p.calendar.window_start = unit == RL_CALENDAR_MONTH ? month_start :
		toy_day_start;
	return p;
}

/*
 * Calendar windows: one rate per window started, whatever its length;
 * every wait to a window start.
 */
static void
run_calendar(void)
{
	RlPolicy	m = calendar(10, 10, RL_CALENDAR_MONTH);
	RlPolicy	m25 = calendar(10, 25, RL_CALENDAR_MONTH);
	RlPolicy	day = calendar(1, 1, RL_CALENDAR_DAY);
	RlPolicy	bad;
	RlState		s = {2, utc(2026, 1, 1, 0)};
	RlState		r;
	RlDecision	d;
	int64_t		at;

	/* the civil arithmetic itself: 2026-01-01 is day 9497 of 2000 */
	expect(utc(2026, 1, 1, 0) == 9497 * DAY && month_index(NULL, utc(2026, 1, 1, 0)) == 312 &&
		   month_index(NULL, utc(2026, 1, 1, 0) - 1) == 311,
		   "calendar: test calendar");

	/* 2 left in January: still 2 a microsecond before February */
	r = rl_refill(&m, 0, s, utc(2026, 2, 1, 0) - 1);
	expect(near(r.value, 2) && r.ts == utc(2026, 1, 1, 0),
		   "calendar: same month, no refill");
	/* February's start: 2 + 10, capped at 10, counted from Feb 1 */
	r = rl_refill(&m, 0, s, utc(2026, 2, 1, 0));
	expect(near(r.value, 10) && r.ts == utc(2026, 2, 1, 0),
		   "calendar: full at the next month");
	/* capacity 25: three months (Feb, Mar, Apr) add 30: 3 + 30 = 33, 25 */
	s.value = 3;
	r = rl_refill(&m25, 0, s, utc(2026, 4, 15, 0));
	expect(near(r.value, 25) && r.ts == utc(2026, 4, 1, 0),
		   "calendar: capacity carries over, capped");
	/* one month of it: 3 + 10 = 13 */
	r = rl_refill(&m25, 0, s, utc(2026, 2, 28, 23));
	expect(near(r.value, 13) && r.ts == utc(2026, 2, 1, 0),
		   "calendar: one month added");

	/* refused on Jan 31 at noon: retry at Feb 1, 12 hours */
	s.value = 2;
	expect(rl_decide(&m, 0, &s, utc(2026, 1, 31, 12), 5, false, &d) ==
		   RL_DECIDED && !d.ok && d.retry_after == 12 * HOUR &&
		   d.reset_after == 12 * HOUR && near(d.remaining, 2),
		   "calendar: refused until the 1st");
	/* leap year: from Feb 10 2028 the next window is Mar 1, 20 days */
	expect(rl_decide(&m, 0, NULL, utc(2028, 2, 10, 0), 1, false, &d) ==
		   RL_DECIDED && d.ok && d.reset_after == 20 * DAY &&
		   d.state.ts == utc(2028, 2, 1, 0) && near(d.state.value, 9),
		   "calendar: February 2028 has 29 days");
	expect(rl_window_length(&m, 0, utc(2028, 2, 10, 0)) == 29 * DAY &&
		   rl_window_length(&m, 0, utc(2026, 2, 10, 0)) == 28 * DAY &&
		   rl_window_length(&m, 0, utc(2026, 12, 31, 23)) == 31 * DAY,
		   "calendar: window lengths");
	/* year end: Dec 31 2026 23:00 to Jan 1 2027 */
	s.value = 0;
	s.ts = utc(2026, 12, 1, 0);
	expect(rl_decide(&m, 0, &s, utc(2026, 12, 31, 23), 1, false, &d) ==
		   RL_DECIDED && !d.ok && d.retry_after == HOUR,
		   "calendar: the year ends");

	/*
	 * A reservation of 35 with 10 held on Jan 15 (max_reserved 30): -25,
	 * paid back by Feb (-15), Mar (-5), Apr (5): run it on Apr 1, 17 + 28
	 * + 31 = 76 days later.
	 */
	m.has_max_reserved = true;
	m.max_reserved = 30;
	expect(rl_decide(&m, 0, NULL, utc(2026, 1, 15, 0), 35, true, &d) ==
		   RL_DECIDED && d.ok && near(d.remaining, -25) &&
		   d.retry_after == 76 * DAY,
		   "calendar: a reservation waits for whole months");
	m.has_max_reserved = false;
	m.max_reserved = 0;

	/* the window that holds a time, and its end */
	expect(rl_window_end(&m, 0, utc(2026, 1, 15, 0)) == utc(2026, 2, 1, 0) &&
		   rl_window_end(&m, 0, utc(2026, 2, 1, 0)) == utc(2026, 3, 1, 0),
		   "calendar: window ends");

	/* a block of a day from Jan 31 noon ends in February: empty till Mar */
	s.value = 10;
	s.ts = utc(2026, 1, 1, 0);
	expect(rl_block_state(&m, 0, &s, utc(2026, 1, 31, 12), DAY, &r) ==
		   RL_DECIDED && near(r.value, 0) && r.ts == utc(2026, 2, 1, 12) - 1,
		   "calendar: block into the next month");
	expect(rl_decide(&m, 0, &r, utc(2026, 2, 15, 0), 1, false, &d) ==
		   RL_DECIDED && !d.ok && d.retry_after == 14 * DAY,
		   "calendar: blocked until March");
	expect(rl_state_is_blocked(&m, 0, r, utc(2026, 1, 31, 13)),
		   "calendar: blocked");
	/* a block ending at Feb 1 00:00 empties January only */
	expect(rl_block_state(&m, 0, &s, utc(2026, 1, 31, 12), 12 * HOUR, &r) ==
		   RL_DECIDED && near(r.value, 0) && r.ts == utc(2026, 2, 1, 0) - 1,
		   "calendar: block to the 1st");

	/*
	 * A take granted on Jan 31 23:00, committed Feb 1 01:00, capacity 25:
	 * taken in January (10 - 4 = 6), then February adds 10: 16.
	 */
	s.value = 10;
	r = rl_commit_take(&m25, 0, s, utc(2026, 1, 31, 23), utc(2026, 2, 1, 1), 4);
	expect(near(r.value, 16) && r.ts == utc(2026, 2, 1, 0),
		   "calendar: a take commits in the window it was granted in");

	/* idle: 4 of 10 in January is full again on Feb 1 */
	s.value = 4;
	expect(!rl_state_is_idle(&m, 0, s, utc(2026, 1, 20, 0)) &&
		   rl_idle_at(&m, 0, s, utc(2026, 1, 20, 0), &at) &&
		   at == utc(2026, 2, 1, 0) &&
		   rl_state_is_idle(&m, 0, s, utc(2026, 2, 1, 0)),
		   "calendar: idle from the next month");

	/* the toy zone's 23-hour day 10 and 25-hour day 20 */
	expect(rl_window_length(&day, 0, 10 * DAY) == 23 * HOUR &&
		   rl_window_length(&day, 0, 20 * DAY) == 25 * HOUR &&
		   rl_window_length(&day, 0, 5 * DAY) == DAY,
		   "calendar: short and long days");
	s.value = 0;
	s.ts = 10 * DAY;
	expect(rl_decide(&day, 0, &s, 10 * DAY + HOUR, 1, false, &d) ==
		   RL_DECIDED && !d.ok && d.retry_after == 22 * HOUR,
		   "calendar: the short day ends an hour early");
	s.ts = 20 * DAY - HOUR;
	expect(rl_decide(&day, 0, &s, 20 * DAY - HOUR, 1, false, &d) ==
		   RL_DECIDED && !d.ok && d.retry_after == 25 * HOUR &&
		   d.reset_after == 25 * HOUR,
		   "calendar: the long day lasts 25 hours");
	/* a key that starts on the short day counts from its local midnight */
	expect(rl_decide(&day, 0, NULL, 11 * DAY - 2 * HOUR, 1, false, &d) ==
		   RL_DECIDED && d.ok && d.state.ts == 10 * DAY,
		   "calendar: a new key's window");
	expect(rl_decide(&day, 0, NULL, 11 * DAY - HOUR, 1, false, &d) ==
		   RL_DECIDED && d.ok && d.state.ts == 11 * DAY - HOUR,
		   "calendar: the next day starts an hour early");

	/* no phase from the key, and the checks */
	expect(rl_window_origin(&m, "a", 1, "k", 1, false) == 0,
		   "calendar: no phase");
	expect(rl_policy_problem(&m) == NULL, "calendar: valid");
	bad = m;
	bad.has_start = true;
	expect(rl_policy_problem(&bad) != NULL, "calendar: no start");
	bad = m;
	bad.kind = RL_TOKEN_BUCKET;
	expect(rl_policy_problem(&bad) != NULL, "calendar: fixed window only");
	bad = m;
	bad.period = DAY;
	expect(rl_policy_problem(&bad) != NULL, "calendar: period of the unit");
	expect(rl_calendar_unit_of_period(30 * DAY) == RL_CALENDAR_MONTH &&
		   rl_calendar_unit_of_period(36525 * DAY / 100) == RL_CALENDAR_YEAR &&
		   rl_calendar_unit_of_period(HOUR) == RL_CALENDAR_NONE,
		   "calendar: units of periods");
}

static RlPolicy
sliding(double n, int64_t period)
{
	RlPolicy	p = {RL_SLIDING_WINDOW, n, period, n, false, 0, 1, true, 0};

	return p;
}

static RlState
st3(double value, int64_t ts, double prev)
{
	RlState		s = {value, ts, prev};

	return s;
}

static int
same3(RlState a, RlState b)
{
	return near(a.value, b.value) && a.ts == b.ts && near(a.prev, b.prev);
}

/*
 * Sliding window, N = 8 per 64 s, windows from 0: at t in the window of
 * ts, a call may take value - prev * (64 s - (t - ts)) / 64 s.  Times are
 * chosen so that every fraction is exact in binary.
 */
static void
run_sliding(void)
{
	RlPolicy	sw = sliding(8, 64 * SEC);
	RlPolicy	bad;
	RlDecision	d;
	RlState		s;
	RlState		out;
	int64_t		at;

	/*
	 * A move keeps what a call could take: 8 left at 80 s, the previous
	 * window's 8 weighing 48/64: 2.  Held 1 takes 1 off the value.
	 */
	rl_move_state(&sw, 0, &(RlState) {8, 64 * SEC, 8}, 80 * SEC, 1, &out);
	expect(near(out.value, 7) &&
		   near(rl_available(&sw, 0, out, 80 * SEC), 1),
		   "sliding: a move keeps what a call could take");

	/* no state, 32 s: 8 available, take 4; full again once 4 leave: 128 s */
	expect(rl_decide(&sw, 0, NULL, 32 * SEC, 4, false, &d) == RL_DECIDED &&
		   d.ok && !d.has_retry && near(d.remaining, 4) &&
		   same3(d.state, st3(4, 0, 0)) && d.reset_after == 96 * SEC,
		   "sliding: first call");

	/*
	 * cur 6 in [0, 64 s); at 80 s prev = 6, weight 48/64: 8 - 4.5 = 3.5.
	 * 5 needs weight <= 1/2: at 96 s.
	 */
	s = st3(2, 0, 0);
	expect(rl_decide(&sw, 0, &s, 80 * SEC, 5, false, &d) == RL_DECIDED &&
		   !d.ok && d.has_retry && near(d.remaining, 3.5) &&
		   d.retry_after == 16 * SEC && d.reset_after == 48 * SEC,
		   "sliding: previous window weighted, exact retry");
	expect(rl_decide(&sw, 0, &s, 96 * SEC, 5, false, &d) == RL_DECIDED &&
		   d.ok && near(d.remaining, 0), "sliding: granted at retry_after");
	expect(rl_decide(&sw, 0, &s, 96 * SEC - 1, 5, false, &d) == RL_DECIDED &&
		   !d.ok, "sliding: refused a microsecond before");
	/* 3 fit: written (5, 64 s, 6); full at 192 s (prev 3 in [128, 192)) */
	expect(rl_decide(&sw, 0, &s, 80 * SEC, 3, false, &d) == RL_DECIDED &&
		   d.ok && near(d.remaining, 0.5) &&
		   same3(d.state, st3(5, 64 * SEC, 6)) && d.reset_after == 112 * SEC,
		   "sliding: granted, count added to the current window");

	/* a window passed with no state: prev is 0, not the old count */
	s = st3(2, 0, 5);
	expect(rl_decide(&sw, 0, &s, 130 * SEC, 8, false, &d) == RL_DECIDED &&
		   d.ok && near(d.remaining, 0) &&
		   same3(d.state, st3(0, 128 * SEC, 0)) && d.reset_after == 126 * SEC,
		   "sliding: no adjacent window, prev 0");

	/* a full window: refused until 1/4 of the next has passed, for 2 */
	s = st3(0, 64 * SEC, 0);
	expect(rl_decide(&sw, 0, &s, 96 * SEC, 2, false, &d) == RL_DECIDED &&
		   !d.ok && near(d.remaining, 0) && d.retry_after == 48 * SEC &&
		   d.reset_after == 96 * SEC,
		   "sliding: full window, retry in the next");

	/* blocked (ts after now): all of prev counts until ts */
	s = st3(0, 192 * SEC, 8);
	expect(rl_decide(&sw, 0, &s, 100 * SEC, 1, false, &d) == RL_DECIDED &&
		   !d.ok && near(d.remaining, -8) && d.retry_after == 164 * SEC &&
		   d.reset_after == 220 * SEC, "sliding: blocked state");

	/* idle: only once a window after one that counted nothing starts */
	s = st3(4, 0, 0);
	expect(!rl_state_is_idle(&sw, 0, s, 64 * SEC) &&
		   !rl_state_is_idle(&sw, 0, s, 128 * SEC - 1) &&
		   rl_state_is_idle(&sw, 0, s, 128 * SEC), "sliding: idle");
	expect(rl_idle_at(&sw, 0, s, 10 * SEC, &at) && at == 128 * SEC,
		   "sliding: idle at two windows on");
	s = st3(8, 0, 3);
	expect(!rl_state_is_idle(&sw, 0, s, 10 * SEC) &&
		   rl_idle_at(&sw, 0, s, 10 * SEC, &at) && at == 64 * SEC,
		   "sliding: idle at the next window when the current is empty");
	s = st3(8, 0, 0);
	expect(rl_idle_at(&sw, 0, s, 10 * SEC, &at) && at == 10 * SEC,
		   "sliding: idle now");

	/* the memory store's commit: taken in the window it was granted in */
	out = rl_commit_take(&sw, 0, st3(8, 0, 0), 50 * SEC, 70 * SEC, 3);
	expect(same3(out, st3(8, 64 * SEC, 3)), "sliding: commit rolls the take into prev");
	out = rl_commit_take(&sw, 0, st3(8, 64 * SEC, 0), 50 * SEC, 70 * SEC, 3);
	expect(same3(out, st3(5, 64 * SEC, 0)),
		   "sliding: commit after the state moved on counts it now");

	/* refund: the current window only, up to N */
	s = st3(2, 64 * SEC, 6);
	expect(rl_refund_state(&sw, 0, &s, 80 * SEC, 3, &out) == RL_DECIDED &&
		   same3(out, st3(5, 64 * SEC, 6)), "sliding: refund");
	expect(rl_refund_state(&sw, 0, &s, 80 * SEC, 30, &out) == RL_DECIDED &&
		   same3(out, st3(8, 64 * SEC, 6)), "sliding: refund capped");

	/* penalty: the current count goes past N and weighs on the next */
	s = st3(8, 0, 0);
	expect(rl_penalize_state(&sw, 0, &s, 10 * SEC, 20, &out) == RL_DECIDED &&
		   same3(out, st3(-12, 0, 0)), "sliding: penalty");
	s = out;
	/* at 112 s prev = 20, weight 16/64: 8 - 5 = 3 */
	expect(rl_decide(&sw, 0, &s, 112 * SEC, 3, false, &d) == RL_DECIDED &&
		   d.ok && near(d.remaining, 0), "sliding: penalty weighs on");
	expect(rl_decide(&sw, 0, &s, 112 * SEC - 1, 3, false, &d) == RL_DECIDED &&
		   !d.ok && d.retry_after == 1, "sliding: penalty, exact retry");

	/* block 100 s from 10 s: refused until the window that holds 110 s ends */
	expect(rl_block_state(&sw, 0, NULL, 10 * SEC, 100 * SEC, &out) ==
		   RL_DECIDED && same3(out, st3(0, 110 * SEC - 1, 0)) &&
		   rl_state_is_blocked(&sw, 0, out, 10 * SEC),
		   "sliding: block");
	s = out;
	expect(rl_decide(&sw, 0, &s, 10 * SEC, 1, false, &d) == RL_DECIDED &&
		   !d.ok && d.retry_after == (128 + 8) * SEC - 10 * SEC,
		   "sliding: blocked until the window after the block, then refilling");
	s = st3(2, 0, 0);
	expect(rl_block_state(&sw, 0, &s, 10 * SEC, 100 * SEC, &out) ==
		   RL_DECIDED && same3(out, st3(0, 110 * SEC - 1, 6)),
		   "sliding: a block keeps the count it rolls over");

	/* what the kind refuses */
	expect(rl_policy_problem(&sw) == NULL, "sliding: valid");
	bad = sw;
	bad.capacity = 9;
	expect(rl_policy_problem(&bad) != NULL, "sliding: capacity is the rate");
	bad = sw;
	bad.has_max_reserved = true;
	expect(rl_policy_problem(&bad) != NULL, "sliding: no max_reserved");
	bad = sw;
	bad.shards = 2;
	bad.capacity = bad.rate;
	expect(rl_policy_problem(&bad) != NULL, "sliding: no shards");
	bad = sw;
	bad.calendar.unit = RL_CALENDAR_DAY;
	bad.has_start = false;
	bad.period = DAY;
	expect(rl_policy_problem(&bad) != NULL, "sliding: no time zone");
	expect(rl_count_problem(&sw, 1, true) != NULL &&
		   rl_count_problem(&sw, 1, false) == NULL &&
		   rl_count_problem(&sw, 9, false) != NULL,
		   "sliding: counts, no reservations");
	expect(rl_reserve_depth(&sw) == 0, "sliding: no reserve depth");

	/* other kinds carry no third number */
	expect(rl_initial_state(&sw, 0, 10 * SEC, &s) == RL_DECIDED && s.prev == 0,
		   "sliding: initial prev 0");
	{
		RlPolicy	tb = bucket(10, MIN, 10);

		expect(rl_initial_state(&tb, 0, 10 * SEC, &s) == RL_DECIDED &&
			   isnan(s.prev) &&
			   isnan(rl_refill(&tb, 0, st3(1, 0, 5), 10 * SEC).prev),
			   "sliding: other kinds' prev is NaN");
	}
	/*
	 * a row written under another kind (prev NaN) counts a full previous
	 * window, N = 8: at 10 s of 64, 3 - 8 * 54/64; in the next window the
	 * count it knows (8 - 3) becomes prev as usual
	 */
	s = st3(3, 0, NAN);
	expect(near(rl_available(&sw, 0, s, 10 * SEC), 3 - 8 * 54.0 / 64) &&
		   near(rl_available(&sw, 0, s, 96 * SEC), 8 - 5 * 0.5),
		   "sliding: missing prev is a full window");
}

/*
 * Escalating blocks: a token bucket of 5 per 15 min blocked for 10 min,
 * doubling, at most 35 min, one offence forgotten per day.  The score s
 * is stored in prev as -(1 + s).
 */
static void
run_escalation(void)
{
	RlPolicy	tb = bucket(5, 15 * MIN, 5);
	RlPolicy	plain;
	RlPolicy	fw = window(5, HOUR, 5, 0);
	RlPolicy	sw = sliding(8, 64 * SEC);
	RlState		out;
	int64_t		at;

	tb.block_for = 10 * MIN;
	plain = tb;
	tb.block_factor = 2;
	tb.block_max = 35 * MIN;
	tb.block_horizon = DAY;
	fw.block_for = 10 * MIN;
	fw.block_factor = 2;
	fw.block_max = 35 * MIN;
	fw.block_horizon = DAY;

	/* decay: one per day once t passes ts, never below 0, not before ts */
	expect(rl_offence_score(&tb, st3(5, 0, -4), 0) == 3 &&
		   near(rl_offence_score(&tb, st3(5, 0, -4), DAY / 2), 2.5) &&
		   near(rl_offence_score(&tb, st3(5, 0, -4), DAY), 2) &&
		   rl_offence_score(&tb, st3(5, 0, -4), 10 * DAY) == 0 &&
		   rl_offence_score(&tb, st3(5, DAY, -4), 0) == 3,
		   "escalation: score decays one per horizon after ts");
	expect(rl_offence_score(&tb, st3(5, 0, NAN), 0) == 0 &&
		   rl_offence_score(&tb, st3(5, 0, 4), 0) == 0 &&
		   rl_offence_score(&tb, st3(5, 0, -0.5), 0) == 0,
		   "escalation: no score in NaN, a count or a hand edit above -1");

	/* 1x, 2x, 4x capped at 35 min, back to 1x a horizon after the end */
	expect(rl_escalated_block_for(&tb, NULL, 0) == 10 * MIN &&
		   rl_escalated_block_for(&tb, &(RlState) {0, 0, NAN}, HOUR) == 10 * MIN,
		   "escalation: a first offence blocks block_for");
	expect(rl_escalated_block_for(&tb, &(RlState) {5, 0, -2}, HOUR) == 20 * MIN,
		   "escalation: a second offence within the horizon, factor x");
	tb.block_max = DAY;
	expect(rl_escalated_block_for(&tb, &(RlState) {5, 0, -3}, HOUR) == 40 * MIN,
		   "escalation: a third, factor squared");
	tb.block_max = 35 * MIN;
	expect(rl_escalated_block_for(&tb, &(RlState) {5, 0, -3}, HOUR) == 35 * MIN &&
		   rl_escalated_block_for(&tb, &(RlState) {5, 0, -101}, HOUR) == 35 * MIN &&
		   rl_escalated_block_for(&tb, &(RlState) {5, 0, -1e300}, HOUR) == 35 * MIN,
		   "escalation: capped at block_max");
	expect(rl_escalated_block_for(&tb, &(RlState) {5, 0, -2}, DAY - 1) == 20 * MIN &&
		   rl_escalated_block_for(&tb, &(RlState) {5, 0, -2}, DAY) == 10 * MIN &&
		   rl_escalated_block_for(&tb, &(RlState) {5, 0, -3}, DAY + HOUR) == 20 * MIN &&
		   rl_escalated_block_for(&tb, &(RlState) {5, 0, -3}, 2 * DAY) == 10 * MIN,
		   "escalation: one offence forgotten per horizon");
	expect(rl_escalated_block_for(&tb, &(RlState) {0, 2 * DAY, -2}, DAY) == 20 * MIN,
		   "escalation: nothing forgotten during a block");
	expect(rl_escalated_block_for(&plain, &(RlState) {5, 0, -3}, HOUR) == 10 * MIN,
		   "escalation: none without block_factor");

	/* a block adds one to the score at its time, kept until its end */
	expect(rl_block_state(&tb, 0, NULL, 0, 10 * MIN, &out) == RL_DECIDED &&
		   same3(out, st3(0, 10 * MIN, -2)),
		   "escalation: a first block stores score 1");
	expect(rl_block_state(&tb, 0, &(RlState) {5, 0, -2}, DAY / 2, 20 * MIN,
						  &out) == RL_DECIDED &&
		   same3(out, st3(0, DAY / 2 + 20 * MIN, -2.5)),
		   "escalation: a block adds one to the decayed score");
	expect(rl_block_state(&plain, 0, &(RlState) {5, 0, -2}, DAY / 2, 20 * MIN,
						  &out) == RL_DECIDED && out.prev == -2,
		   "escalation: without block_factor a block keeps prev");
	expect(rl_block_state(&fw, 0, NULL, 10 * MIN, 10 * MIN, &out) == RL_DECIDED &&
		   same3(out, st3(0, 20 * MIN - 1, -2)),
		   "escalation: a fixed window's block stores score 1");

	/* the refill carries the decayed score to the new ts */
	expect(same3(rl_refill(&tb, 0, st3(0, 0, -3), DAY / 2),
				 st3(5, DAY / 2, -2.5)) &&
		   isnan(rl_refill(&tb, 0, st3(0, 0, -2), 2 * DAY).prev) &&
		   same3(rl_refill(&tb, 0, st3(0, 0, -3), 0), st3(0, 0, -3)),
		   "escalation: a token bucket's refill decays the score");
	expect(same3(rl_refill(&fw, 0, st3(0, 0, -3), DAY / 2 + 10 * MIN),
				 st3(5, DAY / 2, -2.5)),
		   "escalation: a fixed window's refill decays it to the window start");
	expect(rl_refill(&plain, 0, st3(0, 0, -3), DAY).prev == -3 &&
		   isnan(rl_refill(&plain, 0, st3(0, 0, 3), DAY).prev),
		   "escalation: without block_factor a score is kept, a count dropped");

	/* idle only once the score is forgotten */
	expect(!rl_state_is_idle(&tb, 0, st3(5, 0, -2), DAY / 2) &&
		   rl_state_is_idle(&tb, 0, st3(5, 0, -2), DAY) &&
		   rl_state_is_idle(&plain, 0, st3(5, 0, -2), DAY / 2),
		   "escalation: not idle while the score lasts");
	expect(rl_idle_at(&tb, 0, st3(5, 0, -2), 0, &at) && at > DAY - 2 &&
		   at <= DAY + 2 && rl_state_is_idle(&tb, 0, st3(5, 0, -2), at) &&
		   rl_idle_at(&tb, 0, st3(0, 10 * MIN, -3), 0, &at) &&
		   at > 10 * MIN + 2 * DAY - 2 && at <= 10 * MIN + 2 * DAY + 2,
		   "escalation: idle_at waits for the score");

	/* a sliding window reads a negative prev as a full previous window */
	expect(near(rl_available(&sw, 0, st3(3, 0, -2), 10 * SEC), 3 - 8 * 54.0 / 64) &&
		   near(rl_available(&sw, 0, st3(3, 0, -0.5), 10 * SEC), 3 - 8 * 54.0 / 64),
		   "escalation: a sliding window reads a score as a full window");
}

/*
 * max_debt: a call is admitted on a positive balance and may take the key
 * down to -max_debt; settle's charge stops there (docs/policies.md).
 */
static void
run_debt(void)
{
	RlPolicy	tb = bucket(10, MIN, 10);	/* one token per 6 s */
	RlPolicy	fw = window(10, HOUR, 10, 0);
	RlState		out;
	RlDecision	d;
	double		charged;

	tb.has_max_debt = true;
	tb.max_debt = 20;
	fw.has_max_debt = true;
	fw.max_debt = 5;

	/* 10 held: 10 - 25 = -15 >= -20, granted at once (no retry) */
	rl_decide(&tb, 0, &(RlState) {10, 0}, 0, 25, false, &d);
	expect(d.ok && !d.has_retry && near(d.state.value, -15),
		   "debt: a call below zero, within the bound");
	/* 9 - 30 = -21 < -20: refused until 10 held, 6 s a token */
	rl_decide(&tb, 0, &(RlState) {9, 0}, 0, 30, false, &d);
	expect(!d.ok && d.retry_after == 6 * SEC, "debt: past the bound, wait");
	/* nothing admitted at 0: the least positive balance, a microsecond on */
	rl_decide(&tb, 0, &(RlState) {0, 0}, 0, 1, false, &d);
	expect(!d.ok && d.has_retry && d.retry_after == 1,
		   "debt: refused at 0, retry when positive");
	rl_decide(&tb, 0, &(RlState) {0, 0}, 1, 1, false, &d);
	expect(d.ok, "debt: granted on a positive balance");
	/* -15 at 0: 15 tokens = 90 s to 0, and a microsecond more */
	rl_decide(&tb, 0, &(RlState) {-15, 0}, 0, 1, false, &d);
	expect(!d.ok && d.retry_after == 90 * SEC + 1, "debt: retry exact");
	rl_decide(&tb, 0, &(RlState) {-15, 0}, 90 * SEC, 1, false, &d);
	expect(!d.ok, "debt: refused at exactly 0");
	/* a fixed window: 10 - 14 = -4, then 0 in the next: refused till 2h */
	rl_decide(&fw, 0, &(RlState) {10, 0}, 0, 14, false, &d);
	expect(d.ok && near(d.state.value, -4), "debt: fixed window");
	rl_decide(&fw, 0, &(RlState) {-10, 0}, HOUR, 1, false, &d);
	expect(!d.ok && d.retry_after == HOUR, "debt: fixed window waits whole windows");

	expect(rl_count_problem(&tb, 30, false) == NULL &&
		   rl_count_problem(&tb, 30.5, false) != NULL &&
		   rl_count_problem(&tb, 1, true) != NULL,
		   "debt: counts up to capacity + max_debt, no reserve");
	tb.has_max_reserved = true;
	expect(rl_policy_problem(&tb) != NULL, "debt: not with max_reserved");
	tb.has_max_reserved = false;

	/* settle's charge: 2 - 30 stops at -20, 22 taken */
	rl_charge_state(&tb, 0, &(RlState) {2, 0}, 0, 30, &out, &charged);
	expect(out.value == -20 && charged == 22, "charge: stops at -max_debt");
	/* within the bound: all of it */
	rl_charge_state(&tb, 0, &(RlState) {2, 0}, 0, 5, &out, &charged);
	expect(near(out.value, -3) && charged == 5, "charge: within the bound");
	/* deeper already (a lowered max_debt): nothing, and not lifted */
	rl_charge_state(&tb, 0, &(RlState) {-25, 0}, 0, 5, &out, &charged);
	expect(out.value == -25 && charged == 0, "charge: never lifts a deeper debt");
	/* without max_debt a charge is a penalty */
	tb.has_max_debt = false;
	rl_charge_state(&tb, 0, &(RlState) {2, 0}, 0, 30, &out, &charged);
	expect(near(out.value, -28) && charged == 30, "charge: unbounded without max_debt");
}

/* rl_limit's partial: what a partial call decides on (docs/policies.md). */
static void
run_partial(void)
{
	RlPolicy	tb = bucket(10, MIN, 10);	/* one token per 6 s */
	RlState		st = {6, 0};
	const RlState *one[1] = {&st};
	const RlState *none[1] = {NULL};
	RlDecision	d;
	double		c;

	expect(rl_partial_count(&tb, 0, 1, one, 0, 7) == 6, "partial: what is held");
	expect(rl_partial_count(&tb, 0, 1, one, 0, 3) == 3, "partial: count when held");
	expect(rl_partial_count(&tb, 0, 1, none, 0, 50) == 10, "partial: a new key is full");
	/* 1.5 held at 9 s from 0: whole tokens for a whole count */
	st.value = 0;
	expect(rl_partial_count(&tb, 0, 1, one, 9 * SEC, 7) == 1, "partial: whole tokens");
	expect(near(rl_partial_count(&tb, 0, 1, one, 9 * SEC, 2.5), 1.5),
		   "partial: a fractional count takes a fraction");
	/* 0.5 held: one token, refused, retry when it is there (3 s) */
	c = rl_partial_count(&tb, 0, 1, one, 3 * SEC, 7);
	rl_decide(&tb, 0, &st, 3 * SEC, c, false, &d);
	expect(c == 1 && !d.ok && d.retry_after == 3 * SEC, "partial: nothing, one token's wait");
	/* what it takes, it is granted, to the last bit */
	c = rl_partial_count(&tb, 0, 1, one, 1, 2.5);
	rl_decide(&tb, 0, &st, 1, c, false, &d);
	expect(d.ok && d.state.value == 0, "partial: granted exactly what is there");
}

int
main(void)
{
	run_vectors();
	run_retry_is_exact();
	run_cover();
	run_windows();
	run_origin();
	run_checks();
	run_reserve_depth();
	run_too_long();
	run_shards();
	run_shard_total();
	run_idle();
	run_time_extremes();
	run_adjust();
	run_http();
	run_calendar();
	run_sliding();
	run_escalation();
	run_debt();
	run_partial();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
