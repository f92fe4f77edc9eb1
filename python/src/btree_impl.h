// BTreeImpl<Pool>: BTreeApi over index::BasicBTree<Pool> (api.h has the locking rules).
// The tree's entry count lives in memory and reaches its metadata page on sync() (every
// Pool.flush() and close()), so a reopened tree's len() is that of the last flush.
#pragma once

#include <memory>
#include <string>

#include "api.h"
#include "gate.h"
#include "calico/index/btree.h"

namespace calico::py {

template <class Pool>
class BTreeImpl final : public BTreeApi {
 public:
  using Tree = index::BasicBTree<Pool>;

  BTreeImpl(std::shared_ptr<Gate> gate, std::shared_ptr<void> owner, std::unique_ptr<Tree> tree)
      : gate_(std::move(gate)), owner_(std::move(owner)), tree_(std::move(tree)) {}
  ~BTreeImpl() override {
    std::shared_lock l(gate_->mu);
    tree_.reset();  // the destructor syncs the metadata
  }

  void sync() override {
    if (tree_) tree_->sync_metadata();
  }
  void close_locked() override { tree_.reset(); }

  void put(std::string_view key, std::string_view value) override {
    Use u(*gate_);
    live().upsert(key, value);
  }
  bool get(std::string_view key, std::string* value) override {
    Use u(*gate_);
    return live().lookup(key, value);
  }
  bool remove(std::string_view key) override {
    Use u(*gate_);
    return live().remove(key);
  }
  uint64_t size() override {
    Use u(*gate_);
    return live().size();
  }
  bool scan_batch(std::string_view start, bool after, bool has_end, std::string_view end, size_t max,
                  std::vector<std::pair<std::string, std::string>>* out) override {
    Use u(*gate_);
    out->clear();
    std::string from(start);
    if (after) from.push_back('\0');  // the smallest key above `start`
    bool more = false;
    live().scan(from, [&](std::string_view k, std::string_view v) {
      if (has_end && !(k < end)) return false;
      if (out->size() == max) {
        more = true;
        return false;
      }
      out->emplace_back(std::string(k), std::string(v));
      return true;
    });
    return more;
  }
  void bulk_load(const std::vector<std::pair<std::string, std::string>>& pairs) override {
    Use u(*gate_);
    live().bulk_load(pairs.begin(), pairs.end());
  }

 private:
  Tree& live() {
    if (!tree_) throw ClosedError("the tree's pool is closed");
    return *tree_;
  }

  std::shared_ptr<Gate> gate_;
  std::shared_ptr<void> owner_;
  std::unique_ptr<Tree> tree_;
};

}  // namespace calico::py
