// SPDX-License-Identifier: GPL-2.0
/*
 * The peer table and the timer heap.  A card of a million-node fabric
 * talks to few peers, so peers are created on first use, found through a
 * hash table that grows with them, and only peers with a timer armed sit
 * in a binary min-heap: fw_poll() never walks the whole table.
 */
#include "card.h"

#define FW_HASH_MIN_BITS	4
#define FW_HEAP_MIN		8

static u32 fw_hash(u32 node, u32 bits)
{
	return (node * 0x9e3779b1u) >> (32 - bits);
}

struct fw_peer *fw_peer_find(struct fw_card *card, u32 node)
{
	struct fw_peer *p;

	if (!card->buckets)
		return NULL;
	for (p = card->buckets[fw_hash(node, card->hash_bits)]; p; p = p->hnext)
		if (p->node == node)
			return p;
	return NULL;
}

/* Double the buckets once there are as many peers as buckets. */
static int fw_hash_grow(struct fw_card *card)
{
	u32 bits = card->buckets ? card->hash_bits + 1 : FW_HASH_MIN_BITS;
	u32 n = 1u << bits;
	struct fw_peer **nb;
	u32 i;

	nb = fwos_zalloc(card->host, n * sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	if (card->buckets) {
		for (i = 0; i < (1u << card->hash_bits); i++) {
			struct fw_peer *p = card->buckets[i], *next;

			for (; p; p = next) {
				u32 b = fw_hash(p->node, bits);

				next = p->hnext;
				p->hnext = nb[b];
				nb[b] = p;
			}
		}
		fwos_free(card->host, card->buckets);
	}
	card->buckets = nb;
	card->hash_bits = bits;
	return 0;
}

/* Room in the heap for every peer, so arming a timer never allocates. */
static int fw_heap_reserve(struct fw_card *card, u32 n)
{
	struct fw_peer **nh;
	u32 cap;

	if (n <= card->heap_cap)
		return 0;
	cap = card->heap_cap ? card->heap_cap * 2 : FW_HEAP_MIN;
	nh = fwos_zalloc(card->host, cap * sizeof(*nh));
	if (!nh)
		return -ENOMEM;
	if (card->heap) {
		memcpy(nh, card->heap, card->nheap * sizeof(*nh));
		fwos_free(card->host, card->heap);
	}
	card->heap = nh;
	card->heap_cap = cap;
	return 0;
}

struct fw_peer *fw_peer_get(struct fw_card *card, u32 node)
{
	struct fw_peer *p = fw_peer_find(card, node);
	u32 b;

	if (p)
		return p;
	if (node >= card->cfg.num_nodes)
		return NULL;
	if ((!card->buckets || card->npeers >= (1u << card->hash_bits)) && fw_hash_grow(card))
		return NULL;
	if (fw_heap_reserve(card, card->npeers + 1))
		return NULL;
	p = fwos_zalloc(card->host, sizeof(*p));
	if (!p)
		return NULL;
	p->node = node;
	p->heap_idx = FW_U32_MAX;
	p->deadline = FW_NEVER;
	p->epoch = card->cfg.epoch;
	p->snd_una = card->cfg.initial_seq;
	p->snd_nxt = card->cfg.initial_seq;
	p->syn = true;
	p->rto = card->cfg.rto_ns;
	p->rto_at = FW_NEVER;
	fw_list_init(&p->txq);
	fw_list_init(&p->pending);
	fw_list_init(&p->ops);
	fw_list_init(&p->rx_msgs);
	p->rto_base = card->cfg.rto_ns;
	fw_list_init(&p->rnrq);
	p->rnr_at = FW_NEVER;
	fw_list_init(&p->rblocks);

	b = fw_hash(node, card->hash_bits);
	p->hnext = card->buckets[b];
	card->buckets[b] = p;
	card->npeers++;
	return p;
}

void fw_peers_free(struct fw_card *card)
{
	u32 i;

	if (!card->buckets)
		return;
	for (i = 0; i < (1u << card->hash_bits); i++) {
		struct fw_peer *p = card->buckets[i], *next;

		for (; p; p = next) {
			next = p->hnext;
			fw_peer_release(card, p);
			if (p->recs)
				fwos_free(card->host, p->recs);
			fwos_free(card->host, p);
		}
	}
	fwos_free(card->host, card->buckets);
	if (card->heap)
		fwos_free(card->host, card->heap);
	card->buckets = NULL;
	card->heap = NULL;
	card->npeers = 0;
	card->nheap = 0;
	card->heap_cap = 0;
}

static void fw_heap_place(struct fw_card *card, u32 i, struct fw_peer *p)
{
	card->heap[i] = p;
	p->heap_idx = i;
}

static void fw_heap_up(struct fw_card *card, u32 i)
{
	struct fw_peer *p = card->heap[i];

	while (i) {
		u32 parent = (i - 1) / 2;

		if (card->heap[parent]->deadline <= p->deadline)
			break;
		fw_heap_place(card, i, card->heap[parent]);
		i = parent;
	}
	fw_heap_place(card, i, p);
}

static void fw_heap_down(struct fw_card *card, u32 i)
{
	struct fw_peer *p = card->heap[i];

	for (;;) {
		u32 c = 2 * i + 1;

		if (c >= card->nheap)
			break;
		if (c + 1 < card->nheap && card->heap[c + 1]->deadline < card->heap[c]->deadline)
			c++;
		if (p->deadline <= card->heap[c]->deadline)
			break;
		fw_heap_place(card, i, card->heap[c]);
		i = c;
	}
	fw_heap_place(card, i, p);
}

void fw_timer_set(struct fw_card *card, struct fw_peer *peer, u64 deadline)
{
	u32 i = peer->heap_idx;
	u64 old = peer->deadline;

	peer->deadline = deadline;
	if (i == FW_U32_MAX) {
		if (deadline == FW_NEVER)
			return;
		i = card->nheap++;
		fw_heap_place(card, i, peer);
		fw_heap_up(card, i);
		return;
	}
	if (deadline == FW_NEVER) {
		struct fw_peer *last = card->heap[--card->nheap];

		peer->heap_idx = FW_U32_MAX;
		if (last == peer)
			return;
		fw_heap_place(card, i, last);
		fw_heap_up(card, i);
		fw_heap_down(card, last->heap_idx);
		return;
	}
	if (deadline < old)
		fw_heap_up(card, i);
	else if (deadline > old)
		fw_heap_down(card, i);
}
