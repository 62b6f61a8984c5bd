// SPDX-License-Identifier: GPL-2.0
/*
 * The card's timer heap (timer.c), on its own: arming, re-arming earlier
 * and later, cancelling, equal deadlines, and thousands of timers checked
 * against a plain array after every operation.  The heap allocates from a
 * simulated card's host, so a leak or an allocation while arming shows.
 */
#include <stdlib.h>

#include "fwtest.h"

#define TM_MANY		1000u
#define TM_OPS		20000u

struct tm_timer {
	struct fw_timer t;
	u32 id;
	u32 fired;
	u64 rearm;		/* the fire re-arms it for this, FW_NEVER: cancels */
};

/* What the fire functions saw, in order. */
static struct {
	struct fw_card *card;
	u32 ids[2 * TM_MANY];
	u64 at[2 * TM_MANY];
	u32 n;
	struct fw_timer_heap *h;
} tm_log;

static void tm_fire(struct fw_card *card, struct fw_timer *t, u64 now)
{
	struct tm_timer *x = fw_container_of(t, struct tm_timer, t);

	assert_ptr_equal(card, tm_log.card);
	assert_true(t->deadline <= now);
	assert_true(tm_log.n < T_ARRAY_SIZE(tm_log.ids));
	tm_log.ids[tm_log.n] = x->id;
	tm_log.at[tm_log.n++] = t->deadline;
	x->fired++;
	fw_timer_set(tm_log.h, t, x->rearm);
}

struct tm_env {
	struct sim *s;
	struct fw_card *card;
	struct fw_timer_heap h;
	struct tm_timer *v;
	u32 n;
};

/* @n timers of classes cycling through every class, all registered. */
static void tm_setup(struct tm_env *e, u32 n)
{
	struct sim_cfg cfg;
	u32 i;

	sim_cfg_default(&cfg, 1);
	e->s = sim_create(&cfg);
	assert_non_null(e->s);
	e->card = sim_card(e->s, 0);
	memset(&e->h, 0, sizeof(e->h));
	e->v = calloc(n, sizeof(*e->v));
	assert_non_null(e->v);
	e->n = n;
	memset(&tm_log, 0, sizeof(tm_log));
	tm_log.card = e->card;
	tm_log.h = &e->h;
	for (i = 0; i < n; i++) {
		e->v[i].id = i;
		e->v[i].rearm = FW_NEVER;
		assert_int_equal(fw_timer_add(e->card->host, &e->h, &e->v[i].t, tm_fire,
					      i % FW_TIMER_NCLASS), 0);
		assert_int_equal(e->v[i].t.deadline, FW_NEVER);
	}
	assert_int_equal(e->h.owners, n);
	assert_true(e->h.cap >= n);
}

static void tm_teardown(struct tm_env *e)
{
	u32 i;

	for (i = 0; i < e->n; i++)
		fw_timer_del(&e->h, &e->v[i].t);
	assert_int_equal(e->h.owners, 0);
	assert_int_equal(e->h.n, 0);
	fw_timer_heap_free(e->card->host, &e->h);
	free(e->v);
	assert_int_equal(sim_destroy(e->s), 0);
}

/* Every parent runs before (or with) its children; every index is right. */
static void tm_check_heap(const struct fw_timer_heap *h)
{
	u32 i;

	for (i = 0; i < h->n; i++) {
		const struct fw_timer *t = h->v[i], *p = h->v[i ? (i - 1) / 2 : 0];

		assert_int_equal(t->heap_idx, i);
		assert_true(t->deadline != FW_NEVER);
		assert_true(p->deadline < t->deadline ||
			    (p->deadline == t->deadline && p->cls <= t->cls));
	}
}

static void test_arm_and_run(void **state)
{
	struct tm_env e;
	long allocs;

	(void)state;
	tm_setup(&e, 3);
	assert_null(fw_timer_first(&e.h));
	assert_int_equal(fw_timer_run(e.card, &e.h, 1000), FW_NEVER);

	/* Room was reserved by fw_timer_add: arming allocates nothing. */
	allocs = sim_zallocs(e.s, 0);
	fw_timer_set(&e.h, &e.v[0].t, 30);
	fw_timer_set(&e.h, &e.v[1].t, 10);
	fw_timer_set(&e.h, &e.v[2].t, 20);
	assert_int_equal(sim_zallocs(e.s, 0), allocs);
	tm_check_heap(&e.h);
	assert_ptr_equal(fw_timer_first(&e.h), &e.v[1].t);

	/* Nothing is due before the first deadline. */
	assert_int_equal(fw_timer_run(e.card, &e.h, 9), 10);
	assert_int_equal(tm_log.n, 0);
	/* Due is deadline <= now: exactly at 10 it runs, alone. */
	assert_int_equal(fw_timer_run(e.card, &e.h, 10), 20);
	assert_int_equal(tm_log.n, 1);
	assert_int_equal(tm_log.ids[0], 1);
	assert_int_equal(e.v[1].t.heap_idx, FW_U32_MAX);
	/* Late: both due ones run, earliest first. */
	assert_int_equal(fw_timer_run(e.card, &e.h, 100), FW_NEVER);
	assert_int_equal(tm_log.n, 3);
	assert_int_equal(tm_log.ids[1], 2);
	assert_int_equal(tm_log.ids[2], 0);
	assert_int_equal(e.h.n, 0);
	tm_teardown(&e);
}

static void test_rearm_and_cancel(void **state)
{
	struct tm_env e;

	(void)state;
	tm_setup(&e, 3);
	fw_timer_set(&e.h, &e.v[0].t, 100);
	fw_timer_set(&e.h, &e.v[1].t, 200);
	fw_timer_set(&e.h, &e.v[2].t, 300);
	/* Earlier: to the top. */
	fw_timer_set(&e.h, &e.v[2].t, 50);
	tm_check_heap(&e.h);
	assert_ptr_equal(fw_timer_first(&e.h), &e.v[2].t);
	/* Later: below the others. */
	fw_timer_set(&e.h, &e.v[2].t, 400);
	tm_check_heap(&e.h);
	assert_ptr_equal(fw_timer_first(&e.h), &e.v[0].t);
	/* The same deadline again changes nothing. */
	fw_timer_set(&e.h, &e.v[0].t, 100);
	assert_ptr_equal(fw_timer_first(&e.h), &e.v[0].t);
	assert_int_equal(e.h.n, 3);
	/* Cancel the first, then one that is not armed (a no-op). */
	fw_timer_set(&e.h, &e.v[0].t, FW_NEVER);
	fw_timer_set(&e.h, &e.v[0].t, FW_NEVER);
	tm_check_heap(&e.h);
	assert_int_equal(e.h.n, 2);
	assert_int_equal(e.v[0].t.heap_idx, FW_U32_MAX);
	assert_ptr_equal(fw_timer_first(&e.h), &e.v[1].t);
	/* A cancelled timer never runs; the others do, in order. */
	assert_int_equal(fw_timer_run(e.card, &e.h, FW_NEVER - 1), FW_NEVER);
	assert_int_equal(tm_log.n, 2);
	assert_int_equal(tm_log.ids[0], 1);
	assert_int_equal(tm_log.ids[1], 2);
	assert_int_equal(e.v[0].fired, 0);
	/* Deleting an armed timer takes it out of the heap. */
	fw_timer_set(&e.h, &e.v[1].t, 7);
	fw_timer_del(&e.h, &e.v[1].t);
	assert_int_equal(e.h.n, 0);
	assert_int_equal(e.h.owners, 2);
	assert_int_equal(fw_timer_add(e.card->host, &e.h, &e.v[1].t, tm_fire, FW_TIMER_PEER), 0);
	tm_teardown(&e);
}

/* Equal deadlines run by class (peer, atomic, group), each once. */
static void test_equal_deadlines(void **state)
{
	struct tm_env e;
	u32 i;

	(void)state;
	tm_setup(&e, 3 * FW_TIMER_NCLASS);
	/* Armed in reverse class order, all at 500. */
	for (i = e.n; i-- > 0;)
		fw_timer_set(&e.h, &e.v[i].t, 500);
	tm_check_heap(&e.h);
	assert_int_equal(fw_timer_first(&e.h)->cls, FW_TIMER_PEER);
	assert_int_equal(fw_timer_run(e.card, &e.h, 499), 500);
	assert_int_equal(fw_timer_run(e.card, &e.h, 500), FW_NEVER);
	assert_int_equal(tm_log.n, e.n);
	for (i = 0; i < e.n; i++) {
		assert_int_equal(e.v[i].fired, 1);
		assert_int_equal(e.v[tm_log.ids[i]].t.cls, i / 3);
	}
	tm_teardown(&e);
}

/*
 * A timer that re-arms itself later runs once per due deadline; one that
 * re-arms itself in the past (a host whose now runs ahead of the card's
 * clock) does not loop for ever: the run stops and reports it due.
 */
static void test_rearm_in_fire(void **state)
{
	struct tm_env e;

	(void)state;
	tm_setup(&e, 2);
	e.v[0].rearm = 1000;
	fw_timer_set(&e.h, &e.v[0].t, 10);
	assert_int_equal(fw_timer_run(e.card, &e.h, 500), 1000);
	assert_int_equal(e.v[0].fired, 1);
	e.v[0].rearm = 5;
	fw_timer_set(&e.h, &e.v[1].t, 20);
	assert_int_equal(fw_timer_run(e.card, &e.h, 2000), 5);
	/* Bounded by twice the timers registered, plus one. */
	assert_true(e.v[0].fired + e.v[1].fired <= 1 + 2 * e.h.owners + 1);
	assert_int_equal(e.v[1].fired, 1);
	e.v[0].rearm = FW_NEVER;
	assert_int_equal(fw_timer_run(e.card, &e.h, 2000), FW_NEVER);
	tm_teardown(&e);
}

static u64 tm_rand(u64 *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * Thousands of random arms, re-arms and cancels (many deadlines equal),
 * checked after each against the array: the first timer is the earliest;
 * then everything runs in (deadline, class) order, the armed ones once.
 */
static void test_many_timers(void **state)
{
	struct tm_env e;
	u64 x = 0x9e3779b97f4a7c15ull;
	u32 i, k, armed = 0;

	(void)state;
	tm_setup(&e, TM_MANY);
	for (k = 0; k < TM_OPS; k++) {
		struct tm_timer *t = &e.v[tm_rand(&x) % e.n];
		u64 r = tm_rand(&x);
		const struct fw_timer *min = NULL;

		fw_timer_set(&e.h, &t->t, r % 5 ? 1 + r % 4096 : FW_NEVER);
		if (k % 64 && k != TM_OPS - 1)
			continue;
		tm_check_heap(&e.h);
		armed = 0;
		for (i = 0; i < e.n; i++) {
			const struct fw_timer *c = &e.v[i].t;

			if (c->deadline == FW_NEVER) {
				assert_int_equal(c->heap_idx, FW_U32_MAX);
				continue;
			}
			armed++;
			if (!min || c->deadline < min->deadline ||
			    (c->deadline == min->deadline && c->cls < min->cls))
				min = c;
		}
		assert_int_equal(e.h.n, armed);
		assert_true(armed ? fw_timer_first(&e.h)->deadline == min->deadline &&
			    fw_timer_first(&e.h)->cls == min->cls : !fw_timer_first(&e.h));
	}
	assert_int_equal(fw_timer_run(e.card, &e.h, 4096), FW_NEVER);
	assert_int_equal(tm_log.n, armed);
	for (i = 0; i < e.n; i++)
		assert_true(e.v[i].fired <= 1);
	for (i = 1; i < tm_log.n; i++) {
		u8 a = e.v[tm_log.ids[i - 1]].t.cls, b = e.v[tm_log.ids[i]].t.cls;

		assert_true(tm_log.at[i - 1] < tm_log.at[i] ||
			    (tm_log.at[i - 1] == tm_log.at[i] && a <= b));
	}
	tm_teardown(&e);
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_arm_and_run),
		cmocka_unit_test(test_rearm_and_cancel),
		cmocka_unit_test(test_equal_deadlines),
		cmocka_unit_test(test_rearm_in_fire),
		cmocka_unit_test(test_many_timers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
