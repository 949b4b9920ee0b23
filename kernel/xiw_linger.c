// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiw's graceful close of a TCP connection.
 *
 * The Terminate, if any, is the last FPDU of a stream (RFC 5040 §7.1),
 * and the peer must get it.  A socket released while octets of the peer's
 * are still unread makes TCP send a RST at once instead of a FIN (RFC 1122
 * §4.2.2.13, RFC 2525 §2.17), which discards what has not left yet, the
 * Terminate among it, and on loopback can even overtake what has.  The
 * same RST answers any octet that arrives once the socket is released.
 * And a peer whose Send or Write failed usually has more of them on the
 * way: xiw stops parsing at the first error.
 *
 * So the FIN goes behind what is queued (SHUT_WR), and the socket stays
 * open, reading and dropping whatever the peer still sends, until the
 * peer's FIN or reset, and for linger_s at most: a peer that keeps the
 * connection open past that is reset.  No peer holds xiw's socket or
 * this state longer; what TCP still has to send after a graceful release
 * is bounded by TCP's own orphan limits, as for any closed socket.  Past
 * XIW_LINGER_MAX sockets, or without memory, a close resets at once.
 *
 * A lingering socket belongs to no endpoint and no QP.  Its callbacks
 * (softirq, under sk_callback_lock) and its deadline only queue its drain
 * work item, which ends it.  Module unload ends those left
 * (xiw_linger_end_all()).
 */
#include <linux/debugfs.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <linux/timer.h>
#include <linux/uio.h>
#include <linux/workqueue.h>
#include <net/sock.h>

#include "xiw.h"

struct xiw_linger {
	struct socket *sock;
	struct work_struct drain;
	struct timer_list deadline;
	bool expired;
	/* On xiw_lingering while the drain work item may still end it. */
	struct list_head entry;
	void (*orig_state_change)(struct sock *sk);
	void (*orig_data_ready)(struct sock *sk);
};

static LIST_HEAD(xiw_lingering);
static DEFINE_SPINLOCK(xiw_lingering_lock);
/* Lingering sockets, for tests that look for leaks (debugfs). */
static atomic_t xiw_linger_count = ATOMIC_INIT(0);

#define XIW_LINGER_MAX 1024
#define XIW_LINGER_MAX_S 600
/* Octets one run of the drain work item drops before it yields. */
#define XIW_LINGER_DROP_PER_RUN (256 * 1024)

/* Either callback queues the drain, then does what TCP's own would. */
static void xiw_linger_kick(struct sock *sk, bool data_ready)
{
	void (*orig)(struct sock *sk) = NULL;
	struct xiw_linger *lg;

	read_lock_bh(&sk->sk_callback_lock);
	lg = sk->sk_user_data;
	if (lg) {
		queue_work(xiw_wq, &lg->drain);
		orig = data_ready ? lg->orig_data_ready : lg->orig_state_change;
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (orig)
		orig(sk);
}

static void xiw_linger_data_ready(struct sock *sk)
{
	xiw_linger_kick(sk, true);
}

static void xiw_linger_state_change(struct sock *sk)
{
	xiw_linger_kick(sk, false);
}

static void xiw_linger_expire(struct timer_list *t)
{
	struct xiw_linger *lg = from_timer(lg, t, deadline);

	WRITE_ONCE(lg->expired, true);
	queue_work(xiw_wq, &lg->drain);
}

static void xiw_sock_release(struct socket *sock, bool abortive)
{
	/* SO_LINGER with a zero timeout: close sends a RST. */
	if (abortive)
		sock_no_linger(sock->sk);
	sock_release(sock);
}

/* Nothing can queue the drain work item any more; it is not pending. */
static void xiw_linger_release(struct xiw_linger *lg, bool abortive)
{
	xiw_sock_release(lg->sock, abortive);
	kfree(lg);
	atomic_dec(&xiw_linger_count);
}

/* Neither the callbacks nor the deadline queue the drain any more. */
static void xiw_linger_detach(struct xiw_linger *lg)
{
	struct sock *sk = lg->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_state_change = lg->orig_state_change;
	sk->sk_data_ready = lg->orig_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	timer_delete_sync(&lg->deadline);
}

/*
 * Drops what the peer sent, up to XIW_LINGER_DROP_PER_RUN octets: > 0 if
 * there may be more, -EAGAIN if there is none for now, 0 at the peer's
 * FIN, else the connection's error.  recvmsg, unlike read_sock, steps
 * over urgent data.
 */
static int xiw_linger_drop(struct socket *sock)
{
	struct msghdr msg = {};
	size_t dropped = 0;
	int rc;

	do {
		iov_iter_discard(&msg.msg_iter, ITER_DEST,
				 XIW_LINGER_DROP_PER_RUN - dropped);
		rc = sock_recvmsg(sock, &msg, MSG_DONTWAIT);
		if (rc <= 0)
			return rc;
		dropped += rc;
	} while (dropped < XIW_LINGER_DROP_PER_RUN);
	return 1;
}

static void xiw_linger_drain(struct work_struct *work)
{
	struct xiw_linger *lg = container_of(work, struct xiw_linger, drain);
	int rc = xiw_linger_drop(lg->sock);
	bool expired = READ_ONCE(lg->expired);

	if (!expired && rc == -EAGAIN)
		return;		/* a callback queues it again */
	if (!expired && rc > 0) {
		queue_work(xiw_wq, &lg->drain);
		return;
	}

	spin_lock_bh(&xiw_lingering_lock);
	if (list_empty(&lg->entry)) {
		/* xiw_linger_end_all() took it and waits for this run. */
		spin_unlock_bh(&xiw_lingering_lock);
		return;
	}
	list_del_init(&lg->entry);
	spin_unlock_bh(&xiw_lingering_lock);

	xiw_linger_detach(lg);
	/* Queued again by a callback or the deadline before the detach. */
	cancel_work(&lg->drain);
	/* The peer's FIN or the connection's end, else the deadline. */
	xiw_linger_release(lg, rc > 0 || rc == -EAGAIN);
}

/*
 * Closes @sock, which xiw no longer uses and whose callbacks are TCP's
 * own again: at once with a RST if @abortive, else behind what is queued,
 * lingering for @linger_s seconds at most as above.  Process context.
 */
void xiw_sock_close(struct socket *sock, bool abortive, unsigned int linger_s)
{
	struct sock *sk = sock->sk;
	struct xiw_linger *lg;

	if (abortive || (1 << READ_ONCE(sk->sk_state)) &
			~(TCPF_ESTABLISHED | TCPF_CLOSE_WAIT))
		goto release;
	if (atomic_inc_return(&xiw_linger_count) > XIW_LINGER_MAX)
		goto uncount;
	lg = kzalloc(sizeof(*lg), GFP_KERNEL);
	if (!lg)
		goto uncount;
	if (kernel_sock_shutdown(sock, SHUT_WR)) {
		kfree(lg);
		goto uncount;
	}
	lg->sock = sock;
	INIT_WORK(&lg->drain, xiw_linger_drain);
	timer_setup(&lg->deadline, xiw_linger_expire, 0);
	spin_lock_bh(&xiw_lingering_lock);
	list_add_tail(&lg->entry, &xiw_lingering);
	spin_unlock_bh(&xiw_lingering_lock);

	write_lock_bh(&sk->sk_callback_lock);
	lg->orig_state_change = sk->sk_state_change;
	lg->orig_data_ready = sk->sk_data_ready;
	sk->sk_user_data = lg;
	sk->sk_state_change = xiw_linger_state_change;
	sk->sk_data_ready = xiw_linger_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	mod_timer(&lg->deadline, jiffies + (unsigned long)HZ *
		  clamp_t(unsigned int, linger_s, 1, XIW_LINGER_MAX_S));
	/* What is unread already. */
	queue_work(xiw_wq, &lg->drain);
	return;

uncount:
	atomic_dec(&xiw_linger_count);
	abortive = true;
release:
	xiw_sock_release(sock, abortive);
}

/* Module unload: every socket still lingering is reset. */
void xiw_linger_end_all(void)
{
	struct xiw_linger *lg;

	for (;;) {
		spin_lock_bh(&xiw_lingering_lock);
		lg = list_first_entry_or_null(&xiw_lingering,
					      struct xiw_linger, entry);
		if (lg)
			list_del_init(&lg->entry);
		spin_unlock_bh(&xiw_lingering_lock);
		if (!lg)
			break;
		xiw_linger_detach(lg);
		cancel_work_sync(&lg->drain);
		xiw_linger_release(lg, true);
	}
}

void xiw_linger_debugfs_init(struct dentry *dir)
{
	debugfs_create_atomic_t("lingering", 0444, dir, &xiw_linger_count);
}
