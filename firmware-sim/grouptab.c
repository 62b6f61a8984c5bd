// SPDX-License-Identifier: GPL-2.0
/*
 * The per-engine table of a card's process groups (see grouptab.h).
 */
#include "grouptab.h"

static u32 fw_gtab_hash(u32 id)
{
	return (id * 0x9e3779b1u) >> (32 - FW_GTAB_BITS);
}

struct fw_gent *fw_gtab_find(const struct fw_gtab *t, u32 port, u32 id, bool zombies)
{
	struct fw_gent *e, *z = NULL;

	for (e = t->hash[fw_gtab_hash(id)]; e; e = e->next) {
		if (e->port != port || e->id != id)
			continue;
		if (!e->zombie)
			return e;
		z = e;
	}
	return zombies ? z : NULL;
}

struct fw_gent *fw_gtab_chain(const struct fw_gtab *t, u32 id)
{
	return t->hash[fw_gtab_hash(id)];
}

void fw_gtab_add(struct fw_gtab *t, struct fw_gent *e)
{
	struct fw_gent **head = &t->hash[fw_gtab_hash(e->id)];

	e->next = *head;
	*head = e;
}

void fw_gtab_del(struct fw_gtab *t, struct fw_gent *e)
{
	struct fw_gent **pp = &t->hash[fw_gtab_hash(e->id)];

	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
}

struct fw_gent *fw_gtab_next(const struct fw_gtab *t, const struct fw_gent *e)
{
	u32 i = 0;

	if (e) {
		if (e->next)
			return e->next;
		i = fw_gtab_hash(e->id) + 1;
	}
	for (; i < (1u << FW_GTAB_BITS); i++)
		if (t->hash[i])
			return t->hash[i];
	return NULL;
}

u32 fw_gtab_live(const struct fw_gtab *t, u32 port)
{
	const struct fw_gent *e;
	u32 n = 0;

	for (e = fw_gtab_next(t, NULL); e; e = fw_gtab_next(t, e))
		n += e->port == port && !e->zombie;
	return n;
}
