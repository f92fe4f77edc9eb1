// TPC-C random input (clause 2.1.6 and 4.3.2): uniform ranges, NURand with the run-time
// constants, last names from the ten syllables, and the random strings of the loader.
//
// Entry points: Random (per thread; seeded), nurand, last_name, the constants k*C.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "calico/checks.h"

namespace calico::bench::tpcc {

// NURand's C constants (clause 2.1.6). C for C_LAST differs between load and run with
// delta = |run - load| = 66, inside [65, 119] and neither 96 nor 112 (clause 2.1.6.1).
inline constexpr uint32_t kCLastLoadC = 157;  // in [0, 255]
inline constexpr uint32_t kCLastRunC = 223;   // in [0, 255]
inline constexpr uint32_t kCIdC = 259;        // in [0, 1023]
inline constexpr uint32_t kOlIIdC = 7911;     // in [0, 8191]
// The A constants: 255 for C_LAST, 1023 for C_ID, 8191 for OL_I_ID.
inline constexpr uint32_t kCLastA = 255, kCIdA = 1023, kOlIIdA = 8191;

// The syllables of C_LAST (clause 4.3.2.3), indexed by digit.
inline constexpr std::string_view kSyllables[10] = {"BAR", "OUGHT", "ABLE", "PRI", "PRES",
                                                    "ESE", "ANTI",  "CALLY", "ATION", "EING"};

// C_LAST for number n in 0..999: the syllables of its three digits, concatenated.
inline std::string last_name(uint32_t n) {
  CALICO_CHECK(n <= 999);
  std::string s;
  s += kSyllables[n / 100];
  s += kSyllables[n / 10 % 10];
  s += kSyllables[n % 10];
  return s;
}

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}

  // Uniform in [lo, hi] (inclusive, as the spec's random(x, y)).
  uint32_t uniform(uint32_t lo, uint32_t hi) {
    CALICO_DCHECK(lo <= hi);
    return lo + static_cast<uint32_t>(rng_() % (uint64_t{hi} - lo + 1));
  }
  // Uniform in [lo, hi] but not `except` (lo < hi).
  uint32_t uniform_except(uint32_t lo, uint32_t hi, uint32_t except) {
    CALICO_DCHECK(lo < hi);
    uint32_t r = uniform(lo, hi - 1);
    return r >= except ? r + 1 : r;
  }
  // NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
  uint32_t nurand(uint32_t a, uint32_t x, uint32_t y, uint32_t c) {
    return ((uniform(0, a) | uniform(x, y)) + c) % (y - x + 1) + x;
  }
  // a-string / n-string of random length in [lo, hi] (clause 4.3.2.2).
  std::string astring(uint32_t lo, uint32_t hi) {
    static constexpr char kAlnum[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    std::string s(uniform(lo, hi), ' ');
    for (char& ch : s) ch = kAlnum[uniform(0, 61)];
    return s;
  }
  std::string nstring(uint32_t lo, uint32_t hi) {
    std::string s(uniform(lo, hi), ' ');
    for (char& ch : s) ch = static_cast<char>('0' + uniform(0, 9));
    return s;
  }
  // I_DATA / S_DATA: a-string of 26..50, 10% with "ORIGINAL" at a random position.
  std::string data_with_original() {
    std::string s = astring(26, 50);
    if (uniform(1, 100) <= 10) s.replace(uniform(0, static_cast<uint32_t>(s.size()) - 8), 8, "ORIGINAL");
    return s;
  }
  // Zip code: 4 random digits then "11111" (clause 4.3.2.7).
  std::string zip() { return nstring(4, 4) + "11111"; }
  uint64_t next() { return rng_(); }

 private:
  std::mt19937_64 rng_;
};

}  // namespace calico::bench::tpcc
