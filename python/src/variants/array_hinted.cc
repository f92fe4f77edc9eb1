// make_pool instantiated for ArrayHintedTranslation: one translation unit per group, as in src/variants/.
#include "pool_impl.h"
#include "translation/lipah.h"

namespace calico::py {

template std::shared_ptr<PoolApi> make_pool<BasicBufferPool<translation::ArrayHintedTranslation>>(const PoolOptions&);

}  // namespace calico::py
