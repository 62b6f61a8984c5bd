// SPDX-License-Identifier: GPL-2.0
/*
 * armci_mutex OPS: ARMCI's mutexes guarding shared counters.  Every rank
 * creates NMUTEX mutexes; mutex m of rank p guards a counter and an
 * "inside" flag in p's window.  Each rank makes OPS critical sections, the
 * i-th under mutex i % NMUTEX of rank (i / 4) % nproc, all ranks contending
 * for the same mutex at once: it reads the flag
 * (it must be 0: nobody else is inside), sets it, reads the counter, yields
 * the CPU so that a broken lock lets another rank in, writes the counter
 * plus one, clears the flag and unlocks.  At the end every counter must
 * hold the number of sections made under its mutex.
 */
#include <sched.h>

#include "armci_test.h"

#define NMUTEX 3

/* The slot of mutex m in a window: counter then flag. */
struct guarded {
	long counter;
	long inside;
};

/* The rank whose mutex guards every rank's i-th section. */
static int owner(long i)
{
	return (int)(i / 4 % at_nproc);
}

int main(int argc, char **argv)
{
	struct guarded now[NMUTEX], zero[NMUTEX];
	long i, ops, want[NMUTEX] = { 0 }, v;
	void **win;
	int m;

	at_init(&argc, &argv, "armci_mutex");
	ops = mt_arg(argc, argv, 1, 200);
	win = at_malloc(sizeof(now));
	memset(zero, 0, sizeof(zero));
	at_local_write(win[at_rank], zero, sizeof(zero));
	AT_CK(ARMCI_Create_mutexes(NMUTEX));
	ARMCI_Barrier();
	for (i = 0; i < ops; i++) {
		int p = owner(i);
		struct guarded *g = (struct guarded *)win[p] + i % NMUTEX;

		m = (int)(i % NMUTEX);
		ARMCI_Lock(m, p);
		AT_CK(ARMCI_Get(&g->inside, &v, sizeof(long), p));
		if (v != 0)
			mt_fail("section %ld under mutex %d of rank %d: rank %ld is inside too", i, m,
				p, v - 1);
		v = at_rank + 1;
		AT_CK(ARMCI_Put(&v, &g->inside, sizeof(long), p));
		AT_CK(ARMCI_Get(&g->counter, &v, sizeof(long), p));
		sched_yield();
		v++;
		AT_CK(ARMCI_Put(&v, &g->counter, sizeof(long), p));
		v = 0;
		AT_CK(ARMCI_Put(&v, &g->inside, sizeof(long), p));
		/* The puts land before the next holder's gets. */
		ARMCI_Fence(p);
		ARMCI_Unlock(m, p);
	}
	ARMCI_Barrier();
	AT_CK(ARMCI_Destroy_mutexes());

	/* Sections under this rank's mutexes: every rank's i-th when it owns the i-th. */
	for (i = 0; i < ops; i++)
		if (owner(i) == at_rank)
			want[i % NMUTEX] += at_nproc;
	at_local_read(now, win[at_rank], sizeof(now));
	for (m = 0; m < NMUTEX; m++)
		if (now[m].counter != want[m] || now[m].inside != 0)
			mt_fail("mutex %d: the counter holds %ld (flag %ld), expected %ld", m,
				now[m].counter, now[m].inside, want[m]);
	at_free(win);
	at_finish("%ld locked sections a rank", ops);
	return 0;
}
