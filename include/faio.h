/*
 * faio.h - the C ABI of faio-go (libfaio.so).
 *
 * faio-go is an asynchronous task runtime on Linux io_uring: a pool of worker
 * threads runs lightweight tasks, each worker owning an io_uring and a timer
 * wheel. This header lets C (C99 or later) and C++ programs drive that pool.
 * It is hand-written and stable: functions are only ever added, handle values
 * and error codes keep their meaning, and the structs grow only into their
 * reserved fields.
 *
 * Build and link:
 *
 *     go build -buildmode=c-shared -o build/libfaio.so ./capi   (repo root)
 *     cc -Iinclude prog.c -Lbuild -lfaio -pthread
 *
 * PROCESS RULES
 *
 * libfaio.so contains a Go runtime. A process can hold only one Go runtime:
 * do not load libfaio.so together with another Go c-shared library, and never
 * dlclose() it (a Go runtime cannot be unloaded; dlclose either does nothing
 * or leaves dangling threads). Several faio runtimes (faio_runtime_new) may
 * live in one process; they share that Go runtime. After fork() only the
 * parent may call faio; the child must exec or _exit. The Go runtime installs
 * handlers for SIGURG (with which it preempts its own threads), SIGPIPE and
 * the synchronous signals, forwarding what is not its own to handlers the
 * host installed before loading it; handlers the host installs must use
 * SA_ONSTACK.
 *
 * THREADS AND CALLBACKS
 *
 * Two kinds of threads call into faio:
 *
 *  - host threads: the program's own threads. The first faio call on a new
 *    host thread binds it to the Go runtime, which costs about 100 us; later
 *    calls on that thread are cheap. Host threads may use every function,
 *    including the *_blocking ones and faio_block_on, which block the calling
 *    thread (not a worker).
 *
 *  - workers: the runtime's own threads. faio calls the functions a program
 *    hands it (faio_task_fn, faio_done_fn, faio_recv_fn, faio_io_fn) on a
 *    worker, each invocation as part of a faio task. Such a callback must not
 *    block: a blocking system call or a pthread lock held for long stops its
 *    worker and every task queued behind it. To wait, a callback starts an
 *    asynchronous faio operation whose completion callback carries on.
 *    A callback must also return normally: a C++ exception that escapes it
 *    ends the process (std::terminate, as for a noexcept function), and
 *    leaving it with longjmp, pthread_exit or a thread cancellation is
 *    undefined behaviour. faio.hpp's coroutines catch their exceptions.
 *
 * No faio function is async-signal-safe: do not call one from a signal
 * handler (to wake a task from one, write to a pipe or eventfd that the
 * task reads with faio_read).
 *
 * Inside a callback, the blocking calls (faio_block_on, faio_runtime_free,
 * faio_mutex_lock_blocking, faio_chan_send_blocking, faio_chan_recv_blocking)
 * return FAIO_EWOULDBLOCK_WORKER instead of hanging the worker. faio knows it
 * is inside a callback from a thread-local marker that it sets immediately
 * before calling a callback and clears when the callback returns; the marker
 * is never set on any other thread and never outside a callback, so the
 * check is exact.
 *
 * Asynchronous calls made inside a callback (faio_spawn, faio_mutex_lock,
 * faio_chan_send/recv, faio_sleep, the I/O calls) on the runtime that runs the
 * callback are checked at once (bad arguments return their error code) and
 * started as soon as the callback returns, as children of the callback's
 * task: so faio_block_on waits for them and for everything they start in
 * turn. The same calls on another runtime, or from a host thread, start at
 * once and are independent tasks (faio_runtime_free cancels and waits for
 * them). A mutex or a channel belongs to the runtime it was made on, which
 * runs its callbacks (faio_mutex_runtime and faio_chan_runtime name it).
 * No order is promised among the operations one callback starts.
 *
 * Every callback that a call accepted (the call returned 0) is invoked exactly
 * once, even when the runtime shuts down meanwhile: the operation then
 * completes with FAIO_ECANCELED (or with its real result if it finished
 * first), so a callback can always release what its argument owns.
 *
 * HANDLES
 *
 * Runtimes, mutexes and channels are opaque 64-bit handles (an index and a
 * generation), never pointers. The zero handle is never valid. A handle that
 * is zero, freed, or of another kind makes every call return
 * FAIO_EBADHANDLE, so a double free or a use after free is an error code,
 * not a crash. Handles may be copied and used from any thread at once.
 *
 * ERRORS
 *
 * Every function returning int returns 0 on success or a negative code: one
 * of the FAIO_E* codes below (all <= -10000), or a negated errno value from
 * the kernel (-EBADF, -ECONNRESET, ...) for I/O. faio_strerror describes both.
 *
 * MEMORY
 *
 * A buffer given to faio_read, faio_write, faio_recv or faio_send belongs to
 * the kernel from the call until its callback runs: do not free, reuse or (for
 * reads) look at it meanwhile, even if the runtime is being shut down. The
 * callback's invocation is the moment the buffer is the caller's again. faio
 * copies everything else it is given (socket addresses, configs) before the
 * call returns. The void * items of a channel are opaque to faio: it neither
 * reads nor frees what they point to.
 */
#ifndef FAIO_H
#define FAIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header and of the library built from it. */
#define FAIO_VERSION_MAJOR 0
#define FAIO_VERSION_MINOR 1
#define FAIO_VERSION_PATCH 0
#define FAIO_VERSION_STRING "0.1.0"

/*
 * Error codes. errno values returned by the kernel are passed through
 * negated and never collide with these.
 */
enum faio_error {
    FAIO_OK = 0,
    /* An argument is invalid: a NULL pointer or callback, a negative size or
     * offset, a capacity too large, a config field out of range or a
     * reserved field that is not zero. Nothing was done. */
    FAIO_EINVAL = -10001,
    /* The handle is zero, was freed, or is of another kind. */
    FAIO_EBADHANDLE = -10002,
    /* The runtime is shutting down (faio_runtime_free was called): it starts
     * no new work. Handles of other kinds bound to it stay valid for their
     * synchronous calls and for faio_*_free. */
    FAIO_ESHUTDOWN = -10003,
    /* A blocking call was made on a worker, inside a callback, where it
     * would stop the worker (see THREADS AND CALLBACKS). */
    FAIO_EWOULDBLOCK_WORKER = -10004,
    /* The mutex is held: faio_mutex_try_lock did not lock it, faio_mutex_free
     * did not free it. */
    FAIO_EBUSY = -10005,
    /* faio_chan_try_send found no room, faio_chan_try_recv found no item. */
    FAIO_EAGAIN = -10006,
    /* The channel is closed: sends fail, receives fail once it is drained;
     * faio_chan_close of a closed channel. */
    FAIO_ECLOSED = -10007,
    /* The operation was cancelled because its runtime is shutting down. */
    FAIO_ECANCELED = -10008,
    /* faio_mutex_unlock of a mutex that is not locked. */
    FAIO_ENOTLOCKED = -10009,
    /* faio_current was called outside a callback. */
    FAIO_ENOTWORKER = -10010,
    /* Too many live handles (about 16 million). */
    FAIO_ENOMEM = -10011,
    /* An internal error faio cannot map to another code; a bug. */
    FAIO_EINTERNAL = -10012,
    /* io_uring is unavailable: faio_runtime_new with FAIO_BACKEND_IO_URING
     * where the kernel refuses or lacks it (a seccomp filter, as container
     * runtimes install by default; a kernel without CONFIG_IO_URING). */
    FAIO_ENOURING = -10013
};

/* What a runtime's workers sleep on and run I/O with (faio_config's
 * io_backend; faio_runtime_stats' backend). The environment variable
 * FAIO_BACKEND (auto, io_uring or portable) overrides the config. */
enum faio_backend {
    /* io_uring where the kernel allows it, else the portable backend (one
     * notice on stderr when it falls back). The default. */
    FAIO_BACKEND_AUTO = 0,
    /* io_uring or nothing: faio_runtime_new fails with FAIO_ENOURING. */
    FAIO_BACKEND_IO_URING = 1,
    /* No io_uring: tasks, timers, mutexes and channels work as on
     * io_uring. The I/O calls of this header work too, with the same
     * callbacks and buffer rules. A pending faio_recv or faio_send waits
     * in the runtime's epoll instance, holding no thread (the call is made
     * with MSG_DONTWAIT; a duplicate of the descriptor is registered while
     * calls wait on the socket). The program's flags act as on io_uring:
     * with MSG_DONTWAIT a call that would wait completes with -EAGAIN,
     * with MSG_WAITALL on a stream socket it waits for the whole buffer
     * (or the end of the stream). As on io_uring, it keeps its socket: if
     * the program closes the descriptor meanwhile, it still completes on
     * that socket, and a socket opened later under the same number is
     * another one. If the epoll instance is closed behind the runtime's
     * back (a stray close of its number elsewhere in the program), the
     * calls waiting in it complete with -EBADF (the errno that showed
     * it) within a second, and later ones wait with poll(2) as below.
     * Any other pending operation waits for its descriptor
     * with poll(2) on a thread of its own (fine for a fallback, not for
     * thousands of them), so its descriptor must stay open until it
     * completes. Each completes with FAIO_ECANCELED once faio_runtime_free
     * begins (the poll(2) ones within 50 ms): once poll(2) finds the
     * descriptor ready, the call itself does not wait (RWF_NOWAIT on
     * pipes, sockets and devices), except on a terminal or a timerfd,
     * signalfd or inotify descriptor, whose read another reader can leave
     * blocked past faio_runtime_free. faio_connect makes the socket
     * non-blocking while it waits, and faio_accept for the accept call
     * itself (other processes sharing the socket see it then); both
     * restore its flags. */
    FAIO_BACKEND_PORTABLE = 2
};

/* Opaque handles: copy them freely, never interpret the value. */
typedef struct faio_runtime { uint64_t h; } faio_runtime;
typedef struct faio_mutex { uint64_t h; } faio_mutex;
typedef struct faio_chan { uint64_t h; } faio_chan;

/* A task body: runs once on a worker. */
typedef void (*faio_task_fn)(void *arg);
/* Completion of an operation without a value: status is 0 or an error. */
typedef void (*faio_done_fn)(void *arg, int status);
/* Completion of a channel receive: item is valid when status is 0. */
typedef void (*faio_recv_fn)(void *arg, void *item, int status);
/* Completion of an I/O operation: result is the kernel's result (a byte
 * count, a descriptor) when >= 0, else a negated errno or FAIO_ECANCELED. */
typedef void (*faio_io_fn)(void *arg, int64_t result);

/*
 * Runtime configuration. Every zero field means its default; zero-initialise
 * the whole struct (faio_config cfg = {0};) and set what you need. A field
 * outside the range given makes faio_runtime_new fail with FAIO_EINVAL.
 */
typedef struct faio_config {
    int32_t workers;               /* worker threads, 1..1024; 0: one per CPU */
    int32_t ring_entries;          /* io_uring SQ size per worker, 8..32768; 0: 1024 */
    int32_t local_queue_capacity;  /* run queue per worker, a power of two in 2..65536; 0: 256;
                                    * raised to 256 with FAIO_PINNED=1 */
    int32_t global_queue_interval; /* ticks between global-queue checks, >= 1; 0: 61 */
    int32_t io_interval;           /* ticks between I/O polls of a busy worker, >= 1; 0: 61 */
    int32_t submit_batch;          /* SQEs queued before a submit (socket ones count 1/8),
                                    * 1..ring_entries; 0: 4 */
    int64_t timer_resolution_ns;   /* timer wheel granularity, up to 1 s; 0: 100 us */
    int64_t stall_threshold_ns;    /* watchdog threshold; 0: 10 ms, < 0: off, else >= 1 ms (FAIO_EINVAL below) */
    int32_t io_backend;            /* enum faio_backend; 0: FAIO_BACKEND_AUTO */
    int32_t reserved32;            /* must be zero */
    uint64_t reserved[7];          /* must be zero */
} faio_config;

/* Counters of a runtime since it was created (see faio_stats). */
typedef struct faio_runtime_stats {
    int64_t workers;        /* worker threads */
    int64_t live;           /* tasks spawned and not finished (spawned - completed),
                             * as the workers last published them (every 16 ticks
                             * of a worker's loop, and when it sleeps): it lags, so
                             * it is no leak check; faio_block_on and the joins
                             * wait exactly */
    uint64_t spawned;       /* tasks spawned */
    uint64_t completed;     /* tasks finished */
    uint64_t polls;         /* task resumptions */
    uint64_t steals;        /* successful steals */
    uint64_t steal_attempts;/* steals tried on a victim with work */
    uint64_t stolen;        /* tasks moved by steals */
    uint64_t global_pops;   /* tasks taken from the global queue */
    uint64_t parks;         /* times a worker went to sleep */
    uint64_t wakes;         /* times a sleeping worker was woken */
    uint64_t io_submitted;  /* io_uring submissions */
    uint64_t io_completed;  /* io_uring completions */
    uint64_t io_errors;     /* unexpected io_uring_enter failures */
    uint64_t stalls;        /* stalls seen by the watchdog */
    uint64_t coroutines;    /* coroutines created (others were reused) */
    int32_t backend;        /* enum faio_backend in use: io_uring or portable */
    int32_t reserved32;     /* zero in this version */
    uint64_t reserved[7];   /* zero in this version */
} faio_runtime_stats;

/* ---------------------------------------------------------------------
 * Library
 * ------------------------------------------------------------------- */

/* Returns the library's version, FAIO_VERSION_STRING of the header it was
 * built from ("0.1.0"). A static string. */
const char *faio_version(void);

/* Returns a static, never NULL description of code: 0, a FAIO_E* code or a
 * negated errno. Thread-safe. */
const char *faio_strerror(int code);

/* ---------------------------------------------------------------------
 * Runtime
 * ------------------------------------------------------------------- */

/* Starts a runtime configured by *cfg (NULL: all defaults) and stores its
 * handle in *out (untouched on failure). Returns FAIO_EINVAL for a NULL out,
 * a bad config, or an environment variable FAIO_BACKEND or FAIO_PINNED with
 * a value faio does not know (FAIO_PINNED=1 locks each worker to an OS
 * thread of its own, 0 does not; see the README's "Workers and threads");
 * FAIO_ENOURING when FAIO_BACKEND_IO_URING is
 * asked for and the kernel lacks or refuses io_uring; or the kernel's
 * negated errno when setting up a ring fails otherwise (-ENOMEM, ...). */
int faio_runtime_new(const faio_config *cfg, faio_runtime *out);

/* Shuts rt down and frees its handle: new work is refused with
 * FAIO_ESHUTDOWN, every task and operation still pending is cancelled (its
 * callback runs with FAIO_ECANCELED), the call waits for all of them and for
 * the workers to stop, then closes the rings. Callbacks may run on workers
 * while it waits. A host thread blocked in faio_block_on(rt) returns
 * FAIO_ECANCELED. Mutexes and channels created on rt stay valid until freed.
 * Returns FAIO_EBADHANDLE for a freed rt (double free, or a concurrent
 * free that won), FAIO_EWOULDBLOCK_WORKER inside a callback. */
int faio_runtime_free(faio_runtime rt);

/* Inside a callback, stores the handle of the runtime running it in *out.
 * Returns FAIO_ENOTWORKER on any other thread, FAIO_EINVAL for a NULL out. */
int faio_current(faio_runtime *out);

/* Runs fn(arg) as a new task on rt. From a host thread (or a callback of
 * another runtime) the task starts at once and belongs to no faio_block_on;
 * inside a callback of rt it starts when the callback returns, as a child of
 * the callback's task. fn runs exactly once if this returns 0, possibly
 * during a shutdown. Returns FAIO_EINVAL for a NULL fn, FAIO_EBADHANDLE,
 * FAIO_ESHUTDOWN. */
int faio_spawn(faio_runtime rt, faio_task_fn fn, void *arg);

/* Runs fn(arg) as a task on rt and blocks the calling host thread until it
 * and everything it started (spawned tasks, pending operations and their
 * callbacks, transitively) have finished. Returns 0 then; FAIO_ECANCELED if
 * rt shut down after fn ran, cancelling what was pending (still after
 * everything finished); FAIO_ESHUTDOWN if rt was shutting down already, in
 * which case fn did not run; FAIO_EINVAL, FAIO_EBADHANDLE, or
 * FAIO_EWOULDBLOCK_WORKER inside a callback. fn runs exactly once when this
 * returns 0 or FAIO_ECANCELED, never otherwise. */
int faio_block_on(faio_runtime rt, faio_task_fn fn, void *arg);

/* Stores rt's counters in *out. The busiest counters are published by each
 * worker every few dozen tasks, so they may lag right after a burst.
 * Returns FAIO_EINVAL for a NULL out, FAIO_EBADHANDLE. */
int faio_stats(faio_runtime rt, faio_runtime_stats *out);

/* ---------------------------------------------------------------------
 * Mutex: FIFO, shared by callbacks and host threads, not owned by a thread
 * (any thread or callback may unlock it).
 * ------------------------------------------------------------------- */

/* Creates an unlocked mutex whose lock callbacks run on rt's workers.
 * Returns FAIO_EINVAL for a NULL out, FAIO_EBADHANDLE, FAIO_ESHUTDOWN,
 * FAIO_ENOMEM. */
int faio_mutex_new(faio_runtime rt, faio_mutex *out);

/* Frees an unlocked mutex. Returns FAIO_EBUSY (and frees nothing) if it is
 * locked or a lock is being handed over, FAIO_EBADHANDLE. A lock requested
 * with faio_mutex_lock that has not yet started waiting (one a callback
 * requested starts when the callback returns) does not make it busy: its
 * callback gets FAIO_EBADHANDLE. */
int faio_mutex_free(faio_mutex m);

/* Stores in *out the handle of the runtime m was made on, whose workers run
 * its lock callbacks. Compared with faio_current, it tells a callback
 * whether a lock of m would complete on its own runtime or on another,
 * outside the callback's faio_block_on. After that runtime is freed it
 * stores the freed handle, which the runtime calls refuse with
 * FAIO_EBADHANDLE and which equals no live runtime's (handle values are
 * never reused). Returns FAIO_EINVAL for a NULL out, FAIO_EBADHANDLE. */
int faio_mutex_runtime(faio_mutex m, faio_runtime *out);

/* Requests the lock: cb(arg, 0) runs as a task on a worker once m is held by
 * the caller, who must then unlock it (in cb or later, anywhere). Waiters get
 * the lock in the order they queued. cb(arg, FAIO_ECANCELED) means the
 * runtime shut down and the lock was not taken; cb(arg, FAIO_EBADHANDLE)
 * that m was freed first (see faio_mutex_free). Returns FAIO_EINVAL for a
 * NULL cb, FAIO_EBADHANDLE, FAIO_ESHUTDOWN (cb will not run). */
int faio_mutex_lock(faio_mutex m, faio_done_fn cb, void *arg);

/* Locks m if it is free and no one waits for it: returns 0 (locked) or
 * FAIO_EBUSY. Never waits; usable anywhere. FAIO_EBADHANDLE. */
int faio_mutex_try_lock(faio_mutex m);

/* Unlocks m, handing it to the oldest waiter if any. Usable anywhere.
 * Returns FAIO_ENOTLOCKED if m is not locked, FAIO_EBADHANDLE. */
int faio_mutex_unlock(faio_mutex m);

/* Blocks the calling host thread until it holds m. Works after m's runtime
 * was freed. Returns FAIO_EWOULDBLOCK_WORKER inside a callback,
 * FAIO_EBADHANDLE. */
int faio_mutex_lock_blocking(faio_mutex m);

/* ---------------------------------------------------------------------
 * Channel of pointer-sized items: bounded, FIFO, many senders and
 * receivers. A waiting receiver gets an item straight from the sender.
 * ------------------------------------------------------------------- */

/* Creates a channel buffering up to capacity items (0: each send waits for
 * a receiver) whose callbacks run on rt's workers. The buffer is allocated
 * now, 8 bytes an item. Returns FAIO_EINVAL for a NULL out or a capacity
 * above 2^24, FAIO_EBADHANDLE, FAIO_ESHUTDOWN, FAIO_ENOMEM. */
int faio_chan_new(faio_runtime rt, size_t capacity, faio_chan *out);

/* Closes ch and frees its handle. Pending sends and receives complete with
 * FAIO_ECLOSED; items still buffered are dropped (drain them first with
 * faio_chan_try_recv if they own memory). FAIO_EBADHANDLE. */
int faio_chan_free(faio_chan ch);

/* Stores in *out the handle of the runtime ch was made on, whose workers run
 * its send and receive callbacks; as faio_mutex_runtime. Returns FAIO_EINVAL
 * for a NULL out, FAIO_EBADHANDLE. */
int faio_chan_runtime(faio_chan ch, faio_runtime *out);

/* Closes the sending side: sends in progress and later fail with
 * FAIO_ECLOSED (their item was not delivered); receivers take the buffered
 * items, then get FAIO_ECLOSED. Returns FAIO_ECLOSED if ch is already
 * closed, FAIO_EBADHANDLE. */
int faio_chan_close(faio_chan ch);

/* Sends item: cb(arg, 0) runs on a worker once a receiver took it or it was
 * buffered; cb(arg, FAIO_ECLOSED) if the channel closed first (the item was
 * not delivered and is the caller's again); FAIO_ECANCELED on shutdown.
 * Returns FAIO_EINVAL for a NULL cb, FAIO_EBADHANDLE, FAIO_ESHUTDOWN. */
int faio_chan_send(faio_chan ch, void *item, faio_done_fn cb, void *arg);

/* Receives: cb(arg, item, 0) runs on a worker with the oldest item;
 * cb(arg, NULL, FAIO_ECLOSED) once the channel is closed and drained;
 * FAIO_ECANCELED on shutdown (no item was taken). Returns FAIO_EINVAL for a
 * NULL cb, FAIO_EBADHANDLE, FAIO_ESHUTDOWN. */
int faio_chan_recv(faio_chan ch, faio_recv_fn cb, void *arg);

/* Sends item if a receiver waits or there is room: 0, or FAIO_EAGAIN (not
 * sent), FAIO_ECLOSED, FAIO_EBADHANDLE. Never waits; usable anywhere. */
int faio_chan_try_send(faio_chan ch, void *item);

/* Receives an item into *item if one is buffered or a sender waits: 0, or
 * FAIO_EAGAIN, FAIO_ECLOSED (closed and drained), FAIO_EINVAL for a NULL
 * item, FAIO_EBADHANDLE. Never waits; usable anywhere. */
int faio_chan_try_recv(faio_chan ch, void **item);

/* Blocks the calling host thread until item is delivered or buffered (0) or
 * the channel is closed (FAIO_ECLOSED, not delivered). Works after the
 * runtime was freed. FAIO_EWOULDBLOCK_WORKER inside a callback,
 * FAIO_EBADHANDLE. */
int faio_chan_send_blocking(faio_chan ch, void *item);

/* Blocks the calling host thread until an item arrives (0, stored in *item)
 * or the channel is closed and drained (FAIO_ECLOSED). FAIO_EINVAL for a
 * NULL item, FAIO_EWOULDBLOCK_WORKER inside a callback, FAIO_EBADHANDLE. */
int faio_chan_recv_blocking(faio_chan ch, void **item);

/* ---------------------------------------------------------------------
 * Time
 * ------------------------------------------------------------------- */

/* cb(arg, 0) runs on a worker of rt no earlier than nanoseconds from now
 * (on an idle machine within about one timer resolution after);
 * FAIO_ECANCELED on shutdown. 0 ns completes at once. Returns FAIO_EINVAL
 * for a NULL cb, FAIO_EBADHANDLE, FAIO_ESHUTDOWN. */
int faio_sleep(faio_runtime rt, uint64_t nanoseconds, faio_done_fn cb, void *arg);

/* ---------------------------------------------------------------------
 * I/O on descriptors the caller owns, through the io_uring of the worker
 * that runs the operation. Each call returns 0 (cb will run) or FAIO_EINVAL,
 * FAIO_EBADHANDLE, FAIO_ESHUTDOWN (cb will not run). The kernel's result
 * comes to cb: >= 0 on success, a negated errno on failure (a bad fd is
 * -EBADF in cb, not an error of the call), FAIO_ECANCELED if the runtime
 * shut down first; a cancelled operation's callback runs only once the
 * kernel has let go of the buffer. Transfers are capped at 0x7ffff000 bytes
 * per call, as read(2) caps them; check the count for short transfers.
 * ------------------------------------------------------------------- */

/* Reads up to len bytes into buf at offset (-1: at and advancing the file
 * position), like pread(2) (read(2) for -1). buf may be NULL only if len is
 * 0; offset below -1 is FAIO_EINVAL. On a descriptor without a position (a
 * pipe, a socket, a terminal) give -1 or 0, which read alike: another
 * offset there is -ESPIPE or ignored, depending on the descriptor and the
 * backend. */
int faio_read(faio_runtime rt, int fd, void *buf, size_t len, int64_t offset,
              faio_io_fn cb, void *arg);

/* Writes up to len bytes from buf at offset (-1: the file position), like
 * pwrite(2) / write(2). Same rules as faio_read. */
int faio_write(faio_runtime rt, int fd, const void *buf, size_t len,
               int64_t offset, faio_io_fn cb, void *arg);

/* Accepts a connection on the listening socket fd, like accept4(2) with
 * flags (SOCK_NONBLOCK, SOCK_CLOEXEC): cb gets the new descriptor, which the
 * caller owns. */
int faio_accept(faio_runtime rt, int fd, int flags, faio_io_fn cb, void *arg);

/* Connects socket fd to addr (copied before the call returns; addrlen at
 * most sizeof(struct sockaddr_storage)), like connect(2): cb gets 0 or a
 * negated errno. */
int faio_connect(faio_runtime rt, int fd, const struct sockaddr *addr,
                 socklen_t addrlen, faio_done_fn cb, void *arg);

/* Receives up to len bytes from socket fd, like recv(2) with flags: cb gets
 * the count, 0 when the peer has shut down its side. */
int faio_recv(faio_runtime rt, int fd, void *buf, size_t len, int flags,
              faio_io_fn cb, void *arg);

/* Sends up to len bytes on socket fd, like send(2) with flags (MSG_NOSIGNAL
 * is always added: a reset peer is -EPIPE, never a signal). */
int faio_send(faio_runtime rt, int fd, const void *buf, size_t len, int flags,
              faio_io_fn cb, void *arg);

/* Closes fd, like close(2): cb gets 0 or a negated errno. */
int faio_close(faio_runtime rt, int fd, faio_done_fn cb, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* FAIO_H */
