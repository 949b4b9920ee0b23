/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What differs between the kernels xiw is built for (Debian 12's 6.1 and
 * Debian 13's 6.12), in one place: the rest of the module is written
 * against one interface, and this header adapts it to the kernel at hand.
 * XIW_HAVE_* come from Kbuild, which looks for each interface in the
 * kernel's headers rather than guessing from its version.  Included at the
 * end of xiw.h.
 */
#ifndef XIW_COMPAT_H
#define XIW_COMPAT_H

#include <rdma/uverbs_ioctl.h>

/*
 * ib_device_ops.create_cq takes the uverbs attribute bundle since 6.11
 * (the driver's udata inside it; none for a kernel consumer's CQ).
 */
#ifdef XIW_HAVE_CREATE_CQ_ATTRS
static inline int xiw_compat_create_cq(struct ib_cq *ibcq,
				       const struct ib_cq_init_attr *attr,
				       struct uverbs_attr_bundle *attrs)
{
	return xiw_create_cq(ibcq, attr, attrs ? &attrs->driver_udata : NULL);
}

#define XIW_COMPAT_CREATE_CQ xiw_compat_create_cq
#else
#define XIW_COMPAT_CREATE_CQ xiw_create_cq
#endif

/*
 * Flush and Atomic Write: since 6.2 the kernel names their capability
 * bits and the Flush access rights, and uverbs passes those rights to the
 * driver; before, xiw states the same bit values itself (xiw-abi.h) and
 * the provider carries the rights in the udata.
 */
#ifdef XIW_HAVE_IB_FLUSH
#define XIW_COMPAT_DEVICE_CAP_COMMIT					\
	(IB_DEVICE_FLUSH_GLOBAL | IB_DEVICE_FLUSH_PERSISTENT |		\
	 IB_DEVICE_ATOMIC_WRITE)
#define XIW_COMPAT_CTX_FLAGS XIW_CTX_NATIVE_FLUSH_ACCESS

/* The xiw Flush rights of the verbs @access flags of a registration. */
static inline u32 xiw_compat_flush_access(int access)
{
	return (access & IB_ACCESS_FLUSH_GLOBAL ? XIW_ACCESS_FLUSH_GLOBAL : 0) |
	       (access & IB_ACCESS_FLUSH_PERSISTENT ?
		XIW_ACCESS_FLUSH_PERSISTENT : 0);
}
#else
#define XIW_COMPAT_DEVICE_CAP_COMMIT					\
	(XIW_UVERBS_DEVICE_FLUSH_GLOBAL |				\
	 XIW_UVERBS_DEVICE_FLUSH_PERSISTENT | XIW_UVERBS_DEVICE_ATOMIC_WRITE)
#define XIW_COMPAT_CTX_FLAGS 0

static inline u32 xiw_compat_flush_access(int access)
{
	return 0;
}
#endif

#endif /* XIW_COMPAT_H */
