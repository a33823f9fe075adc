/*
 * random_depth.c: random policies without max_reserved, their keys sunk as
 * deep as reservations allow (rl_reserve_depth), sharded or not; then every
 * later call must still be answered (no RL_WAIT_TOO_LONG or
 * RL_TIME_OUT_OF_RANGE), and every retry_after must be exact: the same
 * call is granted at now + retry_after and refused a microsecond earlier.
 * make unit runs it with a fixed seed; arguments: iterations, seed.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "algebra.h"

/* xorshift64*: the same draws on every platform, from a fixed seed */
static uint64_t rng_state = 88172645463325252u;

static long
draw(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (long) ((rng_state * 2685821657736338717u) >> 33);
}

static double
urand(void)
{
	return (double) draw() / 2147483648.0;
}
static int bugs;
static int64_t late_max;

static void
report(const char *what, const RlPolicy *p, double value, long long ts,
	   long long now, double count, int reserve, int status)
{
	if (bugs++ > 100000)
		return;
	printf("%s: kind=%c rate=%.17g period=%lld cap=%.17g shards=%d depth=%.17g"
		   " | state value=%.17g ts=%lld now=%lld count=%.17g reserve=%d status=%d\n",
		   what, p->kind == RL_TOKEN_BUCKET ? 't' : 'f', p->rate,
		   (long long) p->period, p->capacity, p->shards,
		   rl_reserve_depth(p), value, ts, now, count, reserve, status);
}

static RlPolicy
random_policy(void)
{
	RlPolicy	p;
	static const int64_t periods[] = {1, 7, 1000, 1000000, 3600000000LL,
		86400000000LL, 2629800000000LL, 31557600000000LL};

	memset(&p, 0, sizeof(p));
	p.kind = draw() % 2 ? RL_TOKEN_BUCKET : RL_FIXED_WINDOW;
	p.rate = pow(10, -6 + urand() * 21);
	if (draw() % 3 == 0)
		p.rate = floor(p.rate) + 1;
	p.period = draw() % 4 ? periods[draw() % 8] :
		1 + (int64_t) (urand() * (double) RL_MAX_PERIOD);
	p.capacity = fmin(1e15, p.rate * pow(10, -3 + urand() * 6));
	if (draw() % 3 == 0)
		p.capacity = fmin(1e15, floor(p.capacity) + 1);
	p.shards = draw() % 2 ? 1 : (int[]) {2, 3, 7, 1024}[draw() % 4];
	return p;
}

/* one decision on the (one or two) rows; returns status */
static int
decide(const RlPolicy *p, int64_t origin, RlState *st, bool *has, int64_t now,
	   double count, bool reserve, RlShardDecision *d)
{
	RlPolicy	sp = p->shards == 1 ? *p : rl_policy_shard(p);
	const RlState *states[2] = {has[0] ? &st[0] : NULL, has[1] ? &st[1] : NULL};

	return rl_decide_shards(&sp, origin, p->shards == 1 ? 1 : 2, states, now,
							count, reserve, d);
}

static void
check_retry(const RlPolicy *p, int64_t origin, RlState *st, bool *has,
			int64_t now, double count, bool reserve, const RlShardDecision *d)
{
	RlShardDecision d2;
	int			s;

	if (d->ok || !d->has_retry)
		return;
	s = decide(p, origin, st, has, now + d->retry_after, count, reserve, &d2);
	if (s == RL_DECIDED && !d2.ok)
		report("retry_after too early", p, st[0].value, st[0].ts, now, count, reserve, s);
	if (s != RL_DECIDED)
		report("retry_after call errors", p, st[0].value, st[0].ts, now, count, reserve, s);
	if (d->retry_after > 0)
	{
		s = decide(p, origin, st, has, now + d->retry_after - 1, count, reserve, &d2);
		if (s == RL_DECIDED && d2.ok)
		{
			/* how late: the first microsecond that succeeds, by bisection */
			int64_t		lo = now - 1, hi = now + d->retry_after - 1;

			while (hi - lo > 1)
			{
				int64_t		mid = lo + (hi - lo) / 2;

				if (decide(p, origin, st, has, mid, count, reserve, &d2) == RL_DECIDED && d2.ok)
					hi = mid;
				else
					lo = mid;
			}
			if (now + d->retry_after - hi > late_max)
				late_max = now + d->retry_after - hi;
			{ char w[64]; snprintf(w, sizeof w, "retry_after too late by %lld", (long long) (now + d->retry_after - hi)); report(w, p, st[0].value, st[0].ts, now, count, reserve, s); }
		}
	}
}

int
main(int argc, char **argv)
{
	long		iters = argc > 1 ? atol(argv[1]) : 20000;

	rng_state += (uint64_t) (argc > 2 ? atoi(argv[2]) : 1);
	for (long it = 0; it < iters; it++)
	{
		RlPolicy	p = random_policy();
		int64_t		now = INT64_C(830000000000000000) + (int64_t) (urand() * 1e15);
		int64_t		origin;
		RlState		st[2];
		bool		has[2] = {false, false};
		double		depth;
		int			s;
		RlShardDecision d;
		double		counts[4];

		if (rl_policy_problem(&p) != NULL)
			continue;
		origin = rl_window_origin(&p, "n", 1, "k", 1, false);
		depth = rl_reserve_depth(&p);
		/* sink: biggest allowed count, then fill the remaining room */
		for (int i = 0; i < 60; i++)
		{
			double		room = p.capacity + depth;
			double		count = fmin(1e15, room);

			if (has[0])
			{
				/* what is left above the floor: one row, or both shards */
				double		held = p.shards == 1 ? st[0].value :
					st[0].value + st[1].value;

				room = held + (p.shards == 1 ? depth : 2 * depth / p.shards);
				count = fmin(1e15, fmax(room, p.capacity / p.shards * 1e-9));
			}
			if (rl_count_problem(&p, count, true) != NULL)
				count = fmin(1e15, p.shards == 1 ? p.capacity + depth :
							 2 * (p.capacity + depth) / p.shards) * 0.999999;
			if (rl_count_problem(&p, count, true) != NULL || !(count > 0))
				break;
			s = decide(&p, origin, st, has, now, count, true, &d);
			if (s != RL_DECIDED)
			{
				/* the call errors: nothing written; fine, try smaller */
				count *= 0.5;
				s = decide(&p, origin, st, has, now, count, true, &d);
				if (s != RL_DECIDED)
					break;
			}
			if (!d.ok)
				break;
			for (int k = 0; k < 2; k++)
				if (d.write[k])
				{
					st[k] = d.state[k];
					has[k] = true;
				}
		}
		if (!has[0] && !has[1])
			continue;
		if (p.shards > 1 && (!has[0] || !has[1]))
		{
			/* make the missing shard a full stored one */
			for (int k = 0; k < 2; k++)
				if (!has[k])
				{
					RlPolicy	sp = rl_policy_shard(&p);

					rl_initial_state(&sp, origin, now, &st[k]);
					has[k] = true;
				}
		}
		/* every later call must be answered, now and later */
		counts[0] = p.shards == 1 ? p.capacity : 2 * p.capacity / p.shards;
		counts[1] = counts[0] * 1e-6;
		counts[2] = fmin(1.0, counts[0]);
		counts[3] = counts[0] * 0.5;
		for (int t = 0; t < 4; t++)
		{
			int64_t		at = now + (t == 0 ? 0 : (int64_t) (urand() * (double) RL_MAX_WAIT * (t == 3 ? 1.0 : 0.01)));

			for (int c = 0; c < 4; c++)
				for (int r = 0; r < 2; r++)
				{
					if (!(counts[c] > 0) || rl_count_problem(&p, counts[c], r) != NULL)
						continue;
					s = decide(&p, origin, st, has, at, counts[c], r, &d);
					if (s != RL_DECIDED)
						report("call not answered after sinking", &p, st[0].value,
							   st[0].ts, at, counts[c], r, s);
					else
						check_retry(&p, origin, st, has, at, counts[c], r, &d);
				}
		}
	}
	printf("random depth: %ld policies, %d problems; retry_after at most %lld us late\n",
		   iters, bugs, (long long) late_max);
	return bugs != 0;
}
