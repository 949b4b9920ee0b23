// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// <infiniband/xiwdv.h> compiles as C++ and its declarations have the
// documented types and values.  Compiled, not run.
#include <infiniband/xiwdv.h>

#include <type_traits>

static_assert(XIWDV_VENDOR_ID == 0x786977u, "vendor id spells \"xiw\"");
static_assert(XIWDV_VENDOR_PART_ID == 1u);
static_assert(std::is_same_v<decltype(&xiwdv_is_xiw_device), int (*)(ibv_device *)>);
static_assert(std::is_same_v<decltype(&xiwdv_is_xiw_context), int (*)(ibv_context *)>);

int main()
{
	return xiwdv_is_xiw_device(nullptr) + xiwdv_is_xiw_context(nullptr);
}
