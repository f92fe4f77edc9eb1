// make_pool instantiated for TieredArrayTranslation (Calico tiers): one translation unit per group, as in src/variants/.
#include "pool_impl.h"
#include "translation/array.h"

namespace calico::py {

template std::shared_ptr<PoolApi> make_pool<BasicBufferPool<translation::TieredArrayTranslation>>(const PoolOptions&);

}  // namespace calico::py
