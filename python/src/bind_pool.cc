// calico.Pool: opens or creates a data directory (the pool, api.h PoolApi); context manager.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "api.h"
#include "bindings.h"
#include "calico/error.h"
#include "memory/tiers/tier_config.h"
#include "pool_handle.h"

namespace calico::py {

namespace nb = nanobind;
using namespace nb::literals;

void bind_pool(nb::module_& m) {
  m.def("translations", &translation_names,
        "The translation variants a Pool can use (every name calico_bench knows), e.g. 'array'.");

  nb::class_<PoolHandle>(m, "Pool",
                         "A buffer pool over a data directory: the pages of every index stored in it, cached in\n"
                         "``pool_bytes`` of memory. Opens the directory (creating it when missing); the indexes\n"
                         "written earlier are reopened by name. Use as a context manager, or call close().")
      .def(
          "__init__",
          [](PoolHandle* self, const std::string& path, uint64_t pool_bytes, uint64_t page_size,
             const std::string& translation, bool direct_io, uint64_t far_bytes, const std::string& far_tier,
             bool atomic_flush) {
            PoolOptions o;
            o.data_dir = path;
            o.pool_bytes = pool_bytes;
            o.page_size = page_size;
            o.direct_io = direct_io;
            o.atomic_flush = atomic_flush;
            std::shared_ptr<PoolApi> api;
            {
              nb::gil_scoped_release release;
              // A named far tier of far_bytes, in whole pages.
              if (far_bytes > 0) {
                o.tiers.far = memory::tiers::TierConfig::named(far_tier, far_bytes / page_size, page_size);
                if (o.tiers.far.frames == 0) {
                  throw Error(ErrorCode::kInvalidArgument, "far_bytes " + std::to_string(far_bytes) +
                                                               " is less than one page (" + std::to_string(page_size) +
                                                               " bytes)");
                }
              }
              api = open_pool(translation, o);
            }
            new (self) PoolHandle{std::move(api), path};
          },
          "path"_a, "pool_bytes"_a = uint64_t{256} << 20, "page_size"_a = 4096, "translation"_a = "array",
          "direct_io"_a = true, "far_bytes"_a = 0, "far_tier"_a = "remote-numa", "atomic_flush"_a = true,
          "Opens or creates the pool of directory ``path`` with ``pool_bytes`` of frames, pages of\n"
          "``page_size`` bytes (4096, 8192 or 16384; a directory keeps the size it was created with)\n"
          "and the page-id translation ``translation`` (see calico.translations()).\n"
          "``far_bytes`` > 0 adds a far frame tier of that size behind the pool (tiered translations\n"
          "only: 'array_tiered', 'vmcache_n'): ``far_tier`` is 'remote-numa' or 'cxl' (emulated in\n"
          "local memory, docs/results/tiers.md), 'local', or 'numa:<node>' (bound to that node).\n"
          "``atomic_flush`` (default): a crash reopens exactly the state of the last flush, every\n"
          "index whole (pages written back since are rolled back through a journal); False: each\n"
          "page at that flush or later, for measuring the raw write path.\n"
          "Raises InvalidArgumentError (bad size, unknown translation, a far tier the translation\n"
          "cannot take or that is unknown), PageSizeMismatchError, CorruptCatalogError, IoError\n"
          "(e.g. a read-only directory).")
      .def(
          "flush",
          [](PoolHandle& p) {
            nb::gil_scoped_release release;
            p.api->flush();
          },
          "Writes every dirty page and syncs: the durability point (close() flushes too).")
      .def(
          "close",
          [](PoolHandle& p) {
            nb::gil_scoped_release release;
            p.api->close();
          },
          "Flushes and closes the pool and every index opened on it; further calls raise\n"
          "ClosedError. Closing twice is a no-op.")
      .def_prop_ro(
          "closed", [](PoolHandle& p) { return p.api->closed(); }, "Whether close() was called.")
      .def_prop_ro(
          "path", [](PoolHandle& p) { return p.path; }, "The data directory.")
      .def_prop_ro(
          "translation", [](PoolHandle& p) { return p.api->translation(); }, "The translation variant's name.")
      .def_prop_ro(
          "page_size", [](PoolHandle& p) { return p.api->page_size(); }, "Bytes per page.")
      .def(
          "stats",
          [](PoolHandle& p) {
            nb::gil_scoped_release release;
            return p.api->stats();
          },
          "The pool's counters (accesses, hits, faults, evictions, write_backs, punches,\n"
          "prefetch_issued, optimistic_fallbacks, ...), frames, resident_pages and the translation's\n"
          "memory (translation_private_bytes, translation_mincore_bytes, translation_reserved_bytes),\n"
          "and with a far tier its traffic (far_frames, far_hits, far_evictions, promotions, demotions,\n"
          "migration_bytes, migration_ns), the rollback journal's (journal_pages, journal_syncs,\n"
          "flush_generation), as a dict of ints (direct_io: 0 or 1).")
      .def(
          "spaces",
          [](PoolHandle& p) {
            nb::gil_scoped_release release;
            return p.api->space_names();
          },
          "The names of the spaces (indexes) stored in the pool.")
      .def(
          "prewarm",
          [](PoolHandle& p, const std::string& name) {
            nb::gil_scoped_release release;
            return p.api->prewarm(name);
          },
          "name"_a,
          "Reads the pages of the index ``name`` into free frames, in page order, and returns how\n"
          "many of its pages are resident afterwards (PostgreSQL's pg_prewarm). Nothing is evicted:\n"
          "it stops when the pool is full. Raises UnknownSpaceError when there is no such index.")
      .def(
          "__enter__", [](PoolHandle& p) -> PoolHandle& { return p; }, nb::rv_policy::reference,
          "Returns the pool itself.")
      .def(
          "__exit__",
          [](PoolHandle& p, nb::handle, nb::handle, nb::handle) {
            nb::gil_scoped_release release;
            p.api->close();
          },
          "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none(), "Closes the pool.")
      .def("__repr__", [](PoolHandle& p) {
        return "calico.Pool(" + nb::cast<std::string>(nb::repr(nb::str(p.path.c_str()))) + ", translation='" +
               p.api->translation() + "'" + (p.api->closed() ? ", closed" : "") + ")";
      });
}

}  // namespace calico::py
