// Quantizer: the common interface of the vector codes (RaBitQ: vector/rabitq.h; PQ:
// vector/pq.h). Larger-than-memory search keeps every vector's code in memory, ranks
// candidates by estimated distance from the codes, and re-ranks the best R by exact
// distance from the vectors on pool pages.
//
// Principal entry points:
//   RabitqQuantizer::train(sample, n, dim, params) / PqQuantizer::train(...)   -> a model
//   q.encode(rows, n, codes)             n codes of q.code_bytes() bytes each, back to back
//   q.new_query() / q.prepare(v, state)  the per-query state (tables, a quantised query)
//   q.estimate(state, codes, n, out)     out[i] = estimated distance of v to code i
//   q.serialize() / load_quantizer(bytes, n)   the model as a blob (vector/model_blob.h)
//
// Distances are the kernels' (vector/distance.h): smaller is closer; kL2 squared Euclidean,
// kInnerProduct 1 - <a, b>, kCosine 1 - <a, b> of the normalised vectors (the quantisers
// normalise rows and queries themselves under kCosine).
//
// Threads: a model is immutable after train() or load: encode, prepare and estimate may run
// on any number of threads at once, each with its own QueryState.
// Errors: calico::Error. Bad parameters and inputs (dim 0, non-finite rows, a state from
// another model) are kInvalidArgument naming the parameter; a corrupt blob is kCorruptPage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vector/distance.h"

namespace calico::vector {

class Quantizer;

// What prepare() computes for one query; each quantiser derives its own. A state belongs
// to the quantiser that made it (new_query()) and is reused for query after query.
class QueryState {
 public:
  virtual ~QueryState() = default;
  const Quantizer* owner() const { return owner_; }

 protected:
  explicit QueryState(const Quantizer* owner) : owner_(owner) {}

 private:
  const Quantizer* owner_;
};

class Quantizer {
 public:
  virtual ~Quantizer() = default;

  // "rabitq1", "rabitq4", "pq32x8", ...: the kind and its code size.
  virtual std::string name() const = 0;
  virtual uint32_t dim() const = 0;
  virtual Metric metric() const = 0;
  // Bytes of one encoded vector: fixed for a model.
  virtual size_t code_bytes() const = 0;

  // codes[i * code_bytes() .. (i + 1) * code_bytes()) = the code of rows + i * dim(), i < n.
  // Errors: kInvalidArgument when a row is not finite (codes of earlier rows are written).
  virtual void encode(const float* rows, size_t n, uint8_t* codes) const = 0;

  virtual std::unique_ptr<QueryState> new_query() const = 0;
  // Fills state for query q (dim() floats). Errors: kInvalidArgument when q is not finite
  // or state came from another model.
  virtual void prepare(const float* q, QueryState& state) const = 0;
  // out[i] = the estimated distance between the prepared query and code i, i < n; codes as
  // encode() wrote them. Pre: prepare(.., state) ran. Errors: a state of another model.
  virtual void estimate(const QueryState& state, const uint8_t* codes, size_t n, float* out) const = 0;

  // The model as a blob (model_blob.h); load_quantizer() reads it back.
  virtual std::vector<uint8_t> serialize() const = 0;

 protected:
  // Throws kInvalidArgument unless state was made by this model's new_query().
  void check_owner(const QueryState& state) const;
};

// A model from its blob: the kind in the header picks RaBitQ or PQ. Errors: kCorruptPage
// for anything malformed (model_blob.h), never an abort.
std::unique_ptr<Quantizer> load_quantizer(const uint8_t* bytes, size_t n);

}  // namespace calico::vector
