// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiw verbs: device and port attributes, user contexts, shared queue
 * memory and protection domains.
 */
#include <linux/sched/mm.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "xiw.h"

struct xiw_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	void *mem;
	/* The process whose locked memory the queue counts as, and how much. */
	struct mm_struct *owning_mm;
	unsigned long npages;
	/* In xiw_ucontext.retired once the queue was destroyed still mapped. */
	struct list_head retired_node;
};

static struct xiw_mmap_entry *to_xiw_mmap_entry(struct rdma_user_mmap_entry *e)
{
	return container_of(e, struct xiw_mmap_entry, rdma_entry);
}

int xiw_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		     struct ib_udata *udata)
{
	if (udata->inlen || udata->outlen)
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->vendor_id = XIW_VENDOR_ID;
	attr->vendor_part_id = XIW_VENDOR_PART_ID;
	attr->fw_ver = (u64)XIW_VERSION_MAJOR << 32 | XIW_VERSION_MINOR << 16 |
		       XIW_VERSION_PATCH;
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = ~0ULL;
	attr->page_size_cap = PAGE_SIZE;
	attr->max_qp = XIW_MAX_QP;
	attr->max_qp_wr = XIW_MAX_QP_WR;
	attr->max_send_sge = XIW_MAX_SGE;
	attr->max_recv_sge = XIW_MAX_RECV_SGE;
	/* A Read Request names one sink buffer (RFC 5040 §4.4). */
	attr->max_sge_rd = XIW_MAX_SGE_RD;
	attr->max_cq = XIW_MAX_CQ;
	attr->max_cqe = XIW_MAX_CQE;
	attr->max_mr = XIW_MAX_MR;
	attr->max_pd = XIW_MAX_PD;
	/* Reads and Atomics share IRD and ORD (RFC 7306 §5.2). */
	attr->max_qp_rd_atom = XIW_MAX_IRD;
	attr->max_qp_init_rd_atom = XIW_MAX_ORD;
	attr->max_res_rd_atom = XIW_MAX_QP * XIW_MAX_IRD;
	attr->max_srq = XIW_MAX_SRQ;
	attr->max_srq_wr = XIW_MAX_SRQ_WR;
	attr->max_srq_sge = XIW_MAX_RECV_SGE;
	attr->max_fast_reg_page_list_len = XIW_MAX_FRMR_PAGES;
	attr->max_pkeys = 1;
	/*
	 * Atomics run as CPU compare-and-exchange on the target memory
	 * (xiw_mr_atomic()), so they are atomic against host CPUs too, not
	 * only among the device's QPs; guest.ext_xiw races remote FetchAdd
	 * and CmpSwap with a CPU thread on one counter to show it.
	 */
	attr->atomic_cap = IB_ATOMIC_GLOB;
	attr->masked_atomic_cap = IB_ATOMIC_GLOB;
	/*
	 * Neither rdma-core 44 nor this kernel name capability bits for
	 * Flush, Atomic Write and Verify; a software device has no hardware
	 * revision, so that is where it reports its extensions (xiwdv.h).
	 */
	attr->hw_ver = XIW_CAP_ATOMICS | XIW_CAP_IMMEDIATE |
		       XIW_CAP_FLUSH_GLOBAL | XIW_CAP_FLUSH_PERSISTENT |
		       XIW_CAP_ATOMIC_WRITE | XIW_CAP_VERIFY_CRC32C |
		       XIW_CAP_VERIFY_SHA256;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	/*
	 * Fast registration and (local, remote) invalidation; Flush and
	 * Atomic Write by the bits Linux 6.2 gave them.
	 */
	attr->device_cap_flags = IB_DEVICE_MEM_MGT_EXTENSIONS |
				 XIW_COMPAT_DEVICE_CAP_COMMIT;
	return 0;
}

int xiw_query_port(struct ib_device *ibdev, u32 port,
		   struct ib_port_attr *attr)
{
	/* ib_device_set_netdev() holds a reference until unregistration. */
	struct net_device *netdev = to_xiw_dev(ibdev)->netdev;
	bool up;
	int err;

	err = ib_get_eth_speed(ibdev, port, &attr->active_speed,
			       &attr->active_width);
	up = netif_running(netdev) && netif_carrier_ok(netdev);
	attr->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	attr->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
				IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = ib_mtu_int_to_enum(netdev->mtu);
	attr->active_mtu = attr->max_mtu;
	attr->phys_mtu = netdev->mtu;
	attr->gid_tbl_len = 1;
	attr->pkey_tbl_len = 1;
	attr->max_msg_sz = U32_MAX;
	attr->port_cap_flags = IB_PORT_CM_SUP | IB_PORT_DEVICE_MGMT_SUP;
	return err;
}

int xiw_get_port_immutable(struct ib_device *ibdev, u32 port,
			   struct ib_port_immutable *immutable)
{
	immutable->gid_tbl_len = 1;
	immutable->pkey_tbl_len = 1;
	immutable->core_cap_flags = RDMA_CORE_PORT_IWARP;
	return 0;
}

/* iWARP has one GID per port: the MAC address, zero-padded (iw_cm). */
int xiw_query_gid(struct ib_device *ibdev, u32 port, int index,
		  union ib_gid *gid)
{
	if (index)
		return -EINVAL;
	memset(gid, 0, sizeof(*gid));
	ether_addr_copy(gid->raw, to_xiw_dev(ibdev)->mac);
	return 0;
}

int xiw_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	if (index)
		return -EINVAL;
	*pkey = 0xffff;
	return 0;
}

void xiw_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u.%u", XIW_VERSION_MAJOR,
		 XIW_VERSION_MINOR, XIW_VERSION_PATCH);
}

static struct xiw_ucontext *to_xiw_ucontext(struct ib_ucontext *ibucontext)
{
	return container_of(ibucontext, struct xiw_ucontext, ibucontext);
}

static void xiw_reap_work(struct work_struct *work);

int xiw_alloc_ucontext(struct ib_ucontext *ibucontext, struct ib_udata *udata)
{
	struct xiw_uresp_alloc_ctx resp = { .flags = XIW_COMPAT_CTX_FLAGS };
	struct xiw_ucontext *uctx = to_xiw_ucontext(ibucontext);

	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	mutex_init(&uctx->retired_lock);
	INIT_LIST_HEAD(&uctx->retired);
	INIT_DELAYED_WORK(&uctx->reap_work, xiw_reap_work);
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

/*
 * Required for moving a device into another network namespace.  The core
 * destroys every object of the context before calling this; the pages of
 * the queues stay alive for as long as a process still maps them, since
 * each mapped page holds a page reference, so nothing is left to revoke.
 */
void xiw_disassociate_ucontext(struct ib_ucontext *ibucontext)
{
}

/*
 * A user queue is kernel memory pinned for the process, as registered
 * memory is: it counts against RLIMIT_MEMLOCK like ib_umem's pages (and
 * like the queues that hardware providers allocate in user memory and
 * register), unless the process has CAP_IPC_LOCK.
 */
static int xiw_ring_charge(struct xiw_mmap_entry *entry, unsigned long npages)
{
	struct mm_struct *mm = current->mm;
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;

	if (atomic64_add_return(npages, &mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	mmgrab(mm);
	entry->owning_mm = mm;
	entry->npages = npages;
	return 0;
}

static void xiw_ring_uncharge(struct xiw_mmap_entry *entry)
{
	if (!entry->owning_mm)
		return;
	atomic64_sub(entry->npages, &entry->owning_mm->pinned_vm);
	mmdrop(entry->owning_mm);
	entry->owning_mm = NULL;
}

/* Maps the vmalloc'ed @mem page by page over all of @vma. */
static int xiw_map_pages(struct vm_area_struct *vma, void *mem)
{
	unsigned long off;
	int err;

	for (off = 0; off < vma->vm_end - vma->vm_start; off += PAGE_SIZE) {
		err = vm_insert_page(vma, vma->vm_start + off,
				     vmalloc_to_page(mem + off));
		if (err)
			return err;
	}
	return 0;
}

int xiw_mmap(struct ib_ucontext *ibucontext, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma_entry;
	int err;

	rdma_entry = rdma_user_mmap_entry_get(ibucontext, vma);
	if (!rdma_entry)
		return -EINVAL;
	/* The entry's size is the VMA's (rdma_user_mmap_entry_get()). */
	err = xiw_map_pages(vma, to_xiw_mmap_entry(rdma_entry)->mem);
	rdma_user_mmap_entry_put(rdma_entry);
	return err;
}

static void xiw_mmap_entry_release(struct xiw_mmap_entry *entry)
{
	xiw_ring_uncharge(entry);
	vfree(entry->mem);
	kfree(entry);
}

/*
 * Whether a process still maps the queue.  A destroyed queue's entry is
 * gone from the context's table, so no new mapping can come once none is
 * left (fork only copies existing ones).
 */
static bool xiw_mmap_entry_mapped(struct xiw_mmap_entry *entry)
{
	unsigned long i;

	for (i = 0; i < entry->rdma_entry.npages; i++)
		if (page_mapped(vmalloc_to_page(entry->mem + i * PAGE_SIZE)))
			return true;
	return false;
}

/*
 * Releases the retired queues no longer mapped, or @all of them; whether
 * any is left.
 */
static bool xiw_release_retired(struct xiw_ucontext *uctx, bool all)
{
	struct xiw_mmap_entry *entry, *next;
	bool left;

	mutex_lock(&uctx->retired_lock);
	list_for_each_entry_safe(entry, next, &uctx->retired, retired_node) {
		if (!all && xiw_mmap_entry_mapped(entry))
			continue;
		list_del(&entry->retired_node);
		xiw_mmap_entry_release(entry);
	}
	left = !list_empty(&uctx->retired);
	mutex_unlock(&uctx->retired_lock);
	return left;
}

static void xiw_reap_work(struct work_struct *work)
{
	struct xiw_ucontext *uctx = container_of(to_delayed_work(work),
						 struct xiw_ucontext,
						 reap_work);

	if (xiw_release_retired(uctx, false))
		schedule_delayed_work(&uctx->reap_work, HZ);
}

/* Before a process pins more memory: what it unmapped counts no more. */
void xiw_ucontext_reap(struct ib_udata *udata)
{
	struct xiw_ucontext *uctx = rdma_udata_to_drv_context(udata,
							      struct xiw_ucontext,
							      ibucontext);

	if (uctx)
		xiw_release_retired(uctx, false);
}

/*
 * Normally no mapping is left: each holds the device file, which ends
 * the context only once closed.  After a device removal the pages live
 * on in the mappings, no longer counted.
 */
void xiw_dealloc_ucontext(struct ib_ucontext *ibucontext)
{
	struct xiw_ucontext *uctx = to_xiw_ucontext(ibucontext);

	cancel_delayed_work_sync(&uctx->reap_work);
	xiw_release_retired(uctx, true);
	mutex_destroy(&uctx->retired_lock);
}

/*
 * The queue was destroyed (each mapping dropped its reference at mmap
 * time).  Pages a process still maps stay its locked memory until it
 * unmaps them: a queue destroyed mapped, again and again, would
 * otherwise pin memory past RLIMIT_MEMLOCK.
 */
void xiw_mmap_free(struct rdma_user_mmap_entry *rdma_entry)
{
	struct xiw_mmap_entry *entry = to_xiw_mmap_entry(rdma_entry);
	struct xiw_ucontext *uctx = to_xiw_ucontext(rdma_entry->ucontext);

	if (!xiw_mmap_entry_mapped(entry)) {
		xiw_mmap_entry_release(entry);
		return;
	}
	mutex_lock(&uctx->retired_lock);
	list_add_tail(&entry->retired_node, &uctx->retired);
	mutex_unlock(&uctx->retired_lock);
	schedule_delayed_work(&uctx->reap_work, HZ);
}

/*
 * Allocates a queue of @num entries (0: no queue).  With @udata the memory
 * is offered to the process at the offset returned in @mmap_key and its
 * ownership passes to the mmap entry.
 */
int xiw_ring_alloc(struct xiw_ring *ring, u32 num, u32 entry_size,
		   struct ib_udata *udata, u64 *mmap_key)
{
	struct xiw_ucontext *uctx;
	struct xiw_mmap_entry *entry;
	int err;

	memset(ring, 0, sizeof(*ring));
	if (mmap_key)
		*mmap_key = 0;
	if (!num)
		return 0;

	ring->num = num;
	ring->entry_size = entry_size;
	ring->bytes = PAGE_ALIGN(XIW_RING_ENTRIES_OFFSET +
				 (size_t)num * entry_size);
	/* Charged to the caller's memory cgroup, up to 10 MiB for a QP. */
	ring->mem = __vmalloc(ring->bytes, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!ring->mem)
		return -ENOMEM;
	if (!udata)
		return 0;

	uctx = rdma_udata_to_drv_context(udata, struct xiw_ucontext, ibucontext);
	/* What the process unmapped since counts no more. */
	xiw_release_retired(uctx, false);
	entry = kzalloc(sizeof(*entry), GFP_KERNEL_ACCOUNT);
	if (!entry) {
		err = -ENOMEM;
		goto err_free;
	}
	err = xiw_ring_charge(entry, ring->bytes >> PAGE_SHIFT);
	if (err)
		goto err_free;
	entry->mem = ring->mem;
	err = rdma_user_mmap_entry_insert(&uctx->ibucontext, &entry->rdma_entry,
					  ring->bytes);
	if (err) {
		xiw_ring_uncharge(entry);
		goto err_free;
	}
	ring->mmap_entry = &entry->rdma_entry;
	*mmap_key = rdma_user_mmap_get_offset(ring->mmap_entry);
	return 0;

err_free:
	kfree(entry);
	vfree(ring->mem);
	ring->mem = NULL;
	return err;
}

void xiw_ring_free(struct xiw_ring *ring)
{
	if (ring->mmap_entry)
		rdma_user_mmap_entry_remove(ring->mmap_entry);
	else
		vfree(ring->mem);
	ring->mem = NULL;
	ring->mmap_entry = NULL;
}

int xiw_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(ibpd->device);

	if (atomic_inc_return(&xdev->num_pd) > XIW_MAX_PD) {
		atomic_dec(&xdev->num_pd);
		return -ENOMEM;
	}
	return 0;
}

int xiw_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	atomic_dec(&to_xiw_dev(ibpd->device)->num_pd);
	return 0;
}
