// faio.hpp - C++20 coroutines over faio.h (header-only).
//
//     faio::runtime rt;                                  // faio_runtime_new
//     faio::mutex mu(rt);
//     faio::channel<int> ch(rt, 16);
//
//     faio::task<int> consumer(faio::channel<int> &ch) {
//         int sum = 0;
//         while (auto v = co_await ch.recv()) sum += *v;  // nullopt: closed
//         co_return sum;
//     }
//     faio::task<> producer(faio::channel<int> &ch, faio::mutex &mu) {
//         for (int i = 0; i < 100; i++) co_await ch.send(i);
//         auto guard = co_await faio::lock(mu);          // unlocks at scope end
//         co_await faio::sleep(std::chrono::milliseconds(10));
//         ch.close();
//     }
//     faio::task<int> main_task(faio::channel<int> &ch, faio::mutex &mu) {
//         faio::spawn(producer(ch, mu));                 // runs concurrently
//         co_return co_await consumer(ch);
//     }
//     int sum = faio::block_on(rt, main_task(ch, mu));  // waits for everything
//
// How it maps onto the C ABI: a coroutine only ever runs inside a faio
// callback, on a worker. Each awaitable starts an asynchronous faio call
// whose callback resumes the coroutine; faio starts that call when the
// current callback returns (see "THREADS AND CALLBACKS" in faio.h), so a
// coroutine is never resumed before it has finished suspending, and
// faio::block_on waits for every coroutine spawned under it. Operations that
// can complete at once (a free lock, a ready channel) complete without
// suspending, but after 64 such completions in a row on one worker the next
// one takes the asynchronous path. That path does not by itself let the
// worker run other tasks: the operation, started when the callback
// returns, runs on in the same faio task and is charged to its cooperative
// budget (128), so tasks waiting on the worker run only after several
// thousand ready operations in a row (about 4,900 lock, send and recv
// awaits on one worker). A loop that must let them run sooner awaits
// faio::yield().
//
// Errors: FAIO_E* codes and negated errnos are thrown as faio::error, except
// a closed channel, which send reports as false and recv as std::nullopt.
// An exception leaving a task propagates to whoever co_awaits it, or out of
// faio::block_on; one leaving a task started by faio::spawn calls
// std::terminate, as one leaving a std::thread does, except the
// faio::error FAIO_ECANCELED that the runtime's shutdown gives every
// pending operation and the FAIO_ESHUTDOWN with which it refuses the
// operations started meanwhile: they end a spawned task quietly, so that
// destroying a runtime with background tasks still running is a normal
// shutdown. What those tasks use must outlive it: C++ destroys a scope's
// objects in reverse order, so a faio::mutex or faio::channel, declared
// after the runtime it is made on, is destroyed first, and a background
// task still using it gets faio::error FAIO_EBADHANDLE, which ends the
// process as above. Call rt.close() before they go: it ends those tasks.
//
// A coroutine awaits only operations of its own runtime: one of another
// runtime would resume it on that runtime's worker, outside the
// faio::block_on that runs it, which may have returned and freed what the
// coroutine still uses. So co_await of faio::sleep(rt, d) with another
// runtime than the caller's, of faio::lock of a mutex made on another
// runtime, or of send or recv on a channel made on another runtime throws
// faio::error FAIO_EINVAL before anything starts: no lock is requested, no
// value is sent or taken. The awaitables that name no runtime
// (faio::sleep(d), faio::yield, the I/O calls) run on the runtime of the
// coroutine that awaits them, whichever made them. The calls that do not
// wait (try_lock, unlock, try_send, try_recv, close) work on any runtime's
// mutexes and channels, and faio::spawn(rt, t) starts t on rt, as an
// independent task if rt is not the caller's.
//
// Requirements: C++20 (coroutines, <span>); link with -lfaio.
#ifndef FAIO_HPP
#define FAIO_HPP

#include "faio.h"

#include <array>
#include <bit>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <ranges>
#include <ratio>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace faio {

// error carries a FAIO_E* code or a negated errno; what() is faio_strerror.
class error : public std::runtime_error {
public:
    explicit error(int code) : std::runtime_error(faio_strerror(code)), code_(code) {}
    int code() const noexcept { return code_; }

private:
    int code_;
};

namespace detail {

inline void check(int rc)
{
    if (rc != 0)
        throw error(rc);
}

// Consecutive operations completed without suspending on this thread.
inline thread_local unsigned fast_streak = 0;
inline constexpr unsigned fast_limit = 64;

// fast_path reports whether an awaitable may complete without suspending.
inline bool fast_path() noexcept
{
    if (++fast_streak <= fast_limit)
        return true;
    fast_streak = 0;
    return false;
}

// contiguous_buffer: anything std::span can view (arrays, std::array,
// std::vector, std::string, std::span), but not a bare pointer, of objects
// that are their bytes (trivially copyable): the kernel writes and reads
// raw bytes, which would break a std::string's or a pointer owner's.
template <class B>
concept contiguous_buffer =
    requires(B &b) { std::span(b); } &&
    std::is_trivially_copyable_v<typename decltype(std::span(std::declval<B &>()))::element_type>;

// fillable_buffer: what read and recv fill, given as B&& (B is T& for an
// lvalue): an lvalue buffer, or a temporary view of memory that lives
// elsewhere (std::span(ptr, len), a subspan), but not a temporary container,
// whose data the caller could never see: it is destroyed at the end of the
// co_await's full expression.
template <class B>
concept fillable_buffer = contiguous_buffer<B> && (std::is_lvalue_reference_v<B> || std::ranges::borrowed_range<B>);

// Coroutines hand over to one another (a task starting when awaited, and
// resuming its awaiter when it ends) through a trampoline instead of
// resuming each other: hand_over leaves the next one in next_up and
// suspends the caller, and resume, on the faio callback that got the
// thread, runs it and every one handed over after it, one at a time.
// Symmetric transfer would do the same in constant stack only where the
// compiler makes a tail call of it, which g++ does only when optimising,
// without sanitizers: a loop of 200,000 awaits of tasks that finish at
// once overflowed a worker's stack at -O0, and at 20,000 under
// AddressSanitizer. Outside such a loop (a coroutine of another library
// awaiting a faio::task on a thread of its own) hand_over falls back to
// symmetric transfer.
inline thread_local std::coroutine_handle<> next_up;
inline thread_local bool trampolining = false;

inline std::coroutine_handle<> hand_over(std::coroutine_handle<> h) noexcept
{
    if (!trampolining)
        return h;
    next_up = h;
    return std::noop_coroutine();
}

// resume resumes h, then what it handed over, until none is left.
inline void resume(std::coroutine_handle<> h)
{
    bool outer = std::exchange(trampolining, true);
    std::coroutine_handle<> pending = std::exchange(next_up, nullptr);
    h.resume();
    while (next_up)
        std::exchange(next_up, nullptr).resume();
    next_up = pending;
    trampolining = outer;
}

inline void resume_task(void *arg)
{
    fast_streak = 0;
    resume(std::coroutine_handle<>::from_address(arg));
}

// foreign reports whether the caller is a coroutine of a runtime other
// than rt: an operation of rt would resume it on rt's worker, outside the
// faio::block_on that runs it (see the top of this file).
inline bool foreign(faio_runtime rt) noexcept
{
    faio_runtime cur{};
    return faio_current(&cur) == 0 && cur.h != rt.h;
}

} // namespace detail

// runtime owns a faio_runtime: freed (shut down, waiting for everything
// still running) by the destructor, which must therefore run on a host
// thread, not inside a coroutine (there faio refuses the free and the
// runtime would leak). Move assignment into a runtime that holds one frees
// it the same way, but inside a coroutine it throws
// FAIO_EWOULDBLOCK_WORKER, as close does, and changes neither runtime; a
// moved-from (empty) runtime may be assigned anywhere. It converts to
// faio_runtime.
class runtime {
public:
    runtime() : runtime(faio_config{}) {}
    explicit runtime(const faio_config &cfg) { detail::check(faio_runtime_new(&cfg, &h_)); }
    explicit runtime(int workers) : runtime(config_with(workers)) {}
    ~runtime() { reset(); }
    runtime(runtime &&o) noexcept : h_(std::exchange(o.h_, faio_runtime{})) {}
    // Not noexcept: see above. Other errors of the free are ignored, as by
    // the destructor.
    runtime &operator=(runtime &&o)
    {
        if (this != &o) {
            if (h_.h != 0 && faio_runtime_free(h_) == FAIO_EWOULDBLOCK_WORKER)
                throw error(FAIO_EWOULDBLOCK_WORKER);
            h_ = std::exchange(o.h_, faio_runtime{});
        }
        return *this;
    }
    runtime(const runtime &) = delete;
    runtime &operator=(const runtime &) = delete;

    faio_runtime get() const noexcept { return h_; }
    operator faio_runtime() const noexcept { return h_; }

    faio_runtime_stats stats() const
    {
        faio_runtime_stats st;
        detail::check(faio_stats(h_, &st));
        return st;
    }

    // close frees the runtime now, reporting errors the destructor ignores.
    // Inside a coroutine it throws FAIO_EWOULDBLOCK_WORKER and keeps the
    // runtime, for a close or the destructor on a host thread.
    void close()
    {
        int rc = faio_runtime_free(h_);
        if (rc != FAIO_EWOULDBLOCK_WORKER)
            h_ = faio_runtime{};
        detail::check(rc);
    }

private:
    static faio_config config_with(int workers)
    {
        faio_config cfg{};
        cfg.workers = workers;
        return cfg;
    }
    void reset() noexcept
    {
        if (h_.h != 0)
            faio_runtime_free(std::exchange(h_, faio_runtime{}));
    }

    faio_runtime h_{};
};

// current returns the runtime running the calling coroutine.
inline faio_runtime current()
{
    faio_runtime rt;
    detail::check(faio_current(&rt));
    return rt;
}

// ---------------------------------------------------------------------------
// task<T>: a lazy coroutine; co_await starts it and resumes the awaiter when
// it finishes, handing over through a trampoline (see detail::hand_over):
// loops of awaits and chains of them (recursion) use no stack, whatever the
// compiler does. T is a value type (a reference is not supported: return a
// pointer or std::reference_wrapper). A coroutine of another library that
// awaits a task and is destroyed while the task waits (cancelled by
// destruction) leaves the task running: an operation it started still owns
// buffers in its frame, so it runs to its end, then frees itself; its
// result is dropped.
// co_await std::move(t) takes the coroutine out of t, as a move does: t is
// then empty, like a task moved from. An empty task holds nothing to run:
// co_await of one, and faio::block_on or faio::spawn given one, throw
// faio::error FAIO_EINVAL (before anything starts) rather than resume a
// null coroutine.

template <class T = void> class task;

namespace detail {

template <class T> class result_store {
public:
    template <class U> void return_value(U &&v) { value_.emplace(std::forward<U>(v)); }
    // co_return {...}: a braced list deduces no U.
    void return_value(T &&v) { value_.emplace(std::move(v)); }
    void unhandled_exception() noexcept { ex_ = std::current_exception(); }
    T take()
    {
        if (ex_)
            std::rethrow_exception(ex_);
        return std::move(*value_);
    }

private:
    std::optional<T> value_;
    std::exception_ptr ex_;
};

template <> class result_store<void> {
public:
    void return_void() noexcept {}
    void unhandled_exception() noexcept { ex_ = std::current_exception(); }
    void take()
    {
        if (ex_)
            std::rethrow_exception(ex_);
    }

private:
    std::exception_ptr ex_;
};

} // namespace detail

template <class T> class [[nodiscard]] task {
public:
    struct promise_type : detail::result_store<T> {
        std::coroutine_handle<> continuation = std::noop_coroutine();
        // orphaned: the awaiting coroutine was destroyed while this task
        // waited (for an operation that still owns its frame's buffers).
        bool orphaned = false;

        task get_return_object() noexcept { return task(handle::from_promise(*this)); }
        std::suspend_always initial_suspend() noexcept { return {}; }
        auto final_suspend() noexcept
        {
            struct final_awaiter {
                bool await_ready() noexcept { return false; }
                std::coroutine_handle<> await_suspend(handle h) noexcept
                {
                    if (h.promise().orphaned) {
                        h.destroy(); // no one takes the result
                        return std::noop_coroutine();
                    }
                    return detail::hand_over(h.promise().continuation);
                }
                void await_resume() noexcept {}
            };
            return final_awaiter{};
        }
    };
    using handle = std::coroutine_handle<promise_type>;

    task(task &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    task &operator=(task &&o) noexcept
    {
        if (this != &o) {
            if (h_)
                h_.destroy();
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    task(const task &) = delete;
    task &operator=(const task &) = delete;
    ~task()
    {
        if (h_)
            h_.destroy();
    }

    // valid reports whether the task holds a coroutine: false once moved
    // from or awaited.
    bool valid() const noexcept { return static_cast<bool>(h_); }

    // co_await runs the task and frees its frame once the result is taken;
    // an empty task throws FAIO_EINVAL.
    auto operator co_await() &&
    {
        struct [[nodiscard]] awaiter {
            handle h;
            bool started = false;
            explicit awaiter(handle owned) noexcept : h(owned) {}
            awaiter(awaiter &&o) noexcept : h(std::exchange(o.h, nullptr)), started(o.started) {}
            awaiter &operator=(awaiter &&) = delete;
            ~awaiter()
            {
                if (!h)
                    return;
                if (started && !h.done()) {
                    // The awaiting coroutine is destroyed while the task
                    // waits: an operation it started still owns its
                    // frame (buffers, awaiter). It runs on and frees
                    // itself when it ends (see final_suspend).
                    h.promise().continuation = std::noop_coroutine();
                    h.promise().orphaned = true;
                    return;
                }
                h.destroy();
            }
            bool await_ready() noexcept { return false; }
            std::coroutine_handle<> await_suspend(std::coroutine_handle<> c) noexcept
            {
                started = true;
                h.promise().continuation = c;
                return detail::hand_over(h);
            }
            T await_resume() { return h.promise().take(); }
        };
        if (!h_)
            throw error(FAIO_EINVAL);
        return awaiter(std::exchange(h_, nullptr));
    }

private:
    explicit task(handle h) noexcept : h_(h) {}
    handle h_;
};

namespace detail {

// A coroutine that owns itself: it starts when a faio callback resumes it
// and frees its frame when it ends.
struct detached {
    struct promise_type {
        detached get_return_object() noexcept
        {
            return {std::coroutine_handle<promise_type>::from_promise(*this)};
        }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
    std::coroutine_handle<promise_type> h;
};

// run_spawned runs a task started by faio::spawn. The runtime's shutdown
// ends the task quietly, whether it finds it waiting (FAIO_ECANCELED) or
// running, about to start an operation (FAIO_ESHUTDOWN): ~runtime waits for
// the task, which must not end the process. An await's FAIO_ESHUTDOWN is
// the task's own runtime's, as a coroutine awaits only operations of its
// own runtime; the one of a faio::spawn onto another runtime, or of a mutex
// or channel made on one, ends the task quietly too.
inline detached run_spawned(task<void> t)
{
    try {
        co_await std::move(t);
    } catch (const error &e) {
        if (e.code() != FAIO_ECANCELED && e.code() != FAIO_ESHUTDOWN)
            throw;
    }
}

template <class T> struct root_state {
    bool started = false;
    bool finished = false;
    result_store<T> result;
};

template <class T> detached run_root(task<T> t, std::shared_ptr<root_state<T>> st)
{
    st->started = true;
    try {
        if constexpr (std::is_void_v<T>) {
            co_await std::move(t);
            st->result.return_void();
        } else {
            st->result.return_value(co_await std::move(t));
        }
    } catch (...) {
        st->result.unhandled_exception();
    }
    st->finished = true;
}

} // namespace detail

// spawn starts t as a new faio task on rt. Inside a coroutine of rt the
// task is a child that faio::block_on waits for; from a host thread or a
// coroutine of another runtime it is independent (rt's destructor waits
// for it). Throws faio::error if faio refuses, FAIO_EINVAL for an empty
// (moved-from) t. Nothing waits for its result: t is a task<void>. It runs
// on after the statement that spawned it, so its coroutine must take its
// parameters by value: a reference parameter bound to a temporary (a
// std::string built in the call) refers to a destroyed object.
inline void spawn(faio_runtime rt, task<void> t)
{
    if (!t.valid())
        throw error(FAIO_EINVAL);
    detail::detached d = detail::run_spawned(std::move(t));
    int rc = faio_spawn(rt, &detail::resume_task, d.h.address());
    if (rc != 0) {
        d.h.destroy();
        throw error(rc);
    }
}

// spawn starts t on the runtime of the calling coroutine.
inline void spawn(task<void> t) { spawn(current(), std::move(t)); }

// block_on runs t on rt and blocks the calling host thread until t and
// everything it spawned have finished; returns t's result or rethrows its
// exception. Throws faio::error if faio could not run it (for example
// FAIO_EWOULDBLOCK_WORKER inside a coroutine), FAIO_EINVAL for an empty
// (moved-from) t. block_on waits for faio's work only: if t waits on an
// awaitable that is not faio's while nothing of faio's is pending, it
// throws faio::error FAIO_EINTERNAL with t still suspended. Whoever resumes
// t later may (t then runs outside any block_on); its result is dropped.
template <class T> T block_on(faio_runtime rt, task<T> t)
{
    if (!t.valid())
        throw error(FAIO_EINVAL);
    // Shared with the root coroutine: if t waits on an awaitable that is
    // not faio's, faio_block_on returns with t suspended, and whoever
    // resumes it later must find the state alive (found by a reviewer).
    auto st = std::make_shared<detail::root_state<T>>();
    detail::detached d = detail::run_root(std::move(t), st);
    int rc = faio_block_on(rt, &detail::resume_task, d.h.address());
    if (!st->started) {
        d.h.destroy();
        throw error(rc);
    }
    if (!st->finished)
        throw error(rc != 0 ? rc : FAIO_EINTERNAL);
    return st->result.take();
}

// ---------------------------------------------------------------------------
// Awaitables completed by a faio callback.

namespace detail {

// status_awaiter suspends, starts an operation with a faio_done_fn that
// resumes it, and throws the status if it is not 0.
template <class Start> class [[nodiscard]] status_awaiter {
public:
    explicit status_awaiter(Start start) : start_(std::move(start)) {}
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h)
    {
        h_ = h;
        int rc = start_(&on_done, this);
        if (rc != 0) {
            status_ = rc; // refused: the callback will not run
            return false;
        }
        return true; // from here the callback owns *this
    }
    void await_resume() const
    {
        if (status_ != 0)
            throw error(status_);
    }

private:
    static void on_done(void *arg, int status)
    {
        auto *a = static_cast<status_awaiter *>(arg);
        a->status_ = status;
        fast_streak = 0;
        resume(a->h_);
    }

    Start start_;
    std::coroutine_handle<> h_;
    int status_ = 0;
};

// io_awaiter is status_awaiter for a faio_io_fn: it returns the result.
template <class Start> class [[nodiscard]] io_awaiter {
public:
    explicit io_awaiter(Start start) : start_(std::move(start)) {}
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h)
    {
        h_ = h;
        int rc = start_(&on_io, this);
        if (rc != 0) {
            result_ = rc;
            return false;
        }
        return true;
    }
    std::size_t await_resume() const
    {
        if (result_ < 0)
            throw error(static_cast<int>(result_));
        return static_cast<std::size_t>(result_);
    }

private:
    static void on_io(void *arg, std::int64_t result)
    {
        auto *a = static_cast<io_awaiter *>(arg);
        a->result_ = result;
        fast_streak = 0;
        resume(a->h_);
    }

    Start start_;
    std::coroutine_handle<> h_;
    std::int64_t result_ = 0;
};

template <class Start> status_awaiter<Start> make_status(Start s) { return status_awaiter<Start>(std::move(s)); }
template <class Start> io_awaiter<Start> make_io(Start s) { return io_awaiter<Start>(std::move(s)); }

// to_ns converts a duration for faio_sleep: negative ones (and NaN) to 0,
// ones longer than nanoseconds can count to UINT64_MAX, forever to
// faio_sleep. A duration_cast of those would overflow, often into the past.
template <class Rep, class Period> std::uint64_t to_ns(std::chrono::duration<Rep, Period> d) noexcept
{
    using D = std::chrono::duration<Rep, Period>;
    using ns = std::chrono::nanoseconds;
    if (!(d > D::zero()))
        return 0;
    if constexpr (std::chrono::treat_as_floating_point_v<Rep>) {
        // In floating nanoseconds, whatever the unit (a duration of
        // double nanoseconds or picoseconds can be far past what int64
        // counts, and converting that to an integer is undefined): 2^63
        // and up, and infinity, are forever.
        long double n = std::chrono::duration<long double, std::nano>(d).count();
        if (!(n < 0x1p63L))
            return UINT64_MAX;
        return static_cast<std::uint64_t>(n);
    }
    // Compared in d's own unit, counted in intmax_t at least: a coarser
    // unit holds ns::max() truncated, while d converted to nanoseconds may
    // not fit (and in a narrow count, an int of microseconds, ns::max()
    // itself would wrap, making every such duration forever).
    using W = std::chrono::duration<std::common_type_t<Rep, std::intmax_t>, Period>;
    const W w = d;
    if constexpr (std::ratio_greater<Period, std::nano>::value) {
        // R::num / R::den nanoseconds a unit of d. Neither duration_cast
        // of ns::max() to W nor of w to ns may be used here: both multiply
        // by R::num before dividing by R::den, which overflows (undefined
        // behaviour) for a unit that is no whole number of nanoseconds
        // (1/60 s, 1/1024 s, 1/48000 s): a 1/1024 s tick was forever. So
        // whole multiples of R::den first, then the rest (< R::den).
        using R = std::ratio_divide<Period, std::nano>;
        constexpr std::uintmax_t max = INT64_MAX; // ns::max()
        const auto c = static_cast<std::uintmax_t>(w.count()); // > 0
        const std::uintmax_t q = c / R::den, r = c % R::den;
        if (q > max / R::num)
            return UINT64_MAX;
        std::uintmax_t n = q * R::num; // <= max
        if constexpr (R::den != 1) {
            if constexpr (static_cast<std::uintmax_t>(R::num) <= UINTMAX_MAX / R::den)
                n += r * R::num / R::den;
            else
                n += static_cast<std::uintmax_t>(static_cast<long double>(r) * R::num / R::den);
        }
        return n >= max ? UINT64_MAX : static_cast<std::uint64_t>(n);
    }
    return static_cast<std::uint64_t>(std::chrono::duration_cast<ns>(w).count());
}

// on_current turns start(rt, cb, arg) into the start of an awaiter that
// runs the operation on the runtime of the coroutine awaiting it, looked up
// when the co_await begins: an awaitable made in one coroutine and awaited
// in a coroutine of another runtime then still completes where its awaiter
// runs.
template <class Start> auto on_current(Start start)
{
    return [start](auto cb, void *arg) {
        faio_runtime rt{};
        int rc = faio_current(&rt);
        return rc != 0 ? rc : start(rt, cb, arg);
    };
}

} // namespace detail

// sleep suspends the calling coroutine for at least d on rt's timer wheel.
// Inside a coroutine of another runtime it throws FAIO_EINVAL (see the top
// of this file).
template <class Rep, class Period>
auto sleep(faio_runtime rt, std::chrono::duration<Rep, Period> d)
{
    std::uint64_t n = detail::to_ns(d);
    return detail::make_status([rt, n](faio_done_fn cb, void *arg) {
        if (detail::foreign(rt))
            return static_cast<int>(FAIO_EINVAL);
        return faio_sleep(rt, n, cb, arg);
    });
}

// sleep on the runtime of the coroutine that awaits it.
template <class Rep, class Period> auto sleep(std::chrono::duration<Rep, Period> d)
{
    std::uint64_t n = detail::to_ns(d);
    return detail::make_status(detail::on_current(
        [n](faio_runtime rt, faio_done_fn cb, void *arg) { return faio_sleep(rt, n, cb, arg); }));
}

// yield continues the calling coroutine in a new task of its runtime,
// queued behind the tasks already waiting, so they get to run first.
inline auto yield()
{
    struct [[nodiscard]] awaiter {
        int rc = 0;
        bool await_ready() const noexcept { return false; }
        bool await_suspend(std::coroutine_handle<> h)
        {
            faio_runtime rt{};
            int r = faio_current(&rt);
            if (r == 0)
                r = faio_spawn(rt, &detail::resume_task, h.address());
            if (r == 0)
                return true; // another worker may run h already: *this is its
            rc = r;
            return false;
        }
        void await_resume() const { detail::check(rc); }
    };
    return awaiter{};
}

// ---------------------------------------------------------------------------
// Mutex

// mutex owns a faio_mutex of a runtime (freed by the destructor, which must
// run while it is unlocked).
class mutex {
public:
    explicit mutex(faio_runtime rt) : rt_(rt) { detail::check(faio_mutex_new(rt, &m_)); }
    ~mutex()
    {
        if (m_.h != 0)
            faio_mutex_free(m_);
    }
    mutex(const mutex &) = delete;
    mutex &operator=(const mutex &) = delete;

    faio_mutex get() const noexcept { return m_; }
    // made_on returns the runtime the mutex was made on, as
    // faio_mutex_runtime does.
    faio_runtime made_on() const noexcept { return rt_; }
    bool try_lock() noexcept { return faio_mutex_try_lock(m_) == 0; }
    void unlock() { detail::check(faio_mutex_unlock(m_)); }
    // lock_blocking is for host threads; inside a coroutine it throws
    // FAIO_EWOULDBLOCK_WORKER.
    void lock_blocking() { detail::check(faio_mutex_lock_blocking(m_)); }

private:
    faio_runtime rt_;
    faio_mutex m_{};
};

// lock_guard holds a locked faio_mutex and unlocks it when destroyed.
class [[nodiscard]] lock_guard {
public:
    explicit lock_guard(faio_mutex m) noexcept : m_(m) {}
    lock_guard(lock_guard &&o) noexcept : m_(std::exchange(o.m_, faio_mutex{})) {}
    lock_guard &operator=(lock_guard &&o) noexcept
    {
        if (this != &o) {
            unlock();
            m_ = std::exchange(o.m_, faio_mutex{});
        }
        return *this;
    }
    lock_guard(const lock_guard &) = delete;
    lock_guard &operator=(const lock_guard &) = delete;
    ~lock_guard() { unlock(); }

    bool owns_lock() const noexcept { return m_.h != 0; }
    void unlock() noexcept
    {
        if (m_.h != 0)
            faio_mutex_unlock(std::exchange(m_, faio_mutex{}));
    }

private:
    faio_mutex m_;
};

namespace detail {

// lock_awaiter is co_await faio::lock(m): rt is m's runtime.
class [[nodiscard]] lock_awaiter {
public:
    lock_awaiter(faio_mutex m, faio_runtime rt) noexcept : m_(m), rt_(rt) {}

    bool await_ready() noexcept
    {
        status_ = 0; // an awaitable awaited again: not the last error
        if (foreign(rt_)) {
            status_ = FAIO_EINVAL; // refused before anything started
            return true;
        }
        return fast_path() && faio_mutex_try_lock(m_) == 0;
    }
    bool await_suspend(std::coroutine_handle<> c)
    {
        h_ = c;
        int rc = faio_mutex_lock(m_, &on_locked, this);
        if (rc != 0) {
            status_ = rc;
            return false;
        }
        return true;
    }
    lock_guard await_resume() const
    {
        check(status_);
        return lock_guard(m_);
    }

private:
    static void on_locked(void *arg, int st)
    {
        auto *a = static_cast<lock_awaiter *>(arg);
        a->status_ = st;
        fast_streak = 0;
        resume(a->h_);
    }

    faio_mutex m_;
    faio_runtime rt_;
    std::coroutine_handle<> h_{};
    int status_ = 0;
};

} // namespace detail

// lock waits for m and returns a guard holding it: auto g = co_await lock(m).
// A mutex of another runtime than the awaiting coroutine's throws
// FAIO_EINVAL (see the top of this file).
inline detail::lock_awaiter lock(mutex &m) noexcept { return detail::lock_awaiter(m.get(), m.made_on()); }

// lock of a bare handle asks faio which runtime m belongs to; throws
// faio::error for a bad handle.
inline detail::lock_awaiter lock(faio_mutex m)
{
    faio_runtime rt{};
    detail::check(faio_mutex_runtime(m, &rt));
    return detail::lock_awaiter(m, rt);
}

// ---------------------------------------------------------------------------
// Channel

// channel<T> owns a faio_chan carrying values of a trivially copyable T no
// larger than a pointer (int, enums, pointers, small structs). Its
// destructor frees the channel and drops the values still buffered, as
// faio_chan_free does: drain it first (try_recv) if they own memory.
template <class T> class channel {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(void *),
                  "faio::channel carries pointer-sized, trivially copyable values");

public:
    channel(faio_runtime rt, std::size_t capacity) : rt_(rt) { detail::check(faio_chan_new(rt, capacity, &ch_)); }
    ~channel()
    {
        if (ch_.h != 0)
            faio_chan_free(ch_);
    }
    channel(const channel &) = delete;
    channel &operator=(const channel &) = delete;

    faio_chan get() const noexcept { return ch_; }
    // made_on returns the runtime the channel was made on, as
    // faio_chan_runtime does.
    faio_runtime made_on() const noexcept { return rt_; }

    // send delivers v: co_await returns true once it is taken or buffered,
    // false if the channel is closed (v was not delivered). Awaited by a
    // coroutine of another runtime than the channel's, it throws
    // FAIO_EINVAL and sends nothing (see the top of this file).
    auto send(T v)
    {
        struct [[nodiscard]] awaiter {
            faio_chan ch;
            faio_runtime rt;
            void *item;
            std::coroutine_handle<> h{};
            int status = 0;

            bool await_ready() noexcept
            {
                if (detail::foreign(rt)) {
                    status = FAIO_EINVAL;
                    return true;
                }
                if (!detail::fast_path())
                    return false;
                status = faio_chan_try_send(ch, item);
                return status != FAIO_EAGAIN;
            }
            bool await_suspend(std::coroutine_handle<> c)
            {
                h = c;
                int rc = faio_chan_send(ch, item, &on_sent, this);
                if (rc != 0) {
                    status = rc;
                    return false;
                }
                return true;
            }
            bool await_resume() const
            {
                if (status == FAIO_ECLOSED)
                    return false;
                detail::check(status);
                return true;
            }
            static void on_sent(void *arg, int st)
            {
                auto *a = static_cast<awaiter *>(arg);
                a->status = st;
                detail::fast_streak = 0;
                detail::resume(a->h);
            }
        };
        return awaiter{ch_, rt_, encode(v)};
    }

    // recv takes the oldest value: co_await returns it, or std::nullopt
    // once the channel is closed and drained. Like send, it throws
    // FAIO_EINVAL, taking nothing, in a coroutine of another runtime.
    auto recv()
    {
        struct [[nodiscard]] awaiter {
            faio_chan ch;
            faio_runtime rt;
            void *item = nullptr;
            std::coroutine_handle<> h{};
            int status = 0;

            bool await_ready() noexcept
            {
                if (detail::foreign(rt)) {
                    status = FAIO_EINVAL;
                    return true;
                }
                if (!detail::fast_path())
                    return false;
                status = faio_chan_try_recv(ch, &item);
                return status != FAIO_EAGAIN;
            }
            bool await_suspend(std::coroutine_handle<> c)
            {
                h = c;
                int rc = faio_chan_recv(ch, &on_received, this);
                if (rc != 0) {
                    status = rc;
                    return false;
                }
                return true;
            }
            std::optional<T> await_resume() const
            {
                if (status == FAIO_ECLOSED)
                    return std::nullopt;
                detail::check(status);
                return decode(item);
            }
            static void on_received(void *arg, void *it, int st)
            {
                auto *a = static_cast<awaiter *>(arg);
                a->item = it;
                a->status = st;
                detail::fast_streak = 0;
                detail::resume(a->h);
            }
        };
        return awaiter{ch_, rt_};
    }

    // try_send and try_recv never wait; they report "would wait" as false
    // and nullopt, a closed channel as faio::error(FAIO_ECLOSED).
    bool try_send(T v)
    {
        int rc = faio_chan_try_send(ch_, encode(v));
        if (rc == FAIO_EAGAIN)
            return false;
        detail::check(rc);
        return true;
    }
    std::optional<T> try_recv()
    {
        void *item = nullptr;
        int rc = faio_chan_try_recv(ch_, &item);
        if (rc == FAIO_EAGAIN)
            return std::nullopt;
        detail::check(rc);
        return decode(item);
    }

    // The blocking variants are for host threads (inside a coroutine they
    // throw FAIO_EWOULDBLOCK_WORKER): false / nullopt when closed.
    bool send_blocking(T v)
    {
        int rc = faio_chan_send_blocking(ch_, encode(v));
        if (rc == FAIO_ECLOSED)
            return false;
        detail::check(rc);
        return true;
    }
    std::optional<T> recv_blocking()
    {
        void *item = nullptr;
        int rc = faio_chan_recv_blocking(ch_, &item);
        if (rc == FAIO_ECLOSED)
            return std::nullopt;
        detail::check(rc);
        return decode(item);
    }

    // close ends the sending side; false if it was already closed.
    bool close()
    {
        int rc = faio_chan_close(ch_);
        if (rc == FAIO_ECLOSED)
            return false;
        detail::check(rc);
        return true;
    }

private:
    static void *encode(T v) noexcept
    {
        std::uintptr_t u = 0;
        std::memcpy(&u, &v, sizeof v);
        return reinterpret_cast<void *>(u);
    }
    static T decode(void *p) noexcept
    {
        auto u = reinterpret_cast<std::uintptr_t>(p);
        std::array<unsigned char, sizeof(T)> bytes;
        std::memcpy(bytes.data(), &u, sizeof(T));
        return std::bit_cast<T>(bytes);
    }

    faio_runtime rt_;
    faio_chan ch_{};
};

// ---------------------------------------------------------------------------
// I/O on the runtime of the coroutine that awaits it (looked up when the
// co_await begins, not when the awaitable is made). Buffers are anything
// std::span can view (arrays, std::array, std::vector, std::string,
// std::span(ptr, len) or a subspan for raw memory or part of a buffer) of
// trivially copyable objects; they must outlive the co_await, which they do
// when they live in the coroutine frame. read and recv take a buffer
// variable or a view such as a std::span, also as a temporary
// (faio::recv(fd, std::span(p, n))), but not a temporary container, whose
// data would be lost. A string literal is an array: write("hi") sends its
// terminating NUL too (pass std::string_view("hi") for two bytes). Results
// are byte counts or descriptors; errors throw faio::error with the negated
// errno.

// msg_flags are the MSG_* flags of recv and send, typed so that a length
// passed by mistake where flags go does not compile.
struct msg_flags {
    constexpr msg_flags() noexcept = default;
    explicit constexpr msg_flags(int v) noexcept : value(v) {}
    int value = 0;
};

// read reads into buf at offset (-1: at the file position); 0 at end of file.
template <class Buffer>
    requires detail::fillable_buffer<Buffer>
auto read(int fd, Buffer &&buf, std::int64_t offset = -1)
{
    auto b = std::as_writable_bytes(std::span(buf));
    return detail::make_io(detail::on_current([=](faio_runtime rt, faio_io_fn cb, void *arg) {
        return faio_read(rt, fd, b.data(), b.size(), offset, cb, arg);
    }));
}

// write writes buf at offset (-1: at the file position); may be short.
template <detail::contiguous_buffer Buffer> auto write(int fd, const Buffer &buf, std::int64_t offset = -1)
{
    auto b = std::as_bytes(std::span(buf));
    return detail::make_io(detail::on_current([=](faio_runtime rt, faio_io_fn cb, void *arg) {
        return faio_write(rt, fd, b.data(), b.size(), offset, cb, arg);
    }));
}

// accept returns the new connection's descriptor (the caller closes it).
inline auto accept(int fd, int flags = SOCK_CLOEXEC)
{
    return detail::make_io(detail::on_current(
        [=](faio_runtime rt, faio_io_fn cb, void *arg) { return faio_accept(rt, fd, flags, cb, arg); }));
}

// connect connects socket fd to addr (copied before the co_await suspends).
inline auto connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    return detail::make_status(detail::on_current(
        [=](faio_runtime rt, faio_done_fn cb, void *arg) { return faio_connect(rt, fd, addr, len, cb, arg); }));
}

// recv receives into buf; 0 when the peer has shut down its side.
template <class Buffer>
    requires detail::fillable_buffer<Buffer>
auto recv(int fd, Buffer &&buf, msg_flags flags = msg_flags())
{
    auto b = std::as_writable_bytes(std::span(buf));
    return detail::make_io(detail::on_current([=](faio_runtime rt, faio_io_fn cb, void *arg) {
        return faio_recv(rt, fd, b.data(), b.size(), flags.value, cb, arg);
    }));
}

// send sends buf; may be short.
template <detail::contiguous_buffer Buffer> auto send(int fd, const Buffer &buf, msg_flags flags = msg_flags())
{
    auto b = std::as_bytes(std::span(buf));
    return detail::make_io(detail::on_current([=](faio_runtime rt, faio_io_fn cb, void *arg) {
        return faio_send(rt, fd, b.data(), b.size(), flags.value, cb, arg);
    }));
}

// close closes fd.
inline auto close(int fd)
{
    return detail::make_status(detail::on_current(
        [=](faio_runtime rt, faio_done_fn cb, void *arg) { return faio_close(rt, fd, cb, arg); }));
}

} // namespace faio

#endif // FAIO_HPP
