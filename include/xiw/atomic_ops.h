/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * xiw - value semantics of the RFC 7306 Atomic Operations, as pure
 * functions of 64-bit host-order values (kernel and user space, C/C++).
 *
 * The caller performs the read-modify-write atomically on the target
 * (RFC 7306 §5.3); these helpers only compute the value to store.  The
 * value returned to the requester is always the original one (RFC 7306
 * §5.1.1, §5.1.2).
 */
#ifndef XIW_ATOMIC_OPS_H
#define XIW_ATOMIC_OPS_H

#include <linux/types.h>

/*
 * Masked FetchAdd, RFC 7306 §5.1.1.  A set bit in add_mask marks the
 * most significant bit of a field: the carry out of that bit position is
 * discarded, so every field is added independently (modulo its width).
 * add_mask == 0 is a plain 64-bit addition.
 *
 * The RFC's pseudocode walks the 64 bits with an explicit carry.  The
 * same result in O(1): clear the field-MSB positions in both operands
 * and add - a carry that reaches a field MSB then stops there (0+0+c
 * never carries on) - and put back into those positions the sum bit the
 * pseudocode computes there, orig ^ add ^ carry_in, by xor'ing in
 * (orig ^ add) & mask.  Bits outside the MSB positions see exactly the
 * carries of the pseudocode.  The test suite checks this against a
 * bit-by-bit transcription of the pseudocode.
 */
static inline __u64 xiw_masked_fetch_add(__u64 orig, __u64 add,
					 __u64 add_mask)
{
	__u64 sum = (orig & ~add_mask) + (add & ~add_mask);

	return sum ^ ((orig ^ add) & add_mask);
}

/* Unmasked FetchAdd (Add Mask all zero): 64-bit wrap-around add. */
static inline __u64 xiw_fetch_add(__u64 orig, __u64 add)
{
	return orig + add;
}

/*
 * Masked CmpSwap, RFC 7306 §5.1.2:
 *   if (!((Compare Data ^ Original) & Compare Mask))
 *       new = (Original & ~Swap Mask) | (Swap Data & Swap Mask)
 *   else
 *       new = Original
 * *swapped (if non-NULL) tells whether the comparison matched.
 */
static inline __u64 xiw_masked_cmp_swap(__u64 orig, __u64 compare,
					__u64 compare_mask, __u64 swap,
					__u64 swap_mask, int *swapped)
{
	int match = ((compare ^ orig) & compare_mask) == 0;

	if (swapped)
		*swapped = match;
	if (!match)
		return orig;
	return (orig & ~swap_mask) | (swap & swap_mask);
}

/* Unmasked CmpSwap: both masks all ones. */
static inline __u64 xiw_cmp_swap(__u64 orig, __u64 compare, __u64 swap)
{
	return orig == compare ? swap : orig;
}

/*
 * Apply one Atomic Request to the original value, by AOpCode (RFC 7306
 * §5.2.1 Figure 5: FetchAdd 0x0, CmpSwap 0x2).  AOpCode 0x1 was the
 * unmasked "Swap" of draft-ietf-storm-rdmap-ext-01 §5.1.2 (new = Swap
 * Data) and is Reserved in RFC 7306 §10.1; it is accepted only when
 * allow_draft_swap is non-zero.
 * Returns 0 and sets *result, or -1 for an unsupported AOpCode (the
 * caller must then not touch memory and must terminate, RFC 7306
 * §5.2.1 rule 4).
 */
static inline int xiw_atomic_apply(unsigned int aopcode, __u64 orig,
				   __u64 add_swap, __u64 add_swap_mask,
				   __u64 compare, __u64 compare_mask,
				   int allow_draft_swap, __u64 *result)
{
	int swapped;

	switch (aopcode) {
	case 0x0: /* XIW_AOP_FETCH_ADD */
		*result = xiw_masked_fetch_add(orig, add_swap, add_swap_mask);
		return 0;
	case 0x2: /* XIW_AOP_CMP_SWAP */
		*result = xiw_masked_cmp_swap(orig, compare, compare_mask,
					      add_swap, add_swap_mask,
					      &swapped);
		return 0;
	case 0x1: /* XIW_AOP_SWAP_DRAFT */
		if (!allow_draft_swap)
			return -1;
		*result = add_swap;
		return 0;
	default:
		return -1;
	}
}

#endif /* XIW_ATOMIC_OPS_H */
