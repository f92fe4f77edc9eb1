// The pool and every index instantiated for the array with Calico tiers (issue 17,
// translation/array.h: TieredArrayTranslation; pool/tiering.h).
#include "index/btree.h"
#include "index/heap_file_impl.h"
#include "pool/buffer_pool_impl.h"
#include "translation/array.h"

namespace calico {

template class BasicBufferPool<translation::TieredArrayTranslation>;
template class index::BasicBTree<BasicBufferPool<translation::TieredArrayTranslation>>;
template class BasicHeapFile<BasicBufferPool<translation::TieredArrayTranslation>>;

}  // namespace calico
