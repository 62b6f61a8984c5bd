// SPDX-License-Identifier: GPL-2.0
/*
 * The peer table.  A card of a million-node fabric talks to few peers, so
 * peers are created on first use, found through a hash table that grows
 * with them, and only peers with a timer armed sit in the card's timer
 * heap (timer.c): fw_poll() never walks the whole table.
 */
#include "card.h"

#define FW_HASH_MIN_BITS	4

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

static void fw_peer_timer_fire(struct fw_card *card, struct fw_timer *t, u64 now)
{
	fw_peer_timer(card, fw_container_of(t, struct fw_peer, timer), now);
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
	p = fw_timer_owner_new(card->host, &card->timers, sizeof(*p),
			       offsetof(struct fw_peer, timer), fw_peer_timer_fire, FW_TIMER_PEER);
	if (!p)
		return NULL;
	p->node = node;
	p->epoch = card->cfg.epoch;
	p->snd_una = card->cfg.initial_seq;
	p->snd_nxt = card->cfg.initial_seq;
	p->syn = true;
	p->rto = card->cfg.rto_ns;
	p->rto_at = FW_NEVER;
	p->tlp_at = FW_NEVER;
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
			fw_timer_del(&card->timers, &p->timer);
			fwos_free(card->host, p->recs);
			fwos_free(card->host, p);
		}
	}
	fwos_free(card->host, card->buckets);
	card->buckets = NULL;
	card->npeers = 0;
}
