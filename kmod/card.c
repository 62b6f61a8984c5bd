// SPDX-License-Identifier: GPL-2.0
/* The array of emulated cards. */
#include <linux/slab.h>
#include <linux/ktime.h>
#include <linux/moduleparam.h>

#include "card.h"
#include "params.h"
#include "fw.h"

struct nicoff_card *nicoff_cards;
unsigned int nicoff_num_cards;

u64 nicoff_fw_group_limit(u64 max_group_size)
{
	BUILD_BUG_ON(NICOFF_MAX_GROUP_SIZE != FW_GROUP_SIZE_LIMIT);
	return min_t(u64, max_group_size, (u64)nicoff_num_cards * nicoff_ports);
}

/* The firmware's configuration, from the tunables (read under the module's param lock). */
static void nicoff_fw_config(struct fw_config *cfg, u32 node)
{
	fw_config_default(cfg, node, nicoff_num_cards);
	cfg->mtu = nicoff_mtu;
	cfg->rto_ns = (u64)nicoff_rto_usecs * NSEC_PER_USEC;
	/* The adaptive timeout's ceiling is never under its floor (the firmware refuses that). */
	cfg->rto_max_ns = max(cfg->rto_max_ns, cfg->rto_ns);
	cfg->max_retries = nicoff_max_retries;
	cfg->atomic_table = nicoff_atomic_table;
	cfg->barrier_alg = READ_ONCE(nicoff_barrier_alg);
	cfg->unexpected_bytes = READ_ONCE(nicoff_unexpected_bytes);
	cfg->card_unexpected_bytes = READ_ONCE(nicoff_card_unexpected_bytes);
	cfg->max_group_size = nicoff_fw_group_limit(READ_ONCE(nicoff_max_group_size));
	cfg->card_group_members = READ_ONCE(nicoff_card_group_members);
	cfg->group_create_ms = READ_ONCE(nicoff_group_create_ms);
	cfg->bcast_channels = READ_ONCE(nicoff_bcast_channels);
	cfg->bcast_hw = READ_ONCE(nicoff_bcast_hw);
}

int nicoff_card_set_bcast_hw(struct nicoff_card *card, u32 on)
{
	int ret;

	lockdep_assert_held(&card->lock);
	ret = fw_set_config(card->fw, FW_CFG_BCAST_HW, on);
	if (!ret)
		card->bcast_hw = on;
	return ret;
}

/*
 * A run-time tunable changed: every card's firmware takes it now.  Called
 * by its setter, under the module's param lock, which also keeps the
 * cards from being created or freed meanwhile (none exist yet when the
 * module's parameters are first parsed).
 */
int nicoff_cards_set_config(enum fw_config_key key, u64 value)
{
	unsigned int i;
	int ret = 0;

	if (key == FW_CFG_MAX_GROUP_SIZE)
		value = nicoff_fw_group_limit(value);
	for (i = 0; i < nicoff_num_cards && !ret; i++) {
		struct nicoff_card *card = &nicoff_cards[i];

		mutex_lock(&card->lock);
		if (key == FW_CFG_BCAST_HW)
			ret = nicoff_card_set_bcast_hw(card, value);
		else
			ret = fw_set_config(card->fw, key, value);
		mutex_unlock(&card->lock);
	}
	return ret;
}

/* Free a card set up by nicoff_cards_create(), wholly or in part. */
static void nicoff_card_free(struct nicoff_card *card)
{
	fw_card_destroy(card->fw);
	nicoff_rxq_purge(&card->rxq);
	kfree(card->port_tab);
	mutex_destroy(&card->lock);
}

/*
 * Free the first @n cards, the ones nicoff_cards_create() set up (the
 * others are only zeroed: their lists and lock were never initialised).
 * The engines are stopped: nothing sends or delivers any more.
 */
static void nicoff_cards_free(unsigned int n)
{
	while (n--)
		nicoff_card_free(&nicoff_cards[n]);
	kfree(nicoff_cards);
	nicoff_cards = NULL;
	nicoff_num_cards = 0;
}

static int nicoff_cards_create(void)
{
	struct fw_config cfg;
	unsigned int i;

	nicoff_cards = kcalloc(nicoff_nics, sizeof(*nicoff_cards), GFP_KERNEL);
	if (!nicoff_cards)
		return -ENOMEM;
	nicoff_num_cards = nicoff_nics;
	for (i = 0; i < nicoff_num_cards; i++) {
		struct nicoff_card *card = &nicoff_cards[i];

		/* What cannot fail first: a card that fails is freed like the others. */
		card->id = i;
		mutex_init(&card->lock);
		INIT_LIST_HEAD(&card->ports);
		nicoff_rxq_init(&card->rxq);
		fw_fault_init(&card->faults, nicoff_fault_seed, i);
		card->next_timer = U64_MAX;
		card->host.card = card;
		card->port_tab = kcalloc(nicoff_ports, sizeof(*card->port_tab), GFP_KERNEL);
		if (!card->port_tab)
			goto fail;
		nicoff_fw_config(&cfg, i);
		card->fw = fw_card_create(&card->host, &cfg);
		if (!card->fw)
			goto fail;
		card->bcast_hw = cfg.bcast_hw;
	}
	return 0;
fail:
	nicoff_cards_free(i + 1);
	return -ENOMEM;
}

int nicoff_cards_init(void)
{
	int ret;

	kernel_param_lock(THIS_MODULE);
	ret = nicoff_cards_create();
	kernel_param_unlock(THIS_MODULE);
	return ret;
}

void nicoff_cards_exit(void)
{
	kernel_param_lock(THIS_MODULE);
	nicoff_cards_free(nicoff_num_cards);
	kernel_param_unlock(THIS_MODULE);
}
