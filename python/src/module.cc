// The _calico extension module (the calico package re-exports it, calico/__init__.py).
#include <nanobind/nanobind.h>

#include "bindings.h"

NB_MODULE(_calico, m) {
  m.doc() = "Calico: vector indexes and a B+tree on an array-translated buffer pool.";
  calico::py::register_errors();
  calico::py::bind_pool(m);
  calico::py::bind_vectors(m);
  calico::py::bind_btree(m);
}
