/* SPDX-License-Identifier: GPL-2.0 */
#ifndef NICOFF_CHARDEV_H
#define NICOFF_CHARDEV_H

int nicoff_chardev_init(void);
void nicoff_chardev_exit(void);

#endif
