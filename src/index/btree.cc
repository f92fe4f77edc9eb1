// The B+tree instantiated over the default pool (BufferPool with the translation array),
// compiled once here; other pools instantiate BasicBTree in their own translation units.
#include "index/btree.h"

namespace calico::index {

template class BasicBTree<BufferPool>;

}  // namespace calico::index
