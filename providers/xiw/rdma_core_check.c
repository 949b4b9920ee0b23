/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Built only with -DRDMA_CORE_SOURCE_DIR=<rdma-core checkout>: compiles
 * rdma-core's real private provider header and asserts that every layout
 * fact the xiw declarations (rdma_core_abi.h) rely on holds for it.  This
 * must be C: rdma-core's private headers are not valid C++.
 */
#include <infiniband/driver.h>

#define XIW_USE_RDMA_CORE_HEADERS
#include "rdma_core_abi.h"

/* ISO C wants at least one declaration that is not an assertion. */
typedef int xiw_rdma_core_check_done;
