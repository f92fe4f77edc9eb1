// blas_single_threaded(): sets OpenBLAS to one thread, once per process, before the first
// BLAS call of a caller that brings its own threads (the coarse ranker's sgemm, the RaBitQ
// rotation's sgemm). Every BLAS call then runs on its caller's thread.
#pragma once

#include <cblas.h>

#include <mutex>

namespace calico::vector {

inline void blas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

}  // namespace calico::vector
