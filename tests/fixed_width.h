// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// The kernel's short names of the fixed-width integers, which the test
// programs that build and parse wire formats are written in.  Global, like
// the kernel's: a redeclaration to the same type is allowed, so the
// headers that include this may be included together.
#ifndef XIW_TESTS_FIXED_WIDTH_H
#define XIW_TESTS_FIXED_WIDTH_H

#include <cstdint>

using u8 = std::uint8_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

#endif
