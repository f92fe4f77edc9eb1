// The pool and every index instantiated for vmcache^n in user space (issue 17;
// src/translation/vmcache_n.h): vmcache with one data region per memory tier and batched
// migration between them.
#include "index/btree.h"
#include "index/heap_file_impl.h"
#include "pool/buffer_pool_impl.h"
#include "translation/vmcache_n.h"

namespace calico {

template class BasicBufferPool<translation::VmcacheNTranslation>;
template class index::BasicBTree<BasicBufferPool<translation::VmcacheNTranslation>>;
template class BasicHeapFile<BasicBufferPool<translation::VmcacheNTranslation>>;

}  // namespace calico
