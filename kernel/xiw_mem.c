// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiw memory registration.  A registration is named by its STag
 * (RFC 5040 §2.1): a 24-bit index into the device's table and an 8-bit
 * key that changes each time, so that a stale STag does not match.
 *
 * The data path reaches user memory through the pinned pages of the
 * registration; it holds a reference on the MR while it does.
 * Deregistration never waits for the data path, which a peer could make
 * last forever: it invalidates the STag, so that every later access
 * fails, and the last reference frees the MR.  It waits only for the
 * accesses under way, each one page's copy or one socket send (see
 * xiw_mr_srcu), so that once it returns the pages are their owner's again.
 */
#include <linux/atomic.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/libnvdimm.h>
#include <linux/mm.h>
#include <linux/net.h>
#include <linux/random.h>
#include <linux/shmem_fs.h>
#include <linux/skbuff.h>
#include <linux/srcu.h>
#include <crypto/hash.h>

#include <xiw/atomic_ops.h>

#include "xiw.h"

/*
 * Each access to a registration's pages is a read section of xiw_mr_srcu
 * that begins by checking the STag is still valid: one page-bounded piece
 * of a walk, or one send of attached pages, which TCP copies during the
 * call.  xiw_mr_remove() waits for the sections under way when the data
 * path holds the MR, so that nothing it does reaches the pages after
 * ibv_dereg_mr() returned.  Sections never wait for a peer.
 */
DEFINE_STATIC_SRCU(xiw_mr_srcu);

static int xiw_mr_insert(struct xiw_device *xdev, struct xiw_mr *mr)
{
	u32 index;
	u32 stag;
	int err;

	if (atomic_inc_return(&xdev->num_mr) > XIW_MAX_MR) {
		atomic_dec(&xdev->num_mr);
		return -ENOMEM;
	}
	refcount_set(&mr->refs, 1);
	rwlock_init(&mr->use_lock);
	mr->stag_valid = !mr->fast_reg;
	err = xa_alloc_cyclic(&xdev->mr_xa, &index, mr,
			      XA_LIMIT(1, XIW_STAG_INDEX_MAX),
			      &xdev->stag_index_next, GFP_KERNEL);
	if (err < 0) {
		atomic_dec(&xdev->num_mr);
		return err;
	}
	stag = index << 8 | (get_random_u32() & 0xff);
	mr->ibmr.lkey = stag;
	mr->ibmr.rkey = stag;
	return 0;
}

static void xiw_mr_put_ext_access(struct xiw_mr *mr)
{
	if (mr->file)
		fput(mr->file);
	if (mr->verify_tfm)
		crypto_free_shash(mr->verify_tfm);
	mr->file = NULL;
	mr->verify_tfm = NULL;
}

static void xiw_mr_free(struct xiw_mr *mr)
{
	if (mr->umem)
		ib_umem_release(mr->umem);
	xiw_mr_put_ext_access(mr);
	kvfree(mr->pages);
	/* A lookup may still be looking at it under RCU (xiw_mr_get). */
	kfree_rcu(mr, rcu);
}

static void xiw_mr_free_work(struct work_struct *work)
{
	xiw_mr_free(container_of(work, struct xiw_mr, free_work));
}

/*
 * Takes the MR out of the table and invalidates it: the data path's
 * accesses fail from now on, and fast registrations' pages are not
 * touched once this returns.  The last reference frees it; the device
 * flushes xiw_wq before it goes (xiw_dealloc_driver()).
 */
static void xiw_mr_remove(struct xiw_device *xdev, struct xiw_mr *mr)
{
	xa_erase(&xdev->mr_xa, mr->ibmr.lkey >> 8);
	write_lock_bh(&mr->use_lock);
	WRITE_ONCE(mr->stag_valid, false);
	write_unlock_bh(&mr->use_lock);
	/*
	 * Pairs with the barrier in xiw_mr_get_region(): either a lookup
	 * racing with us sees the STag invalid, or we see its reference and
	 * wait for its accesses under way.
	 */
	smp_mb();
	if (refcount_read(&mr->refs) > 1)
		synchronize_srcu_expedited(&xiw_mr_srcu);
	atomic_dec(&xdev->num_mr);
	xiw_mr_put(mr);
}

/*
 * Looks up the registration named by @stag for an access with @access
 * rights on behalf of a QP of @pd, whatever the range, and takes a
 * reference on it.  On failure returns NULL and says why.
 */
struct xiw_mr *xiw_mr_get_region(struct xiw_device *xdev, struct ib_pd *pd,
				 u32 stag, int access,
				 enum xiw_access_error *why)
{
	struct xiw_mr *mr;

	rcu_read_lock();
	mr = xa_load(&xdev->mr_xa, stag >> 8);
	/* Pairs with the release in xiw_mr_fast_register(). */
	if (!mr || !smp_load_acquire(&mr->stag_valid) ||
	    READ_ONCE(mr->ibmr.lkey) != stag ||
	    !refcount_inc_not_zero(&mr->refs)) {
		rcu_read_unlock();
		*why = XIW_ACCESS_INVALID_STAG;
		return NULL;
	}
	rcu_read_unlock();
	/* Pairs with the barrier in xiw_mr_remove(). */
	smp_mb__after_atomic();
	/*
	 * Again with the reference held: before it was taken, the STag may
	 * have been invalidated and its MR registered anew (map_mr_sg and
	 * fast registration wait only for references already held).  From
	 * here on the registration cannot change under us, and the acquire
	 * orders the reads of its range after it was set.
	 */
	if (!smp_load_acquire(&mr->stag_valid) ||
	    READ_ONCE(mr->ibmr.lkey) != stag) {
		xiw_mr_put(mr);
		*why = XIW_ACCESS_INVALID_STAG;
		return NULL;
	}

	if (mr->ibmr.pd != pd)
		*why = XIW_ACCESS_WRONG_PD;
	else if ((mr->access & access) != access)
		*why = XIW_ACCESS_RIGHTS;
	else
		return mr;
	xiw_mr_put(mr);
	return NULL;
}

/* Whether [addr, addr + len) lies in @mr's range. */
bool xiw_mr_covers(const struct xiw_mr *mr, u64 addr, u64 len)
{
	return addr >= mr->iova && len <= mr->length &&
	       addr - mr->iova <= mr->length - len;
}

/* The same for @len bytes at @addr, which must lie in the region. */
struct xiw_mr *xiw_mr_get(struct xiw_device *xdev, struct ib_pd *pd, u32 stag,
			  u64 addr, u64 len, int access,
			  enum xiw_access_error *why)
{
	struct xiw_mr *mr = xiw_mr_get_region(xdev, pd, stag, access, why);

	if (mr && !xiw_mr_covers(mr, addr, len)) {
		xiw_mr_put(mr);
		*why = XIW_ACCESS_BOUNDS;
		return NULL;
	}
	return mr;
}

void xiw_mr_put(struct xiw_mr *mr)
{
	/* Any context: the receive path lets go in softirq. */
	if (refcount_dec_and_test(&mr->refs)) {
		INIT_WORK(&mr->free_work, xiw_mr_free_work);
		queue_work(xiw_wq, &mr->free_work);
	}
}

/*
 * Whether @mr is still the registration that @stag named when the data
 * path looked it up: a request waiting behind others must not use one
 * that was invalidated or deregistered meanwhile.  Fast registrations
 * cannot be registered again while the data path holds them.
 */
bool xiw_mr_named(struct xiw_mr *mr, u32 stag)
{
	/* Pairs with the release in xiw_mr_fast_register(). */
	return smp_load_acquire(&mr->stag_valid) &&
	       READ_ONCE(mr->ibmr.rkey) == stag;
}

/* A reference for the data path, on top of one it holds already. */
void xiw_mr_hold(struct xiw_mr *mr)
{
	refcount_inc(&mr->refs);
}

/*
 * Calls @fn for each page-bounded piece of [addr, addr + len) of @mr,
 * until @fn fails.  The caller checked the range (xiw_mr_covers()).  A
 * kernel registration's addresses are kernel virtual addresses of linear
 * memory.
 */
int xiw_mr_walk_pages(struct xiw_mr *mr, u64 addr, size_t len,
		      int (*fn)(struct page *page, size_t offset, size_t n,
				void *arg),
		      void *arg)
{
	u64 off = addr - mr->iova + mr->first_page_offset;
	int err = 0;

	while (len && !err) {
		const void *kaddr = (const void *)(uintptr_t)addr;
		struct page *page = mr->pages ? mr->pages[off >> PAGE_SHIFT] :
						virt_to_page(kaddr);
		size_t pgoff = mr->pages ? off & ~PAGE_MASK :
					   offset_in_page(kaddr);
		size_t n = min_t(size_t, len, PAGE_SIZE - pgoff);

		err = fn(page, pgoff, n, arg);
		addr += n;
		off += n;
		len -= n;
	}
	return err;
}

struct xiw_mapped_walk {
	struct xiw_mr *mr;
	int (*fn)(void *kaddr, size_t n, void *arg);
	void *arg;
};

/* One access (see xiw_mr_srcu): @fn on @n bytes at @kaddr of @mr. */
static int xiw_mr_access(struct xiw_mr *mr, void *kaddr, size_t n,
			 int (*fn)(void *kaddr, size_t n, void *arg),
			 void *arg)
{
	int idx = srcu_read_lock(&xiw_mr_srcu);
	int err = READ_ONCE(mr->stag_valid) ? fn(kaddr, n, arg) : -EFAULT;

	srcu_read_unlock(&xiw_mr_srcu, idx);
	return err;
}

static int xiw_piece_map(struct page *page, size_t offset, size_t n,
			 void *arg)
{
	struct xiw_mapped_walk *walk = arg;
	void *map = kmap_local_page(page);
	int err = xiw_mr_access(walk->mr, map + offset, n, walk->fn,
				walk->arg);

	kunmap_local(map);
	return err;
}

static int xiw_mr_walk_mapped(struct xiw_mr *mr, u64 addr, size_t len,
			      int (*fn)(void *kaddr, size_t n, void *arg),
			      void *arg)
{
	struct xiw_mapped_walk walk = { .mr = mr, .fn = fn, .arg = arg };

	if (!mr->pages)
		return xiw_mr_access(mr, (void *)(uintptr_t)addr, len, fn, arg);
	return xiw_mr_walk_pages(mr, addr, len, xiw_piece_map, &walk);
}

/*
 * Sends @msg, whose pages are in part those of the @n registrations in
 * @held, as one access to all of them: -EFAULT, nothing sent, if one was
 * deregistered since it was framed.
 */
int xiw_mr_sendmsg(struct socket *sock, struct msghdr *msg,
		   struct xiw_mr *const *held, u32 n)
{
	int idx = srcu_read_lock(&xiw_mr_srcu);
	int rv = 0;
	u32 i;

	for (i = 0; i < n && !rv; i++)
		if (!READ_ONCE(held[i]->stag_valid))
			rv = -EFAULT;
	if (!rv)
		rv = sock_sendmsg(sock, msg);
	srcu_read_unlock(&xiw_mr_srcu, idx);
	return rv;
}

/*
 * Calls @fn for each page-bounded piece of [addr, addr + len) of @mr with
 * the piece mapped, until @fn fails; a kernel registration's range in one
 * piece.  The caller checked the range (xiw_mr_covers()).  -EFAULT if the
 * MR was invalidated or deregistered since: a fast registration's pages go
 * back to their kernel consumer then, so they are walked under its
 * use_lock.
 */
static int xiw_mr_walk(struct xiw_mr *mr, u64 addr, size_t len,
		       int (*fn)(void *kaddr, size_t n, void *arg), void *arg)
{
	int err;

	if (!mr->fast_reg)
		return xiw_mr_walk_mapped(mr, addr, len, fn, arg);
	read_lock_bh(&mr->use_lock);
	err = xiw_mr_walk_mapped(mr, addr, len, fn, arg);
	read_unlock_bh(&mr->use_lock);
	return err;
}

static int xiw_piece_copy_from(void *kaddr, size_t n, void *arg)
{
	u8 **dst = arg;

	memcpy(*dst, kaddr, n);
	*dst += n;
	return 0;
}

int xiw_mr_copy_from(struct xiw_mr *mr, u64 addr, void *dst, size_t len)
{
	return xiw_mr_walk(mr, addr, len, xiw_piece_copy_from, &dst);
}

static int xiw_piece_copy_to(void *kaddr, size_t n, void *arg)
{
	const u8 **src = arg;

	memcpy(kaddr, *src, n);
	*src += n;
	return 0;
}

int xiw_mr_copy_to(struct xiw_mr *mr, u64 addr, const void *src, size_t len)
{
	return xiw_mr_walk(mr, addr, len, xiw_piece_copy_to, &src);
}

struct xiw_atomic_exec {
	unsigned int aopcode;
	const struct xiw_rdmap_atomic_req *req;
	u64 orig;
};

/*
 * The read-modify-write of one Atomic Request, done with the CPU's own
 * 64-bit compare-and-exchange on the mapped page.  That makes it atomic
 * against every other Atomic of the device (RFC 7306 §5.3), and beyond
 * what §5.4 rule 2 requires, against atomics of host CPUs and of other
 * devices on the same memory.  A value that does not change (CmpSwap
 * that does not match) is not written at all (§5.1.2).
 */
static int xiw_piece_atomic(void *kaddr, size_t n, void *arg)
{
	struct xiw_atomic_exec *x = arg;
	const struct xiw_rdmap_atomic_req *r = x->req;
	u64 *target = kaddr;
	u64 old = READ_ONCE(*target);
	u64 new;

	for (;;) {
		/* The AOpCode was checked when the request arrived. */
		xiw_atomic_apply(x->aopcode, old, xiw_get_be64(&r->add_swap),
				 xiw_get_be64(&r->add_swap_mask),
				 xiw_get_be64(&r->compare),
				 xiw_get_be64(&r->compare_mask), 0, &new);
		if (new == old)
			break;
		new = cmpxchg64(target, old, new);
		if (new == old)
			break;
		old = new;
	}
	x->orig = old;
	return 0;
}

/*
 * Executes the Atomic Request @req on the 8-byte aligned word at @addr of
 * @mr, checked by xiw_mr_get(), and returns the original value in @orig.
 */
int xiw_mr_atomic(struct xiw_mr *mr, u64 addr, unsigned int aopcode,
		  const struct xiw_rdmap_atomic_req *req, u64 *orig)
{
	struct xiw_atomic_exec x = { .aopcode = aopcode, .req = req };
	int err = xiw_mr_walk(mr, addr, sizeof(u64), xiw_piece_atomic, &x);

	*orig = x.orig;
	return err;
}

static int xiw_piece_store64(void *kaddr, size_t n, void *arg)
{
	/* draft-talpey §4.3: one 64-bit store, never seen half done. */
	WRITE_ONCE(*(u64 *)kaddr, *(u64 *)arg);
	return 0;
}

/* Atomic Write of @value to the 8-byte aligned word at @addr of @mr. */
int xiw_mr_store64(struct xiw_mr *mr, u64 addr, u64 value)
{
	return xiw_mr_walk(mr, addr, sizeof(value), xiw_piece_store64, &value);
}

/*
 * Flush and Verify walk up to 4 GiB a peer names, in the transmit path's
 * process context: they yield page by page.
 */
static int xiw_piece_wb_pmem(void *kaddr, size_t n, void *arg)
{
	arch_wb_cache_pmem(kaddr, n);
	cond_resched();
	return 0;
}

/*
 * RDMA Flush (draft-talpey §4.1) of [addr, addr + len) of @mr, or of the
 * whole region with XIW_FLUSH_DISP_R, to global visibility and/or persistence;
 * process context.
 */
int xiw_mr_flush(struct xiw_mr *mr, u64 addr, u64 len, u32 flags)
{
	u64 first, last;
	int err;

	/*
	 * Placement is done by CPU stores: once they are ordered before
	 * whatever follows, every agent of the platform sees them.
	 */
	smp_mb();
	if (!(flags & XIW_FLUSH_DISP_P))
		return 0;
	if (flags & XIW_FLUSH_DISP_R) {
		addr = mr->iova;
		len = mr->length;
	}
	if (!len)
		return 0;
	if (mr->pmem) {
		/* Persistent memory: write the CPU caches of the range back. */
		err = xiw_mr_walk(mr, addr, len, xiw_piece_wb_pmem, NULL);
		/* The write-backs are done before the response goes out. */
		wmb();
		return err;
	}
	/*
	 * The placement wrote into the file's pages through kernel
	 * mappings, so the page cache does not know they changed: mark them
	 * dirty, then write them back and wait (fdatasync of the range).
	 * Only pages pinned for writing (ib_access_writable()) can have been
	 * written: dirtying the others would hand the file system pages it
	 * never made writable, and nothing of them needs writing back.
	 */
	first = (addr - mr->iova + mr->first_page_offset) >> PAGE_SHIFT;
	last = (addr - mr->iova + mr->first_page_offset + len - 1) >> PAGE_SHIFT;
	for (; ib_access_writable(mr->access) && first <= last; first++) {
		set_page_dirty_lock(mr->pages[first]);
		cond_resched();
	}
	return vfs_fsync_range(mr->file, mr->file_offset + (addr - mr->iova),
			       mr->file_offset + (addr - mr->iova) + len - 1, 1);
}

static int xiw_piece_hash(void *kaddr, size_t n, void *arg)
{
	int err = crypto_shash_update(arg, kaddr, n);

	cond_resched();
	return err;
}

/*
 * RDMA Verify (draft-talpey §4.2): the hash chosen at registration over
 * [addr, addr + len) of @mr, read from the memory itself, into @out
 * (crypto_shash_digestsize() bytes).
 */
int xiw_mr_hash(struct xiw_mr *mr, u64 addr, u32 len, u8 *out)
{
	SHASH_DESC_ON_STACK(desc, mr->verify_tfm);
	int err;

	desc->tfm = mr->verify_tfm;
	err = crypto_shash_init(desc);
	if (!err && len)
		err = xiw_mr_walk(mr, addr, len, xiw_piece_hash, desc);
	if (!err)
		err = crypto_shash_final(desc, out);
	shash_desc_zero(desc);
	return err;
}

/*
 * Copies the next @n octets of the cursor's pass to @to, extending *@crc
 * over them when @crc is given.  Each chunk comes from the skb's linear
 * part or from the fragment the pass has mapped (skb_seq_read()): the skb
 * is walked once per pass, not once per copy.  The CRC covers the octets
 * received, not the memory they were copied to, which may change under
 * the copy (its owner, another QP placing there) - the consumer's race,
 * not an MPA CRC error.  Each chunk is copied before its CRC is taken, so
 * that a consumer polling its memory sees the data at once; a bad CRC
 * still ends the stream before the message completes.
 */
int xiw_skb_cursor_copy(struct xiw_skb_cursor *cur, void *to, size_t n,
			u32 *crc)
{
	u8 *dst = to;

	while (n) {
		const u8 *data;
		size_t len = skb_seq_read(cur->pos, &data, &cur->seq);

		if (!len)
			return -EFAULT;
		/* A chunk may run past the octets asked for. */
		len = min(len, n);
		memcpy(dst, data, len);
		if (crc)
			*crc = xiw_crc_update(*crc, data, len);
		cur->pos += len;
		dst += len;
		n -= len;
	}
	return 0;
}

struct xiw_skb_source {
	struct xiw_skb_cursor *cur;
	u32 *crc;
};

static int xiw_piece_copy_from_skb(void *kaddr, size_t n, void *arg)
{
	struct xiw_skb_source *src = arg;

	return xiw_skb_cursor_copy(src->cur, kaddr, n, src->crc);
}

/*
 * Places the next @len octets of @cur into @mr at @addr, extending the
 * running CRC32c when @crc is given.
 */
int xiw_mr_copy_from_skb(struct xiw_mr *mr, u64 addr,
			 struct xiw_skb_cursor *cur, size_t len, u32 *crc)
{
	struct xiw_skb_source src = { .cur = cur, .crc = crc };

	return xiw_mr_walk(mr, addr, len, xiw_piece_copy_from_skb, &src);
}

/* Kernel consumers' whole-memory registration: no remote access. */
struct ib_mr *xiw_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct xiw_device *xdev = to_xiw_dev(ibpd->device);
	struct xiw_mr *mr;
	int err;

	if (access & ~IB_ACCESS_LOCAL_WRITE)
		return ERR_PTR(-EOPNOTSUPP);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->length = U64_MAX;
	mr->access = access;
	err = xiw_mr_insert(xdev, mr);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

/*
 * The xiw rights of a registration request with verbs rights @access,
 * before anything is pinned.
 */
static int xiw_mr_check_ext_access(const struct xiw_ureq_reg_mr *req,
				   int access)
{
	const u32 known = XIW_ACCESS_FLUSH_GLOBAL | XIW_ACCESS_FLUSH_PERSISTENT |
			  XIW_ACCESS_VERIFY;
	bool verify = req->ext_access & XIW_ACCESS_VERIFY;
	bool hash = req->verify_hash != XIW_VERIFY_NONE;

	if (req->ext_access & ~known)
		return -EINVAL;
	/* A Verify right names exactly one algorithm. */
	if (verify != hash || req->verify_hash > XIW_VERIFY_SHA256)
		return -EINVAL;
	/*
	 * The hash of a range the peer chooses, down to one octet, tells it
	 * the contents: Verify is a way to read (draft-talpey §6 lets the
	 * platform require the read right with it).
	 */
	if (verify && !(access & IB_ACCESS_REMOTE_READ))
		return -EINVAL;
	return 0;
}

/*
 * Flush to persistence needs a file behind the whole region, to write it
 * back: one shared mapping of a file that can be synced (anonymous memory
 * and tmpfs cannot be made persistent).  Verify needs its hash.
 */
static int xiw_mr_set_ext_access(struct xiw_mr *mr,
				 const struct xiw_ureq_reg_mr *req, u64 start)
{
	struct vm_area_struct *vma;
	int err = 0;

	mr->ext_access = req->ext_access;
	if (req->ext_access & XIW_ACCESS_FLUSH_PERSISTENT) {
		mmap_read_lock(current->mm);
		vma = vma_lookup(current->mm, start);
		/*
		 * tmpfs and shared anonymous memory live in RAM only.  A DAX
		 * mapping that got pinned is device DAX (file system DAX
		 * cannot be pinned long term): persistent memory itself.
		 */
		if (!vma || !(vma->vm_flags & VM_SHARED) ||
		    mr->length > vma->vm_end - start)
			err = -EOPNOTSUPP;
		else if (vma_is_dax(vma))
			mr->pmem = true;
		else if (vma->vm_file && !shmem_file(vma->vm_file) &&
			 vma->vm_file->f_op->fsync)
			mr->file = get_file(vma->vm_file);
		else
			err = -EOPNOTSUPP;
		if (mr->file)
			mr->file_offset = ((loff_t)vma->vm_pgoff << PAGE_SHIFT) +
					  (start - vma->vm_start);
		mmap_read_unlock(current->mm);
		if (err)
			return err;
	}
	if (req->ext_access & XIW_ACCESS_VERIFY) {
		const char *alg = req->verify_hash == XIW_VERIFY_CRC32C ?
				  "crc32c" : "sha256";

		mr->verify_tfm = crypto_alloc_shash(alg, 0, 0);
		if (IS_ERR(mr->verify_tfm)) {
			err = PTR_ERR(mr->verify_tfm);
			mr->verify_tfm = NULL;
		}
	}
	return err;
}

static int xiw_mr_collect_pages(struct xiw_mr *mr)
{
	struct sg_page_iter iter;
	size_t i = 0;

	mr->pages = kvcalloc(ib_umem_num_pages(mr->umem), sizeof(*mr->pages),
			     GFP_KERNEL_ACCOUNT);
	if (!mr->pages)
		return -ENOMEM;
	for_each_sgtable_page(&mr->umem->sgt_append.sgt, &iter, 0)
		mr->pages[i++] = sg_page_iter_page(&iter);
	mr->first_page_offset = ib_umem_offset(mr->umem);
	return 0;
}

struct ib_mr *xiw_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			      u64 iova, int access, struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(ibpd->device);
	struct xiw_ureq_reg_mr req = {};
	struct xiw_uresp_reg_mr resp = {};
	struct xiw_mr *mr;
	int err;

	if (!length || length > SZ_2G * 2ULL)
		return ERR_PTR(-EINVAL);
	if (udata->inlen) {
		err = ib_copy_from_udata(&req, udata,
					 min(udata->inlen, sizeof(req)));
		if (err)
			return ERR_PTR(err);
	}
	/* Where the kernel passes them, the Flush rights come as access flags. */
	req.ext_access |= xiw_compat_flush_access(access);
	err = xiw_mr_check_ext_access(&req, access);
	if (err)
		return ERR_PTR(err);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	xiw_ucontext_reap(udata);
	mr->umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		kfree(mr);
		return ERR_PTR(err);
	}
	err = xiw_mr_collect_pages(mr);
	if (err)
		goto err_release;
	mr->iova = iova;
	mr->length = length;
	mr->access = access;
	err = xiw_mr_set_ext_access(mr, &req, start);
	if (err)
		goto err_release;
	err = xiw_mr_insert(xdev, mr);
	if (err)
		goto err_release;

	if (udata->outlen) {
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_remove;
	}
	return &mr->ibmr;

err_remove:
	xiw_mr_remove(xdev, mr);
	return ERR_PTR(err);
err_release:
	xiw_mr_put_ext_access(mr);
	ib_umem_release(mr->umem);
	kvfree(mr->pages);
	kfree(mr);
	return ERR_PTR(err);
}

int xiw_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	xiw_mr_remove(to_xiw_dev(ibmr->device), to_xiw_mr(ibmr));
	return 0;
}

/* A registration for fast registration work requests (kernel consumers). */
struct ib_mr *xiw_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			   u32 max_num_sg)
{
	struct xiw_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (max_num_sg > XIW_MAX_FRMR_PAGES)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->pages = kvcalloc(max_num_sg, sizeof(*mr->pages), GFP_KERNEL_ACCOUNT);
	if (!mr->pages) {
		kfree(mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->fast_reg = true;
	mr->max_pages = max_num_sg;
	err = xiw_mr_insert(to_xiw_dev(ibpd->device), mr);
	if (err) {
		kvfree(mr->pages);
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

static int xiw_mr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct xiw_mr *mr = to_xiw_mr(ibmr);

	if (mr->npages == mr->max_pages)
		return -ENOMEM;
	/* A software device's DMA addresses are kernel virtual ones. */
	mr->pages[mr->npages++] = virt_to_page((void *)(uintptr_t)addr);
	return 0;
}

/*
 * Records the pages of a scatterlist for the next Register work request;
 * the registration keeps them by page, so its page size is the CPU's.
 */
int xiw_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		  unsigned int *sg_offset)
{
	struct xiw_mr *mr = to_xiw_mr(ibmr);

	if (ibmr->page_size != PAGE_SIZE)
		return -EINVAL;
	/* The data path may still hold the pages of the last registration. */
	if (READ_ONCE(mr->stag_valid) || refcount_read(&mr->refs) > 1)
		return -EBUSY;
	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, xiw_mr_set_page);
}

/*
 * Executes a Register work request of a QP of @pd: the STag of @ibmr,
 * with the new @key, names the pages map_mr_sg recorded, with @access
 * rights.  Returns a work completion status.
 */
u8 xiw_mr_fast_register(struct ib_pd *pd, struct ib_mr *ibmr, u32 key,
			int access)
{
	struct xiw_mr *mr = to_xiw_mr(ibmr);
	u32 stag = (ibmr->lkey & ~0xffU) | (key & 0xff);
	unsigned int offset = ibmr->iova & ~PAGE_MASK;

	if (!mr->fast_reg || ibmr->pd != pd)
		return XIW_WC_LOC_PROT_ERR;
	/*
	 * A valid STag must be invalidated before it is registered again,
	 * and the data path must have let go of the last registration.
	 */
	if (mr->stag_valid || refcount_read(&mr->refs) > 1 ||
	    offset + ibmr->length > (u64)mr->npages * PAGE_SIZE)
		return XIW_WC_LOC_QP_OP_ERR;
	mr->iova = ibmr->iova;
	mr->length = ibmr->length;
	mr->first_page_offset = offset;
	mr->access = access;
	WRITE_ONCE(ibmr->lkey, stag);
	WRITE_ONCE(ibmr->rkey, stag);
	/* The region before the STag: lookups acquire stag_valid. */
	smp_store_release(&mr->stag_valid, true);
	return XIW_WC_SUCCESS;
}

/*
 * Invalidates @stag of a fast registration of @pd, for a Local Invalidate
 * work request or an inbound Send with Invalidate (RFC 5040 §6.10); an
 * access that already holds the registration may still finish.
 */
enum xiw_access_error xiw_mr_invalidate(struct xiw_device *xdev,
					struct ib_pd *pd, u32 stag)
{
	enum xiw_access_error why;
	struct xiw_mr *mr = xiw_mr_get_region(xdev, pd, stag, 0, &why);

	if (!mr)
		return why;
	/* Only fast registrations can be invalidated. */
	why = mr->fast_reg ? XIW_ACCESS_OK : XIW_ACCESS_INVALID_STAG;
	if (mr->fast_reg) {
		/* No access of the data path is under way after this. */
		write_lock_bh(&mr->use_lock);
		WRITE_ONCE(mr->stag_valid, false);
		write_unlock_bh(&mr->use_lock);
	}
	xiw_mr_put(mr);
	return why;
}
