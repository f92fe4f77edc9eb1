#include "vector/quantizer.h"

#include "calico/error.h"
#include "vector/model_blob.h"
#include "vector/pq.h"
#include "vector/rabitq.h"

namespace calico::vector {

void Quantizer::check_owner(const QueryState& state) const {
  if (state.owner() != this) {
    throw Error(ErrorCode::kInvalidArgument, name() + ": query state made by another model (new_query())");
  }
}

std::unique_ptr<Quantizer> load_quantizer(const uint8_t* bytes, size_t n) {
  switch (blob_kind(bytes, n)) {
    case BlobKind::kRabitq: return std::make_unique<RabitqQuantizer>(RabitqQuantizer::deserialize(bytes, n));
    case BlobKind::kPq: return std::make_unique<PqQuantizer>(PqQuantizer::deserialize(bytes, n));
  }
  BlobReader::corrupt("unknown kind");
}

}  // namespace calico::vector
