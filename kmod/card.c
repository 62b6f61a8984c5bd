// SPDX-License-Identifier: GPL-2.0
/* The array of emulated cards. */
#include <linux/slab.h>

#include "card.h"
#include "params.h"

struct nicoff_card *nicoff_cards;
unsigned int nicoff_num_cards;

int nicoff_cards_init(void)
{
	unsigned int i;

	nicoff_cards = kcalloc(nicoff_nics, sizeof(*nicoff_cards), GFP_KERNEL);
	if (!nicoff_cards)
		return -ENOMEM;
	nicoff_num_cards = nicoff_nics;
	for (i = 0; i < nicoff_num_cards; i++) {
		struct nicoff_card *card = &nicoff_cards[i];

		card->id = i;
		mutex_init(&card->lock);
		INIT_LIST_HEAD(&card->ports);
		card->port_tab = kcalloc(nicoff_ports, sizeof(*card->port_tab), GFP_KERNEL);
		if (!card->port_tab) {
			nicoff_cards_exit();
			return -ENOMEM;
		}
	}
	return 0;
}

void nicoff_cards_exit(void)
{
	unsigned int i;

	for (i = 0; i < nicoff_num_cards; i++) {
		kfree(nicoff_cards[i].port_tab);
		mutex_destroy(&nicoff_cards[i].lock);
	}
	kfree(nicoff_cards);
	nicoff_cards = NULL;
	nicoff_num_cards = 0;
}
