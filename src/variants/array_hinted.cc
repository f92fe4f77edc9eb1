// The pool and every index instantiated for frame hints over the array (array_hinted,
// src/translation/lipah.h).
#include "index/btree.h"
#include "index/heap_file_impl.h"
#include "pool/buffer_pool_impl.h"
#include "translation/lipah.h"

namespace calico {

template class BasicBufferPool<translation::ArrayHintedTranslation>;
template class index::BasicBTree<BasicBufferPool<translation::ArrayHintedTranslation>>;
template class BasicHeapFile<BasicBufferPool<translation::ArrayHintedTranslation>>;

}  // namespace calico
