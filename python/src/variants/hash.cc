// make_pool instantiated for the three hash-table translations: one translation unit per group, as in src/variants/.
#include "pool_impl.h"
#include "translation/hash_chained.h"
#include "translation/hash_lockfree.h"
#include "translation/hash_open.h"

namespace calico::py {

template std::shared_ptr<PoolApi> make_pool<BasicBufferPool<translation::HashChainedTranslation>>(const PoolOptions&);
template std::shared_ptr<PoolApi> make_pool<BasicBufferPool<translation::HashOpenTranslation>>(const PoolOptions&);
template std::shared_ptr<PoolApi> make_pool<BasicBufferPool<translation::HashLockFreeTranslation>>(const PoolOptions&);

}  // namespace calico::py
