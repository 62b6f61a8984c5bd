/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A card's process groups of one engine, by (port, group id).  Each
 * engine that keeps per-group state (the barrier's groups, the
 * broadcast's) embeds a struct fw_gent in it and owns one table.  The
 * chains are by group id alone: a packet multicast to a card concerns
 * every member port the card has in that group, so that walk stays short.
 * A destroyed or detached group may linger as a zombie (to finish what its
 * peers still ask of it) beside a new live one under the same name.
 */
#ifndef NICOFF_FW_GROUPTAB_H
#define NICOFF_FW_GROUPTAB_H

#include "fw_util.h"

#define FW_GTAB_BITS	5

struct fw_gent {
	struct fw_gent *next;	/* hash chain */
	u32 port;
	u32 id;
	bool zombie;		/* destroyed or detached: lingers, found only when asked */
};

struct fw_gtab {
	struct fw_gent *hash[1u << FW_GTAB_BITS];
};

/* The live group of (port, id) or, if @zombies, a zombie when none is live. */
struct fw_gent *fw_gtab_find(const struct fw_gtab *t, u32 port, u32 id, bool zombies);
/* The first entry of @id's chain: walk on with ->next, checking ->id. */
struct fw_gent *fw_gtab_chain(const struct fw_gtab *t, u32 id);
void fw_gtab_add(struct fw_gtab *t, struct fw_gent *e);
void fw_gtab_del(struct fw_gtab *t, struct fw_gent *e);
/* Every entry, in no particular order: @e NULL gives the first; NULL after the last. */
struct fw_gent *fw_gtab_next(const struct fw_gtab *t, const struct fw_gent *e);
/* Live groups of @port. */
u32 fw_gtab_live(const struct fw_gtab *t, u32 port);

#endif
