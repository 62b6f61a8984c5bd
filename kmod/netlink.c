// SPDX-License-Identifier: GPL-2.0
/*
 * The generic netlink family "nicoff": what tools see of the module and of
 * each card (counters, fault injection, settings), and the knobs they may
 * turn (faults, a card's settings; CAP_NET_ADMIN).  Strict policies: unknown attributes and
 * out-of-range values are refused before a handler runs.
 */
#include <net/genetlink.h>
#include <uapi/nicoff.h>

#include "netlink.h"
#include "card.h"
#include "port.h"
#include "mr.h"
#include "params.h"
#include "fw.h"

static struct genl_family nicoff_genl_family;

/* Not const: the 6.1 policy macros take a plain pointer. */
static struct netlink_range_validation nicoff_ppm_range = { .max = FW_FAULT_PPM };
static struct netlink_range_validation nicoff_delay_range = {
	.max = NICOFF_MAX_FAULT_DELAY_USECS,
};

static const struct nla_policy nicoff_fault_policy[NICOFF_NL_FAULT_MAX + 1] = {
	[NICOFF_NL_FAULT_DROP_PPM] = NLA_POLICY_FULL_RANGE(NLA_U32, &nicoff_ppm_range),
	[NICOFF_NL_FAULT_DUP_PPM] = NLA_POLICY_FULL_RANGE(NLA_U32, &nicoff_ppm_range),
	[NICOFF_NL_FAULT_CORRUPT_PPM] = NLA_POLICY_FULL_RANGE(NLA_U32, &nicoff_ppm_range),
	[NICOFF_NL_FAULT_REORDER_PPM] = NLA_POLICY_FULL_RANGE(NLA_U32, &nicoff_ppm_range),
	[NICOFF_NL_FAULT_DELAY_PPM] = NLA_POLICY_FULL_RANGE(NLA_U32, &nicoff_ppm_range),
	[NICOFF_NL_FAULT_DELAY_USECS] = NLA_POLICY_FULL_RANGE(NLA_U32, &nicoff_delay_range),
	[NICOFF_NL_FAULT_GLOBAL] = { .type = NLA_FLAG },
};

static const struct nla_policy nicoff_policy[NICOFF_NL_A_MAX + 1] = {
	[NICOFF_NL_A_CARD] = { .type = NLA_U32 },
	[NICOFF_NL_A_FAULTS] = NLA_POLICY_NESTED(nicoff_fault_policy),
	[NICOFF_NL_A_BCAST_HW] = NLA_POLICY_MAX(NLA_U32, 1),
};

static int nicoff_put_faults(struct sk_buff *skb, const struct fw_fault_cfg *cfg, bool global)
{
	struct nlattr *nest = nla_nest_start(skb, NICOFF_NL_A_FAULTS);

	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, NICOFF_NL_FAULT_DROP_PPM, cfg->drop_ppm) ||
	    nla_put_u32(skb, NICOFF_NL_FAULT_DUP_PPM, cfg->dup_ppm) ||
	    nla_put_u32(skb, NICOFF_NL_FAULT_CORRUPT_PPM, cfg->corrupt_ppm) ||
	    nla_put_u32(skb, NICOFF_NL_FAULT_REORDER_PPM, cfg->reorder_ppm) ||
	    nla_put_u32(skb, NICOFF_NL_FAULT_DELAY_PPM, cfg->delay_ppm) ||
	    nla_put_u32(skb, NICOFF_NL_FAULT_DELAY_USECS, cfg->delay_ns / NSEC_PER_USEC) ||
	    (global && nla_put_flag(skb, NICOFF_NL_FAULT_GLOBAL))) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/* The counters the module's fabric keeps for a card: the list's HOST entries. */
struct nicoff_host_stats {
	u64
#define NICOFF_NL_STAT_FW(attr, name)
#define NICOFF_NL_STAT_HOST(attr, name)	name,
#include <uapi/nicoff_lists.h>
#undef NICOFF_NL_STAT_FW
#undef NICOFF_NL_STAT_HOST
	end[0];		/* closes the list */
};

static struct nicoff_host_stats nicoff_host_stats(struct nicoff_card *card)
{
	const struct fw_fault_counts *fc = &card->faults.counts;

	lockdep_assert_held(&card->lock);
	return (struct nicoff_host_stats) {
		.fault_drops = fc->drops,
		.fault_dups = fc->dups,
		.fault_corrupts = fc->corrupts,
		.fault_reorders = fc->reorders,
		.fault_delays = fc->delays,
		.no_route = card->fabric_stats.no_route,
	};
}

static struct fw_stats nicoff_fw_stats(struct nicoff_card *card)
{
	struct fw_stats st;

	fw_get_stats(card->fw, &st);
	return st;
}

/* Every counter of uapi/nicoff_lists.h, in attribute order, one snapshot. */
static int nicoff_put_stats(struct sk_buff *skb, struct nicoff_card *card)
{
	const struct fw_stats st = nicoff_fw_stats(card);
	const struct nicoff_host_stats hs = nicoff_host_stats(card);
	const u64 list[NICOFF_NL_STAT_MAX + 1] = {
#define NICOFF_NL_STAT_FW(attr, name) \
	[NICOFF_NL_STAT_##attr] = st.name,
#define NICOFF_NL_STAT_HOST(attr, name) \
	[NICOFF_NL_STAT_##attr] = hs.name,
#include <uapi/nicoff_lists.h>
#undef NICOFF_NL_STAT_FW
#undef NICOFF_NL_STAT_HOST
	};
	struct nlattr *nest;
	int i;

	nest = nla_nest_start(skb, NICOFF_NL_A_STATS);
	if (!nest)
		return -EMSGSIZE;
	for (i = NICOFF_NL_STAT_PAD + 1; i <= NICOFF_NL_STAT_MAX; i++) {
		if (nla_put_u64_64bit(skb, i, list[i], NICOFF_NL_STAT_PAD)) {
			nla_nest_cancel(skb, nest);
			return -EMSGSIZE;
		}
	}
	nla_nest_end(skb, nest);
	return 0;
}

/* A card's state, read under its lock so the counters are one snapshot. */
static int nicoff_fill_card(struct sk_buff *skb, struct nicoff_card *card, u32 portid, u32 seq,
			    int flags)
{
	struct fw_fault_cfg cfg;
	unsigned int open = 0;
	struct nicoff_port *port;
	bool global;
	void *hdr;
	int ret;

	hdr = genlmsg_put(skb, portid, seq, &nicoff_genl_family, flags, NICOFF_NL_CMD_GET_CARD);
	if (!hdr)
		return -EMSGSIZE;
	mutex_lock(&card->lock);
	list_for_each_entry(port, &card->ports, node)
		open++;
	global = !card->fault_override;
	nicoff_fault_config(card, &cfg);
	ret = nla_put_u32(skb, NICOFF_NL_A_CARD, card->id) ? -EMSGSIZE : 0;
	if (!ret)
		ret = nla_put_u32(skb, NICOFF_NL_A_PORTS_OPEN, open) ? -EMSGSIZE : 0;
	if (!ret)
		ret = nicoff_put_stats(skb, card);
	if (!ret)
		ret = nicoff_put_faults(skb, &cfg, global);
	if (!ret)
		ret = nla_put_u32(skb, NICOFF_NL_A_BCAST_HW, card->bcast_hw) ? -EMSGSIZE : 0;
	mutex_unlock(&card->lock);
	if (ret) {
		genlmsg_cancel(skb, hdr);
		return ret;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static struct nicoff_card *nicoff_nl_card(struct genl_info *info)
{
	u32 id;

	if (!info->attrs[NICOFF_NL_A_CARD]) {
		NL_SET_ERR_MSG(info->extack, "card attribute required");
		return ERR_PTR(-EINVAL);
	}
	id = nla_get_u32(info->attrs[NICOFF_NL_A_CARD]);
	if (id >= nicoff_num_cards) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[NICOFF_NL_A_CARD], "no such card");
		return ERR_PTR(-ENODEV);
	}
	return &nicoff_cards[id];
}

static int nicoff_nl_get_card(struct sk_buff *skb, struct genl_info *info)
{
	struct nicoff_card *card = nicoff_nl_card(info);
	struct sk_buff *msg;
	int ret;

	if (IS_ERR(card))
		return PTR_ERR(card);
	msg = nlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	ret = nicoff_fill_card(msg, card, info->snd_portid, info->snd_seq, 0);
	if (ret) {
		nlmsg_free(msg);
		return ret;
	}
	return genlmsg_reply(msg, info);
}

static int nicoff_nl_dump_cards(struct sk_buff *skb, struct netlink_callback *cb)
{
	unsigned long i;

	for (i = cb->args[0]; i < nicoff_num_cards; i++) {
		if (nicoff_fill_card(skb, &nicoff_cards[i], NETLINK_CB(cb->skb).portid,
				     cb->nlh->nlmsg_seq, NLM_F_MULTI))
			break;
	}
	cb->args[0] = i;
	return skb->len;
}

static int nicoff_nl_get_info(struct sk_buff *skb, struct genl_info *info)
{
	struct fw_fault_cfg cfg;
	struct sk_buff *msg;
	void *hdr;

	msg = nlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &nicoff_genl_family, 0, NICOFF_NL_CMD_GET_INFO);
	if (!hdr)
		goto nospace;
	nicoff_fault_global(&cfg);
	if (nla_put_u32(msg, NICOFF_NL_A_NUM_CARDS, nicoff_num_cards) ||
	    nla_put_u32(msg, NICOFF_NL_A_ABI_VERSION, NICOFF_ABI_VERSION) ||
	    nla_put_u64_64bit(msg, NICOFF_NL_A_PINNED_PAGES, atomic64_read(&nicoff_pinned_pages),
			      NICOFF_NL_A_PAD) ||
	    nicoff_put_faults(msg, &cfg, true))
		goto nospace;
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
nospace:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

/* Attributes left out keep their current value. */
static void nicoff_faults_update(struct fw_fault_cfg *cfg, void *arg)
{
	struct nlattr **tb = arg;

	if (tb[NICOFF_NL_FAULT_DROP_PPM])
		cfg->drop_ppm = nla_get_u32(tb[NICOFF_NL_FAULT_DROP_PPM]);
	if (tb[NICOFF_NL_FAULT_DUP_PPM])
		cfg->dup_ppm = nla_get_u32(tb[NICOFF_NL_FAULT_DUP_PPM]);
	if (tb[NICOFF_NL_FAULT_CORRUPT_PPM])
		cfg->corrupt_ppm = nla_get_u32(tb[NICOFF_NL_FAULT_CORRUPT_PPM]);
	if (tb[NICOFF_NL_FAULT_REORDER_PPM])
		cfg->reorder_ppm = nla_get_u32(tb[NICOFF_NL_FAULT_REORDER_PPM]);
	if (tb[NICOFF_NL_FAULT_DELAY_PPM])
		cfg->delay_ppm = nla_get_u32(tb[NICOFF_NL_FAULT_DELAY_PPM]);
	if (tb[NICOFF_NL_FAULT_DELAY_USECS])
		cfg->delay_ns = nla_get_u32(tb[NICOFF_NL_FAULT_DELAY_USECS]) * NSEC_PER_USEC;
}

static int nicoff_nl_set_faults(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *tb[NICOFF_NL_FAULT_MAX + 1];
	struct nicoff_card *card;
	struct fw_fault_cfg cfg;
	int ret;

	if (!info->attrs[NICOFF_NL_A_FAULTS]) {
		NL_SET_ERR_MSG(info->extack, "faults attribute required");
		return -EINVAL;
	}
	ret = nla_parse_nested(tb, NICOFF_NL_FAULT_MAX, info->attrs[NICOFF_NL_A_FAULTS],
			       nicoff_fault_policy, info->extack);
	if (ret)
		return ret;

	if (!info->attrs[NICOFF_NL_A_CARD]) {
		if (tb[NICOFF_NL_FAULT_GLOBAL]) {
			NL_SET_ERR_MSG(info->extack, "global flag needs a card");
			return -EINVAL;
		}
		nicoff_fault_update_global(nicoff_faults_update, tb);
		return 0;
	}
	card = nicoff_nl_card(info);
	if (IS_ERR(card))
		return PTR_ERR(card);
	mutex_lock(&card->lock);
	if (tb[NICOFF_NL_FAULT_GLOBAL]) {
		card->fault_override = false;
	} else {
		nicoff_fault_config(card, &cfg);
		nicoff_faults_update(&cfg, tb);
		card->fault_cfg = cfg;
		card->fault_override = true;
	}
	mutex_unlock(&card->lock);
	return 0;
}

/* A card's settings; the policy has checked each value's range. */
static int nicoff_nl_set_card(struct sk_buff *skb, struct genl_info *info)
{
	struct nicoff_card *card = nicoff_nl_card(info);
	int ret;

	if (IS_ERR(card))
		return PTR_ERR(card);
	if (!info->attrs[NICOFF_NL_A_BCAST_HW]) {
		NL_SET_ERR_MSG(info->extack, "nothing to set: bcast_hw attribute required");
		return -EINVAL;
	}
	mutex_lock(&card->lock);
	ret = nicoff_card_set_bcast_hw(card, nla_get_u32(info->attrs[NICOFF_NL_A_BCAST_HW]));
	mutex_unlock(&card->lock);
	if (ret)
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[NICOFF_NL_A_BCAST_HW],
				    "the firmware refused bcast_hw");
	return ret;
}

static const struct genl_small_ops nicoff_genl_ops[] = {
	{
		.cmd = NICOFF_NL_CMD_GET_INFO,
		.doit = nicoff_nl_get_info,
	},
	{
		.cmd = NICOFF_NL_CMD_GET_CARD,
		.doit = nicoff_nl_get_card,
		.dumpit = nicoff_nl_dump_cards,
	},
	{
		.cmd = NICOFF_NL_CMD_SET_FAULTS,
		.doit = nicoff_nl_set_faults,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = NICOFF_NL_CMD_SET_CARD,
		.doit = nicoff_nl_set_card,
		.flags = GENL_ADMIN_PERM,
	},
};

static struct genl_family nicoff_genl_family __ro_after_init = {
	.name = NICOFF_GENL_NAME,
	.version = NICOFF_GENL_VERSION,
	.maxattr = NICOFF_NL_A_MAX,
	.policy = nicoff_policy,
	.module = THIS_MODULE,
	.small_ops = nicoff_genl_ops,
	.n_small_ops = ARRAY_SIZE(nicoff_genl_ops),
	/* A new family: strict validation of every command. */
	.resv_start_op = NICOFF_NL_CMD_GET_INFO,
};

int __init nicoff_netlink_init(void)
{
	return genl_register_family(&nicoff_genl_family);
}

void nicoff_netlink_exit(void)
{
	genl_unregister_family(&nicoff_genl_family);
}
