// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// Shared queues: one mmap() per queue, a struct xiw_ring_ctrl at offset 0
// and a power-of-two array of entries at XIW_RING_ENTRIES_OFFSET.
#ifndef XIW_PROVIDER_RING_H
#define XIW_PROVIDER_RING_H

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include <rdma/xiw-abi.h>

namespace xiw {

static_assert(sizeof(xiw_ring_ctrl) <= XIW_RING_ENTRIES_OFFSET);

// Owns one shared mapping; unmaps it when destroyed.
class mapping {
public:
	mapping() noexcept = default;
	mapping(const mapping &) = delete;
	mapping &operator=(const mapping &) = delete;
	mapping(mapping &&other) noexcept
		: addr_(std::exchange(other.addr_, nullptr)),
		  len_(std::exchange(other.len_, 0))
	{
	}
	mapping &operator=(mapping &&other) noexcept
	{
		if (this != &other) {
			reset();
			addr_ = std::exchange(other.addr_, nullptr);
			len_ = std::exchange(other.len_, 0);
		}
		return *this;
	}
	~mapping() { reset(); }

	// Maps len bytes of the uverbs file at key.  Returns 0 or an errno.
	int map(int fd, std::uint64_t key, std::size_t len) noexcept
	{
		reset();
		void *p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED,
				 fd, static_cast<off_t>(key));
		if (p == MAP_FAILED)
			return errno ? errno : ENOMEM;
		addr_ = static_cast<std::byte *>(p);
		len_ = len;
		return 0;
	}

	void reset() noexcept
	{
		if (addr_)
			::munmap(addr_, len_);
		addr_ = nullptr;
		len_ = 0;
	}

	std::byte *data() const noexcept { return addr_; }
	std::size_t size() const noexcept { return len_; }
	explicit operator bool() const noexcept { return addr_ != nullptr; }

private:
	std::byte *addr_ = nullptr;
	std::size_t len_ = 0;
};

// Bytes to map for a queue of n entries of entry_size bytes; 0 if n is not
// a power of two or the size does not fit.
inline std::size_t ring_map_size(std::uint32_t n, std::size_t entry_size) noexcept
{
	if (n == 0 || (n & (n - 1)) != 0) // not a power of two
		return 0;
	const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
	const std::size_t bytes =
		XIW_RING_ENTRIES_OFFSET + std::size_t{n} * entry_size;
	return (bytes + page - 1) / page * page;
}

// A mapped queue of Entry.  The indices are free-running; each is written by
// one side only and accessed atomically because the other side is the
// kernel.
template <class Entry>
class ring {
public:
	// Maps the queue of n entries at key.  Returns 0 or an errno.
	int map(int fd, std::uint64_t key, std::uint32_t n) noexcept
	{
		const std::size_t len = ring_map_size(n, sizeof(Entry));
		if (!len)
			return EPROTO;
		if (int err = map_.map(fd, key, len))
			return err;
		entries_ = std::span<Entry>(
			reinterpret_cast<Entry *>(map_.data() + XIW_RING_ENTRIES_OFFSET),
			n);
		return 0;
	}

	bool mapped() const noexcept { return static_cast<bool>(map_); }
	std::uint32_t capacity() const noexcept
	{
		return static_cast<std::uint32_t>(entries_.size());
	}

	Entry &slot(std::uint32_t index) const noexcept
	{
		return entries_[index & (capacity() - 1)];
	}

	// Index written by the other side: acquire, so that the entries it
	// published before are visible.
	std::uint32_t load_producer() const noexcept { return load(ctrl().producer); }
	std::uint32_t load_consumer() const noexcept { return load(ctrl().consumer); }
	std::uint32_t load_notify() const noexcept
	{
		return std::atomic_ref<__u32>(ctrl().notify)
			.load(std::memory_order_relaxed);
	}
	// enum xiw_conn_flags, set by the kernel before the QP got to RTS.
	std::uint32_t load_conn_flags() const noexcept
	{
		return std::atomic_ref<__u32>(ctrl().conn_flags)
			.load(std::memory_order_relaxed);
	}

	// Index written by us: release, so that the entries we read (consumer)
	// or wrote (producer) are done before the other side sees it.
	void store_consumer(std::uint32_t v) const noexcept { store(ctrl().consumer, v); }
	void store_producer(std::uint32_t v) const noexcept { store(ctrl().producer, v); }
	void store_notify(std::uint32_t v) const noexcept { store(ctrl().notify, v); }
	// enum xiw_post_mode, read by the doorbell after the producer index.
	void store_post_mode(std::uint32_t v) const noexcept
	{
		std::atomic_ref<__u32>(ctrl().post_mode)
			.store(v, std::memory_order_relaxed);
	}

	// Our own index: no other writer, so a relaxed read is enough.
	std::uint32_t own(__u32 &index) const noexcept
	{
		return std::atomic_ref<__u32>(index).load(std::memory_order_relaxed);
	}
	xiw_ring_ctrl &ctrl() const noexcept
	{
		return *reinterpret_cast<xiw_ring_ctrl *>(map_.data());
	}

private:
	static std::uint32_t load(__u32 &index) noexcept
	{
		return std::atomic_ref<__u32>(index).load(std::memory_order_acquire);
	}
	static void store(__u32 &index, std::uint32_t v) noexcept
	{
		std::atomic_ref<__u32>(index).store(v, std::memory_order_release);
	}

	mapping map_;
	std::span<Entry> entries_;
};

// A lock that cannot fail or throw (taken around ring updates by threads
// sharing a CQ or QP).
class spin_lock {
public:
	void lock() noexcept
	{
		while (flag_.test_and_set(std::memory_order_acquire))
			while (flag_.test(std::memory_order_relaxed))
				cpu_relax();
	}
	void unlock() noexcept { flag_.clear(std::memory_order_release); }

private:
	static void cpu_relax() noexcept
	{
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	}
	std::atomic_flag flag_{};
};

} // namespace xiw

#endif // XIW_PROVIDER_RING_H
