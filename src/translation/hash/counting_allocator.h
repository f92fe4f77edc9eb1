// ByteCounter / CountingAllocator<T>: measures the translation memory of the hash tables.
//
// A CountingAllocator is std::allocator with a pointer to a ByteCounter: every allocate(n)
// adds n * sizeof(T) to the counter and every deallocate subtracts it, so the counter holds
// the bytes the container has asked for and not yet returned (bucket arrays, nodes, slots,
// control bytes, slab chunks). It does not include malloc's own per-allocation header and
// rounding (8-16 bytes per allocation with glibc), nor memory malloc keeps after a free.
//
// Thread safety: the containers allocate under their partition's exclusive latch, so there is
// one writer per counter at a time; readers (stats()) load it concurrently, hence an atomic
// with relaxed order (a statistic, not a synchronisation point).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "calico/checks.h"

namespace calico::translation {

class ByteCounter {
 public:
  void add(size_t bytes) { bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  void sub(size_t bytes) {
    [[maybe_unused]] size_t before = bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    CALICO_DCHECK(before >= bytes);
  }
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  std::atomic<size_t> bytes_{0};
};

template <class T>
class CountingAllocator {
 public:
  using value_type = T;

  explicit CountingAllocator(ByteCounter* counter) noexcept : counter_(counter) {}
  template <class U>
  CountingAllocator(const CountingAllocator<U>& other) noexcept : counter_(other.counter()) {}

  T* allocate(size_t n) {
    T* p = std::allocator<T>{}.allocate(n);
    counter_->add(n * sizeof(T));
    return p;
  }
  void deallocate(T* p, size_t n) noexcept {
    counter_->sub(n * sizeof(T));
    std::allocator<T>{}.deallocate(p, n);
  }

  ByteCounter* counter() const { return counter_; }
  template <class U>
  bool operator==(const CountingAllocator<U>& other) const {
    return counter_ == other.counter();
  }

 private:
  ByteCounter* counter_;
};

}  // namespace calico::translation
