// FunctionRef<R(A...)>: a non-owning reference to a callable, the callback type of the
// engine interfaces (ycsb/kv_store.h, tpcc/peers/peer_store.h).
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace calico::bench {

// A non-owning reference to a callable (cheaper than std::function: no allocation). The
// callable must outlive the FunctionRef.
template <class Sig>
class FunctionRef;
template <class R, class... A>
class FunctionRef<R(A...)> {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, A...>)
  FunctionRef(F&& f)  // NOLINT: implicit on purpose, as a function parameter
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, A... a) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<A>(a)...);
        }) {}
  R operator()(A... a) const { return call_(obj_, std::forward<A>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, A...);
};

}  // namespace calico::bench
