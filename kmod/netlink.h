/* SPDX-License-Identifier: GPL-2.0 */
#ifndef NICOFF_NETLINK_H
#define NICOFF_NETLINK_H

int nicoff_netlink_init(void);
void nicoff_netlink_exit(void);

#endif
