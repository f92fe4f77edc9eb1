#include "vector/data/dataset.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "calico/error.h"
#include "vector/data/ground_truth.h"
#include "vector/data/synthetic.h"
#include "io/checksum.h"

namespace calico::bench::data {
namespace {

namespace fs = std::filesystem;

// Bump when the generator or the file layout changes: old caches are then regenerated.
constexpr const char* kManifestVersion = "calico-dataset v2";
constexpr const char* kManifest = "manifest";
constexpr const char* kBaseFile = "base.fvecs";
constexpr const char* kQueryFile = "query.fvecs";
constexpr const char* kGroundTruthFile = "gt.ivecs";

struct ManifestEntry {
  uint64_t bytes = 0;
  uint32_t crc = 0;
};
using Manifest = std::map<std::string, ManifestEntry>;

std::string manifest_header(const std::string& name) { return fmt::format("{} {}", kManifestVersion, name); }

uint32_t file_crc32c(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIoError, "cannot open " + path);
  std::vector<char> buf(size_t{16} << 20);
  uint32_t crc = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    crc = io::crc32c(buf.data(), static_cast<size_t>(in.gcount()), crc);
  }
  if (in.bad()) throw Error(ErrorCode::kIoError, "cannot read " + path);
  return crc;
}

// The manifest of dir, or an empty one when it is missing or belongs to another dataset or
// version.
Manifest read_manifest(const std::string& dir, const std::string& name) {
  Manifest m;
  std::ifstream in(dir + "/" + kManifest);
  std::string header;
  if (!in || !std::getline(in, header) || header != manifest_header(name)) return m;
  std::string file;
  ManifestEntry e;
  while (in >> file >> e.bytes >> std::hex >> e.crc >> std::dec) m[file] = e;
  return m;
}

// Writes `path` through a temporary name and a rename: readers see the old file or the new one.
// The temporary name holds the process id, so two processes making the same dataset at once
// do not write into each other's files (the last rename wins; both files are equal).
template <class WriteFn>
void write_atomically(const std::string& path, WriteFn&& write) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  std::error_code ec;
  try {
    write(tmp);
  } catch (...) {
    fs::remove(tmp, ec);  // best effort: never leave a partial file behind
    throw;
  }
  fs::rename(tmp, path, ec);
  if (ec) throw Error(ErrorCode::kIoError, fmt::format("cannot rename {} to {}: {}", tmp, path, ec.message()));
}

void write_manifest(const std::string& dir, const std::string& name, const Manifest& m) {
  write_atomically(dir + "/" + kManifest, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::trunc);
    out << manifest_header(name) << "\n";
    for (const auto& [file, e] : m) out << fmt::format("{} {} {:08x}\n", file, e.bytes, e.crc);
    out.close();
    if (!out) throw Error(ErrorCode::kIoError, "cannot write " + tmp);
  });
}

ManifestEntry entry_of(const std::string& path) {
  return ManifestEntry{static_cast<uint64_t>(fs::file_size(path)), file_crc32c(path)};
}

// True when dir/file is listed in the manifest, matches its size and CRC and has the shape
// rows x dim; otherwise false with the reason in *why.
bool cached_file_ok(const std::string& dir, const std::string& file, const Manifest& m, uint64_t rows, uint32_t dim,
                    std::string* why) {
  const std::string path = dir + "/" + file;
  auto it = m.find(file);
  std::error_code ec;
  if (!fs::exists(path, ec)) return *why = "missing", false;
  if (it == m.end()) return *why = "not in the manifest (an incomplete earlier run or an older generator)", false;
  const uint64_t bytes = fs::file_size(path, ec);
  if (ec || bytes != it->second.bytes) {
    return *why = fmt::format("size {} differs from the manifest's {}", bytes, it->second.bytes), false;
  }
  try {
    const VecsShape shape = vecs_shape(path, 4);
    if (shape.rows != rows || shape.dim != dim) {
      return *why = fmt::format("shape {}x{}, expected {}x{}", shape.rows, shape.dim, rows, dim), false;
    }
  } catch (const Error& e) {
    return *why = e.what(), false;
  }
  if (file_crc32c(path) != it->second.crc) return *why = "checksum mismatch", false;
  return true;
}

void validate(const DatasetSpec& spec) {
  if (spec.gt_k == 0) throw Error(ErrorCode::kInvalidArgument, "dataset: gt_k must be at least 1");
  if (spec.kind == "clustered" || spec.kind == "embedding") {
    if (spec.dim == 0 || spec.dim > kMaxDim || spec.clusters == 0 || spec.queries == 0 || spec.n < spec.gt_k ||
        spec.n > std::numeric_limits<uint32_t>::max()) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("dataset: {} needs 1 <= dim <= {}, clusters >= 1, queries >= 1 and "
                              "gt_k <= n < 2^32 (got n {}, dim {}, clusters {}, queries {}, gt_k {})",
                              spec.kind, kMaxDim, spec.n, spec.dim, spec.clusters, spec.queries, spec.gt_k));
    }
  } else if (spec.kind == "files") {
    if (spec.base_path.empty() || spec.query_path.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "dataset: kind 'files' needs a base path and a query path");
    }
  } else {
    throw Error(ErrorCode::kInvalidArgument,
                "dataset: unknown kind '" + spec.kind + "' (known: clustered, embedding, files)");
  }
}

std::string rows_label(uint64_t rows) { return rows == kAllRows ? "all" : std::to_string(rows); }

// Computes the ground truth, writes it to dir/gt.ivecs and records it in the manifest.
IdMatrix compute_and_cache_ground_truth(const DatasetSpec& spec, const FloatMatrix& base, const FloatMatrix& queries,
                                        const std::string& dir, Manifest* manifest) {
  if (spec.verbose) {
    fmt::print(stderr, "dataset: computing exact ground truth ({} queries x {} base rows, k {}, {})\n", queries.rows,
               base.rows, spec.gt_k, vector::metric_name(spec.metric));
  }
  const auto start = std::chrono::steady_clock::now();
  GroundTruthOptions o;
  o.k = spec.gt_k;
  o.threads = spec.threads;
  o.progress = spec.verbose;
  IdMatrix gt = exact_ground_truth(base, queries, spec.metric, o);
  if (spec.verbose) {
    fmt::print(stderr, "dataset: ground truth in {:.1f} s\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  const std::string path = dir + "/" + kGroundTruthFile;
  write_atomically(path, [&](const std::string& tmp) { write_ivecs(tmp, gt); });
  (*manifest)[kGroundTruthFile] = entry_of(path);
  return gt;
}

// rows of stream `stream` from the generator of spec.kind (synthetic.h).
FloatMatrix generate(const DatasetSpec& spec, uint64_t rows, uint64_t stream) {
  if (spec.kind == "embedding") {
    EmbeddingParams p;
    p.dim = spec.dim;
    p.topics = spec.clusters;
    p.seed = spec.seed;
    return generate_embedding(p, rows, stream, spec.threads);
  }
  ClusteredParams p;
  p.dim = spec.dim;
  p.clusters = spec.clusters;
  p.seed = spec.seed;
  return generate_clustered(p, rows, stream, spec.threads);
}

Dataset load_generated(const DatasetSpec& spec, Dataset ds) {
  Manifest manifest = read_manifest(ds.dir, ds.name);
  std::string why;
  bool vectors_ok = cached_file_ok(ds.dir, kBaseFile, manifest, spec.n, spec.dim, &why);
  if (vectors_ok) vectors_ok = cached_file_ok(ds.dir, kQueryFile, manifest, spec.queries, spec.dim, &why);
  if (vectors_ok) {
    try {
      ds.base = read_fvecs(ds.dir + "/" + kBaseFile);
      ds.queries = read_fvecs(ds.dir + "/" + kQueryFile);
    } catch (const Error& e) {
      why = e.what();
      vectors_ok = false;
    }
  }
  if (!vectors_ok) {
    if (spec.verbose) fmt::print(stderr, "dataset {}: generating vectors (cache: {})\n", ds.name, why);
    const auto start = std::chrono::steady_clock::now();
    ds.base = generate(spec, spec.n, kBaseStream);
    ds.queries = generate(spec, spec.queries, kQueryStream);
    if (spec.verbose) {
      fmt::print(stderr, "dataset {}: generated in {:.1f} s\n", ds.name,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    manifest.clear();  // the old ground truth no longer counts
    for (auto [file, m] : {std::pair{kBaseFile, &ds.base}, std::pair{kQueryFile, &ds.queries}}) {
      const std::string path = ds.dir + "/" + file;
      write_atomically(path, [&](const std::string& tmp) { write_fvecs(tmp, *m); });
      manifest[file] = entry_of(path);
    }
    write_manifest(ds.dir, ds.name, manifest);
    ds.generated_vectors = true;
  }
  bool gt_ok = cached_file_ok(ds.dir, kGroundTruthFile, manifest, spec.queries, spec.gt_k, &why);
  if (gt_ok) {
    try {
      ds.ground_truth = read_ivecs(ds.dir + "/" + kGroundTruthFile);
    } catch (const Error& e) {
      why = e.what();
      gt_ok = false;
    }
  }
  if (!gt_ok) {
    if (spec.verbose && !ds.generated_vectors) {
      fmt::print(stderr, "dataset {}: cached ground truth unusable ({})\n", ds.name, why);
    }
    ds.ground_truth = compute_and_cache_ground_truth(spec, ds.base, ds.queries, ds.dir, &manifest);
    write_manifest(ds.dir, ds.name, manifest);
    ds.computed_ground_truth = true;
  }
  return ds;
}

Dataset load_files(const DatasetSpec& spec, Dataset ds) {
  ds.base = read_vectors(spec.base_path, spec.max_base_rows);
  ds.queries = read_vectors(spec.query_path, spec.max_queries);
  if (ds.base.dim != ds.queries.dim) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("dataset: base dim {} ({}) differs from query dim {} ({})",
                                                         ds.base.dim, spec.base_path, ds.queries.dim, spec.query_path));
  }
  if (ds.base.rows < spec.gt_k || ds.base.rows > std::numeric_limits<uint32_t>::max()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("dataset: {} base rows (need gt_k {} .. 2^32)", ds.base.rows, spec.gt_k));
  }
  std::string why = "no ground-truth file given";
  if (!spec.ground_truth_path.empty()) {
    // A given ground truth is only valid for the whole base file.
    const uint64_t file_rows = vecs_shape(spec.base_path, spec.base_path.ends_with(".bvecs") ? 1 : 4).rows;
    if (file_rows != ds.base.rows) {
      why = fmt::format("the base is cut to {} of {} rows", ds.base.rows, file_rows);
    } else {
      IdMatrix gt = read_ivecs(spec.ground_truth_path, ds.queries.rows);
      bool ids_ok = true;
      for (uint32_t id : gt.ids) ids_ok = ids_ok && id < ds.base.rows;
      if (gt.rows != ds.queries.rows || gt.dim < spec.gt_k || !ids_ok) {
        why = fmt::format("{} has {}x{} ids{}, need {}x{} ids below {}", spec.ground_truth_path, gt.rows, gt.dim,
                          ids_ok ? "" : " (some out of range)", ds.queries.rows, spec.gt_k, ds.base.rows);
      } else {
        ds.ground_truth = std::move(gt);
        return ds;
      }
    }
  }
  std::error_code ec;
  fs::create_directories(ds.dir, ec);
  if (ec) throw Error(ErrorCode::kIoError, fmt::format("cannot create {}: {}", ds.dir, ec.message()));
  Manifest manifest = read_manifest(ds.dir, ds.name);
  std::string cache_why;
  if (cached_file_ok(ds.dir, kGroundTruthFile, manifest, ds.queries.rows, spec.gt_k, &cache_why)) {
    try {
      ds.ground_truth = read_ivecs(ds.dir + "/" + kGroundTruthFile);
      return ds;
    } catch (const Error& e) {
      cache_why = e.what();
    }
  }
  if (spec.verbose) fmt::print(stderr, "dataset {}: {}; cached ground truth: {}\n", ds.name, why, cache_why);
  ds.ground_truth = compute_and_cache_ground_truth(spec, ds.base, ds.queries, ds.dir, &manifest);
  write_manifest(ds.dir, ds.name, manifest);
  ds.computed_ground_truth = true;
  return ds;
}

}  // namespace

namespace {

// The name with the queries part ("-q<rows>") when with_queries, else without it.
std::string name_of(const DatasetSpec& spec, bool with_queries) {
  validate(spec);
  const std::string_view metric = vector::metric_name(spec.metric);
  if (spec.kind != "files") {
    const std::string q = with_queries ? fmt::format("-q{}", spec.queries) : "";
    return fmt::format("{}-n{}-d{}-c{}{}-s{}-{}", spec.kind, spec.n, spec.dim, spec.clusters, q, spec.seed, metric);
  }
  // The stem names the data; the CRC of the absolute path tells apart equal stems elsewhere.
  const std::string abs = fs::absolute(spec.base_path).lexically_normal().string();
  const std::string q = with_queries ? fmt::format("-q{}", rows_label(spec.max_queries)) : "";
  return fmt::format("files-{}-{:08x}-n{}{}-{}", fs::path(spec.base_path).stem().string(),
                     io::crc32c(abs.data(), abs.size()), rows_label(spec.max_base_rows), q, metric);
}

}  // namespace

std::string dataset_name(const DatasetSpec& spec) { return name_of(spec, true); }

std::string base_name(const DatasetSpec& spec) { return name_of(spec, false); }

Dataset load_or_generate(const DatasetSpec& spec, const std::string& cache_dir) {
  Dataset ds;
  ds.name = dataset_name(spec);  // validates
  ds.metric = spec.metric;
  ds.dir = (fs::path(cache_dir) / ds.name).string();
  if (spec.kind == "files") return load_files(spec, std::move(ds));
  std::error_code ec;
  fs::create_directories(ds.dir, ec);
  if (ec) throw Error(ErrorCode::kIoError, fmt::format("cannot create {}: {}", ds.dir, ec.message()));
  return load_generated(spec, std::move(ds));
}

}  // namespace calico::bench::data
