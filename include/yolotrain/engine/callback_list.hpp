#pragma once

// Any number of listeners for one event, called in the order added (Ultralytics' add_callback:
// each event holds a list, and a logger, a UI and a watchdog can all listen).

#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

namespace yolotrain::engine {

template <class... Args>
class CallbackList {
 public:
  using Listener = std::function<void(Args...)>;

  CallbackList() = default;
  /// One listener (so `callbacks.on_epoch_end = f` and `{f}` keep working); an empty one adds nothing.
  template <class F, class = std::enable_if_t<std::is_invocable_v<F&, Args...> &&
                                              !std::is_same_v<std::decay_t<F>, CallbackList>>>
  /* implicit */ CallbackList(F&& listener) {
    add(std::forward<F>(listener));
  }

  /// Adds a listener after the ones already there; an empty std::function adds nothing.
  CallbackList& add(Listener listener) {
    if (listener) listeners_.push_back(std::move(listener));
    return *this;
  }
  /// Adds `other`'s listeners after the ones already there.
  CallbackList& append(const CallbackList& other) {
    listeners_.insert(listeners_.end(), other.listeners_.begin(), other.listeners_.end());
    return *this;
  }
  /// Calls every listener in the order added; an exception stops the list and propagates.
  void operator()(Args... args) const {
    for (const auto& listener : listeners_) listener(args...);
  }
  /// True when there is a listener.
  explicit operator bool() const { return !listeners_.empty(); }
  std::size_t size() const { return listeners_.size(); }
  void clear() { listeners_.clear(); }

 private:
  std::vector<Listener> listeners_;
};

}  // namespace yolotrain::engine
