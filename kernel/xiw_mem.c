// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiw memory registration.  A registration is named by its STag
 * (RFC 5040 §2.1): a 24-bit index into the device's table and an 8-bit
 * key that changes each time, so that a stale STag does not match.
 */
#include <linux/random.h>

#include "xiw.h"

static int xiw_mr_insert(struct xiw_device *xdev, struct xiw_mr *mr)
{
	u32 index;
	u32 stag;
	int err;

	if (atomic_inc_return(&xdev->num_mr) > XIW_MAX_MR) {
		atomic_dec(&xdev->num_mr);
		return -ENOMEM;
	}
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

static void xiw_mr_remove(struct xiw_device *xdev, struct xiw_mr *mr)
{
	xa_erase(&xdev->mr_xa, mr->ibmr.lkey >> 8);
	atomic_dec(&xdev->num_mr);
}

/* Kernel consumers' whole-memory registration: no remote access. */
struct ib_mr *xiw_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct xiw_device *xdev = to_xiw_dev(ibpd->device);
	struct xiw_mr *mr;
	int err;

	if (access & ~IB_ACCESS_LOCAL_WRITE)
		return ERR_PTR(-EOPNOTSUPP);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
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
	/* Flush and Verify rights need the memory placement extensions. */
	if (req.ext_access || req.verify_hash)
		return ERR_PTR(-EOPNOTSUPP);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		goto err_free;
	}
	mr->iova = iova;
	mr->length = length;
	mr->access = access;
	err = xiw_mr_insert(xdev, mr);
	if (err)
		goto err_release;

	if (udata->outlen) {
		resp.stag = mr->ibmr.rkey;
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_remove;
	}
	return &mr->ibmr;

err_remove:
	xiw_mr_remove(xdev, mr);
err_release:
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

int xiw_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct xiw_mr *mr = to_xiw_mr(ibmr);

	xiw_mr_remove(to_xiw_dev(ibmr->device), mr);
	ib_umem_release(mr->umem);
	kfree(mr);
	return 0;
}
