// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A kernel ULP for guest.hostile_peer, shaped like an NVMe over Fabrics
 * host: it listens with rdma_cm, fast-registers a buffer of its own pages
 * for the peer to read (IB_WR_REG_MR), and takes the pages back for other
 * use as soon as the peer invalidates the STag with a Send with
 * Invalidate, as a ULP may.  It overwrites them then, so that a peer that
 * still gets them through the device sees it, and when the connection is
 * torn down it counts the octets of them that changed since: the device
 * must not have written any (an Atomic or an Atomic Write that waited
 * behind a Read Response).
 *
 *   insmod xiw_frmr_victim.ko addr=192.0.2.2 port=7830
 *
 * The accept private data is xiw_wire_inject's inject_target: magic, the
 * STag, the region's address and length, and its first 8 octets (all
 * FILL).  One connection at a time; the module unloads cleanly.
 *
 * With local_inv=1 the ULP takes its pages back on its own instead, as
 * an NVMe-oF host does once a command completes: on a plain Send it posts
 * a Local Invalidate of the STag, reuses the pages when that completes,
 * and maps the region to a second set of pages (also overwritten) for its
 * next command, registering them under a new key if ib_map_mr_sg() lets
 * it; it logs what that returned.
 *
 * With probe_posts=1 it posts, once the connection is established, work
 * requests that ib_post_send() must refuse, and logs what it returned: a
 * Send with Immediate Data (an RDMAP extension) to a peer that did not
 * negotiate the extensions must fail with -EOPNOTSUPP, as the provider's
 * post does, and an RDMA Read with two SGEs (max_sge_rd is 1) with
 * -EINVAL.
 */
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/string.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

MODULE_DESCRIPTION("xiw test: a ULP that reuses fast-registered pages once invalidated");
MODULE_LICENSE("Dual BSD/GPL");

static char *addr = "192.0.2.2";
module_param(addr, charp, 0444);
static ushort port = 7830;
module_param(port, ushort, 0444);
static uint npages = 4096;	/* 16 MiB: far more than TCP buffers */
module_param(npages, uint, 0444);
static bool local_inv;
module_param(local_inv, bool, 0444);
static bool probe_posts;
module_param(probe_posts, bool, 0444);

#define VICTIM_FILL 0xa5
#define VICTIM_REUSED 0x5a
#define VICTIM_MAGIC 0x78697749	/* xiw_wire_inject's pd_magic */

/* xiw_wire_inject's inject_target, in host byte order. */
struct victim_target {
	u32 magic;
	u32 rkey;
	u64 addr;
	u64 len;
	u64 word0;
	u32 local_stag;
	u32 pad;
	u64 local_addr;
};

/* npages pages of the ULP's, DMA-mapped. */
struct victim_pages {
	struct page **pages;
	struct sg_table sgt;
	int mapped;
};

struct victim_conn {
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_mr *mr;
	struct victim_pages buf;	/* what the region names at first */
	struct victim_pages next;	/* local_inv: for the next command */
	bool reused;			/* buf (and next) overwritten */
	u8 *recv_buf;
	u64 recv_dma;
	struct ib_cqe reg_cqe;
	struct ib_cqe recv_cqe;
	struct ib_cqe inv_cqe;
	struct ib_cqe probe_cqe;
	struct work_struct teardown;
};

static struct rdma_cm_id *listen_id;
static struct workqueue_struct *victim_wq;	/* tears connections down */
static struct victim_conn *conn;	/* the one connection, if any */
static DEFINE_MUTEX(conn_lock);

static void victim_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	pr_info("xiw_frmr_victim: registration done, status %d\n", wc->status);
}

static void victim_probe_done(struct ib_cq *cq, struct ib_wc *wc)
{
	pr_info("xiw_frmr_victim: Send with Immediate Data completed, status %d\n",
		wc->status);
}

/*
 * probe_posts: work requests a ULP might try that the post must refuse
 * at once (the first is an extension the peer did not negotiate).
 */
static void victim_probe_posts(struct victim_conn *c)
{
	struct ib_send_wr wr = {
		.wr_cqe = &c->probe_cqe,
		.opcode = IB_WR_SEND_WITH_IMM,
		.send_flags = IB_SEND_SIGNALED,
		.ex.imm_data = cpu_to_be32(0x1234),
	};
	struct ib_sge two[2] = {
		{ .addr = c->recv_dma, .length = 8,
		  .lkey = c->pd->local_dma_lkey },
		{ .addr = c->recv_dma + 8, .length = 8,
		  .lkey = c->pd->local_dma_lkey },
	};
	struct ib_rdma_wr read = {
		.wr = { .wr_cqe = &c->probe_cqe, .opcode = IB_WR_RDMA_READ,
			.send_flags = IB_SEND_SIGNALED, .sg_list = two,
			.num_sge = ARRAY_SIZE(two) },
		.remote_addr = 0,
		.rkey = c->mr->rkey,
	};

	c->probe_cqe.done = victim_probe_done;
	pr_info("xiw_frmr_victim: Send with Immediate Data posted: %d\n",
		ib_post_send(c->id->qp, &wr, NULL));
	pr_info("xiw_frmr_victim: RDMA Read with 2 SGEs posted: %d\n",
		ib_post_send(c->id->qp, &read.wr, NULL));
}

static void victim_fill(struct victim_pages *p, u8 octet)
{
	unsigned int i;

	for (i = 0; p->pages && i < npages; i++)
		memset(page_address(p->pages[i]), octet, PAGE_SIZE);
}

/* Octets of @p no longer VICTIM_REUSED. */
static unsigned long victim_changed(const struct victim_pages *p)
{
	unsigned long n = 0;
	unsigned int i, k;

	for (i = 0; p->pages && i < npages; i++) {
		const u8 *a = page_address(p->pages[i]);

		if (!memchr_inv(a, VICTIM_REUSED, PAGE_SIZE))
			continue;
		for (k = 0; k < PAGE_SIZE; k++)
			n += a[k] != VICTIM_REUSED;
	}
	return n;
}

/* The STag is dead: the pages are ours again, for anything. */
static void victim_reuse(struct victim_conn *c)
{
	victim_fill(&c->buf, VICTIM_REUSED);
	victim_fill(&c->next, VICTIM_REUSED);
	c->reused = true;
}

static int victim_register(struct victim_conn *c)
{
	struct ib_reg_wr reg = {
		.wr = { .wr_cqe = &c->reg_cqe, .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED },
		.mr = c->mr,
		.key = c->mr->rkey & 0xff,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
			  IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC,
	};

	return ib_post_send(c->id->qp, &reg.wr, NULL);
}

/*
 * local_inv: the Local Invalidate completed, so the ULP may reuse the
 * pages and map the region anew for its next command, as a ULP does.
 */
static void victim_inv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct victim_conn *c = cq->cq_context;
	int n;

	if (wc->status != IB_WC_SUCCESS) {
		pr_info("xiw_frmr_victim: Local Invalidate completed, status %d\n",
			wc->status);
		return;
	}
	victim_reuse(c);
	pr_info("xiw_frmr_victim: rkey 0x%x invalidated locally, pages reused\n",
		c->mr->rkey);
	n = ib_map_mr_sg(c->mr, c->next.sgt.sgl, c->next.mapped, NULL,
			 PAGE_SIZE);
	pr_info("xiw_frmr_victim: region mapped to other pages: %d\n", n);
	if (n != c->next.mapped)
		return;
	ib_update_fast_reg_key(c->mr, ib_inc_rkey(c->mr->rkey));
	pr_info("xiw_frmr_victim: registered anew as rkey 0x%x: %d\n",
		c->mr->rkey, victim_register(c));
}

static void victim_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct victim_conn *c = cq->cq_context;
	struct ib_send_wr inv = {
		.wr_cqe = &c->inv_cqe,
		.opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED,
	};

	if (wc->status != IB_WC_SUCCESS)
		return;
	if (local_inv && !(wc->wc_flags & IB_WC_WITH_INVALIDATE)) {
		inv.ex.invalidate_rkey = c->mr->rkey;
		c->inv_cqe.done = victim_inv_done;
		pr_info("xiw_frmr_victim: Local Invalidate posted: %d\n",
			ib_post_send(c->id->qp, &inv, NULL));
		return;
	}
	if (!(wc->wc_flags & IB_WC_WITH_INVALIDATE) ||
	    wc->ex.invalidate_rkey != c->mr->rkey) {
		pr_info("xiw_frmr_victim: a receive without invalidation\n");
		return;
	}
	victim_reuse(c);
	pr_info("xiw_frmr_victim: rkey 0x%x invalidated by the peer, pages reused\n",
		wc->ex.invalidate_rkey);
}

static void victim_pages_free(struct victim_conn *c, struct victim_pages *p)
{
	unsigned int i;

	if (p->mapped)
		ib_dma_unmap_sg(c->id->device, p->sgt.sgl, p->sgt.orig_nents,
				DMA_BIDIRECTIONAL);
	sg_free_table(&p->sgt);
	for (i = 0; p->pages && i < npages; i++)
		if (p->pages[i])
			__free_page(p->pages[i]);
	kvfree(p->pages);
}

/* npages pages, all @fill, DMA-mapped; 0 or an errno (freed by the caller). */
static int victim_pages_alloc(struct victim_conn *c, struct victim_pages *p,
			      u8 fill)
{
	struct scatterlist *sg;
	unsigned int i;

	p->pages = kvcalloc(npages, sizeof(*p->pages), GFP_KERNEL);
	if (!p->pages || sg_alloc_table(&p->sgt, npages, GFP_KERNEL))
		return -ENOMEM;
	for_each_sg(p->sgt.sgl, sg, npages, i) {
		p->pages[i] = alloc_page(GFP_KERNEL);
		if (!p->pages[i])
			return -ENOMEM;
		memset(page_address(p->pages[i]), fill, PAGE_SIZE);
		sg_set_page(sg, p->pages[i], PAGE_SIZE, 0);
	}
	p->mapped = ib_dma_map_sg(c->id->device, p->sgt.sgl, npages,
				  DMA_BIDIRECTIONAL);
	return p->mapped ? 0 : -ENOMEM;
}

/* Frees @c; its cm_id too if @destroy_id (not from the id's handler). */
static void victim_free(struct victim_conn *c, bool destroy_id)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->mr)
		ib_dereg_mr(c->mr);
	/* Nothing of the device's can reach the pages any more. */
	if (c->reused)
		pr_info("xiw_frmr_victim: %lu octets of the reused pages changed since they were reused\n",
			victim_changed(&c->buf) + victim_changed(&c->next));
	victim_pages_free(c, &c->buf);
	victim_pages_free(c, &c->next);
	if (c->recv_buf && c->recv_dma)
		ib_dma_unmap_single(c->id->device, c->recv_dma, 64,
				    DMA_FROM_DEVICE);
	kfree(c->recv_buf);
	if (c->cq)
		ib_free_cq(c->cq);
	if (c->pd)
		ib_dealloc_pd(c->pd);
	if (destroy_id)
		rdma_destroy_id(c->id);
	kfree(c);
}

static void victim_teardown(struct work_struct *work)
{
	struct victim_conn *c = container_of(work, struct victim_conn, teardown);

	mutex_lock(&conn_lock);
	if (conn == c)
		conn = NULL;
	mutex_unlock(&conn_lock);
	victim_free(c, true);
	pr_info("xiw_frmr_victim: connection torn down\n");
}

/* Everything for one connection; 0 or an errno (c freed by the caller). */
static int victim_setup(struct victim_conn *c)
{
	struct ib_qp_init_attr qa = {};
	struct ib_device *dev = c->id->device;
	struct ib_recv_wr rwr = {};
	struct ib_sge rsge;
	int n, err;

	c->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(c->pd)) {
		err = PTR_ERR(c->pd);
		c->pd = NULL;
		return err;
	}
	c->cq = ib_alloc_cq(dev, c, 16, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(c->cq)) {
		err = PTR_ERR(c->cq);
		c->cq = NULL;
		return err;
	}
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.cap.max_send_wr = 8;
	qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = 2;	/* probe_posts' Read */
	qa.cap.max_recv_sge = 1;
	qa.qp_type = IB_QPT_RC;
	qa.sq_sig_type = IB_SIGNAL_REQ_WR;
	err = rdma_create_qp(c->id, c->pd, &qa);
	if (err)
		return err;

	err = victim_pages_alloc(c, &c->buf, VICTIM_FILL);
	if (!err && local_inv)
		err = victim_pages_alloc(c, &c->next, VICTIM_FILL);
	if (err)
		return err;
	c->mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, npages);
	if (IS_ERR(c->mr)) {
		err = PTR_ERR(c->mr);
		c->mr = NULL;
		return err;
	}
	n = ib_map_mr_sg(c->mr, c->buf.sgt.sgl, c->buf.mapped, NULL,
			 PAGE_SIZE);
	if (n != c->buf.mapped)
		return n < 0 ? n : -EINVAL;
	c->reg_cqe.done = victim_reg_done;
	err = victim_register(c);
	if (err)
		return err;

	c->recv_buf = kzalloc(64, GFP_KERNEL);
	if (!c->recv_buf)
		return -ENOMEM;
	c->recv_dma = ib_dma_map_single(dev, c->recv_buf, 64, DMA_FROM_DEVICE);
	rsge = (struct ib_sge){ .addr = c->recv_dma, .length = 64,
				.lkey = c->pd->local_dma_lkey };
	c->recv_cqe.done = victim_recv_done;
	rwr.wr_cqe = &c->recv_cqe;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	return ib_post_recv(c->id->qp, &rwr, NULL);
}

static int victim_connect_request(struct rdma_cm_id *id)
{
	struct victim_target t = {};
	struct rdma_conn_param p = {};
	struct victim_conn *c;
	int err;

	mutex_lock(&conn_lock);
	if (conn) {
		mutex_unlock(&conn_lock);
		return -EBUSY;	/* the core rejects and destroys @id */
	}
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c) {
		mutex_unlock(&conn_lock);
		return -ENOMEM;
	}
	c->id = id;
	id->context = c;
	INIT_WORK(&c->teardown, victim_teardown);
	err = victim_setup(c);
	if (!err) {
		t = (struct victim_target){
			.magic = VICTIM_MAGIC,
			.rkey = c->mr->rkey,
			.addr = c->mr->iova,
			.len = (u64)npages * PAGE_SIZE,
		};
		memset(&t.word0, VICTIM_FILL, sizeof(t.word0));
		p.private_data = &t;
		p.private_data_len = sizeof(t);
		p.responder_resources = 4;
		p.initiator_depth = 4;
		err = rdma_accept(id, &p);
	}
	if (err) {
		pr_info("xiw_frmr_victim: connection set-up failed: %d\n", err);
		mutex_unlock(&conn_lock);
		/* The core destroys @id when we return the error. */
		victim_free(c, false);
		return err;
	}
	conn = c;
	mutex_unlock(&conn_lock);
	pr_info("xiw_frmr_victim: accepted; rkey 0x%x, %u pages\n",
		c->mr->rkey, npages);
	return 0;
}

static int victim_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct victim_conn *c = id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return victim_connect_request(id);
	case RDMA_CM_EVENT_ESTABLISHED:
		if (probe_posts && c)
			victim_probe_posts(c);
		return 0;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (c && id != listen_id)
			queue_work(victim_wq, &c->teardown);
		return 0;
	default:
		return 0;
	}
}

static int __init victim_init(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	int err;

	if (!in4_pton(addr, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL))
		return -EINVAL;
	victim_wq = alloc_workqueue("xiw_frmr_victim", 0, 0);
	if (!victim_wq)
		return -ENOMEM;
	listen_id = rdma_create_id(&init_net, victim_cm_handler, NULL,
				   RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(listen_id)) {
		destroy_workqueue(victim_wq);
		return PTR_ERR(listen_id);
	}
	err = rdma_bind_addr(listen_id, (struct sockaddr *)&sin);
	if (!err)
		err = rdma_listen(listen_id, 4);
	if (err) {
		rdma_destroy_id(listen_id);
		destroy_workqueue(victim_wq);
		return err;
	}
	pr_info("xiw_frmr_victim: listening on %s:%u\n", addr, port);
	return 0;
}

static void __exit victim_exit(void)
{
	rdma_destroy_id(listen_id);
	/* A connection still up is torn down like a disconnected one. */
	mutex_lock(&conn_lock);
	if (conn)
		queue_work(victim_wq, &conn->teardown);
	mutex_unlock(&conn_lock);
	destroy_workqueue(victim_wq);
}

module_init(victim_init);
module_exit(victim_exit);
