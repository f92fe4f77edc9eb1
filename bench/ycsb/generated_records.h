// GeneratedRecords: records made on the fly for BTree::bulk_load, so that a load of many
// millions of records never holds them all in memory (the calico YCSB adapter and the
// micro B-tree benchmarks load this way).
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <utility>

#include "ycsb/kv_store.h"

namespace calico::bench::kv {

// A forward iterator over generated records for BTree::bulk_load, so that the records are
// never all in memory. bulk_load keeps a view of the previous key while it reads the next
// one, so records alternate between two buffers (by index parity); a reference stays
// valid until the element two positions further is read (enough for bulk_load's two
// passes, which each look at the current and the previous element only).
class GeneratedRecords {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = std::pair<std::string, std::string>;
  using difference_type = std::ptrdiff_t;
  using pointer = const value_type*;
  using reference = const value_type&;

  GeneratedRecords(uint64_t i, FunctionRef<void(uint64_t, std::string*, std::string*)>* make,
                   FunctionRef<void(uint64_t)>* progress, uint64_t* steps)
      : i_(i), make_(make), progress_(progress), steps_(steps) {}

  reference operator*() const {
    value_type& b = buf_[i_ & 1];
    if (made_[i_ & 1] != i_) {
      (*make_)(i_, &b.first, &b.second);
      made_[i_ & 1] = i_;
    }
    return b;
  }
  pointer operator->() const { return &**this; }
  GeneratedRecords& operator++() {
    ++i_;
    // bulk_load walks the records twice (validate, build): progress counts both, halved.
    if ((++*steps_ & 0xFFFF) == 0) (*progress_)(*steps_ / 2);
    return *this;
  }
  bool operator==(const GeneratedRecords& o) const { return i_ == o.i_; }

 private:
  uint64_t i_;
  FunctionRef<void(uint64_t, std::string*, std::string*)>* make_;
  FunctionRef<void(uint64_t)>* progress_;
  uint64_t* steps_;
  mutable value_type buf_[2];
  mutable uint64_t made_[2] = {~uint64_t{0}, ~uint64_t{0}};
};

}  // namespace calico::bench::kv
