// make_pool instantiated for VmcacheTranslation Vmcache2mTranslation: one translation unit per group, as in src/variants/.
#include "pool_impl.h"
#include "translation/vmcache.h"

namespace calico::py {

template std::shared_ptr<PoolApi> make_pool<BasicBufferPool<translation::VmcacheTranslation>>(const PoolOptions&);
template std::shared_ptr<PoolApi> make_pool<BasicBufferPool<translation::Vmcache2mTranslation>>(const PoolOptions&);

}  // namespace calico::py
