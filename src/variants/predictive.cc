// The pool and every index instantiated for predictive translation (PrediCache: a chained
// hash table with preferred frames, translation/predictive.h; page moves in
// pool/promotion.h). One translation unit per variant keeps builds parallel.
#include "index/btree.h"
#include "index/heap_file_impl.h"
#include "pool/buffer_pool_impl.h"
#include "translation/predictive.h"

namespace calico {

template class BasicBufferPool<translation::PredictiveTranslation>;
template class index::BasicBTree<BasicBufferPool<translation::PredictiveTranslation>>;
template class BasicHeapFile<BasicBufferPool<translation::PredictiveTranslation>>;

}  // namespace calico
