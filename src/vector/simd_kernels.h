// The distance kernels of one instruction-set level, for the tests that check every level
// this CPU runs (distance_kernel() and distance_many_kernel() return the best one, so on an
// AVX-512 machine nothing else would run the AVX2 or scalar kernels).
//
//   supported_simd_levels()          the levels this CPU runs, scalar first
//   distance_kernel_at(m, level)     distance_kernel(m) of that level
//   distance_many_kernel_at(m, level)
//   distance_gather_kernel_at(m, level)
//
// Pre: level is in supported_simd_levels() (another level's instructions would fault).
// Defined in distance.cc, beside the kernels.
#pragma once

#include <string_view>
#include <vector>

#include "vector/distance.h"

namespace calico::vector {

enum class SimdLevel { kScalar, kAvx2, kAvx512 };

std::vector<SimdLevel> supported_simd_levels();
std::string_view simd_level_name(SimdLevel level);
DistanceFn distance_kernel_at(Metric m, SimdLevel level);
DistanceManyFn distance_many_kernel_at(Metric m, SimdLevel level);
DistanceGatherFn distance_gather_kernel_at(Metric m, SimdLevel level);

}  // namespace calico::vector
