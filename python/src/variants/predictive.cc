// make_pool instantiated for PredictiveTranslation: one translation unit per group, as in src/variants/.
#include "pool_impl.h"
#include "translation/predictive.h"

namespace calico::py {

template std::shared_ptr<PoolApi> make_pool<BasicBufferPool<translation::PredictiveTranslation>>(const PoolOptions&);

}  // namespace calico::py
