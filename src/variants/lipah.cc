// The pool and every index instantiated for LIPAH's frame hints (src/translation/lipah.h).
#include "index/btree.h"
#include "index/heap_file_impl.h"
#include "pool/buffer_pool_impl.h"
#include "translation/lipah.h"

namespace calico {

template class BasicBufferPool<translation::LipahTranslation>;
template class index::BasicBTree<BasicBufferPool<translation::LipahTranslation>>;
template class BasicHeapFile<BasicBufferPool<translation::LipahTranslation>>;

}  // namespace calico
