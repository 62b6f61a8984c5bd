// SPDX-License-Identifier: GPL-2.0
/*
 * libnicoff's distributed locks (nicoff/atomic.hpp, through its C API)
 * against the module, under 10% drop + 5% duplicate + 5% reorder: the MCS
 * queue lock of seed 001 section IV and the test-and-set lock, each over
 * card-based atomics and over host-based ones (an atomic server thread in
 * this process serves the lock word; with host-based MCS each process also
 * serves its own queue node, which the others write through requests to
 * it).  P processes on cards 0, 2 and 3 take the lock K times;
 * inside, each checks that nobody else holds it and bumps a shared counter
 * with a plain read-modify-write.  The lock never admits two holders: no
 * overlap is seen, the counter ends at exactly P*K and the lock word is
 * free again.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "nicoff_atomic_util.h"
#include <nicoff/nicoff.h>

#define HOME_CARD	1
#define NPROC		4
#define NODE_BYTES	64

static const uint32_t cards[NPROC] = { 0, 2, 3, 0 };

/* What the processes share (MAP_SHARED). */
struct shared {
	struct nicoff_remote_word qnodes[NPROC];
	struct nicoff_remote_word word;	/* the lock word at the home */
	int ready;			/* processes that published their node */
	int holders;			/* inside the critical section now */
	int violations;			/* entries that found another holder */
	uint64_t counter;		/* bumped without atomics inside */
};

FIXTURE(lock) {
	struct shared *sh;
	nicoff_device *dev;
	nicoff_port *home;		/* card-based: the lock word's region */
	nicoff_port *srv_port;		/* host-based: the atomic server's port */
	nicoff_mr *home_mr;
	uint64_t *home_mem;		/* 4 KiB: the card-based words */
	uint64_t *srv_mem;		/* 4 KiB: the host-based words */
	nicoff_atomic_server *server;
	pthread_t thread;
	volatile int stop;
	int serving;
};

static void *serve_thread(void *arg)
{
	FIXTURE_DATA(lock) *self = arg;

	nicoff_atomic_server_serve(self->server, &self->stop);
	return NULL;
}

FIXTURE_SETUP(lock)
{
	struct nicoff_port_attr attr = { NICOFF_PORT_ANY, 256, 256, 0 };

	ASSERT_EQ(0, at_faults_clear());
	self->sh = mmap(NULL, sizeof(*self->sh), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->sh);
	memset(self->sh, 0, sizeof(*self->sh));
	self->home_mem = aligned_alloc(4096, 4096);
	self->srv_mem = aligned_alloc(4096, 4096);
	ASSERT_NE(NULL, self->home_mem);
	ASSERT_NE(NULL, self->srv_mem);
	memset(self->home_mem, 0, 4096);
	memset(self->srv_mem, 0, 4096);
	ASSERT_EQ(0, nicoff_device_open(HOME_CARD, &self->dev));
	ASSERT_EQ(0, nicoff_port_create(self->dev, &attr, &self->home));
	ASSERT_EQ(0, nicoff_mr_reg(self->home, self->home_mem, 4096,
				   NICOFF_ACCESS_REMOTE_ATOMIC, &self->home_mr));
	ASSERT_EQ(0, nicoff_port_create(self->dev, &attr, &self->srv_port));
	self->stop = 0;
	self->serving = 0;
}

FIXTURE_TEARDOWN(lock)
{
	if (self->serving) {
		self->stop = 1;
		pthread_join(self->thread, NULL);
	}
	nicoff_atomic_server_destroy(self->server);
	EXPECT_EQ(0, at_faults_clear());
	nicoff_mr_dereg(self->home_mr);
	nicoff_port_destroy(self->srv_port);
	nicoff_port_destroy(self->home);
	nicoff_device_close(self->dev);
	free(self->home_mem);
	free(self->srv_mem);
	munmap(self->sh, sizeof(*self->sh));
}

struct run {
	FIXTURE_DATA(lock) *self;
	int kind;	/* NICOFF_LOCK_MCS or NICOFF_LOCK_TAS */
	int rmem;	/* NICOFF_RMEM_CARD or NICOFF_RMEM_HOST */
	uint32_t k;
};

/* A contender's own node server (host-based MCS). */
struct node_server {
	nicoff_port *port;
	nicoff_atomic_server *server;
	pthread_t thread;
	volatile int stop;
};

static void *node_serve(void *arg)
{
	struct node_server *ns = arg;

	nicoff_atomic_server_serve(ns->server, &ns->stop);
	return NULL;
}

/* One process: publish its queue node, wait for all, take the lock k times. */
static int contender(void *argp, int rank)
{
	struct run *r = argp;
	struct shared *sh = r->self->sh;
	struct node_server ns = { 0 };
	nicoff_device *dev = NULL;
	nicoff_port *port = NULL;
	nicoff_rmem *mem = NULL;
	nicoff_lock *lock = NULL;
	nicoff_mr *mr = NULL;
	void *node = aligned_alloc(4096, 4096);
	uint32_t i;
	int ret = 0;

	if (!node || nicoff_device_open(cards[rank], &dev) ||
	    nicoff_port_create(dev, NULL, &port) ||
	    nicoff_mr_reg(port, node, 4096, NICOFF_ACCESS_REMOTE_WRITE, &mr))
		return 10;
	memset(node, 0, 4096);
	sh->qnodes[rank].card = cards[rank];
	sh->qnodes[rank].port = nicoff_port_number(port);
	sh->qnodes[rank].rkey = nicoff_mr_rkey(mr);
	sh->qnodes[rank].width = 8;
	sh->qnodes[rank].offset = 0;
	if (r->rmem == NICOFF_RMEM_HOST && r->kind == NICOFF_LOCK_MCS) {
		if (nicoff_port_create(dev, NULL, &ns.port) ||
		    nicoff_atomic_server_create(ns.port, node, 4096, NICOFF_SERVER_SPIN_BLOCK, 50,
						&ns.server) ||
		    pthread_create(&ns.thread, NULL, node_serve, &ns))
			return 11;
		sh->qnodes[rank].port = nicoff_port_number(ns.port);
		sh->qnodes[rank].rkey = 0;
	}
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < NPROC)
		usleep(1000);
	ret = nicoff_rmem_create(port, r->rmem, &mem);
	if (!ret)
		ret = nicoff_lock_create(mem, r->kind, rank, sh->qnodes, NPROC, &sh->word, node,
					 NODE_BYTES, &lock);
	for (i = 0; !ret && i < r->k; i++) {
		uint64_t v;

		ret = nicoff_lock_acquire(lock);
		if (ret)
			break;
		if (__atomic_fetch_add(&sh->holders, 1, __ATOMIC_SEQ_CST))
			__atomic_fetch_add(&sh->violations, 1, __ATOMIC_SEQ_CST);
		v = sh->counter;
		if (!(i % 8))
			sched_yield();	/* make a second holder likely, if the lock allowed one */
		sh->counter = v + 1;
		__atomic_fetch_sub(&sh->holders, 1, __ATOMIC_SEQ_CST);
		ret = nicoff_lock_release(lock);
	}
	if (ret)
		fprintf(stderr, "rank %d: lock error %d at round %u\n", rank, ret, i);
	nicoff_lock_destroy(lock);
	nicoff_rmem_destroy(mem);
	if (ns.server) {
		ns.stop = 1;
		pthread_join(ns.thread, NULL);
		nicoff_atomic_server_destroy(ns.server);
		nicoff_port_destroy(ns.port);
	}
	nicoff_mr_dereg(mr);
	nicoff_port_destroy(port);
	nicoff_device_close(dev);
	free(node);
	return ret ? 20 : 0;
}

static void run_locks(struct __test_metadata *_metadata, FIXTURE_DATA(lock) *self, int kind,
		      int rmem, uint32_t k)
{
	struct run r = { self, kind, rmem, k };
	pid_t pids[NPROC];
	uint64_t t0;
	int i;

	if (rmem == NICOFF_RMEM_HOST) {
		/* The lock word is the server's memory; MCS nodes still take puts. */
		ASSERT_EQ(0, nicoff_atomic_server_create(self->srv_port, self->srv_mem, 4096,
							 NICOFF_SERVER_SPIN_BLOCK, 50,
							 &self->server));
		ASSERT_EQ(0, pthread_create(&self->thread, NULL, serve_thread, self));
		self->serving = 1;
		self->sh->word.card = HOME_CARD;
		self->sh->word.port = nicoff_port_number(self->srv_port);
		self->sh->word.rkey = 0;
		self->sh->word.offset = 64;
	} else {
		self->sh->word.card = HOME_CARD;
		self->sh->word.port = nicoff_port_number(self->home);
		self->sh->word.rkey = nicoff_mr_rkey(self->home_mr);
		self->sh->word.offset = 64;
	}
	self->sh->word.width = 8;
	ASSERT_EQ(0, at_faults_set(AT_DROP_PPM, AT_DUP_PPM, AT_REORDER_PPM));
	t0 = nt_now_ns();
	for (i = 0; i < NPROC; i++)
		pids[i] = at_spawn(contender, &r, i);
	for (i = 0; i < NPROC; i++)
		EXPECT_EQ(0, at_reap(pids[i]));
	ASSERT_EQ(0, at_faults_clear());
	EXPECT_EQ(0, self->sh->violations);
	EXPECT_EQ((uint64_t)NPROC * k, self->sh->counter);
	EXPECT_EQ(0, rmem == NICOFF_RMEM_HOST ? self->srv_mem[8] : self->home_mem[8]);
	TH_LOG("%u acquisitions in %.1f ms", NPROC * k, (nt_now_ns() - t0) / 1e6);
}

TEST_F_TIMEOUT(lock, mcs_card_under_faults, 300)
{
	run_locks(_metadata, self, NICOFF_LOCK_MCS, NICOFF_RMEM_CARD, 200);
}

TEST_F_TIMEOUT(lock, tas_card_under_faults, 300)
{
	run_locks(_metadata, self, NICOFF_LOCK_TAS, NICOFF_RMEM_CARD, 100);
}

TEST_F_TIMEOUT(lock, mcs_host_under_faults, 300)
{
	run_locks(_metadata, self, NICOFF_LOCK_MCS, NICOFF_RMEM_HOST, 100);
}

TEST_F_TIMEOUT(lock, tas_host_under_faults, 300)
{
	run_locks(_metadata, self, NICOFF_LOCK_TAS, NICOFF_RMEM_HOST, 50);
}

TEST_HARNESS_MAIN
