// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A kernel ULP for guest.cm_robust that makes iw_cm drop a connection
 * request the device has already handed over.  iw_cm runs every event on
 * one ordered workqueue and drops the events still queued for a cm_id
 * being destroyed; it then never accepts or rejects the request.
 *
 *   insmod xiw_cm_hold.ko addr=192.0.2.2 port_held=7497 port_dropped=7498
 *
 * It listens with rdma_cm on both ports.  The CONNECT_REQUEST of the
 * first connection to port_held blocks iw_cm's queue (at most 30 s);
 * meanwhile a request to port_dropped is queued behind it.  Then
 *   echo 1 >/sys/module/xiw_cm_hold/parameters/release
 * destroys the port_dropped listener from another thread.  iw_cm marks
 * its events dropped and waits for its queue; a second later the held
 * handler rejects its own request and the queue moves on.  A request
 * that port_dropped's listener does get is rejected and logged.
 */
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/workqueue.h>
#include <rdma/rdma_cm.h>

MODULE_DESCRIPTION("xiw test: a ULP whose listener dies with a request queued in iw_cm");
MODULE_LICENSE("Dual BSD/GPL");

static char *addr = "192.0.2.2";
module_param(addr, charp, 0444);
static ushort port_held = 7497;
module_param(port_held, ushort, 0444);
static ushort port_dropped = 7498;
module_param(port_dropped, ushort, 0444);

static struct rdma_cm_id *held_id;
static struct rdma_cm_id *dropped_id;
static DEFINE_MUTEX(dropped_lock);	/* dropped_id */
static DECLARE_COMPLETION(destroying);

static void hold_destroy_dropped(void)
{
	mutex_lock(&dropped_lock);
	if (dropped_id) {
		pr_info("xiw_cm_hold: destroying the listener on port %u\n",
			port_dropped);
		complete_all(&destroying);
		/* Waits for iw_cm's queue, that is for the held handler. */
		rdma_destroy_id(dropped_id);
		dropped_id = NULL;
		pr_info("xiw_cm_hold: listener on port %u destroyed\n",
			port_dropped);
	}
	mutex_unlock(&dropped_lock);
}

static void hold_release_work(struct work_struct *work)
{
	hold_destroy_dropped();
}

static DECLARE_WORK(release_work, hold_release_work);

static int hold_release(const char *val, const struct kernel_param *kp)
{
	schedule_work(&release_work);
	return 0;
}

static const struct kernel_param_ops hold_release_ops = {
	.set = hold_release,
};
module_param_cb(release, &hold_release_ops, NULL, 0200);

/* A nonzero return makes rdma_cm destroy the new cm_id: a reject. */
static int hold_held_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return 0;
	pr_info("xiw_cm_hold: holding iw_cm's event queue\n");
	if (!wait_for_completion_timeout(&destroying, 30 * HZ))
		pr_info("xiw_cm_hold: not released in 30 s\n");
	/* Past the moment iw_cm marks the listener's events dropped. */
	msleep(1000);
	return -ECONNREFUSED;
}

static int hold_dropped_handler(struct rdma_cm_id *id,
				struct rdma_cm_event *ev)
{
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return 0;
	pr_info("xiw_cm_hold: request on port %u delivered, rejected\n",
		port_dropped);
	return -ECONNREFUSED;
}

static struct rdma_cm_id *hold_listen(rdma_cm_event_handler handler,
				      u16 port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	struct rdma_cm_id *id;
	int err;

	if (!in4_pton(addr, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL))
		return ERR_PTR(-EINVAL);
	id = rdma_create_id(&init_net, handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return id;
	err = rdma_bind_addr(id, (struct sockaddr *)&sin);
	if (!err)
		err = rdma_listen(id, 4);
	if (err) {
		rdma_destroy_id(id);
		return ERR_PTR(err);
	}
	return id;
}

static int __init hold_init(void)
{
	held_id = hold_listen(hold_held_handler, port_held);
	if (IS_ERR(held_id))
		return PTR_ERR(held_id);
	dropped_id = hold_listen(hold_dropped_handler, port_dropped);
	if (IS_ERR(dropped_id)) {
		rdma_destroy_id(held_id);
		return PTR_ERR(dropped_id);
	}
	pr_info("xiw_cm_hold: listening on %s ports %u and %u\n", addr,
		port_held, port_dropped);
	return 0;
}

static void __exit hold_exit(void)
{
	/* rdma_destroy_id() waits for a handler still running. */
	complete_all(&destroying);
	flush_work(&release_work);
	hold_destroy_dropped();
	rdma_destroy_id(held_id);
}

module_init(hold_init);
module_exit(hold_exit);
