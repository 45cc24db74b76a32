/*
 * The public functions of faio.h. Each checks its pointer arguments and
 * calls its Go implementation (an //export faiocgo_* function in this
 * package) with integers only, adding the thread's callback marker.
 *
 * Why a C layer in front of the Go exports:
 *  - This file includes faio.h and defines every function it declares, so
 *    the compiler checks each definition against its public prototype.
 *  - Go never receives a void * it could take for a Go pointer: user data,
 *    channel items and function pointers cross as uintptr_t (a small integer
 *    cast to void *, common as user data, would make the Go runtime throw
 *    "invalid pointer found on stack" if it sat in a pointer-typed Go
 *    variable while the stack grew).
 *  - The marker is a plain __thread read here, free, rather than a cgo call
 *    from Go.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "faio.h"
#include "capi.h"
#include "_cgo_export.h"

#define FAIO_HIDDEN __attribute__((visibility("hidden")))

/*
 * The handle of the frame whose callback this thread is running, 0 outside
 * callbacks. Only the trampolines below write it, around the call of a
 * callback on a worker thread; callbacks cannot nest (no faio call invokes a
 * callback), but the previous value is restored anyway.
 */
static __thread uint64_t faio_tls_frame;
/* The handle of that frame's runtime, for faio_current: answered here, in
 * C, it costs no call into Go, which would double the cost of every await
 * of faio.hpp that checks the caller's runtime. */
static __thread uint64_t faio_tls_rt;

FAIO_HIDDEN void faiocall_task(uintptr_t fn, uintptr_t arg, uint64_t frame, uint64_t rt)
{
    uint64_t prev = faio_tls_frame, prev_rt = faio_tls_rt;
    faio_tls_frame = frame;
    faio_tls_rt = rt;
    ((faio_task_fn)fn)((void *)arg);
    faio_tls_frame = prev;
    faio_tls_rt = prev_rt;
}

FAIO_HIDDEN void faiocall_done(uintptr_t fn, uintptr_t arg, int status, uint64_t frame, uint64_t rt)
{
    uint64_t prev = faio_tls_frame, prev_rt = faio_tls_rt;
    faio_tls_frame = frame;
    faio_tls_rt = rt;
    ((faio_done_fn)fn)((void *)arg, status);
    faio_tls_frame = prev;
    faio_tls_rt = prev_rt;
}

FAIO_HIDDEN void faiocall_recv(uintptr_t fn, uintptr_t arg, uintptr_t item, int status, uint64_t frame, uint64_t rt)
{
    uint64_t prev = faio_tls_frame, prev_rt = faio_tls_rt;
    faio_tls_frame = frame;
    faio_tls_rt = rt;
    ((faio_recv_fn)fn)((void *)arg, (void *)item, status);
    faio_tls_frame = prev;
    faio_tls_rt = prev_rt;
}

FAIO_HIDDEN void faiocall_io(uintptr_t fn, uintptr_t arg, int64_t result, uint64_t frame, uint64_t rt)
{
    uint64_t prev = faio_tls_frame, prev_rt = faio_tls_rt;
    faio_tls_frame = frame;
    faio_tls_rt = rt;
    ((faio_io_fn)fn)((void *)arg, result);
    faio_tls_frame = prev;
    faio_tls_rt = prev_rt;
}

/* ---- library ---- */

const char *faio_version(void)
{
    return FAIO_VERSION_STRING;
}

const char *faio_strerror(int code)
{
    switch (code) {
    case FAIO_OK: return "success";
    case FAIO_EINVAL: return "faio: invalid argument";
    case FAIO_EBADHANDLE: return "faio: invalid handle (zero, freed, or of another kind)";
    case FAIO_ESHUTDOWN: return "faio: runtime is shutting down";
    case FAIO_EWOULDBLOCK_WORKER: return "faio: blocking call on a worker thread (inside a callback)";
    case FAIO_EBUSY: return "faio: mutex is locked";
    case FAIO_EAGAIN: return "faio: channel operation would wait";
    case FAIO_ECLOSED: return "faio: channel is closed";
    case FAIO_ECANCELED: return "faio: operation cancelled by runtime shutdown";
    case FAIO_ENOTLOCKED: return "faio: mutex is not locked";
    case FAIO_ENOTWORKER: return "faio: not inside a faio callback";
    case FAIO_ENOMEM: return "faio: too many live handles";
    case FAIO_EINTERNAL: return "faio: internal error";
    case FAIO_ENOURING: return "faio: io_uring is unavailable (refused by a seccomp filter, as container runtimes do by default, "
                               "or missing from the kernel); FAIO_BACKEND_AUTO runs on the portable backend instead";
    }
    if (code < 0 && code > -4096) {
        /* The text must be static and thread-safe. strerrordesc_np's is
         * (glibc 2.32+). Older glibc's strerror writes the text of an errno
         * it does not know into one shared buffer, which the next call
         * overwrites, so GNU strerror_r is asked instead: it returns its
         * static text for a known errno and writes into tmp only for an
         * unknown one, which falls through to faio's own text. musl's
         * strerror returns static texts. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
        const char *s = strerrordesc_np(-code);
        if (s != NULL)
            return s;
#elif defined(__GLIBC__)
        char tmp[1];
        const char *s = strerror_r(-code, tmp, sizeof tmp);
        if (s != tmp)
            return s;
#else
        return strerror(-code);
#endif
    }
    return "faio: unknown error code";
}

/* ---- runtime ---- */

int faio_runtime_new(const faio_config *cfg, faio_runtime *out)
{
    faio_config zero;
    if (out == NULL)
        return FAIO_EINVAL;
    if (cfg == NULL) {
        memset(&zero, 0, sizeof zero);
        cfg = &zero;
    }
    for (size_t i = 0; i < sizeof cfg->reserved / sizeof cfg->reserved[0]; i++)
        if (cfg->reserved[i] != 0)
            return FAIO_EINVAL;
    if (cfg->reserved32 != 0)
        return FAIO_EINVAL;
    uint64_t h = 0;
    int rc = faiocgo_runtime_new(cfg->workers, cfg->ring_entries, cfg->local_queue_capacity,
                                 cfg->global_queue_interval, cfg->io_interval, cfg->submit_batch,
                                 cfg->timer_resolution_ns, cfg->stall_threshold_ns, cfg->io_backend, &h);
    if (rc == 0)
        out->h = h;
    return rc;
}

int faio_runtime_free(faio_runtime rt)
{
    return faiocgo_runtime_free(rt.h, faio_tls_frame);
}

int faio_current(faio_runtime *out)
{
    if (out == NULL)
        return FAIO_EINVAL;
    if (faio_tls_frame == 0)
        return FAIO_ENOTWORKER;
    out->h = faio_tls_rt;
    return FAIO_OK;
}

int faio_spawn(faio_runtime rt, faio_task_fn fn, void *arg)
{
    if (fn == NULL)
        return FAIO_EINVAL;
    return faiocgo_spawn(rt.h, (uintptr_t)fn, (uintptr_t)arg, faio_tls_frame);
}

int faio_block_on(faio_runtime rt, faio_task_fn fn, void *arg)
{
    if (fn == NULL)
        return FAIO_EINVAL;
    return faiocgo_block_on(rt.h, (uintptr_t)fn, (uintptr_t)arg, faio_tls_frame);
}

int faio_stats(faio_runtime rt, faio_runtime_stats *out)
{
    if (out == NULL)
        return FAIO_EINVAL;
    faio_runtime_stats st;
    memset(&st, 0, sizeof st);
    int rc = faiocgo_stats(rt.h, &st);
    if (rc == 0)
        *out = st;
    return rc;
}

/* ---- mutex ---- */

int faio_mutex_new(faio_runtime rt, faio_mutex *out)
{
    if (out == NULL)
        return FAIO_EINVAL;
    uint64_t h = 0;
    int rc = faiocgo_mutex_new(rt.h, &h);
    if (rc == 0)
        out->h = h;
    return rc;
}

int faio_mutex_free(faio_mutex m)
{
    return faiocgo_mutex_free(m.h);
}

int faio_mutex_runtime(faio_mutex m, faio_runtime *out)
{
    if (out == NULL)
        return FAIO_EINVAL;
    uint64_t h = 0;
    int rc = faiocgo_mutex_runtime(m.h, &h);
    if (rc == 0)
        out->h = h;
    return rc;
}

int faio_mutex_lock(faio_mutex m, faio_done_fn cb, void *arg)
{
    if (cb == NULL)
        return FAIO_EINVAL;
    return faiocgo_mutex_lock(m.h, (uintptr_t)cb, (uintptr_t)arg, faio_tls_frame);
}

int faio_mutex_try_lock(faio_mutex m)
{
    return faiocgo_mutex_try_lock(m.h);
}

int faio_mutex_unlock(faio_mutex m)
{
    return faiocgo_mutex_unlock(m.h);
}

int faio_mutex_lock_blocking(faio_mutex m)
{
    return faiocgo_mutex_lock_blocking(m.h, faio_tls_frame);
}

/* ---- channel ---- */

int faio_chan_new(faio_runtime rt, size_t capacity, faio_chan *out)
{
    if (out == NULL)
        return FAIO_EINVAL;
    uint64_t h = 0;
    int rc = faiocgo_chan_new(rt.h, (uint64_t)capacity, &h);
    if (rc == 0)
        out->h = h;
    return rc;
}

int faio_chan_free(faio_chan ch)
{
    return faiocgo_chan_free(ch.h);
}

int faio_chan_runtime(faio_chan ch, faio_runtime *out)
{
    if (out == NULL)
        return FAIO_EINVAL;
    uint64_t h = 0;
    int rc = faiocgo_chan_runtime(ch.h, &h);
    if (rc == 0)
        out->h = h;
    return rc;
}

int faio_chan_close(faio_chan ch)
{
    return faiocgo_chan_close(ch.h);
}

int faio_chan_send(faio_chan ch, void *item, faio_done_fn cb, void *arg)
{
    if (cb == NULL)
        return FAIO_EINVAL;
    return faiocgo_chan_send(ch.h, (uintptr_t)item, (uintptr_t)cb, (uintptr_t)arg, faio_tls_frame);
}

int faio_chan_recv(faio_chan ch, faio_recv_fn cb, void *arg)
{
    if (cb == NULL)
        return FAIO_EINVAL;
    return faiocgo_chan_recv(ch.h, (uintptr_t)cb, (uintptr_t)arg, faio_tls_frame);
}

int faio_chan_try_send(faio_chan ch, void *item)
{
    return faiocgo_chan_try_send(ch.h, (uintptr_t)item);
}

int faio_chan_try_recv(faio_chan ch, void **item)
{
    if (item == NULL)
        return FAIO_EINVAL;
    uintptr_t v = 0;
    int rc = faiocgo_chan_try_recv(ch.h, &v);
    if (rc == 0)
        *item = (void *)v;
    return rc;
}

int faio_chan_send_blocking(faio_chan ch, void *item)
{
    return faiocgo_chan_send_blocking(ch.h, (uintptr_t)item, faio_tls_frame);
}

int faio_chan_recv_blocking(faio_chan ch, void **item)
{
    if (item == NULL)
        return FAIO_EINVAL;
    uintptr_t v = 0;
    int rc = faiocgo_chan_recv_blocking(ch.h, &v, faio_tls_frame);
    if (rc == 0)
        *item = (void *)v;
    return rc;
}

/* ---- time ---- */

int faio_sleep(faio_runtime rt, uint64_t nanoseconds, faio_done_fn cb, void *arg)
{
    if (cb == NULL)
        return FAIO_EINVAL;
    return faiocgo_sleep(rt.h, nanoseconds, (uintptr_t)cb, (uintptr_t)arg, faio_tls_frame);
}

/* ---- I/O ---- */

int faio_read(faio_runtime rt, int fd, void *buf, size_t len, int64_t offset,
              faio_io_fn cb, void *arg)
{
    if (cb == NULL || (buf == NULL && len != 0))
        return FAIO_EINVAL;
    return faiocgo_read(rt.h, fd, buf, (uint64_t)len, offset, (uintptr_t)cb, (uintptr_t)arg,
                        faio_tls_frame);
}

int faio_write(faio_runtime rt, int fd, const void *buf, size_t len, int64_t offset,
               faio_io_fn cb, void *arg)
{
    if (cb == NULL || (buf == NULL && len != 0))
        return FAIO_EINVAL;
    /* The kernel only reads this buffer; Go's slice type has no const. */
    return faiocgo_write(rt.h, fd, (void *)buf, (uint64_t)len, offset, (uintptr_t)cb,
                         (uintptr_t)arg, faio_tls_frame);
}

int faio_accept(faio_runtime rt, int fd, int flags, faio_io_fn cb, void *arg)
{
    if (cb == NULL)
        return FAIO_EINVAL;
    return faiocgo_accept(rt.h, fd, flags, (uintptr_t)cb, (uintptr_t)arg, faio_tls_frame);
}

int faio_connect(faio_runtime rt, int fd, const struct sockaddr *addr, socklen_t addrlen,
                 faio_done_fn cb, void *arg)
{
    if (cb == NULL || addr == NULL || addrlen == 0 ||
        addrlen > (socklen_t)sizeof(struct sockaddr_storage))
        return FAIO_EINVAL;
    return faiocgo_connect(rt.h, fd, (void *)addr, (uint32_t)addrlen, (uintptr_t)cb,
                           (uintptr_t)arg, faio_tls_frame);
}

int faio_recv(faio_runtime rt, int fd, void *buf, size_t len, int flags, faio_io_fn cb,
              void *arg)
{
    if (cb == NULL || (buf == NULL && len != 0))
        return FAIO_EINVAL;
    return faiocgo_recv(rt.h, fd, buf, (uint64_t)len, flags, (uintptr_t)cb, (uintptr_t)arg,
                        faio_tls_frame);
}

int faio_send(faio_runtime rt, int fd, const void *buf, size_t len, int flags, faio_io_fn cb,
              void *arg)
{
    if (cb == NULL || (buf == NULL && len != 0))
        return FAIO_EINVAL;
    return faiocgo_send(rt.h, fd, (void *)buf, (uint64_t)len, flags, (uintptr_t)cb,
                        (uintptr_t)arg, faio_tls_frame);
}

int faio_close(faio_runtime rt, int fd, faio_done_fn cb, void *arg)
{
    if (cb == NULL)
        return FAIO_EINVAL;
    return faiocgo_close(rt.h, fd, (uintptr_t)cb, (uintptr_t)arg, faio_tls_frame);
}
