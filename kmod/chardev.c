// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/nicoffN: one character device per card in one region, a class for
 * udev, and the file operations that turn an open file into a port.
 */
#include <linux/fs.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/poll.h>
#include <linux/mm.h>
#include <uapi/nicoff.h>

#include "chardev.h"
#include "compat.h"
#include "card.h"
#include "port.h"
#include "mr.h"
#include "params.h"

static dev_t nicoff_devt;
static struct cdev nicoff_cdev;
static NICOFF_CLASS_SHOW(pinned_pages_show)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&nicoff_pinned_pages));
}
static CLASS_ATTR_RO(pinned_pages);

static struct attribute *nicoff_class_attrs[] = {
	&class_attr_pinned_pages.attr,
	NULL,
};
ATTRIBUTE_GROUPS(nicoff_class);

static struct class nicoff_class = {
	.name = "nicoff",
	NICOFF_CLASS_OWNER
	.class_groups = nicoff_class_groups,
};

static int nicoff_open(struct inode *inode, struct file *file)
{
	unsigned int minor = iminor(inode);
	struct nicoff_file *f;

	if (minor >= nicoff_num_cards)
		return -ENODEV;
	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;
	f->card = &nicoff_cards[minor];
	mutex_init(&f->lock);
	file->private_data = f;
	return nonseekable_open(inode, file);
}

static int nicoff_release(struct inode *inode, struct file *file)
{
	struct nicoff_file *f = file->private_data;

	if (f->port)
		nicoff_port_close(f->port);
	mutex_destroy(&f->lock);
	kfree(f);
	return 0;
}

static struct nicoff_port *nicoff_file_port(struct file *file)
{
	struct nicoff_file *f = file->private_data;

	/* Pairs with the release in PORT_OPEN: the port is fully set up. */
	return smp_load_acquire(&f->port);
}

static long nicoff_ioctl_query(struct nicoff_file *f, void __user *arg)
{
	struct nicoff_query q = {
		.abi_version = NICOFF_ABI_VERSION,
		.card = f->card->id,
		.num_cards = nicoff_num_cards,
		.max_ports = nicoff_ports,
		.max_ring_entries = nicoff_max_ring_entries,
		.max_mrs = nicoff_max_mrs,
	};

	return copy_to_user(arg, &q, sizeof(q)) ? -EFAULT : 0;
}

static long nicoff_ioctl_port_open(struct nicoff_file *f, void __user *arg)
{
	struct nicoff_port_open req;
	struct nicoff_port *port;
	long ret;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	mutex_lock(&f->lock);
	if (f->port) {
		ret = -EBUSY;
		goto out;
	}
	ret = nicoff_port_open(f->card, &req, &port);
	if (ret)
		goto out;
	if (copy_to_user(arg, &req, sizeof(req))) {
		nicoff_port_close(port);
		ret = -EFAULT;
		goto out;
	}
	/* Publish a fully set up port to the other ioctls, mmap and poll. */
	smp_store_release(&f->port, port);
out:
	mutex_unlock(&f->lock);
	return ret;
}

static long nicoff_ioctl(struct file *file, unsigned int cmd, unsigned long uarg)
{
	struct nicoff_file *f = file->private_data;
	void __user *arg = (void __user *)uarg;
	struct nicoff_port *port;

	if (cmd == NICOFF_IOC_QUERY)
		return nicoff_ioctl_query(f, arg);
	if (cmd == NICOFF_IOC_PORT_OPEN)
		return nicoff_ioctl_port_open(f, arg);

	port = nicoff_file_port(file);
	switch (cmd) {
	case NICOFF_IOC_KICK:
		if (!port)
			return -ENOTCONN;
		atomic64_inc(&port->kicks);
		nicoff_engine_kick(port->card->engine);
		return 0;
	case NICOFF_IOC_REG_MR: {
		struct nicoff_reg_mr req;
		struct nicoff_mr *mr;

		if (!port)
			return -ENOTCONN;
		/* Acquire: pairs with nicoff_port_fail(), the ring flags say so too. */
		if (smp_load_acquire(&port->error))
			return -EIO;
		if (copy_from_user(&req, arg, sizeof(req)))
			return -EFAULT;
		mr = nicoff_mr_register(port, &req);
		if (IS_ERR(mr))
			return PTR_ERR(mr);
		/* Nobody sees the region before its owner can know it. */
		if (copy_to_user(arg, &req, sizeof(req))) {
			nicoff_mr_abort(port, mr);
			return -EFAULT;
		}
		nicoff_mr_publish(port, mr);
		return 0;
	}
	case NICOFF_IOC_DEREG_MR: {
		struct nicoff_dereg_mr req;

		if (!port)
			return -ENOTCONN;
		if (copy_from_user(&req, arg, sizeof(req)))
			return -EFAULT;
		if (req.reserved)
			return -EINVAL;
		if (current->mm != port->mm)
			return -EPERM;
		return nicoff_mr_deregister(port, req.handle);
	}
	case NICOFF_IOC_PORT_STATS: {
		struct nicoff_port_stats st = {};

		if (!port)
			return -ENOTCONN;
		nicoff_port_stats(port, &st);
		return copy_to_user(arg, &st, sizeof(st)) ? -EFAULT : 0;
	}
	default:
		return -ENOTTY;
	}
}

static int nicoff_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct nicoff_port *port = nicoff_file_port(file);
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;

	if (!port)
		return -ENOTCONN;
	/* As for REG_MR: the rings belong to the address space that opened the port. */
	if (current->mm != port->mm)
		return -EPERM;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (off == NICOFF_MMAP_CMD_RING)
		return nicoff_ring_mmap(&port->cmd, vma);
	if (off == NICOFF_MMAP_CQ_RING)
		return nicoff_ring_mmap(&port->cq, vma);
	return -EINVAL;
}

static __poll_t nicoff_poll(struct file *file, poll_table *wait)
{
	struct nicoff_port *port = nicoff_file_port(file);
	__poll_t mask = 0;

	if (!port)
		return EPOLLERR;
	poll_wait(file, &port->wq, wait);
	/* Acquire: pairs with nicoff_port_fail(), the ring flags say so too. */
	if (smp_load_acquire(&port->error))
		mask |= EPOLLERR;
	if (nicoff_port_cq_ready(port))
		mask |= EPOLLIN | EPOLLRDNORM;
	return mask;
}

static const struct file_operations nicoff_fops = {
	.owner = THIS_MODULE,
	.open = nicoff_open,
	.release = nicoff_release,
	.unlocked_ioctl = nicoff_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = nicoff_mmap,
	.poll = nicoff_poll,
};

int nicoff_chardev_init(void)
{
	unsigned int i;
	int ret;

	ret = alloc_chrdev_region(&nicoff_devt, 0, nicoff_num_cards, "nicoff");
	if (ret)
		return ret;
	cdev_init(&nicoff_cdev, &nicoff_fops);
	nicoff_cdev.owner = THIS_MODULE;
	ret = cdev_add(&nicoff_cdev, nicoff_devt, nicoff_num_cards);
	if (ret)
		goto out_region;
	ret = class_register(&nicoff_class);
	if (ret)
		goto out_cdev;
	for (i = 0; i < nicoff_num_cards; i++) {
		struct device *dev;

		dev = device_create(&nicoff_class, NULL, MKDEV(MAJOR(nicoff_devt), i),
				    &nicoff_cards[i], "nicoff%u", i);
		if (IS_ERR(dev)) {
			ret = PTR_ERR(dev);
			goto out_devices;
		}
		nicoff_cards[i].dev = dev;
	}
	return 0;

out_devices:
	while (i--)
		device_destroy(&nicoff_class, MKDEV(MAJOR(nicoff_devt), i));
	class_unregister(&nicoff_class);
out_cdev:
	cdev_del(&nicoff_cdev);
out_region:
	unregister_chrdev_region(nicoff_devt, nicoff_num_cards);
	return ret;
}

void nicoff_chardev_exit(void)
{
	unsigned int i;

	for (i = 0; i < nicoff_num_cards; i++)
		device_destroy(&nicoff_class, MKDEV(MAJOR(nicoff_devt), i));
	class_unregister(&nicoff_class);
	cdev_del(&nicoff_cdev);
	unregister_chrdev_region(nicoff_devt, nicoff_num_cards);
}
