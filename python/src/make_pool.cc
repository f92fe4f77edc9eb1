// open_pool: the translation variant by name (include/calico/variants.h). Every variant of
// the registry needs its make_pool instantiation, generated from cmake/variants.cmake (else this file does not
// link).
#include "api.h"
#include "calico/variants.h"

namespace calico::py {

std::shared_ptr<PoolApi> open_pool(std::string_view translation, const PoolOptions& options) {
  return variants::with_pool_type(translation, [&]<class Pool>() { return make_pool<Pool>(options); });
}

std::vector<std::string> translation_names() { return variants::translation_names(); }

}  // namespace calico::py
