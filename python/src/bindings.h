// The parts of the _calico extension module (module.cc calls them in this order).
#pragma once

#include <nanobind/nanobind.h>

namespace calico::py {

void register_errors();                    // errors.cc: calico::Error -> calico.<Code>Error
void bind_pool(nanobind::module_& m);      // bind_pool.cc: Pool
void bind_vectors(nanobind::module_& m);   // bind_vectors.cc: HnswIndex, IvfIndex
void bind_btree(nanobind::module_& m);     // bind_btree.cc: BTree and its scan iterator

}  // namespace calico::py
