/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The differences between the kernels nicoff builds against, in one place.
 * Built and tested on Debian's 6.1 and 6.12; the version each change came
 * with is the mainline release that made it.
 */
#ifndef NICOFF_COMPAT_H
#define NICOFF_COMPAT_H

#include <linux/version.h>
#include <linux/mm.h>

/* 6.3 made vma->vm_flags read-only: flags change through vm_flags_set(). */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}
#endif

/*
 * 6.4 dropped struct class's module owner (the class pins no module) and
 * made the class argument of class attribute callbacks const.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
#define NICOFF_CLASS_OWNER	.owner = THIS_MODULE,
#define NICOFF_CLASS_SHOW(fn)	\
	ssize_t fn(struct class *cls, struct class_attribute *attr, char *buf)
#else
#define NICOFF_CLASS_OWNER
#define NICOFF_CLASS_SHOW(fn)	\
	ssize_t fn(const struct class *cls, const struct class_attribute *attr, char *buf)
#endif

#endif
