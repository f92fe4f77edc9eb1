// The pool and every index instantiated for Calico's translation arrays (the default) and
// for the direct-frame ceiling. One translation unit per variant keeps builds parallel.
#include "index/btree.h"
#include "index/heap_file_impl.h"
#include "pool/buffer_pool_impl.h"
#include "translation/array.h"

namespace calico {

template class BasicBufferPool<translation::ArrayTranslation>;
template class BasicBufferPool<translation::DirectTranslation>;
template class index::BasicBTree<BasicBufferPool<translation::ArrayTranslation>>;
template class index::BasicBTree<BasicBufferPool<translation::DirectTranslation>>;
template class BasicHeapFile<BasicBufferPool<translation::ArrayTranslation>>;
template class BasicHeapFile<BasicBufferPool<translation::DirectTranslation>>;

}  // namespace calico
