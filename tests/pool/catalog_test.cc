// The catalog file: format 2 round trip, and every kind of damage refused with
// kCorruptCatalog naming the file and line (pool/catalog.h).
#include "pool/catalog.h"

#include <gtest/gtest.h>

#include <string>

#include "calico/error.h"
#include "io/checksum.h"

namespace calico::pool {
namespace {

CatalogData sample() {
  CatalogData d;
  d.page_size = 8192;
  d.next_space_id = 7;
  d.spaces = {{1, 100, "orders"}, {4, 0, "items.v2"}, {6, 4294967296ull, "big-one"}};
  return d;
}

// Appends a correct checksum line to `body`: for damage that a checksum cannot see (a
// catalog written wrong), which the parser's own checks must catch.
std::string with_crc(const std::string& body) {
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", io::crc32c(body.data(), body.size()));
  return body + "crc32c " + crc + "\n";
}

void expect_corrupt(const std::string& bytes, const std::string& why_contains) {
  try {
    parse_catalog(bytes, "/d/catalog");
    ADD_FAILURE() << "accepted:\n" << bytes;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorruptCatalog) << e.what();
    EXPECT_NE(std::string(e.what()).find("/d/catalog"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(why_contains), std::string::npos) << e.what();
  }
}

TEST(Catalog, RoundTrip) {
  CatalogData d = parse_catalog(format_catalog(sample()), "c");
  EXPECT_EQ(d.page_size, 8192u);
  EXPECT_EQ(d.next_space_id, 7u);
  ASSERT_EQ(d.spaces.size(), 3u);
  EXPECT_EQ(d.spaces[0].name, "orders");
  EXPECT_EQ(d.spaces[0].blocks, 100u);
  EXPECT_EQ(d.spaces[2].blocks, 4294967296ull);
  EXPECT_EQ(d.spaces[1].id, 4u);
  CatalogData empty;
  empty.page_size = 4096;
  EXPECT_TRUE(parse_catalog(format_catalog(empty), "c").spaces.empty());
  CatalogData later = sample();
  later.generation = 123456789012ull;
  EXPECT_EQ(parse_catalog(format_catalog(later), "c").generation, 123456789012ull);
}

// Format 2 (before the rollback journal) reads as generation 0.
TEST(Catalog, Format2ReadsAsGenerationZero) {
  const CatalogData d = parse_catalog(with_crc("calico-catalog 2\npage_size 4096\nnext_space_id 2\nspace 1 3 a\n"), "c");
  EXPECT_EQ(d.generation, 0u);
  ASSERT_EQ(d.spaces.size(), 1u);
  EXPECT_EQ(d.spaces[0].blocks, 3u);
}

// Silent damage: each of these opened "successfully" with spaces missing or merged in
// format 1 (no checksum). The checksum now catches every change of a byte.
TEST(Catalog, DamageIsRefused) {
  const std::string good = format_catalog(sample());
  // Truncated at each line end (the old parser accepted a prefix), and mid-line.
  for (size_t cut = 0; cut < good.size(); ++cut) {
    SCOPED_TRACE(cut);
    EXPECT_THROW(parse_catalog(good.substr(0, cut), "c"), Error);
  }
  // Every single-byte change.
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x01;
    EXPECT_THROW(parse_catalog(bad, "c"), Error) << "byte " << i;
  }
  expect_corrupt(good + "space 5 1 extra\n", "after the checksum");
  std::string lowered = good;
  lowered.replace(lowered.find("space 1 100"), 11, "space 1 10 ");
  expect_corrupt(lowered, "");
}

TEST(Catalog, WrongContentWithAValidChecksumIsRefused) {
  const std::string head = "calico-catalog 2\npage_size 4096\nnext_space_id 5\n";
  expect_corrupt(with_crc(head + "space 1 3 a\nspace 1 4 b\n"), "space id 1 twice");
  expect_corrupt(with_crc(head + "space 1 3 a\nspace 2 4 a\n"), "name 'a' twice");
  expect_corrupt(with_crc(head + "space 5 3 a\n"), "not below next_space_id");
  expect_corrupt(with_crc(head + "space 0 3 a\n"), "expected 'space");
  expect_corrupt(with_crc(head + "space 1 -3 a\n"), "expected 'space");
  expect_corrupt(with_crc(head + "space 1 3 a b\n"), "expected 'space");
  expect_corrupt(with_crc(head + "space 1 3 a/b\n"), "expected 'space");
  expect_corrupt(with_crc(head + "space 1 4294967297 a\n"), "expected 'space");
  expect_corrupt(with_crc(head + "space  1 3 a\n"), "expected 'space");
  expect_corrupt(with_crc(head + "space 01 3 a\n"), "expected 'space");
  expect_corrupt(with_crc("calico-catalog 2\npage_size 4096\nnext_space_id -1\n"), "next_space_id");
  expect_corrupt(with_crc("calico-catalog 2\npage_size 4096\nnext_space_id 0\n"), "next_space_id");
  expect_corrupt(with_crc("calico-catalog 2\npage_size 1000\nnext_space_id 1\n"), "page_size");
  expect_corrupt(with_crc("calico-catalog 2\nnext_space_id 1\npage_size 4096\n"), "page_size");
  expect_corrupt(with_crc("calico-catalog 3\npage_size 4096\nnext_space_id 1\n"), "expected 'generation");
  expect_corrupt(with_crc("calico-catalog 3\npage_size 4096\nnext_space_id 1\ngeneration x\n"), "expected 'generation");
  expect_corrupt(with_crc("calico-catalog 4\npage_size 4096\nnext_space_id 1\n"), "format 4");
  expect_corrupt("calico-catalog 1\npage_size 4096\nnext_space_id 1\n", "format 1");
  expect_corrupt("hello\n", "not a Calico catalog");
  expect_corrupt("", "truncated");
  expect_corrupt(head + "crc32c zzzzzzzz\n", "bad checksum field");
  expect_corrupt(head + "crc32c 00000000\n", "checksum mismatch");
}

TEST(Catalog, SpaceNames) {
  EXPECT_TRUE(valid_space_name("a"));
  EXPECT_TRUE(valid_space_name(std::string(64, 'x')));
  EXPECT_FALSE(valid_space_name(std::string(65, 'x')));
  EXPECT_FALSE(valid_space_name(""));
  EXPECT_FALSE(valid_space_name("a b"));
  EXPECT_FALSE(valid_space_name("a\n"));
}

}  // namespace
}  // namespace calico::pool
