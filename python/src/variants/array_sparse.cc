// make_pool instantiated for SparseArrayTranslation (sparse groups): one translation unit per group, as in src/variants/.
#include "pool_impl.h"
#include "translation/sparse_array.h"

namespace calico::py {

template std::shared_ptr<PoolApi> make_pool<BasicBufferPool<translation::SparseArrayTranslation>>(const PoolOptions&);

}  // namespace calico::py
