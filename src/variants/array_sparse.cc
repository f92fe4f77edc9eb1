// The pool and every index instantiated for the array with sparse groups (issue 15,
// translation/sparse_array.h: SparseArrayTranslation; pool/sparse_moves.h).
#include "index/btree.h"
#include "index/heap_file_impl.h"
#include "pool/buffer_pool_impl.h"
#include "translation/sparse_array.h"

namespace calico {

template class BasicBufferPool<translation::SparseArrayTranslation>;
template class index::BasicBTree<BasicBufferPool<translation::SparseArrayTranslation>>;
template class BasicHeapFile<BasicBufferPool<translation::SparseArrayTranslation>>;

}  // namespace calico
