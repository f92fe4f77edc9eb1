// Distance kernels for vector search (HNSW, IVF, exact ground truth), chosen once at run
// time for the CPU: AVX-512F, else AVX2+FMA, else scalar. Every kernel of one metric
// returns the same value up to float rounding; smaller is always closer.
//
//   Metric::kL2            squared Euclidean distance  sum (a_i - b_i)^2
//   Metric::kInnerProduct  1 - <a, b>     (so that smaller = closer, as hnswlib's "ip")
//   Metric::kCosine        1 - <a, b> on vectors normalised to unit length on the way in
//                          (normalize() before storing and before searching)
//
// Thread-safe: the table is resolved on first use (a function-local static).
// Every kernel is an optimistic reader (calico/optimistic_reader.h): HNSW and IVF searches compute
// distances in place on frames read optimistically, dropping the value unless the page
// validates afterwards.
#pragma once

#include <cstddef>
#include <string_view>

namespace calico::vector {

enum class Metric { kL2, kInnerProduct, kCosine };

// Parses "l2" | "ip" | "cosine". Errors: kInvalidArgument naming the accepted values.
Metric parse_metric(std::string_view name);
std::string_view metric_name(Metric m);

using DistanceFn = float (*)(const float* a, const float* b, size_t dim);

// The kernel for m on this CPU.
DistanceFn distance_kernel(Metric m);

// out[i] = distance_kernel(m)(a, b + i * stride, dim) for i < n, bit for bit (the same
// summation order), computed four vectors per pass over a: one call scores a block of
// vectors (a posting page, the centroids). stride is in floats; out holds n floats.
using DistanceManyFn = void (*)(const float* a, const float* b, size_t stride, size_t n, size_t dim, float* out);
DistanceManyFn distance_many_kernel(Metric m);

// out[i] = distance_kernel(m)(a, b[i], dim) for i < n, bit for bit, four vectors per pass
// over a as distance_many_kernel: one call scores vectors that lie anywhere (an HNSW node's
// neighbours, each on its own page), and keeps four of them loading at once.
using DistanceGatherFn = void (*)(const float* a, const float* const* b, size_t n, size_t dim, float* out);
DistanceGatherFn distance_gather_kernel(Metric m);

// The instruction set the kernels use: "avx512", "avx2" or "scalar". CALICO_SIMD=scalar|avx2
// in the environment caps it (for tests and ablations); it is read once.
std::string_view simd_level();

// The scalar kernels (reference for tests).
float l2_scalar(const float* a, const float* b, size_t dim);
float ip_scalar(const float* a, const float* b, size_t dim);

// Scales v[0..dim) to unit L2 norm. Returns false (and leaves v) when the norm is 0 or not
// finite.
bool normalize(float* v, size_t dim);

// True when every component is finite (no NaN, no infinity).
bool all_finite(const float* v, size_t dim);

}  // namespace calico::vector
