// SPDX-License-Identifier: GPL-2.0
/*
 * nicoff: a programmable network card emulated in Linux.
 *
 * Bring-up order: tunables, cards, card threads, then the devices users
 * can open; teardown runs the same steps backwards.
 */
#include <linux/module.h>
#include <linux/init.h>

#include "params.h"
#include "card.h"
#include "chardev.h"
#include "netlink.h"

static int __init nicoff_init(void)
{
	int ret;

	ret = nicoff_params_check();
	if (ret)
		return ret;
	ret = nicoff_cards_init();
	if (ret)
		return ret;
	ret = nicoff_engines_start();
	if (ret)
		goto out_cards;
	ret = nicoff_chardev_init();
	if (ret)
		goto out_engines;
	ret = nicoff_netlink_init();
	if (ret)
		goto out_chardev;
	pr_info("nicoff: %u cards, %u ports each\n", nicoff_num_cards, nicoff_ports);
	return 0;

out_chardev:
	nicoff_chardev_exit();
out_engines:
	nicoff_engines_stop();
out_cards:
	nicoff_cards_exit();
	return ret;
}

static void __exit nicoff_exit(void)
{
	nicoff_netlink_exit();
	nicoff_chardev_exit();
	nicoff_engines_stop();
	nicoff_cards_exit();
}

module_init(nicoff_init);
module_exit(nicoff_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("nicoff: emulated programmable NIC for offloaded communication");
MODULE_AUTHOR("The nicoff developers");
MODULE_VERSION("0.1.0");
