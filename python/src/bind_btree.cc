// calico.BTree: a persistent bytes -> bytes map (index::BasicBTree on a Pool), and the
// iterator of its scans, which reads batches of kScanBatch entries with the GIL released.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api.h"
#include "bindings.h"
#include "calico/error.h"
#include "pool_handle.h"

namespace calico::py {

namespace nb = nanobind;
using namespace nb::literals;

namespace {

constexpr size_t kScanBatch = 256;

struct BTreeHandle {
  std::shared_ptr<BTreeApi> api;
  std::string name;
};

std::string_view view(const nb::bytes& b) { return {b.c_str(), b.size()}; }
nb::bytes to_bytes(const std::string& s) { return nb::bytes(s.data(), s.size()); }

// Keys in [start, end) in order; each refill is one scan_batch call without the GIL.
struct ScanIterator {
  std::shared_ptr<BTreeApi> api;
  std::string pos;  // next batch starts at pos (after it, once a key was returned)
  bool after = false;
  std::optional<std::string> end;
  std::vector<std::pair<std::string, std::string>> batch;
  size_t next = 0;
  bool more = true;  // the tree may hold keys after the batch

  nb::tuple step() {
    if (next == batch.size()) {
      if (!more) throw nb::stop_iteration();
      {
        nb::gil_scoped_release release;
        more = api->scan_batch(pos, after, end.has_value(), end ? std::string_view(*end) : std::string_view(),
                               kScanBatch, &batch);
      }
      next = 0;
      if (batch.empty()) {
        more = false;
        throw nb::stop_iteration();
      }
      pos = batch.back().first;
      after = true;
    }
    const auto& [k, v] = batch[next++];
    return nb::make_tuple(to_bytes(k), to_bytes(v));
  }
};

std::optional<std::string> get(BTreeHandle& t, const nb::bytes& key) {
  std::string value;
  bool found;
  {
    std::string_view k = view(key);
    nb::gil_scoped_release release;
    found = t.api->get(k, &value);
  }
  if (!found) return std::nullopt;
  return value;
}

}  // namespace

void bind_btree(nb::module_& m) {
  nb::class_<ScanIterator>(m, "BTreeScan", "An iterator of (key, value) pairs of a BTree.scan().")
      .def("__iter__", [](ScanIterator& it) -> ScanIterator& { return it; }, nb::rv_policy::reference)
      .def("__next__", &ScanIterator::step, "The next (key, value) in key order.");

  nb::class_<BTreeHandle>(m, "BTree",
                          "A persistent map of bytes keys (1..256 bytes) to bytes values (0..512 bytes), a B+tree\n"
                          "stored in a Pool under ``name``. len() is made durable by Pool.flush() and close().")
      .def(
          "__init__",
          [](BTreeHandle* self, PoolHandle& pool, const std::string& name) {
            std::shared_ptr<BTreeApi> api;
            {
              nb::gil_scoped_release release;
              api = pool.api->btree(name, true);
            }
            new (self) BTreeHandle{std::move(api), name};
          },
          "pool"_a, "name"_a, "Opens tree ``name`` of ``pool``, creating it when missing.")
      .def_static(
          "open",
          [](PoolHandle& pool, const std::string& name) {
            std::shared_ptr<BTreeApi> api;
            {
              nb::gil_scoped_release release;
              api = pool.api->btree(name, false);
            }
            return BTreeHandle{std::move(api), name};
          },
          "pool"_a, "name"_a, "Opens the tree written earlier under ``name`` (UnknownSpaceError when missing).")
      .def(
          "put",
          [](BTreeHandle& t, const nb::bytes& key, const nb::bytes& value) {
            std::string_view k = view(key), v = view(value);
            nb::gil_scoped_release release;
            t.api->put(k, v);
          },
          "key"_a, "value"_a, "Sets ``key`` to ``value`` (inserting or replacing). InvalidArgumentError on sizes.")
      .def("get", [](BTreeHandle& t, const nb::bytes& key, nb::object dflt) -> nb::object {
             std::optional<std::string> v = get(t, key);
             return v ? nb::object(to_bytes(*v)) : dflt;
           },
           "key"_a, "default"_a = nb::none(), "The value of ``key``, or ``default`` when absent.")
      .def(
          "delete",
          [](BTreeHandle& t, const nb::bytes& key) {
            std::string_view k = view(key);
            nb::gil_scoped_release release;
            return t.api->remove(k);
          },
          "key"_a, "Removes ``key``; returns whether it was present.")
      .def(
          "__contains__", [](BTreeHandle& t, const nb::bytes& key) { return get(t, key).has_value(); }, "key"_a,
          "Whether ``key`` is present.")
      .def(
          "__getitem__",
          [](BTreeHandle& t, const nb::bytes& key) {
            std::optional<std::string> v = get(t, key);
            if (!v) throw nb::key_error(std::string(view(key)).c_str());
            return to_bytes(*v);
          },
          "key"_a, "The value of ``key``; KeyError when absent.")
      .def(
          "__setitem__",
          [](BTreeHandle& t, const nb::bytes& key, const nb::bytes& value) {
            std::string_view k = view(key), v = view(value);
            nb::gil_scoped_release release;
            t.api->put(k, v);
          },
          "key"_a, "value"_a, "Same as put().")
      .def(
          "__delitem__",
          [](BTreeHandle& t, const nb::bytes& key) {
            bool found;
            {
              std::string_view k = view(key);
              nb::gil_scoped_release release;
              found = t.api->remove(k);
            }
            if (!found) throw nb::key_error(std::string(view(key)).c_str());
          },
          "key"_a, "Removes ``key``; KeyError when absent.")
      .def("__len__", [](BTreeHandle& t) { return t.api->size(); }, "The number of keys.")
      .def(
          "scan",
          [](BTreeHandle& t, std::optional<nb::bytes> start, std::optional<nb::bytes> end) {
            ScanIterator it;
            it.api = t.api;
            if (start) it.pos = std::string(view(*start));
            if (end) it.end = std::string(view(*end));
            return it;
          },
          "start"_a = nb::none(), "end"_a = nb::none(),
          "An iterator of (key, value) for start <= key < end in key order (None: unbounded). It reads\n"
          "batches of 256 entries with the GIL released; each batch is a consistent snapshot of its\n"
          "leaves, writes between batches may or may not be seen.")
      .def(
          "bulk_load",
          [](BTreeHandle& t, nb::iterable pairs) {
            std::vector<std::pair<std::string, std::string>> all;
            for (nb::handle p : pairs) {
              nb::tuple kv = nb::cast<nb::tuple>(p);
              if (kv.size() != 2) throw nb::type_error("bulk_load: each item must be a (key, value) pair of bytes");
              all.emplace_back(std::string(view(nb::cast<nb::bytes>(kv[0]))),
                               std::string(view(nb::cast<nb::bytes>(kv[1]))));
            }
            nb::gil_scoped_release release;
            t.api->bulk_load(all);
          },
          "pairs"_a,
          "Loads (key, value) pairs of bytes with strictly increasing keys into an EMPTY tree, bottom-up\n"
          "(much faster than put). It must be the only operation on the tree while it runs. Raises\n"
          "InvalidArgumentError (not empty, unsorted, sizes) before writing anything.")
      .def_prop_ro("name", [](BTreeHandle& t) { return t.name; }, "The tree's name in its pool.")
      .def("__repr__", [](BTreeHandle& t) { return "calico.BTree('" + t.name + "')"; });
}

}  // namespace calico::py
