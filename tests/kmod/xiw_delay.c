// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A race window made wide, for tests of races that last a few
 * instructions: a kprobe at each named instruction, or as each named
 * function returns, busy-waits there.
 *
 *   insmod xiw_delay.ko sites=xiw_rx_end_read_response+0x66 delay_us=3000
 *   insmod xiw_delay.ko returns=xiw_get_qp delay_us=50000
 *
 * sites: "symbol+offset" instruction addresses (found with objdump by the
 * test: where a lock was just dropped); returns: function names (what a
 * caller does with their result next).  Up to 8 of each, comma-separated.
 * The load fails if any cannot be probed, so a test never runs without
 * its window.  The delay busy-waits in whatever context it is in (softirq,
 * interrupts off), so keep it to milliseconds.  hits (read-only) counts
 * the waits begun, so a test can act while one is under way; the unload
 * logs it.
 */
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

MODULE_DESCRIPTION("xiw test: busy-waits at chosen instructions to widen race windows");
MODULE_LICENSE("Dual BSD/GPL");

#define DELAY_MAX_SITES 8
#define DELAY_MAX_US 200000

static char *sites;
module_param(sites, charp, 0444);
MODULE_PARM_DESC(sites, "symbol+offset[,symbol+offset...]: where to wait");
static char *returns;
module_param(returns, charp, 0444);
MODULE_PARM_DESC(returns, "function[,function...]: wait as it returns");
static uint delay_us = 2000;
module_param(delay_us, uint, 0444);
MODULE_PARM_DESC(delay_us, "how long each pass waits (at most 200 ms)");
static atomic_t hits = ATOMIC_INIT(0);
module_param_named(hits, hits.counter, int, 0444);
MODULE_PARM_DESC(hits, "how many waits began");

static struct kprobe probes[DELAY_MAX_SITES];
static unsigned int num_probes;
static struct kretprobe ret_probes[DELAY_MAX_SITES];
static unsigned int num_ret_probes;

static void delay_wait(void)
{
	atomic_inc(&hits);
	/* udelay() takes at most a few milliseconds (its loop count is 32-bit). */
	mdelay(delay_us / 1000);
	udelay(delay_us % 1000);
}

static int delay_pre(struct kprobe *p, struct pt_regs *regs)
{
	delay_wait();
	return 0;
}

static int delay_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	delay_wait();
	return 0;
}

static void delay_unregister(void)
{
	unsigned int i;

	for (i = 0; i < num_probes; i++) {
		unregister_kprobe(&probes[i]);
		kfree(probes[i].symbol_name);
	}
	num_probes = 0;
	for (i = 0; i < num_ret_probes; i++) {
		unregister_kretprobe(&ret_probes[i]);
		kfree(ret_probes[i].kp.symbol_name);
	}
	num_ret_probes = 0;
}

/* "symbol+0xoff" into the next probe. */
static int delay_add_site(const char *site)
{
	struct kprobe *p = &probes[num_probes];
	const char *plus = strchr(site, '+');
	unsigned long off;
	int err;

	if (num_probes == DELAY_MAX_SITES || !plus || plus == site)
		return -EINVAL;
	err = kstrtoul(plus + 1, 0, &off);
	if (err)
		return err;
	p->symbol_name = kstrndup(site, plus - site, GFP_KERNEL);
	if (!p->symbol_name)
		return -ENOMEM;
	p->offset = off;
	p->pre_handler = delay_pre;
	err = register_kprobe(p);
	if (err) {
		kfree(p->symbol_name);
		return err;
	}
	num_probes++;
	return 0;
}

/* A function whose returns wait. */
static int delay_add_return(const char *fn)
{
	struct kretprobe *rp = &ret_probes[num_ret_probes];
	int err;

	if (num_ret_probes == DELAY_MAX_SITES)
		return -EINVAL;
	rp->kp.symbol_name = kstrdup(fn, GFP_KERNEL);
	if (!rp->kp.symbol_name)
		return -ENOMEM;
	rp->handler = delay_ret;
	err = register_kretprobe(rp);
	if (err) {
		kfree(rp->kp.symbol_name);
		return err;
	}
	num_ret_probes++;
	return 0;
}

/* Each item of the comma-separated @list through @add. */
static int delay_add_all(const char *list, int (*add)(const char *))
{
	char *copy, *cur, *item;
	int err = 0;

	if (!list)
		return 0;
	copy = kstrdup(list, GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	cur = copy;
	while (!err && (item = strsep(&cur, ",")))
		if (*item) {
			err = add(item);
			if (err)
				pr_err("xiw_delay: cannot probe %s: %d\n", item, err);
		}
	kfree(copy);
	return err;
}

static int __init delay_init(void)
{
	int err;

	if (delay_us > DELAY_MAX_US)
		return -EINVAL;
	err = delay_add_all(sites, delay_add_site);
	if (!err)
		err = delay_add_all(returns, delay_add_return);
	if (!err && !num_probes && !num_ret_probes)
		err = -EINVAL;
	if (err) {
		delay_unregister();
		return err;
	}
	pr_info("xiw_delay: %u us at %s, as %s return\n", delay_us,
		sites ?: "no instruction", returns ?: "no function");
	return 0;
}

static void __exit delay_exit(void)
{
	delay_unregister();
	pr_info("xiw_delay: %d waits of %u us taken\n", atomic_read(&hits),
		delay_us);
}

module_init(delay_init);
module_exit(delay_exit);
