// Linked into every executable of a ThreadSanitizer build (-DEXO_SANITIZE=thread) only.
//
// Debian 12's librdkafka makes its threads, mutexes and condition variables with C11
// <threads.h> (thrd_create, mtx_lock, cnd_wait), which glibc implements by calling its
// pthread functions internally, past the symbols TSan intercepts. GCC 12's TSan runtime has
// no C11 interceptors (later runtimes do), so librdkafka's threads start without TSan's
// per-thread state (the first malloc on rdk:main crashes the process) and its locks are
// invisible (every hand-over through its queues would look like a race).
//
// These definitions, in the executable, take precedence over glibc's for every shared
// library (librdkafka resolves them here) and forward to the pthread functions, which TSan
// intercepts. glibc's C11 types are its pthread types under another name (same size and
// layout: glibc's own thrd_*, mtx_* and cnd_* cast them the same way).
//
// librdkafka's pthread_rwlock_* calls come through here too, for scripts/tsan.supp: it has
// TSan ignore every intercepted call librdkafka makes itself (called_from_lib), which hides
// its frees of buffers handed over under reference counts TSan cannot see, but would also
// hide its rwlocks, through which it publishes objects holding mutexes to its other threads.
// Called from here, from the executable, they still count as synchronisation.
#include <pthread.h>
#include <threads.h>

#include <cerrno>
#include <cstdint>
#include <new>

static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t));
static_assert(sizeof(cnd_t) == sizeof(pthread_cond_t));
static_assert(sizeof(once_flag) == sizeof(pthread_once_t));
static_assert(sizeof(thrd_t) == sizeof(pthread_t));

namespace {

int status(int pthread_result) {
    switch (pthread_result) {
        case 0:
            return thrd_success;
        case EBUSY:
            return thrd_busy;
        case ETIMEDOUT:
            return thrd_timedout;
        case ENOMEM:
        case EAGAIN:
            return thrd_nomem;
        default:
            return thrd_error;
    }
}

pthread_mutex_t* native(mtx_t* m) {
    return reinterpret_cast<pthread_mutex_t*>(m);
}
pthread_cond_t* native(cnd_t* c) {
    return reinterpret_cast<pthread_cond_t*>(c);
}

struct Start {
    thrd_start_t func;
    void* arg;
};

void* run(void* p) {
    const Start start = *static_cast<Start*>(p);
    delete static_cast<Start*>(p);
    // A C11 thread returns an int; thrd_join below turns it back.
    return reinterpret_cast<void*>(static_cast<std::intptr_t>(start.func(start.arg)));
}

}  // namespace

extern "C" {

int thrd_create(thrd_t* thr, thrd_start_t func, void* arg) {
    auto* start = new (std::nothrow) Start{func, arg};
    if (start == nullptr) return thrd_nomem;
    const int rc = pthread_create(thr, nullptr, &run, start);
    if (rc != 0) delete start;
    return status(rc);
}

int thrd_join(thrd_t thr, int* res) {
    void* result = nullptr;
    const int rc = pthread_join(thr, &result);
    if (rc == 0 && res != nullptr) *res = static_cast<int>(reinterpret_cast<std::intptr_t>(result));
    return status(rc);
}

int thrd_detach(thrd_t thr) {
    return status(pthread_detach(thr));
}

void thrd_exit(int res) {
    pthread_exit(reinterpret_cast<void*>(static_cast<std::intptr_t>(res)));
}

int mtx_init(mtx_t* m, int type) {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    if ((type & mtx_recursive) != 0) pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    const int rc = pthread_mutex_init(native(m), &attr);
    pthread_mutexattr_destroy(&attr);
    return status(rc);
}

int mtx_lock(mtx_t* m) {
    return status(pthread_mutex_lock(native(m)));
}

int mtx_trylock(mtx_t* m) {
    return status(pthread_mutex_trylock(native(m)));
}

int mtx_unlock(mtx_t* m) {
    return status(pthread_mutex_unlock(native(m)));
}

void mtx_destroy(mtx_t* m) {
    pthread_mutex_destroy(native(m));
}

int cnd_init(cnd_t* c) {
    return status(pthread_cond_init(native(c), nullptr));
}

int cnd_signal(cnd_t* c) {
    return status(pthread_cond_signal(native(c)));
}

int cnd_broadcast(cnd_t* c) {
    return status(pthread_cond_broadcast(native(c)));
}

int cnd_wait(cnd_t* c, mtx_t* m) {
    return status(pthread_cond_wait(native(c), native(m)));
}

// CLOCK_REALTIME, as C11 and pthread_cond_timedwait with default attributes both use.
int cnd_timedwait(cnd_t* __restrict c, mtx_t* __restrict m, const struct timespec* __restrict ts) {
    return status(pthread_cond_timedwait(native(c), native(m), ts));
}

void cnd_destroy(cnd_t* c) {
    pthread_cond_destroy(native(c));
}

void call_once(once_flag* flag, void (*func)(void)) {
    pthread_once(reinterpret_cast<pthread_once_t*>(flag), func);
}

// TSan's own entry points (libtsan exports each interceptor under this name too).
int __interceptor_pthread_rwlock_init(pthread_rwlock_t*, const pthread_rwlockattr_t*);
int __interceptor_pthread_rwlock_destroy(pthread_rwlock_t*);
int __interceptor_pthread_rwlock_rdlock(pthread_rwlock_t*);
int __interceptor_pthread_rwlock_wrlock(pthread_rwlock_t*);
int __interceptor_pthread_rwlock_unlock(pthread_rwlock_t*);

int pthread_rwlock_init(pthread_rwlock_t* __restrict lock,
                        const pthread_rwlockattr_t* __restrict attr) noexcept {
    return __interceptor_pthread_rwlock_init(lock, attr);
}

int pthread_rwlock_destroy(pthread_rwlock_t* lock) noexcept {
    return __interceptor_pthread_rwlock_destroy(lock);
}

int pthread_rwlock_rdlock(pthread_rwlock_t* lock) noexcept {
    return __interceptor_pthread_rwlock_rdlock(lock);
}

int pthread_rwlock_wrlock(pthread_rwlock_t* lock) noexcept {
    return __interceptor_pthread_rwlock_wrlock(lock);
}

int pthread_rwlock_unlock(pthread_rwlock_t* lock) noexcept {
    return __interceptor_pthread_rwlock_unlock(lock);
}

}  // extern "C"
