#include "app/signals.hpp"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>
#include <ctime>

namespace exo {
namespace {

sigset_t stop_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    return set;
}

}  // namespace

SignalWatcher::SignalWatcher(std::stop_source stop) : stop_(std::move(stop)) {
    sigset_t set = stop_signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    thread_ = std::jthread([this](std::stop_token own) {
        sigset_t set = stop_signals();
        timespec tick{0, 200L * 1000 * 1000};  // re-check `own` five times a second
        while (!own.stop_requested()) {
            int signo = sigtimedwait(&set, nullptr, &tick);
            if (signo <= 0) continue;
            // This thread starts before configure_logging() replaces the default logger, so
            // it must not use spdlog::info(): that reads the default logger unlocked, a data
            // race with set_default_logger() (ThreadSanitizer saw it) and a use of the freed
            // old logger if a signal comes while the configuration loads. default_logger()
            // copies it under the registry's lock and keeps it alive while this line logs.
            const auto log = spdlog::default_logger();
            if (stop_.stop_requested()) {
                log->error("second signal {}: exiting now", signo);
                std::_Exit(128 + signo);
            }
            log->info("signal {}: stopping", signo);
            stop_.request_stop();
        }
    });
}

SignalWatcher::~SignalWatcher() {
    thread_.request_stop();
    thread_.join();
}

}  // namespace exo
