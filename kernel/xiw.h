/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * xiw: software iWARP RNIC with the RDMAP extensions of RFC 7306 and
 * draft-talpey-rdma-commit.  Objects and limits shared by all files.
 */
#ifndef XIW_H
#define XIW_H

#include <linux/crc32.h>
#include <linux/crc32c.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>
#include <uapi/rdma/xiw-abi.h>
#include <xiw/wr_opcodes.h>

/* A software device has no IEEE OUI: the vendor id spells "xiw" in ASCII. */
#define XIW_NODE_DESC "xiw software iWARP RNIC"
/* Reported as the firmware version: the module's own release. */
#define XIW_VERSION_MAJOR 0
#define XIW_VERSION_MINOR 1
#define XIW_VERSION_PATCH 0

#define XIW_MAX_QP (32 * 1024)
#define XIW_MAX_QP_WR (16 * 1024)
#define XIW_MAX_CQ (32 * 1024)
#define XIW_MAX_CQE (64 * 1024)
#define XIW_MAX_MR (64 * 1024)
#define XIW_MAX_PD (32 * 1024)
#define XIW_MAX_SRQ (16 * 1024)
#define XIW_MAX_SRQ_WR (16 * 1024)
#define XIW_MAX_ORD 128
#define XIW_MAX_IRD 128
#define XIW_MAX_FRMR_PAGES 4096
/* Messages framed into one push to TCP: a stream's batch (xiw_qp_tx.c). */
#define XIW_TX_SENT_MAX 64
/*
 * The STag is a 24-bit index and an 8-bit key (RFC 5040 §2.1).  QP numbers
 * come from the same 24 bits, so that a QP number also fits where a
 * verbs consumer keeps an index (and rdma_cm's qp_num, which is 24 bits).
 */
#define XIW_STAG_INDEX_MAX 0xffffff

struct xiw_device {
	struct ib_device ibdev;
	struct net_device *netdev;
	struct list_head devices_entry;	/* xiw_devices, for module exit */
	u8 mac[ETH_ALEN];

	struct xarray qp_xa;
	struct xarray mr_xa;
	struct xarray cep_xa;	/* Requests iw_cm holds (xiw_cm.c) */
	atomic_t num_pd;
	atomic_t num_cq;
	atomic_t num_qp;
	atomic_t num_mr;
	atomic_t num_srq;
	u32 qpn_next;		/* cyclic allocation cursors */
	u32 stag_index_next;
	u32 cep_handle_next;
};

struct xiw_ucontext {
	struct ib_ucontext ibucontext;
	/*
	 * Queues destroyed while the process still maps them (the provider
	 * unmaps after destroying): still its locked memory, released once
	 * unmapped - looked for by reap_work every second while any is
	 * left, and before each new queue or registration - or with the
	 * context.
	 */
	struct mutex retired_lock;
	struct list_head retired;
	struct delayed_work reap_work;
};

struct xiw_pd {
	struct ib_pd ibpd;
};

/*
 * A queue in memory the module shares with its consumer: an xiw_ring_ctrl
 * followed by @num entries of @entry_size bytes.  For user consumers the
 * memory belongs to the mmap entry once it is inserted; destroying the
 * queue never pulls pages out from under a process, and the memory stays
 * counted as the process's locked memory until no mapping is left
 * (xiw_mmap_free()).
 */
struct xiw_ring {
	void *mem;
	u32 num;		/* power of two, 0 for no queue */
	u32 entry_size;
	size_t bytes;
	struct rdma_user_mmap_entry *mmap_entry;
	/*
	 * The kernel's own index on its side of the ring: the consumer of
	 * an RQ or SRQ, the producer of a CQ.  The copy in the shared
	 * xiw_ring_ctrl is only written; user space may have changed it.
	 */
	u32 own;
	bool broken;		/* a bad index or a CQ overflow was reported */
};

/* The entry of free-running @index in @ring. */
static inline void *xiw_ring_entry(const struct xiw_ring *ring, u32 index)
{
	return ring->mem + XIW_RING_ENTRIES_OFFSET +
	       (size_t)(index & (ring->num - 1)) * ring->entry_size;
}

struct xiw_cq {
	struct ib_cq ibcq;
	struct xiw_ring ring;
	spinlock_t lock;	/* serialises producers */
};

struct xiw_srq {
	struct ib_srq ibsrq;
	struct xiw_ring ring;
	spinlock_t lock;	/* serialises the QPs taking from it */
	spinlock_t post_lock;	/* serialises kernel consumers' posters */
	u32 limit;		/* armed if not 0: event below this many */
};

/*
 * Connection endpoint, one per TCP socket of xiw (listening or connected),
 * defined in xiw_cm.c.  It is the sk_user_data of its socket.
 */
struct xiw_cep;

/* What MPA connection setup negotiated (RFC 5044 §7.1, RFC 6581 §5). */
struct xiw_conn_params {
	bool initiator;		/* we sent the MPA Request */
	bool crc;		/* FPDUs carry a CRC32c, both directions */
	bool markers_tx;	/* the peer asked for markers (its M bit) */
	bool markers_rx;	/* we asked for markers (our M bit) */
	bool extensions;	/* both frames carried XIW_MPA_FLAG_EXT */
	bool p2p;		/* RFC 6581 peer-to-peer mode with an RTR */
	u8 rtr_opcode;		/* RDMAP opcode of the zero-length RTR */
	u16 ird;		/* negotiated inbound RDMA Read/Atomic depth */
	u16 ord;		/* negotiated outbound depth */
};

/* The kernel's own copy of a posted SQE, validated, with its MRs held. */
struct xiw_wqe {
	struct xiw_sqe sqe;
	/* The row of sqe.opcode (set when fetched); NULL if it has none. */
	const struct xiw_wr_info *info;
	struct xiw_mr *mr[XIW_MAX_SGE];
	u32 bytes;			/* payload length */
	u32 seq;			/* its free-running SQ index */
	u8 status;			/* enum xiw_wc_status */
	bool done;
	/*
	 * An SGE names a fast registration, whose pages its consumer gets
	 * back at invalidation: they are copied, never handed to TCP.
	 */
	bool copy_only;
};

/*
 * An outbound request on QN 1 - RDMA Read, Atomic, Flush, Verify or Atomic
 * Write - waiting for its response (requester, ORD): all of them go on QN 1
 * and share ORD (RFC 7306 §5.2, draft-talpey §4).
 */
struct xiw_orq_entry {
	struct xiw_wqe *wqe;		/* NULL for the RTR of RFC 6581 */
	u32 wqe_seq;			/* wqe->seq when it was issued */
	u8 opcode;			/* its RDMAP request opcode */
	u32 req_id;			/* Atomic Request Identifier */
	u64 sink_to;
	u32 sink_stag;
	u32 len;
	u32 placed;
};

/*
 * An inbound request on QN 1 - RDMA Read, Atomic, Flush, Verify or Atomic
 * Write - being answered (responder, IRD).  It is checked when it
 * arrives, executed by the transmit path when its turn comes and answered
 * right away, so all of them run strictly in the order they arrived (RFC
 * 7306 §5.2.2 rule 8, draft-talpey §4) and after every earlier Write.
 */
struct xiw_irq_entry {
	u8 opcode;			/* of the request */
	struct xiw_mr *mr;		/* the target, NULL for none */
	u32 stag;			/* that named it, checked again */
	u64 to;				/* target (Read: source) address */
	u32 len;			/* target length */
	u32 sent;			/* Read Response bytes framed */
	u64 sink_to;			/* Read: the requester's buffer */
	u32 sink_stag;
	u32 req_id;			/* Atomic Request Identifier */
	union {
		struct xiw_rdmap_atomic_req atomic;	/* as received */
		u32 flush_flags;			/* XIW_FLUSH_DISP_P/G/R */
		u64 value;				/* Atomic Write */
		struct {
			u8 len;				/* 0: none given */
			u8 bytes[XIW_VERIFY_MAX_HASH];
		} expected;				/* Verify */
	};
};

/* A Terminate to send (RFC 5040 §4.8) and the header it quotes. */
struct xiw_term_info {
	bool pending;
	bool sent;			/* framed: the stream's last FPDU */
	u8 layer;
	u8 etype;
	u8 ecode;
	u8 ddp_hdr_len;			/* 0: no header quoted */
	u16 seg_len;
	u8 ddp_hdr[XIW_DDP_UNTAGGED_HLEN];
};

/*
 * The transmit side.  tx.lock (held by the sender: the work item, or a
 * caller that frames in its own context) owns every field but these:
 *   retire, irq_head	moved under qp->lock (completions; RX reads them)
 *   irq_tail		written by RX under qp->lock, published with release
 *   close_pending, flush_status	set by xiw_qp_fatal() under qp->lock
 *   rtr_pending		set under qp->lock when the QP enters RTS,
 *			cleared by the sender
 *   term		filled under qp->lock (xiw_qp_send_terminate()) before
 *			the QP is in Error, read by the sender after
 *   wants_space		WRITE_ONCE/READ_ONCE: TCP's write_space callback
 *   wants_answer	set by the sender, tested and cleared by RX, both
 *			under qp->lock
 */
struct xiw_qp_tx {
	struct mutex lock;		/* one sender at a time */
	struct work_struct work;	/* on xiw_tx_wq, high priority */
	/*
	 * On xiw_wq: the sender at nice 0, for a long Flush or Verify and
	 * beyond the high-priority workers' share of a CPU.
	 */
	struct work_struct fair_work;
	bool on_fair_worker;		/* this run is fair_work's */
	bool handed_over;		/* fair_work queued for the rest */
	bool fair_work_off;		/* being destroyed: not queued again */
	/* On the high-priority worker: local_clock() it is charged up to. */
	u64 high_since;
	struct xiw_wqe *wqes;		/* shadow of the SQ ring */
	u32 fetch;			/* next ring index to copy */
	u32 retire;			/* next WQE to complete, = ctrl.consumer */
	struct xiw_wqe *cur;		/* message being framed */
	u32 cur_sent;			/* its payload bytes framed so far */
	bool cur_payload_done;		/* all its payload segments framed */
	/*
	 * Sends and Writes framed whole in this push, oldest first, each
	 * completed once TCP took its last octet (vec up to its end).
	 */
	struct xiw_tx_sent {
		struct xiw_wqe *wqe;
		size_t end;
	} sent[XIW_TX_SENT_MAX];
	u32 sent_head, nsent;
	struct xiw_irq_entry *irq;	/* inbound reads, qp->ird entries */
	u32 irq_head, irq_tail;
	u32 msn[XIW_QN_COUNT];		/* last MSN sent per queue */
	/*
	 * What the next push hands to TCP: FPDUs framed in buf, whose
	 * payloads are copied next to their headers or attached from the
	 * registered pages; vec lists it all, in order, by page.
	 */
	u8 *buf;			/* headers, trailers, short payloads */
	u32 buf_len;
	u32 buf_described;		/* of buf_len, already in vec */
	struct bio_vec *vec;
	u32 nvec;
	size_t out_len;			/* bytes in vec */
	size_t out_sent;		/* of those, taken by TCP */
	struct xiw_mr **held;		/* referenced for the attached pages */
	size_t *held_end;		/* where in vec each one's pages end */
	u32 nheld;
	u8 *fpdu;			/* being framed, in buf */
	u32 fpdu_attached;		/* its payload bytes not in buf */
	u32 crc;			/* its running CRC32c */
	u32 fpdu_pos;			/* stream position of its header */
	/*
	 * Octets of Full Operation Phase that went to TCP before vec's
	 * first, markers included: where markers go (RFC 5044 §4.3), if
	 * the peer asked for them.
	 */
	u32 stream_base;
	struct xiw_mpa_marker *markers;	/* in vec */
	u32 nmarkers;
	bool rtr_pending;		/* RFC 6581 RTR still to be sent */
	bool close_pending;		/* close the stream after the error */
	bool wants_space;		/* TCP was full: write space resumes */
	/* Stopped for an ORD slot or a fence: an answer resumes it. */
	bool wants_answer;
	u8 flush_status;		/* for the oldest WQE when flushing */
	struct xiw_term_info term;
};

/*
 * The receive side.  The parser state (the FPDU being parsed, its header,
 * counters, CRC, the held RQE and MR) has one writer: the parser, which the
 * socket serialises (xiw_qp_rx.c).  The RQ indices, the ORQ and the IRQ
 * tail are shared with flushes and the transmit path: qp->lock.
 */
struct xiw_qp;

/* What the receive path does with the messages of one RDMAP opcode. */
struct xiw_rx_handler {
	/* The FPDU's header is in: check it, take what it names. */
	bool (*begin)(struct xiw_qp *qp);
	/* Its payload is placed; @last: it ended its message. */
	void (*end)(struct xiw_qp *qp, bool last);
	/* A request's execution, once delivered. */
	void (*execute)(struct xiw_qp *qp);
};

/* Where the parser is in the current FPDU (RFC 5044 §4.1). */
enum xiw_rx_phase {
	XIW_RX_CTRL,		/* ULPDU_Length and the DDP/RDMAP control */
	XIW_RX_HEADER,		/* the rest of the DDP/RDMAP header */
	XIW_RX_PAYLOAD,		/* the ULP payload, placed as it comes */
	XIW_RX_TRAILER,		/* pad and CRC */
};

struct xiw_qp_rx {
	enum xiw_rx_phase phase;
	union xiw_hdr hdr;
	u32 hdr_got;
	u32 hdr_len;
	const struct xiw_opcode_info *op;
	const struct xiw_rx_handler *handler;	/* of op */
	u32 payload_len;		/* of the current FPDU */
	u32 payload_got;
	u32 trailer_got;		/* pad and CRC */
	u8 trailer[XIW_MPA_ALIGN + XIW_MPA_CRC_LEN];
	u32 crc;			/* running, over all octets so far */
	/*
	 * Octets of Full Operation Phase received, markers included: where
	 * the markers are (RFC 5044 §4.3), if the peer inserts them.
	 */
	u32 stream_pos;
	u32 fpdu_pos;			/* of the current FPDU's header */
	struct xiw_mpa_marker marker;
	u32 marker_got;
	/* Untagged: the message being received into an RQE. */
	struct xiw_rqe rqe;
	struct xiw_mr *rqe_mr[XIW_MAX_RECV_SGE];
	bool rqe_valid;
	u32 msn[XIW_QN_COUNT];		/* next MSN expected per queue */
	u32 msg_len;			/* bytes placed into the RQE so far */
	u8 imm[XIW_IMM_DATA_LEN];	/* of a Send with Immediate Data */
	/*
	 * Length of the RDMA Write being received, and of the last one if
	 * it was the previous message: an Immediate Data completion reports
	 * it (RFC 7306 §6: Write followed by Immediate Data).
	 */
	u32 write_len;
	u32 last_write_len;
	/* Tagged: the registration of the last STag placed into. */
	struct xiw_mr *tagged_mr;
	struct xiw_orq_entry *orq;	/* outbound QN 1 requests, ORD */
	u32 orq_head, orq_tail;
	bool rtr_expected;		/* passive side of RFC 6581 P2P */
	bool failed;			/* stop parsing: stream is broken */
	/* The variable tail of a Terminate, Verify Request or Response. */
	u8 tail[sizeof(struct xiw_rdmap_terminate) - 4];
};

struct xiw_qp {
	struct ib_qp ibqp;
	struct xiw_ring sq;
	struct xiw_ring rq;
	struct xiw_qp_tx tx;
	struct xiw_qp_rx rx;
	/* Data path state shared by TX (process) and RX (softirq). */
	spinlock_t lock;
	spinlock_t post_lock;		/* kernel consumers' posters */
	struct mutex state_lock;	/* serialises modify_qp */
	enum ib_qp_state state;
	refcount_t iw_refs;		/* references taken by iw_cm */
	/* The TCP connection, between xiw_qp_llp_bind() and _unbind(). */
	struct xiw_cep *cep;
	/*
	 * Before that, the active endpoint connecting it, which clears this
	 * under state_lock before it lets go of the QP; destroy_qp fails it.
	 */
	struct xiw_cep *connecting;
	bool destroying;		/* no connection binds it any more */
	struct socket *sock;
	/*
	 * The bound stream went to Error: what its parser and transmit path
	 * held was flushed, so only a new connection brings RTS back.  The
	 * socket stays bound until the endpoint's work unbinds it.
	 */
	bool stream_over;
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	struct xiw_conn_params conn;
	struct completion iw_released;
	bool sig_all;			/* every WQE completes with a CQE */
	int access;			/* IB_ACCESS_REMOTE_* granted */
	u8 ord;
	u8 ird;
};

struct xiw_mr {
	struct ib_mr ibmr;
	struct ib_umem *umem;		/* NULL for kernel MRs */
	/* umem's pinned pages or a fast registration's; NULL: linear */
	struct page **pages;
	unsigned int first_page_offset;	/* of iova within pages[0] */
	u64 iova;
	u64 length;
	int access;
	u32 ext_access;			/* enum xiw_mr_ext_access */
	struct file *file;		/* flush to persistence: the mapped file */
	bool pmem;			/* flush to persistence: device DAX */
	loff_t file_offset;		/* of iova in it */
	struct crypto_shash *verify_tfm;	/* Verify: the hash chosen */
	/*
	 * The table's plus the data path's.  Deregistration drops the
	 * table's and returns; whoever drops the last frees the MR (in
	 * free_work: releasing the pinned pages may sleep).
	 */
	refcount_t refs;
	struct work_struct free_work;
	/*
	 * Fast registrations: the data path's accesses to the pages (read)
	 * against invalidation (write), after which the consumer may free
	 * them.  Other registrations' pages stay pinned until the MR is
	 * freed.
	 */
	rwlock_t use_lock;
	struct rcu_head rcu;
	/*
	 * Fast registration (kernel consumers): max_pages entries of pages
	 * are set by map_mr_sg, npages of them used; the STag is usable
	 * only between a Register and an Invalidate.
	 */
	bool fast_reg;
	bool stag_valid;
	u32 max_pages;
	u32 npages;
};

/* Why a local or remote access to a registration was refused. */
enum xiw_access_error {
	XIW_ACCESS_OK,
	XIW_ACCESS_INVALID_STAG,	/* no such STag, or key mismatch */
	XIW_ACCESS_WRONG_PD,		/* STag not associated with the QP */
	XIW_ACCESS_BOUNDS,		/* outside the registered range */
	XIW_ACCESS_RIGHTS,		/* access not granted */
};

static inline struct xiw_device *to_xiw_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct xiw_device, ibdev);
}

static inline struct xiw_pd *to_xiw_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct xiw_pd, ibpd);
}

static inline struct xiw_cq *to_xiw_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct xiw_cq, ibcq);
}

/* A kernel consumer's SGE list in the ring's layout. */
static inline void xiw_sges_from_ib(struct xiw_sge *dst,
				    const struct ib_sge *src, int num)
{
	int i;

	for (i = 0; i < num; i++)
		dst[i] = (struct xiw_sge){
			.addr = src[i].addr,
			.length = src[i].length,
			.lkey = src[i].lkey,
		};
}

static inline struct xiw_srq *to_xiw_srq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct xiw_srq, ibsrq);
}

static inline struct xiw_qp *to_xiw_qp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct xiw_qp, ibqp);
}

static inline struct xiw_mr *to_xiw_mr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct xiw_mr, ibmr);
}

/* xiw_cm.c, for the QP */
struct xiw_qp *xiw_cep_qp(struct xiw_cep *cep);
void xiw_cm_qp_close(struct xiw_cep *cep, bool abortive);
void xiw_cm_rtr_received(struct xiw_cep *cep);

/* xiw_cm.c, for the device */
void xiw_cm_device_gone(struct xiw_device *xdev);
void xiw_cm_debugfs_init(struct dentry *dir);

/* xiw_linger.c: closing a socket */
void xiw_sock_close(struct socket *sock, bool abortive, unsigned int linger_s);
void xiw_linger_end_all(void);
void xiw_linger_debugfs_init(struct dentry *dir);

/* xiw_qp.c, for the CM */
int xiw_qp_llp_bind(struct xiw_qp *qp, struct xiw_cep *cep,
		    struct socket *sock, const struct xiw_conn_params *params);
void xiw_qp_llp_unbind(struct xiw_qp *qp);

/* xiw_verbs.c */
int xiw_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		     struct ib_udata *udata);
int xiw_query_port(struct ib_device *ibdev, u32 port,
		   struct ib_port_attr *attr);
int xiw_get_port_immutable(struct ib_device *ibdev, u32 port,
			   struct ib_port_immutable *immutable);
int xiw_query_gid(struct ib_device *ibdev, u32 port, int index,
		  union ib_gid *gid);
int xiw_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey);
void xiw_get_dev_fw_str(struct ib_device *ibdev, char *str);
int xiw_alloc_ucontext(struct ib_ucontext *ibucontext, struct ib_udata *udata);
void xiw_ucontext_reap(struct ib_udata *udata);
void xiw_dealloc_ucontext(struct ib_ucontext *ibucontext);
void xiw_disassociate_ucontext(struct ib_ucontext *ibucontext);
int xiw_mmap(struct ib_ucontext *ibucontext, struct vm_area_struct *vma);
void xiw_mmap_free(struct rdma_user_mmap_entry *entry);
int xiw_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int xiw_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int xiw_ring_alloc(struct xiw_ring *ring, u32 num, u32 entry_size,
		   struct ib_udata *udata, u64 *mmap_key);
void xiw_ring_free(struct xiw_ring *ring);

/* xiw_cq.c */
int xiw_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct ib_udata *udata);
int xiw_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int xiw_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int xiw_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);

/* xiw_qp.c */
int xiw_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		  struct ib_udata *udata);
int xiw_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int xiw_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_udata *udata);
int xiw_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_qp_init_attr *init_attr);
int xiw_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr);
int xiw_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr);
void xiw_qp_put_ref(struct ib_qp *ibqp);
struct ib_qp *xiw_get_qp(struct ib_device *ibdev, int qpn);
void xiw_iw_add_ref(struct ib_qp *ibqp);
struct xiw_qp *xiw_qp_for_cm(struct iw_cm_id *id, u32 qpn);

/* xiw_qp_tx.c */
extern struct workqueue_struct *xiw_wq;
extern struct workqueue_struct *xiw_tx_wq;
int xiw_qp_tx_init(struct xiw_qp *qp);
void xiw_qp_tx_reset_stream(struct xiw_qp *qp);
void xiw_qp_tx_flush_now(struct xiw_qp *qp);
void xiw_qp_tx_destroy(struct xiw_qp *qp);
void xiw_qp_tx_kick(struct xiw_qp *qp);
void xiw_qp_tx_doorbell(struct xiw_qp *qp);
void xiw_qp_tx_send_rtr(struct xiw_qp *qp);
void xiw_qp_write_space(struct sock *sk);
void xiw_qp_send_terminate(struct xiw_qp *qp, u8 layer, u8 etype, u8 ecode,
			   const void *ddp_hdr, u8 ddp_hdr_len, u16 seg_len);
void xiw_qp_sq_complete_request(struct xiw_qp *qp, struct xiw_wqe *wqe,
				u32 seq, u8 status);

/* xiw_srq.c */
int xiw_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		   struct ib_udata *udata);
int xiw_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int xiw_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask mask, struct ib_udata *udata);
int xiw_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int xiw_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr);
int xiw_srq_take(struct xiw_srq *srq, struct xiw_rqe *rqe);

/*
 * xiw_crc.c: MPA's CRC32c (RFC 5044 §4.4), taken piece by piece.  A piece
 * of at most xiw_crc_table_max octets goes to lib/crc32's table, a longer
 * one to the crypto API: whichever was faster at load, at that length.
 */
extern unsigned int xiw_crc_table_max;
void xiw_crc_select(void);

/* The CRC register after @len more octets at @p (initial ~0, final ~). */
static inline u32 xiw_crc_update(u32 crc, const void *p, unsigned int len)
{
	if (len <= xiw_crc_table_max)
		return __crc32c_le(crc, p, len);
	return crc32c(crc, p, len);
}

/* xiw_qp_rx.c */
int xiw_wire_ops_init(void);
const struct xiw_opcode_info *xiw_wire_op(unsigned int rv, unsigned int opcode);
u8 xiw_wire_solicited(unsigned int rv, unsigned int opcode);
int xiw_rqe_pop(struct xiw_ring *ring, struct xiw_rqe *rqe);
int xiw_rqe_put(struct xiw_ring *ring, const struct ib_recv_wr *wr,
		const struct ib_recv_wr **bad_wr);
u32 xiw_rqe_posted(struct xiw_ring *ring);
int xiw_qp_rx_init(struct xiw_qp *qp);
void xiw_qp_rx_reset_stream(struct xiw_qp *qp);
void xiw_qp_rx_destroy(struct xiw_qp *qp);
void xiw_qp_data_ready(struct sock *sk);
void xiw_qp_rx_flush(struct xiw_qp *qp);
void xiw_qp_rx_process_queued(struct xiw_qp *qp);

/* xiw_qp.c */
void xiw_qp_fatal(struct xiw_qp *qp, u8 status);

/* xiw_cq.c */
void xiw_cq_post(struct xiw_cq *cq, const struct xiw_cqe *cqe, bool solicited);

/* xiw_mem.c */
struct xiw_mr *xiw_mr_get(struct xiw_device *xdev, struct ib_pd *pd, u32 stag,
			  u64 addr, u64 len, int access,
			  enum xiw_access_error *why);
bool xiw_mr_covers(const struct xiw_mr *mr, u64 addr, u64 len);
void xiw_mr_put(struct xiw_mr *mr);
void xiw_mr_hold(struct xiw_mr *mr);
int xiw_mr_walk_pages(struct xiw_mr *mr, u64 addr, size_t len,
		      int (*fn)(struct page *page, size_t offset, size_t n,
				void *arg),
		      void *arg);
bool xiw_mr_named(struct xiw_mr *mr, u32 stag);
int xiw_mr_sendmsg(struct socket *sock, struct msghdr *msg,
		   struct xiw_mr *const *held, u32 n);
int xiw_mr_copy_from(struct xiw_mr *mr, u64 addr, void *dst, size_t len);
int xiw_mr_copy_to(struct xiw_mr *mr, u64 addr, const void *src, size_t len);
int xiw_mr_atomic(struct xiw_mr *mr, u64 addr, unsigned int aopcode,
		  const struct xiw_rdmap_atomic_req *req, u64 *orig);
int xiw_mr_store64(struct xiw_mr *mr, u64 addr, u64 value);
int xiw_mr_flush(struct xiw_mr *mr, u64 addr, u64 len, u32 flags);
int xiw_mr_hash(struct xiw_mr *mr, u64 addr, u32 len, u8 *out);
struct xiw_mr *xiw_mr_get_region(struct xiw_device *xdev, struct ib_pd *pd,
				 u32 stag, int access,
				 enum xiw_access_error *why);
struct ib_mr *xiw_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			   u32 max_num_sg);
int xiw_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		  unsigned int *sg_offset);
u8 xiw_mr_fast_register(struct ib_pd *pd, struct ib_mr *ibmr, u32 key,
			int access);
enum xiw_access_error xiw_mr_invalidate(struct xiw_device *xdev,
					struct ib_pd *pd, u32 stag);
/*
 * One pass of the receive path over an skb's octets, front to back:
 * xiw_skb_cursor_copy() goes on where the last copy ended.  Opened with
 * skb_prepare_seq_read(skb, from, to, &seq), pos 0; closed with
 * skb_abort_seq_read().  A fragment stays mapped (kmap_atomic()) between
 * copies: nothing may sleep while the pass is open.
 */
struct xiw_skb_cursor {
	struct skb_seq_state seq;
	unsigned int pos;	/* octets copied since from */
};

int xiw_skb_cursor_copy(struct xiw_skb_cursor *cur, void *to, size_t n,
			u32 *crc);
int xiw_mr_copy_from_skb(struct xiw_mr *mr, u64 addr,
			 struct xiw_skb_cursor *cur, size_t len, u32 *crc);
struct ib_mr *xiw_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *xiw_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			      u64 iova, int access, struct ib_udata *udata);
int xiw_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);

/* xiw_cm.c */
int xiw_connect(struct iw_cm_id *id, struct iw_cm_conn_param *param);
int xiw_accept(struct iw_cm_id *id, struct iw_cm_conn_param *param);
int xiw_reject(struct iw_cm_id *id, const void *pdata, u8 pdata_len);
int xiw_create_listen(struct iw_cm_id *id, int backlog);
int xiw_destroy_listen(struct iw_cm_id *id);

/* Last: it adapts what is declared above to the kernel at hand. */
#include "xiw_compat.h"

#endif /* XIW_H */
