#pragma once
// SIGTERM and SIGINT become a stop request on a std::stop_source: no global flag
// and no work in a signal handler. The signals are blocked in every thread
// (construct this before starting any thread, so they inherit the mask) and
// taken by one watcher thread with sigtimedwait. A second signal while stopping
// exits at once with 128+signo, for an operator who means it.
#include <atomic>
#include <stop_token>
#include <thread>

namespace exo {

class SignalWatcher {
public:
    explicit SignalWatcher(std::stop_source stop);
    SignalWatcher(const SignalWatcher&) = delete;
    SignalWatcher& operator=(const SignalWatcher&) = delete;
    ~SignalWatcher();

private:
    std::stop_source stop_;
    std::jthread thread_;
};

}  // namespace exo
