// make_pool instantiated for ArrayTranslation DirectTranslation: one translation unit per group, as in src/variants/.
#include "pool_impl.h"
#include "translation/array.h"

namespace calico::py {

template std::shared_ptr<PoolApi> make_pool<BasicBufferPool<translation::ArrayTranslation>>(const PoolOptions&);
template std::shared_ptr<PoolApi> make_pool<BasicBufferPool<translation::DirectTranslation>>(const PoolOptions&);

}  // namespace calico::py
