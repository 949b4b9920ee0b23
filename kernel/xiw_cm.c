// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiw connection management entry points for iw_cm.  MPA connection
 * setup (RFC 5044, RFC 6581) comes with the data path; until then every
 * request is refused, so rdma_cm reports an error instead of a device
 * that silently never connects.
 */
#include "xiw.h"

int xiw_connect(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	return -EOPNOTSUPP;
}

int xiw_accept(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	return -EOPNOTSUPP;
}

int xiw_reject(struct iw_cm_id *id, const void *pdata, u8 pdata_len)
{
	return -EOPNOTSUPP;
}

int xiw_create_listen(struct iw_cm_id *id, int backlog)
{
	return -EOPNOTSUPP;
}

int xiw_destroy_listen(struct iw_cm_id *id)
{
	return 0;
}
