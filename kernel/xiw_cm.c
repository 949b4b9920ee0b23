// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiw connection management: TCP connections for iw_cm and the MPA
 * connection setup on top of them (RFC 5044 §7.1, RFC 6581).
 *
 * Every TCP socket of xiw belongs to one endpoint (struct xiw_cep), its
 * sk_user_data.  Socket callbacks run in softirq context and only record
 * what happened in cep->events and queue cep->work; everything else runs
 * in that work item (or in the iw_cm downcalls) under cep->mutex, so no
 * thread blocks for a connection.  Once MPA is done the socket is handed
 * to the QP with xiw_qp_llp_bind() and the endpoint only watches the TCP
 * state until the connection is closed.
 *
 * Lock order: a child endpoint's mutex, then its listener's mutex
 * (SINGLE_DEPTH_NESTING); then a QP's state_lock; then sk_callback_lock.
 */
#include <linux/debugfs.h>
#include <linux/inetdevice.h>
#include <linux/module.h>
#include <linux/tcp.h>
#include <linux/workqueue.h>
#include <net/addrconf.h>
#include <net/sock.h>
#include <xiw/mpa_negotiate.h>

#include "xiw.h"

static uint mpa_rev = XIW_MPA_REV_V2;
module_param(mpa_rev, uint, 0644);
MODULE_PARM_DESC(mpa_rev, "MPA revision to request: 1 (RFC 5044) or 2 (RFC 6581, default)");

static bool mpa_crc = true;
module_param(mpa_crc, bool, 0644);
MODULE_PARM_DESC(mpa_crc, "Ask for the MPA CRC (default on)");

/* RFC 5044 §7.1: an M bit asks for markers on the stream one receives. */
#define XIW_MARKERS_AS_INITIATOR 0x1
#define XIW_MARKERS_AS_RESPONDER 0x2
static uint mpa_markers;
module_param(mpa_markers, uint, 0644);
MODULE_PARM_DESC(mpa_markers, "Ask the peer for MPA markers: 1 when connecting, 2 when accepting, 3 both (default 0: never)");

static bool peer_to_peer = true;
module_param(peer_to_peer, bool, 0644);
MODULE_PARM_DESC(peer_to_peer, "RFC 6581 peer-to-peer mode with a Ready-To-Receive message (default on)");

static uint mpa_timeout = 10;
module_param(mpa_timeout, uint, 0644);
MODULE_PARM_DESC(mpa_timeout, "Seconds for TCP connect + MPA exchange, and for the RTR (default 10)");

/*
 * Like TCP's accept backlog, for the MPA exchange: connections a listener
 * has accepted that have not completed their Request yet.  Beyond this
 * it accepts no more until one completes or times out; the rest wait in
 * TCP's accept queue, itself bounded by the listen backlog.
 */
static uint mpa_backlog = 128;
module_param(mpa_backlog, uint, 0644);
MODULE_PARM_DESC(mpa_backlog, "Connections per listener still in the MPA exchange (default 128)");

/*
 * How long, in mpa_timeouts, a Request handed to iw_cm may wait for the
 * ULP's accept or reject: a minute by default, as long as any initiator
 * is known to wait for the Reply (cxgb4's ep_timeout_secs).  Beyond it
 * iw_cm has dropped the event (see xiw_cep_publish()).
 */
#define XIW_ANSWER_MPA_TIMEOUTS 6

/* Endpoints alive, for tests that look for leaks (debugfs). */
static atomic_t xiw_cep_count = ATOMIC_INIT(0);

/* iw_cm carries at most this much private data (u8 length). */
#define XIW_CM_MAX_ULP_PD 255
/* Addresses a wildcard listener covers, per device. */
#define XIW_LISTEN_MAX_ADDRS 16

enum xiw_cep_state {
	XIW_CEP_IDLE,
	XIW_CEP_LISTEN,		/* listening socket */
	XIW_CEP_CONNECTING,	/* active: TCP connect in progress */
	XIW_CEP_AWAIT_REPLY,	/* active: Request sent, reading the Reply */
	XIW_CEP_AWAIT_REQUEST,	/* passive: reading the Request */
	XIW_CEP_REQ_DELIVERED,	/* passive: iw_cm has it, awaiting accept */
	XIW_CEP_AWAIT_RTR,	/* passive: accepted, P2P, waiting for RTR */
	XIW_CEP_ESTABLISHED,	/* the QP owns the stream */
	XIW_CEP_CLOSED,
};

/* cep->events, set by callbacks and the QP, consumed by cep->work */
enum {
	XIW_EV_DATA,		/* readable */
	XIW_EV_STATE,		/* TCP state changed */
	XIW_EV_ACCEPT,		/* listener: connection to accept */
	XIW_EV_CLOSE,		/* QP: graceful close */
	XIW_EV_ABORT,		/* QP: abortive close */
	XIW_EV_RTR,		/* QP: the RTR arrived */
	XIW_EV_LISTENER_GONE,	/* child: its listener was destroyed */
};

struct xiw_cep {
	struct kref ref;
	struct mutex mutex;		/* serialises all but the callbacks */
	enum xiw_cep_state state;
	unsigned long events;		/* XIW_EV_* bits */
	struct work_struct work;
	struct delayed_work timer;
	bool timer_armed;
	bool listening;			/* a listener, for its whole life */
	bool bound;			/* xiw_qp_llp_bind() succeeded */
	u32 handle;			/* in xdev->cep_xa, iw_cm's provider_data */

	struct xiw_device *xdev;
	struct socket *sock;
	struct iw_cm_id *cm_id;		/* with a reference (add_ref) */
	struct xiw_qp *qp;		/* with a reference (xiw_qp_for_cm) */

	/* listener: its children reading their Request; child: entry */
	struct list_head children;
	unsigned int nchildren;
	bool backlog_noted;		/* said so when it was reached */
	u16 port;			/* listener: its local port */
	struct list_head entry;
	struct xiw_cep *listener;	/* child, while on listener->children */

	/* the socket's callbacks before xiw took it over */
	void (*orig_state_change)(struct sock *sk);
	void (*orig_data_ready)(struct sock *sk);
	void (*orig_write_space)(struct sock *sk);

	/* MPA exchange */
	struct xiw_mpa_rr rx_hdr;	/* frame being received */
	u8 rx_pd[XIW_MPA_MAX_PD];
	unsigned int rx_len;		/* octets of it received */
	struct xiw_mpa_terms req;	/* the Request, as sent or received */
	u8 *tx_pd;			/* active: ULP private data to send */
	u16 tx_pd_len;
	u16 ird;			/* local */
	u16 ord;
	struct xiw_conn_params conn;
};

/* iw_cm_id->provider_data of a listening cm_id */
struct xiw_listen {
	struct list_head ceps;
};

static void xiw_cep_work(struct work_struct *work);
static void xiw_cep_timeout(struct work_struct *work);

static struct xiw_cep *xiw_cep_alloc(struct xiw_device *xdev)
{
	struct xiw_cep *cep = kzalloc(sizeof(*cep), GFP_KERNEL);

	if (!cep)
		return NULL;
	kref_init(&cep->ref);
	mutex_init(&cep->mutex);
	INIT_WORK(&cep->work, xiw_cep_work);
	INIT_DELAYED_WORK(&cep->timer, xiw_cep_timeout);
	INIT_LIST_HEAD(&cep->children);
	INIT_LIST_HEAD(&cep->entry);
	cep->xdev = xdev;
	cep->state = XIW_CEP_IDLE;
	atomic_inc(&xiw_cep_count);
	return cep;
}

static void xiw_cep_release(struct kref *ref)
{
	struct xiw_cep *cep = container_of(ref, struct xiw_cep, ref);

	kfree(cep->tx_pd);
	kfree(cep);
	atomic_dec(&xiw_cep_count);
}

static void xiw_cep_get(struct xiw_cep *cep)
{
	kref_get(&cep->ref);
}

static void xiw_cep_put(struct xiw_cep *cep)
{
	kref_put(&cep->ref, xiw_cep_release);
}

/* Any context.  The queued work holds a reference. */
static void xiw_cep_queue(struct xiw_cep *cep, int event)
{
	set_bit(event, &cep->events);
	xiw_cep_get(cep);
	if (!queue_work(xiw_wq, &cep->work))
		xiw_cep_put(cep);
}

static void xiw_cep_arm_timer(struct xiw_cep *cep, unsigned int seconds)
{
	cep->timer_armed = true;
	xiw_cep_get(cep);
	if (!queue_delayed_work(xiw_wq, &cep->timer,
				(unsigned long)max_t(uint, seconds, 1) * HZ))
		xiw_cep_put(cep);
}

static void xiw_cep_disarm_timer(struct xiw_cep *cep)
{
	cep->timer_armed = false;
	if (cancel_delayed_work(&cep->timer))
		xiw_cep_put(cep);
}

/* ==== Socket callbacks: softirq, under sk_callback_lock ==== */

static void xiw_cm_sk_state_change(struct sock *sk)
{
	void (*orig)(struct sock *sk) = NULL;
	struct xiw_cep *cep;

	read_lock_bh(&sk->sk_callback_lock);
	cep = sk->sk_user_data;
	if (cep) {
		orig = cep->orig_state_change;
		/* Accepted sockets inherit the listener's callbacks. */
		if (!cep->listening)
			xiw_cep_queue(cep, XIW_EV_STATE);
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (orig)
		orig(sk);
}

static void xiw_cm_sk_data_ready(struct sock *sk)
{
	void (*orig)(struct sock *sk) = NULL;
	struct socket *listen_sock;
	struct xiw_cep *cep;

	read_lock_bh(&sk->sk_callback_lock);
	cep = sk->sk_user_data;
	if (cep) {
		orig = cep->orig_data_ready;
		/*
		 * On an accepted socket that still carries its listener's
		 * callbacks, the listener may be releasing its own socket
		 * under another sk_callback_lock: read it once.  The struct
		 * socket is freed after an RCU grace period, which this
		 * BH-disabled section holds off.
		 */
		listen_sock = READ_ONCE(cep->sock);
		if (!cep->listening)
			xiw_cep_queue(cep, XIW_EV_DATA);
		else if (listen_sock && READ_ONCE(listen_sock->sk) == sk)
			xiw_cep_queue(cep, XIW_EV_ACCEPT);
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (orig)
		orig(sk);
}

/*
 * Make @sock the socket of @cep.  @orig, if given, supplies the callbacks
 * to restore on detach (an accepted socket carries its listener's).
 */
static void xiw_cep_attach_sock(struct xiw_cep *cep, struct socket *sock,
				const struct xiw_cep *orig)
{
	struct sock *sk = sock->sk;

	xiw_cep_get(cep);		/* the socket's reference */
	write_lock_bh(&sk->sk_callback_lock);
	if (orig) {
		cep->orig_state_change = orig->orig_state_change;
		cep->orig_data_ready = orig->orig_data_ready;
		cep->orig_write_space = orig->orig_write_space;
	} else {
		cep->orig_state_change = sk->sk_state_change;
		cep->orig_data_ready = sk->sk_data_ready;
		cep->orig_write_space = sk->sk_write_space;
	}
	cep->sock = sock;
	sk->sk_user_data = cep;
	sk->sk_state_change = xiw_cm_sk_state_change;
	sk->sk_data_ready = xiw_cm_sk_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
}

/* The QP no longer waits with @cep: it may connect or be accepted again. */
static void xiw_cep_give_up_qp(struct xiw_cep *cep)
{
	struct xiw_qp *qp = cep->qp;

	if (!qp)
		return;
	mutex_lock(&qp->state_lock);
	if (qp->connecting == cep)
		qp->connecting = NULL;
	mutex_unlock(&qp->state_lock);
}

/*
 * Unbind the QP and release the socket: the end of the TCP connection.
 * Process context, cep->mutex held.
 */
static void xiw_cep_release_sock(struct xiw_cep *cep, bool abortive)
{
	struct socket *sock = cep->sock;
	struct xiw_qp *qp = cep->qp;
	struct sock *sk;

	xiw_cep_disarm_timer(cep);
	if (qp && cep->bound)
		xiw_qp_llp_unbind(qp);
	cep->bound = false;
	xiw_cep_give_up_qp(cep);

	if (sock) {
		sk = sock->sk;
		write_lock_bh(&sk->sk_callback_lock);
		sk->sk_user_data = NULL;
		sk->sk_state_change = cep->orig_state_change;
		sk->sk_data_ready = cep->orig_data_ready;
		sk->sk_write_space = cep->orig_write_space;
		WRITE_ONCE(cep->qp, NULL);
		WRITE_ONCE(cep->sock, NULL);
		write_unlock_bh(&sk->sk_callback_lock);
		/* Not the last reference: the caller holds one. */
		xiw_cep_put(cep);
		xiw_sock_close(sock, abortive, mpa_timeout);
	}
	WRITE_ONCE(cep->qp, NULL);
	if (qp)
		xiw_qp_put_ref(&qp->ibqp);
	cep->state = XIW_CEP_CLOSED;
}

static void xiw_cep_drop_cm_id(struct xiw_cep *cep)
{
	if (cep->cm_id) {
		cep->cm_id->rem_ref(cep->cm_id);
		cep->cm_id = NULL;
	}
}

/*
 * iw_cm keeps the provider_data of a CONNECT_REQUEST for its accept or
 * reject, but it may drop the event and then call neither: when the
 * listener's cm_id is destroyed before its event work runs, or when it
 * cannot make the new cm_id.  So it gets a handle into xdev->cep_xa, not
 * the endpoint.  Whoever takes the handle out first (accept, reject, the
 * peer's close, the answer deadline, the device going away) owns the
 * table's reference; a later downcall finds nothing.  cep->mutex held.
 */
static int xiw_cep_publish(struct xiw_cep *cep)
{
	struct xiw_device *xdev = cep->xdev;
	int rc;

	xiw_cep_get(cep);
	rc = xa_alloc_cyclic(&xdev->cep_xa, &cep->handle, cep,
			     XA_LIMIT(1, U32_MAX), &xdev->cep_handle_next,
			     GFP_KERNEL);
	if (rc < 0) {
		cep->handle = 0;
		xiw_cep_put(cep);
		return rc;
	}
	return 0;
}

/*
 * Take the handle back unless a downcall did; true if we did.
 * cep->mutex held.
 */
static bool xiw_cep_unpublish(struct xiw_cep *cep)
{
	bool taken = cep->handle &&
		     xa_cmpxchg(&cep->xdev->cep_xa, cep->handle, cep, NULL,
				0) == cep;

	/* Not the last reference: the caller holds one. */
	if (taken)
		xiw_cep_put(cep);
	cep->handle = 0;
	return taken;
}

/* Seconds a ULP has to answer a Request (XIW_ANSWER_MPA_TIMEOUTS). */
static unsigned int xiw_answer_seconds(void)
{
	return XIW_ANSWER_MPA_TIMEOUTS * max_t(uint, mpa_timeout, 1);
}

/* For a downcall: the endpoint behind @id, with the table's reference. */
static struct xiw_cep *xiw_cep_take_published(struct iw_cm_id *id)
{
	unsigned long handle = (uintptr_t)id->provider_data;

	if (!handle)
		return NULL;
	return xa_erase(&to_xiw_dev(id->device)->cep_xa, handle);
}

/* ==== Upcalls to iw_cm ==== */

static void xiw_cep_addrs(struct xiw_cep *cep, struct iw_cm_id *id,
			  struct iw_cm_event *ev)
{
	if (cep->sock &&
	    kernel_getsockname(cep->sock,
			       (struct sockaddr *)&ev->local_addr) >= 0 &&
	    kernel_getpeername(cep->sock,
			       (struct sockaddr *)&ev->remote_addr) >= 0)
		return;
	if (id) {
		ev->local_addr = id->m_local_addr;
		ev->remote_addr = id->m_remote_addr;
	}
}

static int xiw_cm_upcall(struct xiw_cep *cep, struct iw_cm_id *id,
			 enum iw_cm_event_type type, int status,
			 const void *pd, unsigned int pd_len)
{
	struct iw_cm_event ev = {
		.event = type,
		.status = status,
	};

	xiw_cep_addrs(cep, id, &ev);
	if (pd_len) {
		ev.private_data = (void *)pd;
		ev.private_data_len = pd_len;
	}
	switch (type) {
	case IW_CM_EVENT_CONNECT_REQUEST:
		ev.provider_data = (void *)(uintptr_t)cep->handle;
		fallthrough;
	case IW_CM_EVENT_CONNECT_REPLY:
	case IW_CM_EVENT_ESTABLISHED:
		ev.ird = min_t(u16, cep->ird, U8_MAX);
		ev.ord = min_t(u16, cep->ord, U8_MAX);
		break;
	default:
		break;
	}
	return id->event_handler(id, &ev);
}

static void xiw_cep_log_conn(const struct xiw_cep *cep, u8 rev, u8 peer_flags)
{
	const struct xiw_conn_params *cp = &cep->conn;

	ibdev_dbg(&cep->xdev->ibdev,
		  "MPA rev %u %s: peer flags 0x%02x crc %d markers tx %d rx %d ext %d p2p %d rtr 0x%x ird %u ord %u\n",
		  rev, cp->initiator ? "initiator" : "responder", peer_flags,
		  cp->crc, cp->markers_tx, cp->markers_rx, cp->extensions,
		  cp->p2p, cp->rtr_opcode, cp->ird, cp->ord);
}

/* ==== MPA frames ==== */

static int xiw_mpa_send(struct xiw_cep *cep, const char *key, u8 flags,
			u8 rev, const struct xiw_mpa_v2_ird_ord *v2w,
			const void *pd, unsigned int pd_len)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	struct xiw_mpa_rr hdr = {};
	struct kvec iov[3];
	unsigned int n = 0, len;
	int rc;

	memcpy(hdr.key, key, XIW_MPA_KEY_LEN);
	hdr.flags = flags;
	hdr.rev = rev;
	len = pd_len + (v2w ? sizeof(*v2w) : 0);
	hdr.pd_len = cpu_to_be16(len);

	iov[n].iov_base = &hdr;
	iov[n++].iov_len = sizeof(hdr);
	if (v2w) {
		iov[n].iov_base = (void *)v2w;
		iov[n++].iov_len = sizeof(*v2w);
	}
	if (pd_len) {
		iov[n].iov_base = (void *)pd;
		iov[n++].iov_len = pd_len;
	}
	len += sizeof(hdr);
	/* A fresh connection's send buffer always takes the <= 536 octets. */
	rc = kernel_sendmsg(cep->sock, &msg, iov, n, len);
	if (rc < 0)
		return rc;
	return rc == len ? 0 : -EAGAIN;
}

/*
 * Read the rest of a Request/Reply frame: the 20-octet header, then
 * exactly PD_Length octets, so that the first FPDU behind the frame
 * stays in the socket (RFC 5044 §7.1).
 * Returns 1 when complete, 0 when more is to come, <0 on error.
 */
static int xiw_mpa_recv(struct xiw_cep *cep, const char *key)
{
	const unsigned int hlen = sizeof(cep->rx_hdr);
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };
	unsigned int want;
	struct kvec iov;
	int rc;

	for (;;) {
		if (cep->rx_len < hlen) {
			iov.iov_base = (u8 *)&cep->rx_hdr + cep->rx_len;
			want = hlen - cep->rx_len;
		} else {
			want = be16_to_cpu(cep->rx_hdr.pd_len) -
			       (cep->rx_len - hlen);
			if (!want)
				return 1;
			iov.iov_base = cep->rx_pd + (cep->rx_len - hlen);
		}
		iov.iov_len = want;
		rc = kernel_recvmsg(cep->sock, &msg, &iov, 1, want,
				    MSG_DONTWAIT);
		if (rc == -EAGAIN)
			return 0;
		if (rc < 0)
			return rc;
		if (rc == 0)
			return -ECONNRESET;	/* FIN in the middle of MPA */
		cep->rx_len += rc;
		if (cep->rx_len != hlen)
			continue;

		/* Header complete: RFC 5044 §7.1 key and PD_Length. */
		if (memcmp(cep->rx_hdr.key, key, XIW_MPA_KEY_LEN))
			return -EPROTO;
		if (cep->rx_hdr.rev != XIW_MPA_REV_V1 &&
		    cep->rx_hdr.rev != XIW_MPA_REV_V2)
			return -EPROTO;
		if (be16_to_cpu(cep->rx_hdr.pd_len) > XIW_MPA_MAX_PD)
			return -EPROTO;
	}
}

/* Does the received frame start its private data with RFC 6581 §5 word? */
static bool xiw_mpa_rx_has_v2w(const struct xiw_cep *cep)
{
	return cep->rx_hdr.rev == XIW_MPA_REV_V2 &&
	       (cep->rx_hdr.flags & XIW_MPA_FLAG_ENHANCED);
}

/* The module's settings for one side of the MPA exchange. */
static struct xiw_mpa_policy xiw_mpa_local_policy(bool initiator)
{
	return (struct xiw_mpa_policy){
		.rev = mpa_rev,
		.crc = mpa_crc,
		.markers = !!(mpa_markers & (initiator ? XIW_MARKERS_AS_INITIATOR :
							  XIW_MARKERS_AS_RESPONDER)),
		.p2p = peer_to_peer,
		.max_ird = XIW_MAX_IRD,
		.max_ord = XIW_MAX_ORD,
	};
}

/* The connection's parameters as the negotiation decided them. */
static void xiw_cep_set_conn(struct xiw_cep *cep, const struct xiw_mpa_result *res,
			     bool initiator)
{
	struct xiw_conn_params *cp = &cep->conn;

	cp->initiator = initiator;
	cp->crc = res->crc;
	cp->markers_tx = res->markers_tx;
	cp->markers_rx = res->markers_rx;
	cp->extensions = res->extensions;
	cp->p2p = res->p2p;
	cp->rtr_opcode = res->rtr_opcode;
	cp->ird = res->ird;
	cp->ord = res->ord;
	cep->ird = res->ird;
	cep->ord = res->ord;
}

/* ==== Active side ==== */

/* Report a failed connection attempt (no QP bound yet) and tear down. */
static void xiw_active_fail(struct xiw_cep *cep, int status, const void *pd,
			    unsigned int pd_len)
{
	struct iw_cm_id *id = cep->cm_id;

	/* Before the upcall, on which the consumer may reuse the QP. */
	xiw_cep_give_up_qp(cep);
	if (id)
		xiw_cm_upcall(cep, id, IW_CM_EVENT_CONNECT_REPLY, status, pd,
			      pd_len);
	xiw_cep_release_sock(cep, status != -ECONNREFUSED);
	xiw_cep_drop_cm_id(cep);
}

static void xiw_active_send_request(struct xiw_cep *cep)
{
	const struct xiw_mpa_policy pol = xiw_mpa_local_policy(true);
	struct xiw_mpa_v2_ird_ord v2w;
	int rc;

	xiw_mpa_request(&pol, cep->ird, cep->ord, &cep->req);
	xiw_mpa_terms_word(&cep->req, &v2w);
	rc = xiw_mpa_send(cep, XIW_MPA_KEY_REQ, cep->req.flags, cep->req.rev,
			  cep->req.has_v2w ? &v2w : NULL, cep->tx_pd,
			  cep->tx_pd_len);
	if (rc) {
		xiw_active_fail(cep, rc, NULL, 0);
		return;
	}
	cep->state = XIW_CEP_AWAIT_REPLY;
	/* The Reply may already be queued. */
	xiw_cep_queue(cep, XIW_EV_DATA);
}

static void xiw_active_connect_done(struct xiw_cep *cep)
{
	struct sock *sk = cep->sock->sk;
	int err;

	switch (READ_ONCE(sk->sk_state)) {
	case TCP_ESTABLISHED:
		xiw_active_send_request(cep);
		break;
	case TCP_SYN_SENT:
	case TCP_SYN_RECV:
		break;
	default:
		err = sock_error(sk);
		xiw_active_fail(cep, err ? err : -ECONNRESET, NULL, 0);
		break;
	}
}

/*
 * The Reply is complete: negotiate (RFC 5044 §7.1, RFC 6581 §5), bind the
 * QP and report to iw_cm.
 */
static void xiw_active_process_reply(struct xiw_cep *cep)
{
	const struct xiw_mpa_rr *hdr = &cep->rx_hdr;
	unsigned int pd_len = be16_to_cpu(hdr->pd_len);
	const struct xiw_mpa_v2_ird_ord *v2w = NULL;
	const u8 *pd = cep->rx_pd;
	struct xiw_mpa_result res;
	struct xiw_mpa_terms rep;
	int rc;

	xiw_cep_disarm_timer(cep);

	if (xiw_mpa_rx_has_v2w(cep)) {
		if (pd_len < sizeof(*v2w)) {
			/* A reject may come without anything at all. */
			if (hdr->flags & XIW_MPA_FLAG_R)
				pd_len = 0;
			else
				goto bad;
		} else {
			v2w = (const struct xiw_mpa_v2_ird_ord *)pd;
			pd += sizeof(*v2w);
			pd_len -= sizeof(*v2w);
		}
	}
	if (pd_len > XIW_CM_MAX_ULP_PD)
		goto bad;

	xiw_mpa_terms_read(&rep, hdr->rev, hdr->flags, v2w);
	switch (xiw_mpa_conclude(&cep->req, &rep, XIW_MAX_IRD, &res)) {
	case XIW_MPA_ACCEPTED:
		break;
	case XIW_MPA_REFUSED:
		xiw_active_fail(cep, -ECONNREFUSED, pd, pd_len);
		return;
	default:
		goto bad;
	}
	xiw_cep_set_conn(cep, &res, true);

	xiw_cep_log_conn(cep, hdr->rev, hdr->flags);
	rc = xiw_qp_llp_bind(cep->qp, cep, cep->sock, &cep->conn);
	if (rc)
		goto fail;
	cep->bound = true;
	cep->state = XIW_CEP_ESTABLISHED;
	xiw_cm_upcall(cep, cep->cm_id, IW_CM_EVENT_CONNECT_REPLY, 0, pd,
		      pd_len);
	return;

bad:
	rc = -EPROTO;
fail:
	xiw_active_fail(cep, rc, NULL, 0);
}

static void xiw_active_read_reply(struct xiw_cep *cep)
{
	int rc = xiw_mpa_recv(cep, XIW_MPA_KEY_REP);

	if (rc < 0)
		xiw_active_fail(cep, rc == -EPROTO ? -EPROTO : -ECONNRESET,
				NULL, 0);
	else if (rc > 0)
		xiw_active_process_reply(cep);
}

static struct socket *xiw_cm_sock_create(struct xiw_device *xdev, int family)
{
	struct net *net = dev_net(xdev->netdev);
	struct socket *sock;
	int rc;

	rc = sock_create_kern(net, family, SOCK_STREAM, IPPROTO_TCP, &sock);
	if (rc)
		return ERR_PTR(rc);
	/*
	 * A kernel socket holds no reference on its namespace.  xiw's live as
	 * long as a listener or a connection, which may outlast the processes
	 * of the namespace, so they hold one, as a user's socket does; the
	 * sockets a listener accepts inherit it (sk_clone_lock()).
	 */
	sock->sk->sk_net_refcnt = 1;
	get_net_track(net, &sock->sk->ns_tracker, GFP_KERNEL);
	sock_inuse_add(net, 1);
	sock_set_reuseaddr(sock->sk);
	tcp_sock_set_nodelay(sock->sk);
	return sock;
}

static int xiw_addr_len(const struct sockaddr_storage *a)
{
	switch (a->ss_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return -EAFNOSUPPORT;
	}
}

static void xiw_addr_clear_port(struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		((struct sockaddr_in *)a)->sin_port = 0;
	else
		((struct sockaddr_in6 *)a)->sin6_port = 0;
}

int xiw_connect(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	struct xiw_device *xdev = to_xiw_dev(id->device);
	struct sockaddr_storage laddr = id->m_local_addr;
	struct sockaddr_storage raddr = id->m_remote_addr;
	struct socket *sock;
	struct xiw_qp *qp;
	struct xiw_cep *cep;
	int alen, rc;

	alen = xiw_addr_len(&raddr);
	if (alen < 0 || laddr.ss_family != raddr.ss_family)
		return -EAFNOSUPPORT;
	if (param->private_data_len > XIW_CM_MAX_ULP_PD)
		return -EINVAL;
	qp = xiw_qp_for_cm(id, param->qpn);
	if (!qp)
		return -EINVAL;

	cep = xiw_cep_alloc(xdev);
	if (!cep) {
		xiw_qp_put_ref(&qp->ibqp);
		return -ENOMEM;
	}
	if (param->private_data_len) {
		cep->tx_pd = kmemdup(param->private_data,
				     param->private_data_len, GFP_KERNEL);
		if (!cep->tx_pd) {
			rc = -ENOMEM;
			goto err_cep;
		}
		cep->tx_pd_len = param->private_data_len;
	}
	cep->ird = min_t(u32, param->ird, XIW_MAX_IRD);
	cep->ord = min_t(u32, param->ord, XIW_MAX_ORD);

	sock = xiw_cm_sock_create(xdev, raddr.ss_family);
	if (IS_ERR(sock)) {
		rc = PTR_ERR(sock);
		goto err_cep;
	}
	/*
	 * Bind to the address and port rdma_cm chose; its port space is
	 * not TCP's, so fall back to any port if that one is taken.
	 */
	rc = kernel_bind(sock, (struct sockaddr *)&laddr, alen);
	if (rc == -EADDRINUSE) {
		xiw_addr_clear_port(&laddr);
		rc = kernel_bind(sock, (struct sockaddr *)&laddr, alen);
	}
	if (rc) {
		sock_release(sock);
		goto err_cep;
	}

	mutex_lock(&cep->mutex);
	cep->qp = qp;
	id->add_ref(id);
	cep->cm_id = id;
	xiw_cep_attach_sock(cep, sock, NULL);
	cep->state = XIW_CEP_CONNECTING;
	xiw_cep_arm_timer(cep, mpa_timeout);

	/* A QP being destroyed is not connected; else it can fail us. */
	mutex_lock(&cep->qp->state_lock);
	if (cep->qp->destroying || cep->qp->connecting || cep->qp->cep)
		rc = -EINVAL;
	else
		cep->qp->connecting = cep;
	mutex_unlock(&cep->qp->state_lock);
	if (!rc)
		rc = kernel_connect(sock, (struct sockaddr *)&raddr, alen,
				    O_NONBLOCK);
	if (rc == 0 || rc == -EINPROGRESS) {
		/* Covers a connect that completed before we looked. */
		xiw_cep_queue(cep, XIW_EV_STATE);
		rc = 0;
	} else {
		/* Synchronous failure: iw_cm gets the error, no event. */
		xiw_cep_release_sock(cep, true);
		xiw_cep_drop_cm_id(cep);
	}
	mutex_unlock(&cep->mutex);
	xiw_cep_put(cep);
	return rc;

err_cep:
	xiw_qp_put_ref(&qp->ibqp);
	xiw_cep_put(cep);
	return rc;
}

/* ==== Passive side ==== */

/* Child: leave the listener's list of children still reading. */
static void xiw_child_unlink(struct xiw_cep *cep)
{
	struct xiw_cep *l = cep->listener;

	if (!l)
		return;
	mutex_lock_nested(&l->mutex, SINGLE_DEPTH_NESTING);
	list_del_init(&cep->entry);
	/* Room for one more: accept what may have waited for it. */
	l->nchildren--;
	if (l->state == XIW_CEP_LISTEN)
		xiw_cep_queue(l, XIW_EV_ACCEPT);
	mutex_unlock(&l->mutex);
	cep->listener = NULL;
	xiw_cep_put(l);
}

/* Child still reading its Request: close, nobody to tell. */
static void xiw_child_drop(struct xiw_cep *cep)
{
	xiw_cep_release_sock(cep, true);
	xiw_child_unlink(cep);
}

/*
 * The Request is complete: check it (RFC 5044 §7.1, RFC 6581 §5) and
 * hand it to iw_cm on the listener's cm_id.
 */
static void xiw_passive_process_request(struct xiw_cep *cep)
{
	const struct xiw_mpa_rr *req = &cep->rx_hdr;
	unsigned int pd_len = be16_to_cpu(req->pd_len);
	const struct xiw_mpa_v2_ird_ord *v2w = NULL;
	const u8 *pd = cep->rx_pd;
	struct xiw_cep *l = cep->listener;
	int rc = -ECONNABORTED;

	xiw_cep_disarm_timer(cep);

	/* Without RFC 6581 §5 values, offer what the device has. */
	cep->ird = XIW_MAX_IRD;
	cep->ord = XIW_MAX_ORD;
	if (xiw_mpa_rx_has_v2w(cep)) {
		if (pd_len < sizeof(*v2w))
			goto drop;
		v2w = (const struct xiw_mpa_v2_ird_ord *)pd;
		pd += sizeof(*v2w);
		pd_len -= sizeof(*v2w);
	}
	xiw_mpa_terms_read(&cep->req, req->rev, req->flags, v2w);
	if (v2w) {
		/* Our IRD serves the peer's ORD and vice versa (§5.1). */
		cep->ird = min_t(u16, cep->req.ord, XIW_MAX_IRD);
		cep->ord = min_t(u16, cep->req.ird, XIW_MAX_ORD);
	}
	/* A Request with R set is malformed (R is for Replies). */
	if (pd_len > XIW_CM_MAX_ULP_PD || (req->flags & XIW_MPA_FLAG_R))
		goto drop;
	if (!l)
		goto drop;

	cep->state = XIW_CEP_REQ_DELIVERED;
	mutex_lock_nested(&l->mutex, SINGLE_DEPTH_NESTING);
	if (l->state == XIW_CEP_LISTEN && l->cm_id) {
		rc = xiw_cep_publish(cep);
		if (!rc)
			rc = xiw_cm_upcall(cep, l->cm_id,
					   IW_CM_EVENT_CONNECT_REQUEST, 0, pd,
					   pd_len);
	}
	mutex_unlock(&l->mutex);
	xiw_child_unlink(cep);
	if (rc) {
		xiw_cep_unpublish(cep);
		xiw_cep_release_sock(cep, true);
		return;
	}
	xiw_cep_arm_timer(cep, xiw_answer_seconds());
	return;

drop:
	xiw_child_drop(cep);
}

static void xiw_passive_read_request(struct xiw_cep *cep)
{
	int rc = xiw_mpa_recv(cep, XIW_MPA_KEY_REQ);

	if (rc < 0) {
		ibdev_dbg(&cep->xdev->ibdev, "MPA Request: error %d, closed\n",
			  rc);
		xiw_child_drop(cep);
	} else if (rc > 0) {
		xiw_passive_process_request(cep);
	}
}

/*
 * The ULP has not answered the Request in time: iw_cm dropped it, and the
 * initiator has given up waiting.  Unless a downcall took the handle
 * just now: then the endpoint is the downcall's.
 */
static void xiw_passive_unanswered(struct xiw_cep *cep)
{
	struct sockaddr_storage peer = {};

	if (!xiw_cep_unpublish(cep))
		return;
	if (cep->sock)
		kernel_getpeername(cep->sock, (struct sockaddr *)&peer);
	ibdev_info_ratelimited(&cep->xdev->ibdev,
			       "connection request from %pISpc not answered in %u s, closed\n",
			       &peer, xiw_answer_seconds());
	xiw_cep_release_sock(cep, true);
}

static void xiw_listener_accept(struct xiw_cep *l)
{
	struct socket *nsock;
	struct xiw_cep *cep;
	int rc;

	while (l->state == XIW_CEP_LISTEN) {
		if (l->nchildren >= max_t(uint, mpa_backlog, 1)) {
			/* Like TCP's SYN flood notice: once per listener. */
			if (!l->backlog_noted)
				ibdev_info(&l->xdev->ibdev,
					   "listener on port %u: %u connections in the MPA exchange, accepting more once they complete (mpa_backlog)\n",
					   l->port, l->nchildren);
			l->backlog_noted = true;
			break;
		}
		rc = kernel_accept(l->sock, &nsock, O_NONBLOCK);
		if (rc)
			break;
		cep = xiw_cep_alloc(l->xdev);
		if (!cep) {
			sock_no_linger(nsock->sk);
			sock_release(nsock);
			continue;
		}
		tcp_sock_set_nodelay(nsock->sk);
		/*
		 * Nobody knows the child before its callbacks are in, and
		 * its work takes the listener's mutex, which we hold: set it
		 * up without its own mutex.
		 */
		cep->state = XIW_CEP_AWAIT_REQUEST;
		xiw_cep_get(l);
		cep->listener = l;
		list_add_tail(&cep->entry, &l->children);
		l->nchildren++;
		xiw_cep_arm_timer(cep, mpa_timeout);
		xiw_cep_attach_sock(cep, nsock, l);
		/* The Request, or a FIN, may have come before our callbacks. */
		xiw_cep_queue(cep, XIW_EV_DATA);
		xiw_cep_put(cep);
	}
}

static void xiw_listener_close(struct xiw_cep *l)
{
	struct xiw_cep *child;

	mutex_lock(&l->mutex);
	/* Children may still be reading: they close once they see this. */
	l->state = XIW_CEP_CLOSED;
	list_for_each_entry(child, &l->children, entry)
		xiw_cep_queue(child, XIW_EV_LISTENER_GONE);
	xiw_cep_release_sock(l, false);
	xiw_cep_drop_cm_id(l);
	mutex_unlock(&l->mutex);
}

/*
 * One listening socket on @addr; with @ifindex only for connections that
 * come in through that interface.
 */
static int xiw_listen_one(struct xiw_device *xdev, struct iw_cm_id *id,
			  struct sockaddr_storage *addr, int ifindex,
			  int backlog, struct xiw_listen *xl)
{
	struct socket *sock;
	struct xiw_cep *l;
	int rc;

	l = xiw_cep_alloc(xdev);
	if (!l)
		return -ENOMEM;
	l->listening = true;
	sock = xiw_cm_sock_create(xdev, addr->ss_family);
	if (IS_ERR(sock)) {
		xiw_cep_put(l);
		return PTR_ERR(sock);
	}
	rc = ifindex ? sock_bindtoindex(sock->sk, ifindex, true) : 0;
	if (!rc)
		rc = kernel_bind(sock, (struct sockaddr *)addr,
				 xiw_addr_len(addr));
	if (rc) {
		sock_release(sock);
		xiw_cep_put(l);
		return rc;
	}

	mutex_lock(&l->mutex);
	xiw_cep_attach_sock(l, sock, NULL);
	id->add_ref(id);
	l->cm_id = id;
	l->port = ntohs(inet_sk(sock->sk)->inet_sport);
	l->state = XIW_CEP_LISTEN;
	rc = kernel_listen(sock, backlog > 0 ? backlog : 16);
	if (rc) {
		xiw_cep_release_sock(l, false);
		xiw_cep_drop_cm_id(l);
		mutex_unlock(&l->mutex);
		xiw_cep_put(l);
		return rc;
	}
	mutex_unlock(&l->mutex);
	list_add_tail(&l->entry, &xl->ceps);
	return 0;
}

static bool xiw_addr_is_any(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return ipv6_addr_any(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

/*
 * The addresses a wildcard listen covers: those of our netdev, so that
 * xiw answers for its own addresses only and other RNICs can listen on
 * the same port for theirs.
 */
static int xiw_netdev_addrs(struct xiw_device *xdev,
			    const struct sockaddr_storage *any,
			    struct sockaddr_storage *out, int max)
{
	struct net_device *netdev = xdev->netdev;
	int n = 0;

	if (any->ss_family == AF_INET) {
		const struct in_ifaddr *ifa;
		struct in_device *in_dev;

		rcu_read_lock();
		in_dev = __in_dev_get_rcu(netdev);
		if (in_dev) {
			in_dev_for_each_ifa_rcu(ifa, in_dev) {
				struct sockaddr_in *s = (void *)&out[n];

				if (n == max)
					break;
				*s = *(const struct sockaddr_in *)any;
				s->sin_addr.s_addr = ifa->ifa_local;
				n++;
			}
		}
		rcu_read_unlock();
	} else if (IS_ENABLED(CONFIG_IPV6)) {
		const struct inet6_ifaddr *ifp;
		struct inet6_dev *idev;

		idev = in6_dev_get(netdev);
		if (!idev)
			return 0;
		read_lock_bh(&idev->lock);
		list_for_each_entry(ifp, &idev->addr_list, if_list) {
			struct sockaddr_in6 *s = (void *)&out[n];

			if (n == max)
				break;
			*s = *(const struct sockaddr_in6 *)any;
			s->sin6_addr = ifp->addr;
			if (ipv6_addr_type(&ifp->addr) & IPV6_ADDR_LINKLOCAL)
				s->sin6_scope_id = netdev->ifindex;
			n++;
		}
		read_unlock_bh(&idev->lock);
		in6_dev_put(idev);
	}
	return n;
}

/* Link-local IPv6 addresses are not reached through the loopback device. */
static bool xiw_addr_loopable(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET ||
	       !(ipv6_addr_type(&((const struct sockaddr_in6 *)a)->sin6_addr) &
		 IPV6_ADDR_LINKLOCAL);
}

static void xiw_listen_destroy(struct xiw_listen *xl)
{
	struct xiw_cep *l, *tmp;

	list_for_each_entry_safe(l, tmp, &xl->ceps, entry) {
		list_del_init(&l->entry);
		xiw_listener_close(l);
		xiw_cep_put(l);
	}
	kfree(xl);
}

int xiw_create_listen(struct iw_cm_id *id, int backlog)
{
	struct xiw_device *xdev = to_xiw_dev(id->device);
	struct sockaddr_storage *addrs;
	struct xiw_listen *xl;
	int n, i, lo_ifindex, rc = 0;

	if (xiw_addr_len(&id->m_local_addr) < 0)
		return -EAFNOSUPPORT;
	xl = kzalloc(sizeof(*xl), GFP_KERNEL);
	addrs = kcalloc(XIW_LISTEN_MAX_ADDRS, sizeof(*addrs), GFP_KERNEL);
	if (!xl || !addrs) {
		/* Nothing to destroy yet: xl's list is not even set up. */
		kfree(xl);
		kfree(addrs);
		return -ENOMEM;
	}
	INIT_LIST_HEAD(&xl->ceps);

	if (!xiw_addr_is_any(&id->m_local_addr)) {
		rc = xiw_listen_one(xdev, id, &id->m_local_addr, 0, backlog,
				    xl);
		goto done;
	}
	/*
	 * A wildcard listen: rdma_cm makes one per RNIC, all on the same
	 * port, so each RNIC may take only its own share.  xiw listens on
	 * each address of its netdev, bound to that netdev (an RNIC that
	 * binds the wildcard to its own netdev, like siw, then coexists), and
	 * once more bound to the loopback device for connections from the
	 * same host, which arrive through it.  A netdev without an address
	 * gives a listener that hears nothing.
	 */
	lo_ifindex = dev_net(xdev->netdev)->loopback_dev->ifindex;
	n = xiw_netdev_addrs(xdev, &id->m_local_addr, addrs,
			     XIW_LISTEN_MAX_ADDRS);
	for (i = 0; i < n && !rc; i++) {
		rc = xiw_listen_one(xdev, id, &addrs[i],
				    xdev->netdev->ifindex, backlog, xl);
		if (!rc && xiw_addr_loopable(&addrs[i]))
			rc = xiw_listen_one(xdev, id, &addrs[i], lo_ifindex,
					    backlog, xl);
	}
done:
	if (rc)
		xiw_listen_destroy(xl);
	else
		id->provider_data = xl;
	kfree(addrs);
	return rc;
}

int xiw_destroy_listen(struct iw_cm_id *id)
{
	struct xiw_listen *xl = id->provider_data;

	if (xl) {
		id->provider_data = NULL;
		xiw_listen_destroy(xl);
	}
	return 0;
}

int xiw_accept(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	const struct xiw_mpa_policy pol = xiw_mpa_local_policy(false);
	struct xiw_mpa_v2_ird_ord v2w;
	struct xiw_mpa_result res;
	struct xiw_mpa_terms rep;
	struct xiw_cep *cep;
	struct xiw_qp *qp;
	int rc;

	/* Closed meanwhile: by the peer, the deadline or the device. */
	cep = xiw_cep_take_published(id);
	if (!cep)
		return -ECONNRESET;
	mutex_lock(&cep->mutex);
	cep->handle = 0;
	rc = -ECONNRESET;
	if (cep->state != XIW_CEP_REQ_DELIVERED)
		goto out;
	xiw_cep_disarm_timer(cep);
	/*
	 * iw_cm neither rejects nor destroys through us after a failed
	 * accept: the connection ends here.
	 */
	rc = -EINVAL;
	if (param->private_data_len > XIW_CM_MAX_ULP_PD)
		goto err;
	qp = xiw_qp_for_cm(id, param->qpn);
	if (!qp)
		goto err;
	WRITE_ONCE(cep->qp, qp);
	id->add_ref(id);
	cep->cm_id = id;

	xiw_mpa_respond(&cep->req, &pol, min_t(u32, param->ird, XIW_MAX_IRD),
			min_t(u32, param->ord, XIW_MAX_ORD), &rep, &res);
	xiw_cep_set_conn(cep, &res, false);
	xiw_mpa_terms_word(&rep, &v2w);
	rc = xiw_mpa_send(cep, XIW_MPA_KEY_REP, rep.flags, rep.rev,
			  rep.has_v2w ? &v2w : NULL, param->private_data,
			  param->private_data_len);
	if (rc)
		goto err;
	xiw_cep_log_conn(cep, rep.rev, cep->req.flags);
	rc = xiw_qp_llp_bind(cep->qp, cep, cep->sock, &cep->conn);
	if (rc)
		goto err;
	cep->bound = true;

	if (cep->conn.p2p) {
		/* ESTABLISHED once the initiator's RTR is in (RFC 6581 §5.2). */
		cep->state = XIW_CEP_AWAIT_RTR;
		xiw_cep_arm_timer(cep, mpa_timeout);
	} else {
		cep->state = XIW_CEP_ESTABLISHED;
		xiw_cm_upcall(cep, id, IW_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	}
	goto out;

err:
	/* iw_cm expects no event after a failed accept. */
	xiw_cep_release_sock(cep, true);
	xiw_cep_drop_cm_id(cep);
out:
	mutex_unlock(&cep->mutex);
	xiw_cep_put(cep);
	return rc;
}

int xiw_reject(struct iw_cm_id *id, const void *pdata, u8 pdata_len)
{
	const struct xiw_mpa_policy pol = xiw_mpa_local_policy(false);
	struct xiw_mpa_v2_ird_ord v2w;
	struct xiw_mpa_terms rep;
	struct xiw_cep *cep;

	cep = xiw_cep_take_published(id);
	if (!cep)
		return 0;
	mutex_lock(&cep->mutex);
	cep->handle = 0;
	if (cep->state == XIW_CEP_REQ_DELIVERED) {
		/* RFC 5044 §7.1: a Reply with R = 1, then close. */
		xiw_mpa_reject(&cep->req, &pol, &rep);
		xiw_mpa_terms_word(&rep, &v2w);
		xiw_mpa_send(cep, XIW_MPA_KEY_REP, rep.flags, rep.rev,
			     rep.has_v2w ? &v2w : NULL, pdata, pdata_len);
		xiw_cep_release_sock(cep, false);
	}
	mutex_unlock(&cep->mutex);
	xiw_cep_put(cep);
	return 0;
}

/* The device is going away: close the Requests iw_cm never answered. */
void xiw_cm_device_gone(struct xiw_device *xdev)
{
	unsigned long handle;
	struct xiw_cep *cep;

	xa_for_each(&xdev->cep_xa, handle, cep) {
		/* Only what we took out is ours to touch. */
		if (xa_erase(&xdev->cep_xa, handle) != cep)
			continue;
		mutex_lock(&cep->mutex);
		cep->handle = 0;
		xiw_cep_release_sock(cep, true);
		mutex_unlock(&cep->mutex);
		xiw_cep_put(cep);
	}
}

void xiw_cm_debugfs_init(struct dentry *dir)
{
	debugfs_create_atomic_t("endpoints", 0444, dir, &xiw_cep_count);
}

/* ==== Established connections ==== */

/*
 * The end of a connection whose QP is bound: tell iw_cm, which expects
 * ESTABLISHED before anything else on an accepted connection, then
 * DISCONNECT if the peer closed first, then CLOSE.
 */
static void xiw_conn_close(struct xiw_cep *cep, bool abortive, bool peer_fin,
			   int status)
{
	struct iw_cm_id *id = cep->cm_id;

	if (cep->state == XIW_CEP_AWAIT_RTR && id)
		xiw_cm_upcall(cep, id, IW_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	if (peer_fin && id)
		xiw_cm_upcall(cep, id, IW_CM_EVENT_DISCONNECT, 0, NULL, 0);
	xiw_cep_release_sock(cep, abortive);
	if (id)
		xiw_cm_upcall(cep, id, IW_CM_EVENT_CLOSE, status, NULL, 0);
	xiw_cep_drop_cm_id(cep);
}

static bool xiw_cep_connected(const struct xiw_cep *cep)
{
	return cep->state == XIW_CEP_ESTABLISHED ||
	       cep->state == XIW_CEP_AWAIT_RTR;
}

static void xiw_conn_state_change(struct xiw_cep *cep)
{
	struct sock *sk = cep->sock->sk;
	int err;

	switch (READ_ONCE(sk->sk_state)) {
	case TCP_CLOSE_WAIT:
		/* FIN from the peer: a graceful close. */
		xiw_conn_close(cep, false, true, 0);
		break;
	case TCP_CLOSE:
	case TCP_LAST_ACK:
	case TCP_TIME_WAIT:
		err = sock_error(sk);
		xiw_conn_close(cep, true, !err, err ? err : 0);
		break;
	default:
		break;
	}
}

static void xiw_cep_work(struct work_struct *work)
{
	struct xiw_cep *cep = container_of(work, struct xiw_cep, work);
	unsigned long ev;

	mutex_lock(&cep->mutex);
	ev = xchg(&cep->events, 0);

	if (ev & (BIT(XIW_EV_ABORT) | BIT(XIW_EV_CLOSE)) &&
	    xiw_cep_connected(cep))
		xiw_conn_close(cep, ev & BIT(XIW_EV_ABORT), false, 0);
	/* The QP is being destroyed while it connects. */
	if (ev & BIT(XIW_EV_ABORT) && (cep->state == XIW_CEP_CONNECTING ||
				       cep->state == XIW_CEP_AWAIT_REPLY))
		xiw_active_fail(cep, -ECONNABORTED, NULL, 0);

	if (ev & BIT(XIW_EV_ACCEPT) && cep->state == XIW_CEP_LISTEN)
		xiw_listener_accept(cep);

	if (ev & BIT(XIW_EV_LISTENER_GONE) &&
	    cep->state == XIW_CEP_AWAIT_REQUEST)
		xiw_child_drop(cep);

	/* Read first: a Reply may arrive right before the peer's FIN. */
	if (ev & (BIT(XIW_EV_DATA) | BIT(XIW_EV_STATE))) {
		switch (cep->state) {
		case XIW_CEP_CONNECTING:
			xiw_active_connect_done(cep);
			break;
		case XIW_CEP_AWAIT_REPLY:
			xiw_active_read_reply(cep);
			break;
		case XIW_CEP_AWAIT_REQUEST:
			xiw_passive_read_request(cep);
			break;
		default:
			break;
		}
	}
	if (ev & BIT(XIW_EV_STATE) && cep->sock) {
		switch (cep->state) {
		case XIW_CEP_REQ_DELIVERED:
			/* Gone before the ULP decided: accept will fail. */
			if (READ_ONCE(cep->sock->sk->sk_state) !=
			    TCP_ESTABLISHED) {
				xiw_cep_unpublish(cep);
				xiw_cep_release_sock(cep, true);
			}
			break;
		case XIW_CEP_AWAIT_RTR:
		case XIW_CEP_ESTABLISHED:
			xiw_conn_state_change(cep);
			break;
		default:
			break;
		}
	}

	if (ev & BIT(XIW_EV_RTR) && cep->state == XIW_CEP_AWAIT_RTR) {
		xiw_cep_disarm_timer(cep);
		cep->state = XIW_CEP_ESTABLISHED;
		xiw_cm_upcall(cep, cep->cm_id, IW_CM_EVENT_ESTABLISHED, 0,
			      NULL, 0);
	}
	mutex_unlock(&cep->mutex);
	xiw_cep_put(cep);
}

static void xiw_cep_timeout(struct work_struct *work)
{
	struct xiw_cep *cep = container_of(to_delayed_work(work),
					   struct xiw_cep, timer);

	mutex_lock(&cep->mutex);
	/* Not if disarmed meanwhile, nor if armed again since. */
	if (cep->timer_armed && !delayed_work_pending(&cep->timer)) {
		cep->timer_armed = false;
		switch (cep->state) {
		case XIW_CEP_CONNECTING:
		case XIW_CEP_AWAIT_REPLY:
			xiw_active_fail(cep, -ETIMEDOUT, NULL, 0);
			break;
		case XIW_CEP_AWAIT_REQUEST:
			xiw_child_drop(cep);
			break;
		case XIW_CEP_REQ_DELIVERED:
			xiw_passive_unanswered(cep);
			break;
		case XIW_CEP_AWAIT_RTR:
			xiw_conn_close(cep, true, false, -ETIMEDOUT);
			break;
		default:
			break;
		}
	}
	mutex_unlock(&cep->mutex);
	xiw_cep_put(cep);
}

/* ==== For the QP ==== */

struct xiw_qp *xiw_cep_qp(struct xiw_cep *cep)
{
	return READ_ONCE(cep->qp);
}

void xiw_cm_qp_close(struct xiw_cep *cep, bool abortive)
{
	xiw_cep_queue(cep, abortive ? XIW_EV_ABORT : XIW_EV_CLOSE);
}

void xiw_cm_rtr_received(struct xiw_cep *cep)
{
	xiw_cep_queue(cep, XIW_EV_RTR);
}
