/*
 * sliding_trace.c: the sliding-window counter against an exact log.
 *
 * Replays random traces of calls (random arrival times, random counts)
 * through the algebra alone, one key of a sliding window of N per period
 * P, keeps an exact log of what was granted, and checks the bound that
 * docs/policies.md derives: for an interval [s, s + P) that starts a into
 * the aligned window k (a = s - start of k), the calls granted in it count
 * at most N + c_k * a / P, where c_k is what window k granted; so less
 * than 2N in any interval of length P, and at most N in an aligned window.
 * It also checks that every refusal's retry_after is exact (granted then,
 * refused a microsecond earlier), and reports the worst ratio of an
 * interval's count to N.
 *
 * Usage: sliding_trace [calls per profile] [seed]; run by `make unit`.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "algebra.h"

#define SEC INT64_C(1000000)

static uint64_t rng;

/* splitmix64: a reproducible stream from the seed */
static uint64_t
next_u64(void)
{
	uint64_t	z = (rng += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* uniform in [0, 1) */
static double
unit_random(void)
{
	return (double) (next_u64() >> 11) / 9007199254740992.0;
}

typedef struct Grant
{
	int64_t		t;
	double		count;
} Grant;

static int	failures;

/* the first grant at or after t */
static long
first_at(const Grant *g, long n, int64_t t)
{
	long		lo = 0;
	long		hi = n;

	while (lo < hi)
	{
		long		mid = lo + (hi - lo) / 2;

		if (g[mid].t < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* what the grants in [from, to) count, from prefix sums */
static double
count_in(const Grant *g, const double *prefix, long n, int64_t from,
		 int64_t to)
{
	return prefix[first_at(g, n, to)] - prefix[first_at(g, n, from)];
}

/*
 * One profile: calls arrive by gap(), each of a random count; returns the
 * worst ratio of an interval's count to N.
 */
static double
run_profile(const char *name, int profile, long calls, double n, int64_t period)
{
	RlPolicy	p = {RL_SLIDING_WINDOW, n, period, n, false, 0, 1, true, 0};
	Grant	   *g = malloc(sizeof(Grant) * calls);
	double	   *prefix = malloc(sizeof(double) * (calls + 1));
	RlState		state;
	bool		has_state = false;
	int64_t		t = 1000 * period;
	long		granted = 0;
	long		refused = 0;
	double		worst = 0;
	double		worst_slack = -INFINITY;
	double		tol = 1e-9 * n;
	int64_t		first;
	int64_t		last;

	for (long i = 0; i < calls; i++)
	{
		RlDecision	d;
		double		count;
		double		u = unit_random();

		/* arrivals */
		if (profile == 0)		/* Poisson, offered about 3N per period */
			t += (int64_t) (-log(1 - unit_random()) * (double) period / (3 * n / 2.5));
		else if (profile == 1)	/* bursts: mostly close together, some long gaps */
			t += u < 0.05 ? (int64_t) (unit_random() * 2 * period) :
				(int64_t) (unit_random() * period / (20 * n));
		else
		{
			/* bursts at the edges: the last or first tenth of a window */
			int64_t		ws = rl_window_start(t, 0, period);
			int64_t		edge = u < 0.5 ? ws + period - 1 - (int64_t) (unit_random() * period / 10) :
			ws + period + (int64_t) (unit_random() * period / 10);

			t = u < 0.02 && edge > t ? edge :
				t + (int64_t) (unit_random() * period / (100 * n));
		}
		count = unit_random() < 0.2 ? 0.25 + unit_random() * 3 :
			(double) (1 + (int) (unit_random() * 4));

		if (rl_decide(&p, 0, has_state ? &state : NULL, t, count, false, &d) !=
			RL_DECIDED)
		{
			printf("FAIL: %s: undecided at call %ld\n", name, i);
			failures++;
			break;
		}
		if (d.ok)
		{
			state = d.state;
			has_state = true;
			g[granted].t = t;
			g[granted].count = count;
			granted++;
		}
		else
		{
			RlDecision	r;

			refused++;
			/* the retry is granted, and not a microsecond earlier */
			if (rl_decide(&p, 0, has_state ? &state : NULL, t + d.retry_after,
						  count, false, &r) != RL_DECIDED || !r.ok ||
				(d.retry_after > 0 &&
				 (rl_decide(&p, 0, has_state ? &state : NULL,
							t + d.retry_after - 1, count, false, &r) !=
				  RL_DECIDED || r.ok)))
			{
				printf("FAIL: %s: retry_after %" PRId64 " not exact at call %ld\n",
					   name, d.retry_after, i);
				failures++;
			}
		}
	}

	prefix[0] = 0;
	for (long i = 0; i < granted; i++)
		prefix[i + 1] = prefix[i] + g[i].count;
	first = rl_window_start(g[0].t, 0, period);
	last = g[granted - 1].t;

	/*
	 * The busiest interval among those starting in (g[i-1].t, g[i].t] starts
	 * at g[i].t, unless an aligned window starts in between: so every grant
	 * and every window start is a start worth checking.
	 */
	for (int pass = 0; pass < 2; pass++)
	{
		long		starts = pass == 0 ? granted : (last - first) / period + 1;

		for (long i = 0; i < starts; i++)
		{
			int64_t		s = pass == 0 ? g[i].t : first + i * period;
			int64_t		ws = rl_window_start(s, 0, period);
			double		a = (double) (s - ws) / (double) period;
			double		ck = count_in(g, prefix, granted, ws, ws + period);
			double		in = count_in(g, prefix, granted, s, s + period);
			double		bound = n + ck * a;

			if (in > bound + tol || in >= 2 * n || (a == 0 && in > n + tol))
			{
				printf("FAIL: %s: %.6g granted in [%" PRId64 ", +P), bound %.6g\n",
					   name, in, s, bound);
				failures++;
			}
			if (in / n > worst)
				worst = in / n;
			if (in - bound > worst_slack)
				worst_slack = in - bound;
		}
	}
	printf("%-7s %ld calls, %ld granted, %ld refused; worst interval of length P: %.4f N; closest to N + c*a/P: %.4g\n",
		   name, calls, granted, refused, worst, worst_slack);
	free(g);
	free(prefix);
	return worst;
}

int
main(int argc, char **argv)
{
	long		calls = argc > 1 ? atol(argv[1]) : 100000;
	double		worst = 0;
	static const char *const names[] = {"poisson", "bursts", "edges"};

	rng = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
	if (calls < 1000)
		calls = 1000;
	for (int profile = 0; profile < 3; profile++)
	{
		double		w = run_profile(names[profile], profile, calls, 100,
									60 * SEC);

		if (w > worst)
			worst = w;
	}
	printf("sliding window, N = 100 per 60 s: worst %.4f N (bound: below 2 N); %s\n",
		   worst, failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
