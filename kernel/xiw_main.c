// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiw module: device life cycle.  Devices are created on demand with
 * `rdma link add xiwN type xiw netdev IF` and follow their netdev.
 */
#include <linux/debugfs.h>
#include <linux/etherdevice.h>
#include <linux/module.h>
#include <net/addrconf.h>
#include <rdma/rdma_netlink.h>

#include "xiw.h"

MODULE_AUTHOR("The xiw authors");
MODULE_DESCRIPTION("Software iWARP RNIC with RDMAP extensions (RFC 7306)");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_VERSION(__stringify(XIW_VERSION_MAJOR) "." __stringify(XIW_VERSION_MINOR)
	       "." __stringify(XIW_VERSION_PATCH));
MODULE_ALIAS_RDMA_LINK(XIW_DRIVER_NAME);

/*
 * Out-of-tree drivers all share RDMA_DRIVER_UNKNOWN, so module exit cannot
 * use ib_unregister_driver() without taking other drivers' devices along:
 * xiw keeps its own list.
 */
static LIST_HEAD(xiw_devices);
static DEFINE_MUTEX(xiw_devices_lock);

static const struct ib_device_ops xiw_device_ops;

static void xiw_dealloc_driver(struct ib_device *ibdev)
{
	struct xiw_device *xdev = to_xiw_dev(ibdev);

	mutex_lock(&xiw_devices_lock);
	list_del_init(&xdev->devices_entry);
	mutex_unlock(&xiw_devices_lock);

	xiw_cm_device_gone(xdev);
	/* MRs freed by their last data path user release pages through us. */
	flush_workqueue(xiw_wq);
	WARN_ON(!xa_empty(&xdev->qp_xa));
	WARN_ON(!xa_empty(&xdev->mr_xa));
	WARN_ON(!xa_empty(&xdev->cep_xa));
	xa_destroy(&xdev->qp_xa);
	xa_destroy(&xdev->mr_xa);
	xa_destroy(&xdev->cep_xa);
}

/* Only Ethernet-like devices carry the TCP streams iWARP runs over. */
static bool xiw_netdev_qualifies(const struct net_device *netdev)
{
	return netdev->type == ARPHRD_ETHER || netdev->type == ARPHRD_NONE ||
	       netdev->type == ARPHRD_LOOPBACK;
}

static struct xiw_device *xiw_device_get_by_netdev(struct net_device *netdev)
{
	struct ib_device *ibdev;

	ibdev = ib_device_get_by_netdev(netdev, RDMA_DRIVER_UNKNOWN);
	if (!ibdev)
		return NULL;
	/* Another out-of-tree driver may sit on the same netdev. */
	if (ibdev->ops.dealloc_driver != xiw_dealloc_driver) {
		ib_device_put(ibdev);
		return NULL;
	}
	return to_xiw_dev(ibdev);
}

static void xiw_port_event(struct xiw_device *xdev, enum ib_event_type type)
{
	struct ib_event event = {
		.device = &xdev->ibdev,
		.element.port_num = 1,
		.event = type,
	};

	/*
	 * A port event makes the core re-read the port in a work item; a
	 * netdev on its way out cannot answer that, and its device goes too.
	 */
	if (xdev->netdev->reg_state != NETREG_REGISTERED)
		return;
	ib_dispatch_event(&event);
}

/*
 * The link is gone: every connection of the device is lost.  Each QP goes
 * to Error now rather than when TCP gives up minutes later.
 */
static void xiw_device_fail_qps(struct xiw_device *xdev)
{
	unsigned long index;
	struct xiw_qp *qp;

	xa_lock_irq(&xdev->qp_xa);
	xa_for_each(&xdev->qp_xa, index, qp) {
		/* The reference keeps xiw_destroy_qp() waiting for us. */
		if (!refcount_inc_not_zero(&qp->iw_refs))
			continue;
		xa_unlock_irq(&xdev->qp_xa);
		xiw_qp_fatal(qp, XIW_WC_FATAL_ERR);
		xiw_qp_put_ref(&qp->ibqp);
		xa_lock_irq(&xdev->qp_xa);
	}
	xa_unlock_irq(&xdev->qp_xa);
}

static int xiw_netdev_event(struct notifier_block *nb, unsigned long event,
			    void *arg)
{
	struct net_device *netdev = netdev_notifier_info_to_dev(arg);
	struct xiw_device *xdev;
	bool up;

	xdev = xiw_device_get_by_netdev(netdev);
	if (!xdev)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UP:
	case NETDEV_CHANGE:
		up = netif_running(netdev) && netif_carrier_ok(netdev);
		xiw_port_event(xdev, up ? IB_EVENT_PORT_ACTIVE :
					  IB_EVENT_PORT_ERR);
		break;
	case NETDEV_DOWN:
		xiw_device_fail_qps(xdev);
		xiw_port_event(xdev, IB_EVENT_PORT_ERR);
		break;
	case NETDEV_CHANGEADDR:
		xiw_port_event(xdev, IB_EVENT_GID_CHANGE);
		break;
	case NETDEV_UNREGISTER:
		/* The RTNL is held here: unregistering must not wait on it. */
		ib_unregister_device_queued(&xdev->ibdev);
		break;
	default:
		break;
	}
	ib_device_put(&xdev->ibdev);
	return NOTIFY_OK;
}

static struct notifier_block xiw_netdev_notifier = {
	.notifier_call = xiw_netdev_event,
};

/* The lock class of every device's QP table (see xiw_device_alloc()). */
static struct lock_class_key xiw_qp_xa_key;

static struct xiw_device *xiw_device_alloc(struct net_device *netdev)
{
	struct xiw_device *xdev;
	struct ib_device *ibdev;

	xdev = ib_alloc_device(xiw_device, ibdev);
	if (!xdev)
		return NULL;
	ibdev = &xdev->ibdev;
	INIT_LIST_HEAD(&xdev->devices_entry);
	/*
	 * iw_cm looks QPs up with interrupts off, under its cm_id lock, which
	 * it also takes in softirq: the QP table's lock is taken with
	 * interrupts off everywhere (xiw_get_qp()).  Its own lock class: the
	 * MR table's lock, initialised by the same inline, is not irq-safe.
	 */
	xa_init_flags(&xdev->qp_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	lockdep_set_class(&xdev->qp_xa.xa_lock, &xiw_qp_xa_key);
	xa_init_flags(&xdev->mr_xa, XA_FLAGS_ALLOC1);
	xa_init_flags(&xdev->cep_xa, XA_FLAGS_ALLOC1);
	xdev->netdev = netdev;

	/*
	 * iw_cm tells devices apart by their GID, which iWARP derives from
	 * the MAC address; a netdev without one gets a random stand-in.
	 */
	if (netdev->addr_len >= ETH_ALEN)
		ether_addr_copy(xdev->mac, netdev->dev_addr);
	else
		eth_random_addr(xdev->mac);
	addrconf_addr_eui48((u8 *)&ibdev->node_guid, xdev->mac);

	/* The provider's doorbells. */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV);
	ibdev->node_type = RDMA_NODE_RNIC;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = 1;
	strscpy(ibdev->node_desc, XIW_NODE_DESC, sizeof(ibdev->node_desc));
	strscpy(ibdev->iw_ifname, netdev->name, sizeof(ibdev->iw_ifname));
	/* xiw binds its own TCP ports; iwpmd has nothing to map. */
	ibdev->iw_driver_flags = IW_F_NO_PORT_MAP;
	ib_set_device_ops(ibdev, &xiw_device_ops);
	return xdev;
}

static int xiw_newlink(const char *ibdev_name, struct net_device *netdev)
{
	struct xiw_device *xdev;
	int err;

	if (!xiw_netdev_qualifies(netdev))
		return -EINVAL;

	xdev = xiw_device_get_by_netdev(netdev);
	if (xdev) {
		ib_device_put(&xdev->ibdev);
		return -EEXIST;
	}

	xdev = xiw_device_alloc(netdev);
	if (!xdev)
		return -ENOMEM;

	err = ib_device_set_netdev(&xdev->ibdev, netdev, 1);
	if (err)
		goto err_dealloc;

	/*
	 * Listed before registration: once registered, the device may be
	 * unregistered and freed by another thread at any moment, and
	 * xiw_dealloc_driver() takes it off the list again.
	 */
	mutex_lock(&xiw_devices_lock);
	list_add_tail(&xdev->devices_entry, &xiw_devices);
	mutex_unlock(&xiw_devices_lock);

	err = ib_register_device(&xdev->ibdev, ibdev_name, NULL);
	if (err)
		goto err_dealloc;
	return 0;

err_dealloc:
	ib_dealloc_device(&xdev->ibdev);
	return err;
}

static struct rdma_link_ops xiw_link_ops = {
	.type = XIW_DRIVER_NAME,
	.newlink = xiw_newlink,
};

static const struct ib_device_ops xiw_device_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = XIW_ABI_VERSION,

	.alloc_mr = xiw_alloc_mr,
	.alloc_pd = xiw_alloc_pd,
	.alloc_ucontext = xiw_alloc_ucontext,
	.create_cq = XIW_COMPAT_CREATE_CQ,
	.create_qp = xiw_create_qp,
	.create_srq = xiw_create_srq,
	.dealloc_driver = xiw_dealloc_driver,
	.dealloc_pd = xiw_dealloc_pd,
	.dealloc_ucontext = xiw_dealloc_ucontext,
	.dereg_mr = xiw_dereg_mr,
	.destroy_cq = xiw_destroy_cq,
	.destroy_qp = xiw_destroy_qp,
	.destroy_srq = xiw_destroy_srq,
	.disassociate_ucontext = xiw_disassociate_ucontext,
	.get_dev_fw_str = xiw_get_dev_fw_str,
	.get_dma_mr = xiw_get_dma_mr,
	.get_port_immutable = xiw_get_port_immutable,
	.iw_accept = xiw_accept,
	.iw_add_ref = xiw_iw_add_ref,
	.iw_connect = xiw_connect,
	.iw_create_listen = xiw_create_listen,
	.iw_destroy_listen = xiw_destroy_listen,
	.iw_get_qp = xiw_get_qp,
	.iw_reject = xiw_reject,
	.map_mr_sg = xiw_map_mr_sg,
	.iw_rem_ref = xiw_qp_put_ref,
	.mmap = xiw_mmap,
	.mmap_free = xiw_mmap_free,
	.modify_qp = xiw_modify_qp,
	.modify_srq = xiw_modify_srq,
	.poll_cq = xiw_poll_cq,
	.post_recv = xiw_post_recv,
	.post_send = xiw_post_send,
	.post_srq_recv = xiw_post_srq_recv,
	.query_device = xiw_query_device,
	.query_gid = xiw_query_gid,
	.query_pkey = xiw_query_pkey,
	.query_port = xiw_query_port,
	.query_qp = xiw_query_qp,
	.query_srq = xiw_query_srq,
	.reg_user_mr = xiw_reg_user_mr,
	.req_notify_cq = xiw_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_cq, xiw_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, xiw_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, xiw_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, xiw_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, xiw_ucontext, ibucontext),
};

/* Counters for tests, in /sys/kernel/debug/xiw/. */
static struct dentry *xiw_debugfs;

static int __init xiw_init_module(void)
{
	int err;

	err = xiw_wire_ops_init();
	if (err)
		return err;
	xiw_crc_select();
	/*
	 * Senders wait on sockets and locks, so not a tasklet.  Per-CPU
	 * workers: a response is framed on the CPU that took its request off
	 * the socket, without a cross-CPU wakeup.  CPU intensive: a worker
	 * that hashes or flushes gigabytes for a peer's Verify or Flush
	 * yields, but never sleeps, and a CPU's pool starts its next work
	 * item only when the running one sleeps, so every other QP of that
	 * CPU would wait for it.
	 *
	 * Transmit work is high priority, as nvme-tcp's I/O work is: a
	 * consumer that busy-polls its CQ, as perftest and MPI do, shares its
	 * CPU with the worker that sends what it posts, and at nice 0 that
	 * worker got its fair half, and a stream of 64-byte Writes half the
	 * rate (README, "Performance").  But a worker at nice -20 takes all
	 * but a hundredth of its CPU while it runs, from every other thread
	 * and from ksoftirqd, and with it every packet that CPU receives once
	 * softirqs are deferred to it; and how long it runs is the
	 * consumer's choice, who keeps the SQ full, or the peer's, who asks
	 * for a Flush or Verify of gigabytes.  So at most three quarters of
	 * each CPU's time go to high-priority runs (xiw_tx_share_update()),
	 * and a thread at nice 0 keeps an eighth or more; the rest of
	 * the work waits on xiw_wq at nice 0, and so do the long Flushes and
	 * Verifies from the start (xiw_tx_request_is_long()).
	 */
	xiw_wq = alloc_workqueue("xiw", WQ_CPU_INTENSIVE | WQ_MEM_RECLAIM, 0);
	if (!xiw_wq)
		return -ENOMEM;
	xiw_tx_wq = alloc_workqueue("xiw_tx", WQ_CPU_INTENSIVE | WQ_MEM_RECLAIM |
				    WQ_HIGHPRI, 0);
	if (!xiw_tx_wq) {
		destroy_workqueue(xiw_wq);
		return -ENOMEM;
	}
	err = register_netdevice_notifier(&xiw_netdev_notifier);
	if (err) {
		destroy_workqueue(xiw_tx_wq);
		destroy_workqueue(xiw_wq);
		return err;
	}
	xiw_debugfs = debugfs_create_dir(XIW_DRIVER_NAME, NULL);
	xiw_cm_debugfs_init(xiw_debugfs);
	xiw_linger_debugfs_init(xiw_debugfs);
	rdma_link_register(&xiw_link_ops);
	return 0;
}

static void __exit xiw_exit_module(void)
{
	struct xiw_device *xdev;

	/* Waits for newlink calls in flight, so the list can only shrink. */
	rdma_link_unregister(&xiw_link_ops);
	unregister_netdevice_notifier(&xiw_netdev_notifier);

	for (;;) {
		mutex_lock(&xiw_devices_lock);
		xdev = list_first_entry_or_null(&xiw_devices, struct xiw_device,
						devices_entry);
		if (xdev)
			get_device(&xdev->ibdev.dev);
		mutex_unlock(&xiw_devices_lock);
		if (!xdev)
			break;
		/*
		 * Also fences an unregistration queued by the notifier: both
		 * run under the device's unregistration lock, and whichever
		 * runs first calls xiw_dealloc_driver().
		 */
		ib_unregister_device(&xdev->ibdev);
		put_device(&xdev->ibdev.dev);
	}
	/* Endpoints' last work items may still close a socket gracefully. */
	flush_workqueue(xiw_wq);
	xiw_linger_end_all();
	destroy_workqueue(xiw_tx_wq);
	destroy_workqueue(xiw_wq);
	debugfs_remove(xiw_debugfs);
}

module_init(xiw_init_module);
module_exit(xiw_exit_module);
