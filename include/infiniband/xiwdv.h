/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * <infiniband/xiwdv.h> - direct verbs of the xiw software iWARP RNIC.
 *
 * xiw devices are driven through the standard libibverbs and librdmacm
 * APIs.  This header holds what those APIs cannot express.  Today that is
 * only how to recognise an xiw device; the extension verbs (masked atomics,
 * 64-bit immediate data, Verify, Flush) will be declared here once the
 * provider accepts them.  See xiw(7).
 *
 * Usable from C (C99 or later) and C++.  Everything here is inline: there is
 * no libxiw to link against, only libibverbs (pkg-config --libs xiw).
 */
#ifndef INFINIBAND_XIWDV_H
#define INFINIBAND_XIWDV_H

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ibv_device_attr.vendor_id of every xiw device.  A software device has no
 * IEEE OUI; the value spells "xiw" in ASCII.
 */
#define XIWDV_VENDOR_ID 0x786977u
/* ibv_device_attr.vendor_part_id of every xiw device. */
#define XIWDV_VENDOR_PART_ID 1u

/*
 * xiwdv_is_xiw_context - does CTX belong to an xiw device?
 *
 * Returns 1 if it does, 0 if it does not or the device cannot be queried.
 * The answer comes from the device itself (ibv_query_device), not from the
 * device name, which the administrator chooses in `rdma link add`.
 */
static inline int xiwdv_is_xiw_context(struct ibv_context *ctx)
{
	struct ibv_device_attr attr;

	if (!ctx || ibv_query_device(ctx, &attr))
		return 0;
	return attr.vendor_id == XIWDV_VENDOR_ID &&
	       attr.vendor_part_id == XIWDV_VENDOR_PART_ID;
}

/*
 * xiwdv_is_xiw_device - is DEV an xiw device?
 *
 * Opens a context on DEV for the query and closes it again; use
 * xiwdv_is_xiw_context() when a context is at hand.  Returns 1 or 0 as
 * xiwdv_is_xiw_context() does (0 also when DEV cannot be opened).
 */
static inline int xiwdv_is_xiw_device(struct ibv_device *dev)
{
	struct ibv_context *ctx;
	int ret;

	if (!dev)
		return 0;
	ctx = ibv_open_device(dev);
	if (!ctx)
		return 0;
	ret = xiwdv_is_xiw_context(ctx);
	ibv_close_device(ctx);
	return ret;
}

#ifdef __cplusplus
}
#endif

#endif /* INFINIBAND_XIWDV_H */
