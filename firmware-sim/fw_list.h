/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An intrusive, circular, doubly linked list: the node lives inside the
 * object, so queueing never allocates.
 */
#ifndef NICOFF_FW_LIST_H
#define NICOFF_FW_LIST_H

#include "fw_util.h"

struct fw_list {
	struct fw_list *next, *prev;
};

#define fw_list_entry(ptr, type, member)	fw_container_of(ptr, type, member)

static inline void fw_list_init(struct fw_list *head)
{
	head->next = head;
	head->prev = head;
}

static inline bool fw_list_empty(const struct fw_list *head)
{
	return head->next == head;
}

static inline void fw_list_insert(struct fw_list *node, struct fw_list *prev,
				  struct fw_list *next)
{
	node->next = next;
	node->prev = prev;
	prev->next = node;
	next->prev = node;
}

static inline void fw_list_add_tail(struct fw_list *node, struct fw_list *head)
{
	fw_list_insert(node, head->prev, head);
}

static inline void fw_list_add_head(struct fw_list *node, struct fw_list *head)
{
	fw_list_insert(node, head, head->next);
}

/* Unlink and leave the node pointing at itself, so a second del is harmless. */
static inline void fw_list_del(struct fw_list *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	fw_list_init(node);
}

/* Whether a node initialised with fw_list_init() is on some list. */
static inline bool fw_list_linked(const struct fw_list *node)
{
	return node->next != node;
}

#endif
