// The pool and every index instantiated for the three hash-table translations
// (src/translation/hash_chained.h, hash_open.h, hash_lockfree.h).
#include "index/btree.h"
#include "index/heap_file_impl.h"
#include "pool/buffer_pool_impl.h"
#include "translation/hash_chained.h"
#include "translation/hash_lockfree.h"
#include "translation/hash_open.h"

namespace calico {

template class BasicBufferPool<translation::HashChainedTranslation>;
template class BasicBufferPool<translation::HashOpenTranslation>;
template class BasicBufferPool<translation::HashLockFreeTranslation>;
template class index::BasicBTree<BasicBufferPool<translation::HashChainedTranslation>>;
template class index::BasicBTree<BasicBufferPool<translation::HashOpenTranslation>>;
template class index::BasicBTree<BasicBufferPool<translation::HashLockFreeTranslation>>;
template class BasicHeapFile<BasicBufferPool<translation::HashChainedTranslation>>;
template class BasicHeapFile<BasicBufferPool<translation::HashOpenTranslation>>;
template class BasicHeapFile<BasicBufferPool<translation::HashLockFreeTranslation>>;

}  // namespace calico
