// The pool and every index instantiated for vmcache's translation (src/translation/vmcache.h):
// the OS page table as translation, with 4 KB pages and with the 2 MB (MADV_HUGEPAGE) hint.
#include "index/btree.h"
#include "index/heap_file_impl.h"
#include "pool/buffer_pool_impl.h"
#include "translation/vmcache.h"

namespace calico {

template class BasicBufferPool<translation::VmcacheTranslation>;
template class BasicBufferPool<translation::Vmcache2mTranslation>;
template class index::BasicBTree<BasicBufferPool<translation::VmcacheTranslation>>;
template class index::BasicBTree<BasicBufferPool<translation::Vmcache2mTranslation>>;
template class BasicHeapFile<BasicBufferPool<translation::VmcacheTranslation>>;
template class BasicHeapFile<BasicBufferPool<translation::Vmcache2mTranslation>>;

}  // namespace calico
