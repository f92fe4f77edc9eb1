// make_pool instantiated for VmcacheNTranslation (vmcache^n in user space): one translation unit per group, as in src/variants/.
#include "pool_impl.h"
#include "translation/vmcache_n.h"

namespace calico::py {

template std::shared_ptr<PoolApi> make_pool<BasicBufferPool<translation::VmcacheNTranslation>>(const PoolOptions&);

}  // namespace calico::py
