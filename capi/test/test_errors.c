/* Tests of the error contract: bad handles and arguments, blocking calls
 * inside callbacks, shutdown with operations pending, calls after
 * faio_runtime_free; and two runtimes in one process. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static void nop_task(void *arg) { (void)arg; }
static void nop_done(void *arg, int status) { (void)arg; (void)status; }
static void nop_recv(void *arg, void *item, int status) { (void)arg; (void)item; (void)status; }
static void nop_io(void *arg, int64_t result) { (void)arg; (void)result; }

static void test_version_and_strerror(void)
{
    CHECK(strcmp(faio_version(), FAIO_VERSION_STRING) == 0);
    /* Every code has its own text, FAIO_OK too (test_misuse.c checks the
     * texts of unknown codes and errnos). */
    CHECK(faio_strerror(FAIO_OK) != NULL);
    for (int i = 0; i < faio_codes_count; i++) {
        CHECK(faio_strerror(faio_codes[i]) != NULL);
        CHECK(strcmp(faio_strerror(faio_codes[i]), faio_strerror(FAIO_OK)) != 0);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(faio_strerror(faio_codes[i]), faio_strerror(faio_codes[j])) != 0);
    }
    CHECK(strcmp(faio_strerror(-EBADF), strerror(EBADF)) == 0);
    CHECK(faio_strerror(12345) != NULL);
    CHECK(faio_strerror(-99999) != NULL);
}

/* Every function with a zero, forged or wrong-kind handle. */
static void check_bad_runtime(faio_runtime rt)
{
    faio_mutex m;
    faio_chan ch;
    faio_runtime_stats st;
    char buf[4];
    struct sockaddr sa = {0};
    CHECK_RC(faio_runtime_free(rt), FAIO_EBADHANDLE);
    CHECK_RC(faio_spawn(rt, nop_task, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_block_on(rt, nop_task, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_stats(rt, &st), FAIO_EBADHANDLE);
    CHECK_RC(faio_mutex_new(rt, &m), FAIO_EBADHANDLE);
    CHECK_RC(faio_chan_new(rt, 1, &ch), FAIO_EBADHANDLE);
    CHECK_RC(faio_sleep(rt, 1, nop_done, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_read(rt, 0, buf, sizeof buf, 0, nop_io, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_write(rt, 1, buf, sizeof buf, 0, nop_io, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_accept(rt, 0, 0, nop_io, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_connect(rt, 0, &sa, sizeof sa, nop_done, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_recv(rt, 0, buf, sizeof buf, 0, nop_io, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_send(rt, 0, buf, sizeof buf, 0, nop_io, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_close(rt, -1, nop_done, NULL), FAIO_EBADHANDLE);
}

static void check_bad_mutex(faio_mutex m)
{
    faio_runtime rt = {0};
    CHECK_RC(faio_mutex_free(m), FAIO_EBADHANDLE);
    CHECK_RC(faio_mutex_runtime(m, &rt), FAIO_EBADHANDLE);
    CHECK(rt.h == 0); /* *out untouched */
    CHECK_RC(faio_mutex_lock(m, nop_done, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_mutex_try_lock(m), FAIO_EBADHANDLE);
    CHECK_RC(faio_mutex_unlock(m), FAIO_EBADHANDLE);
    CHECK_RC(faio_mutex_lock_blocking(m), FAIO_EBADHANDLE);
}

static void check_bad_chan(faio_chan ch)
{
    void *item;
    faio_runtime rt = {0};
    CHECK_RC(faio_chan_free(ch), FAIO_EBADHANDLE);
    CHECK_RC(faio_chan_runtime(ch, &rt), FAIO_EBADHANDLE);
    CHECK(rt.h == 0);
    CHECK_RC(faio_chan_close(ch), FAIO_EBADHANDLE);
    CHECK_RC(faio_chan_send(ch, NULL, nop_done, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_chan_recv(ch, nop_recv, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_chan_try_send(ch, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_chan_try_recv(ch, &item), FAIO_EBADHANDLE);
    CHECK_RC(faio_chan_send_blocking(ch, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_chan_recv_blocking(ch, &item), FAIO_EBADHANDLE);
}

static void test_bad_handles(void)
{
    faio_runtime rt = new_runtime(1);
    faio_mutex m;
    faio_chan ch;
    CHECK_RC(faio_mutex_new(rt, &m), 0);
    CHECK_RC(faio_chan_new(rt, 1, &ch), 0);

    /* Zero handles. */
    check_bad_runtime((faio_runtime){0});
    check_bad_mutex((faio_mutex){0});
    check_bad_chan((faio_chan){0});
    /* Forged: a live index with another generation, indexes never used. */
    check_bad_runtime((faio_runtime){rt.h ^ (1ULL << 40)});
    check_bad_runtime((faio_runtime){0xffffffffffffffffULL});
    check_bad_mutex((faio_mutex){(1ULL << 32) | 0xfffffffULL});
    check_bad_chan((faio_chan){0x00000001deadbeefULL});
    /* A live handle of another kind. */
    check_bad_runtime((faio_runtime){m.h});
    check_bad_mutex((faio_mutex){ch.h});
    check_bad_chan((faio_chan){rt.h});

    /* Freed handles: use after free and double free. */
    CHECK_RC(faio_mutex_free(m), 0);
    check_bad_mutex(m);
    CHECK_RC(faio_chan_free(ch), 0);
    check_bad_chan(ch);
    /* A new object may reuse the slot; the old handle stays dead. */
    faio_mutex m2;
    CHECK_RC(faio_mutex_new(rt, &m2), 0);
    CHECK(m2.h != m.h);
    check_bad_mutex(m);
    CHECK_RC(faio_mutex_free(m2), 0);
    CHECK_RC(faio_runtime_free(rt), 0);
    check_bad_runtime(rt);
}

static void test_bad_arguments(void)
{
    faio_runtime rt = new_runtime(1);
    faio_mutex m;
    faio_chan ch;
    void *item;
    char buf[8];
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    CHECK_RC(faio_mutex_new(rt, &m), 0);
    CHECK_RC(faio_chan_new(rt, 1, &ch), 0);

    CHECK_RC(faio_runtime_new(NULL, NULL), FAIO_EINVAL);
    CHECK_RC(faio_current(NULL), FAIO_EINVAL);
    CHECK_RC(faio_spawn(rt, NULL, NULL), FAIO_EINVAL);
    CHECK_RC(faio_block_on(rt, NULL, NULL), FAIO_EINVAL);
    CHECK_RC(faio_stats(rt, NULL), FAIO_EINVAL);
    CHECK_RC(faio_mutex_new(rt, NULL), FAIO_EINVAL);
    CHECK_RC(faio_mutex_lock(m, NULL, NULL), FAIO_EINVAL);
    CHECK_RC(faio_mutex_runtime(m, NULL), FAIO_EINVAL);
    CHECK_RC(faio_chan_new(rt, 1, NULL), FAIO_EINVAL);
    CHECK_RC(faio_chan_new(rt, ((size_t)1 << 24) + 1, &ch), FAIO_EINVAL);
    CHECK_RC(faio_chan_new(rt, SIZE_MAX, &ch), FAIO_EINVAL);
    CHECK_RC(faio_chan_send(ch, NULL, NULL, NULL), FAIO_EINVAL);
    CHECK_RC(faio_chan_recv(ch, NULL, NULL), FAIO_EINVAL);
    CHECK_RC(faio_chan_runtime(ch, NULL), FAIO_EINVAL);
    CHECK_RC(faio_chan_try_recv(ch, NULL), FAIO_EINVAL);
    CHECK_RC(faio_chan_recv_blocking(ch, NULL), FAIO_EINVAL);
    CHECK_RC(faio_sleep(rt, 1, NULL, NULL), FAIO_EINVAL);
    CHECK_RC(faio_read(rt, 0, NULL, 1, 0, nop_io, NULL), FAIO_EINVAL);
    CHECK_RC(faio_read(rt, 0, buf, sizeof buf, -2, nop_io, NULL), FAIO_EINVAL);
    CHECK_RC(faio_read(rt, 0, buf, sizeof buf, 0, NULL, NULL), FAIO_EINVAL);
    CHECK_RC(faio_write(rt, 1, NULL, 1, 0, nop_io, NULL), FAIO_EINVAL);
    CHECK_RC(faio_write(rt, 1, buf, sizeof buf, -7, nop_io, NULL), FAIO_EINVAL);
    CHECK_RC(faio_accept(rt, 0, 0, NULL, NULL), FAIO_EINVAL);
    CHECK_RC(faio_connect(rt, 0, NULL, 16, nop_done, NULL), FAIO_EINVAL);
    CHECK_RC(faio_connect(rt, 0, (struct sockaddr *)&ss, 0, nop_done, NULL), FAIO_EINVAL);
    CHECK_RC(faio_connect(rt, 0, (struct sockaddr *)&ss, sizeof ss + 1, nop_done, NULL), FAIO_EINVAL);
    CHECK_RC(faio_recv(rt, 0, NULL, 1, 0, nop_io, NULL), FAIO_EINVAL);
    CHECK_RC(faio_send(rt, 0, NULL, 1, 0, nop_io, NULL), FAIO_EINVAL);
    CHECK_RC(faio_close(rt, 0, NULL, NULL), FAIO_EINVAL);
    (void)item;

    /* Configs: out-of-range fields and reserved fields. */
    faio_config cfg;
    faio_runtime bad;
    memset(&cfg, 0, sizeof cfg);
    cfg.workers = -1;
    CHECK_RC(faio_runtime_new(&cfg, &bad), FAIO_EINVAL);
    memset(&cfg, 0, sizeof cfg);
    cfg.local_queue_capacity = 3; /* not a power of two */
    CHECK_RC(faio_runtime_new(&cfg, &bad), FAIO_EINVAL);
    memset(&cfg, 0, sizeof cfg);
    cfg.ring_entries = 1 << 20;
    CHECK_RC(faio_runtime_new(&cfg, &bad), FAIO_EINVAL);
    memset(&cfg, 0, sizeof cfg);
    cfg.timer_resolution_ns = -5;
    CHECK_RC(faio_runtime_new(&cfg, &bad), FAIO_EINVAL);
    memset(&cfg, 0, sizeof cfg);
    cfg.stall_threshold_ns = 1; /* under the 1 ms minimum: refused, not a crash */
    CHECK_RC(faio_runtime_new(&cfg, &bad), FAIO_EINVAL);
    memset(&cfg, 0, sizeof cfg);
    cfg.reserved[6] = 1;
    CHECK_RC(faio_runtime_new(&cfg, &bad), FAIO_EINVAL);
    /* NULL config: defaults. */
    CHECK_RC(faio_runtime_new(NULL, &bad), 0);
    CHECK_RC(faio_runtime_free(bad), 0);

    CHECK_RC(faio_mutex_free(m), 0);
    CHECK_RC(faio_chan_free(ch), 0);
    CHECK_RC(faio_runtime_free(rt), 0);
}

/* ---- blocking calls inside a callback ---- */

struct worker_calls {
    faio_runtime rt;
    faio_mutex m;
    faio_chan ch;
    int ran;
};

static void worker_callback(void *arg)
{
    struct worker_calls *w = arg;
    void *item;
    faio_runtime cur = {0};
    CHECK_RC(faio_current(&cur), 0);
    CHECK(cur.h == w->rt.h);
    CHECK_RC(faio_mutex_lock_blocking(w->m), FAIO_EWOULDBLOCK_WORKER);
    CHECK_RC(faio_chan_send_blocking(w->ch, NULL), FAIO_EWOULDBLOCK_WORKER);
    CHECK_RC(faio_chan_recv_blocking(w->ch, &item), FAIO_EWOULDBLOCK_WORKER);
    CHECK_RC(faio_block_on(w->rt, nop_task, NULL), FAIO_EWOULDBLOCK_WORKER);
    CHECK_RC(faio_runtime_free(w->rt), FAIO_EWOULDBLOCK_WORKER);
    /* The non-blocking calls work. */
    CHECK_RC(faio_mutex_try_lock(w->m), 0);
    CHECK_RC(faio_mutex_unlock(w->m), 0);
    CHECK_RC(faio_chan_try_send(w->ch, (void *)(uintptr_t)3), 0);
    CHECK_RC(faio_chan_try_recv(w->ch, &item), 0);
    CHECK(item == (void *)(uintptr_t)3);
    w->ran++;
}

static void worker_lock_callback(void *arg, int status)
{
    struct worker_calls *w = arg;
    CHECK_RC(status, 0);
    CHECK_RC(faio_mutex_unlock(w->m), 0);
    worker_callback(arg);
}

static void test_blocking_on_worker(void)
{
    struct worker_calls w = {new_runtime(0), {0}, {0}, 0};
    faio_runtime cur;
    CHECK_RC(faio_current(&cur), FAIO_ENOTWORKER);
    CHECK_RC(faio_mutex_new(w.rt, &w.m), 0);
    CHECK_RC(faio_chan_new(w.rt, 1, &w.ch), 0);
    CHECK_RC(faio_block_on(w.rt, worker_callback, &w), 0);
    /* From a host thread, the lock callback runs on a worker too. */
    CHECK_RC(faio_mutex_lock(w.m, worker_lock_callback, &w), 0);
    CHECK_RC(faio_mutex_lock_blocking(w.m), 0); /* after the callback unlocked */
    CHECK_RC(faio_mutex_unlock(w.m), 0);
    for (int i = 0; i < 5000 && w.ran < 2; i++)
        usleep(1000);
    CHECK(w.ran == 2);
    /* Outside callbacks the marker is clear again. */
    CHECK_RC(faio_current(&cur), FAIO_ENOTWORKER);
    CHECK_RC(faio_mutex_free(w.m), 0);
    CHECK_RC(faio_chan_free(w.ch), 0);
    CHECK_RC(faio_runtime_free(w.rt), 0);
}

/* ---- shutdown with operations pending ---- */

enum { PENDING = 4 };
static atomic_int pending_status[PENDING];
static atomic_int pending_calls[PENDING];

static void pending_done(void *arg, int status)
{
    int i = (int)(intptr_t)arg;
    atomic_fetch_add(&pending_calls[i], 1);
    atomic_store(&pending_status[i], status);
}

static void pending_recv(void *arg, void *item, int status)
{
    CHECK(item == NULL);
    pending_done(arg, status);
}

struct long_sleep {
    faio_runtime rt;
    atomic_int started;
};

static void long_sleep_root(void *arg)
{
    struct long_sleep *ls = arg;
    CHECK_RC(faio_sleep(ls->rt, 60ULL * 1000000000, pending_done, (void *)(intptr_t)3), 0);
    atomic_store(&ls->started, 1);
}

static void *block_on_long_sleep(void *arg)
{
    struct long_sleep *ls = arg;
    CHECK_RC(faio_block_on(ls->rt, long_sleep_root, ls), FAIO_ECANCELED);
    return NULL;
}

static void test_shutdown_cancels_pending(void)
{
    struct long_sleep ls = {new_runtime(0), 0};
    faio_runtime rt = ls.rt;
    faio_mutex m;
    faio_chan ch;
    for (int i = 0; i < PENDING; i++) {
        atomic_store(&pending_status[i], 1);
        atomic_store(&pending_calls[i], 0);
    }
    CHECK_RC(faio_mutex_new(rt, &m), 0);
    CHECK_RC(faio_chan_new(rt, 0, &ch), 0);
    CHECK_RC(faio_mutex_lock_blocking(m), 0);
    CHECK_RC(faio_mutex_lock(m, pending_done, (void *)(intptr_t)0), 0);
    CHECK_RC(faio_chan_recv(ch, pending_recv, (void *)(intptr_t)1), 0);
    CHECK_RC(faio_sleep(rt, UINT64_MAX, pending_done, (void *)(intptr_t)2), 0); /* forever */
    pthread_t t;
    pthread_create(&t, NULL, block_on_long_sleep, &ls);
    while (!atomic_load(&ls.started))
        usleep(1000);

    int64_t t0 = now_ns();
    CHECK_RC(faio_runtime_free(rt), 0);
    pthread_join(t, NULL);
    CHECK(now_ns() - t0 < 30LL * 1000000000); /* did not wait for the sleeps */
    for (int i = 0; i < PENDING; i++) {
        CHECK(atomic_load(&pending_calls[i]) == 1);
        CHECK_RC(atomic_load(&pending_status[i]), FAIO_ECANCELED);
    }

    /* After the free: the runtime handle is dead; the mutex and channel
     * handles live on for their synchronous calls, and refuse new async
     * work with FAIO_ESHUTDOWN. */
    check_bad_runtime(rt);
    CHECK_RC(faio_mutex_lock(m, nop_done, NULL), FAIO_ESHUTDOWN);
    CHECK_RC(faio_mutex_unlock(m), 0);
    CHECK_RC(faio_mutex_lock_blocking(m), 0);
    CHECK_RC(faio_mutex_unlock(m), 0);
    CHECK_RC(faio_chan_send(ch, NULL, nop_done, NULL), FAIO_ESHUTDOWN);
    CHECK_RC(faio_chan_recv(ch, nop_recv, NULL), FAIO_ESHUTDOWN);
    CHECK_RC(faio_chan_try_send(ch, NULL), FAIO_EAGAIN);
    CHECK_RC(faio_mutex_free(m), 0);
    CHECK_RC(faio_chan_free(ch), 0);
}

/* faio_block_on tells a fn that never ran from one whose work a shutdown
 * cancelled: FAIO_ESHUTDOWN only for the first (a refused call, as
 * everywhere in faio.h), FAIO_ECANCELED for the second (see
 * test_shutdown_cancels_pending). Both returned FAIO_ESHUTDOWN, and a fn
 * that owns arg left its caller unable to free arg exactly once (found by
 * a reviewer). */
static atomic_int refused_fn_ran;

static void count_run(void *arg)
{
    (void)arg;
    atomic_fetch_add(&refused_fn_ran, 1);
}

static void hold_worker(void *arg)
{
    (void)arg;
    usleep(300 * 1000); /* blocks its worker: the free waits for it */
}

static void *free_in_background(void *arg)
{
    CHECK_RC(faio_runtime_free(*(faio_runtime *)arg), 0);
    return NULL;
}

static void test_block_on_refused_at_shutdown(void)
{
    faio_runtime rt = new_runtime(1);
    atomic_store(&refused_fn_ran, 0);
    CHECK_RC(faio_spawn(rt, hold_worker, NULL), 0);
    usleep(20 * 1000);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, free_in_background, &rt) == 0);
    /* Wait until the free has begun: new handles are refused then. */
    faio_mutex m;
    int rc;
    while ((rc = faio_mutex_new(rt, &m)) == 0) {
        CHECK_RC(faio_mutex_free(m), 0);
        usleep(1000);
    }
    if (rc == FAIO_ESHUTDOWN) {
        CHECK_RC(faio_block_on(rt, count_run, NULL), FAIO_ESHUTDOWN);
        CHECK(atomic_load(&refused_fn_ran) == 0);
    } else {
        CHECK_RC(rc, FAIO_EBADHANDLE); /* the free was over already */
    }
    pthread_join(t, NULL);
}

/* Concurrent frees of one runtime: exactly one succeeds. */
static void *free_runtime(void *arg)
{
    return (void *)(intptr_t)faio_runtime_free(*(faio_runtime *)arg);
}

static void test_concurrent_free(void)
{
    for (int round = 0; round < 5; round++) {
        faio_runtime rt = new_runtime(1);
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, free_runtime, &rt);
        int ok = 0, bad = 0;
        for (int i = 0; i < 4; i++) {
            void *rc;
            pthread_join(t[i], &rc);
            ok += (intptr_t)rc == 0;
            bad += (intptr_t)rc == FAIO_EBADHANDLE;
        }
        CHECK(ok == 1);
        CHECK(bad == 3);
    }
}

/* Concurrent frees of one mutex (or channel), over many rounds: exactly
 * one succeeds and the others get FAIO_EBADHANDLE, as for a runtime. A
 * loser must not be told FAIO_EBUSY ("locked, freed nothing") about a
 * mutex that was unlocked and is gone. */
enum { FREERS = 4, FREE_ROUNDS = 5000 };

static struct {
    pthread_barrier_t start, done;
    faio_mutex m;
    faio_chan ch;
    int chan;
    int rc[FREERS];
} racing;

static void *racing_freer(void *arg)
{
    int i = (int)(intptr_t)arg;
    for (int round = 0; round < 2 * FREE_ROUNDS; round++) {
        pthread_barrier_wait(&racing.start);
        racing.rc[i] = racing.chan ? faio_chan_free(racing.ch) : faio_mutex_free(racing.m);
        pthread_barrier_wait(&racing.done);
    }
    return NULL;
}

static void test_concurrent_free_mutex_chan(void)
{
    faio_runtime rt = new_runtime(1);
    pthread_t t[FREERS];
    pthread_barrier_init(&racing.start, NULL, FREERS + 1);
    pthread_barrier_init(&racing.done, NULL, FREERS + 1);
    for (int i = 0; i < FREERS; i++)
        pthread_create(&t[i], NULL, racing_freer, (void *)(intptr_t)i);
    int wrong[2] = {0, 0};
    for (int round = 0; round < 2 * FREE_ROUNDS; round++) {
        racing.chan = round >= FREE_ROUNDS;
        if (racing.chan)
            CHECK_RC(faio_chan_new(rt, 0, &racing.ch), 0);
        else
            CHECK_RC(faio_mutex_new(rt, &racing.m), 0);
        pthread_barrier_wait(&racing.start);
        pthread_barrier_wait(&racing.done);
        int ok = 0, bad = 0;
        for (int i = 0; i < FREERS; i++) {
            ok += racing.rc[i] == 0;
            bad += racing.rc[i] == FAIO_EBADHANDLE;
        }
        if (ok != 1 || bad != FREERS - 1)
            wrong[racing.chan]++;
    }
    for (int i = 0; i < FREERS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&racing.start);
    pthread_barrier_destroy(&racing.done);
    if (wrong[0] || wrong[1])
        fprintf(stderr, "  rounds without one success and %d FAIO_EBADHANDLE: %d of %d (mutex), %d of %d (channel)\n",
                FREERS - 1, wrong[0], FREE_ROUNDS, wrong[1], FREE_ROUNDS);
    CHECK(wrong[0] == 0);
    CHECK(wrong[1] == 0);
    CHECK_RC(faio_runtime_free(rt), 0);
}

void test_errors(void)
{
    run_test("faio_version and faio_strerror", test_version_and_strerror);
    run_test("bad handles: zero, forged, wrong kind, freed, double free", test_bad_handles);
    run_test("bad arguments and configs return FAIO_EINVAL", test_bad_arguments);
    run_test("blocking calls inside callbacks return FAIO_EWOULDBLOCK_WORKER",
             test_blocking_on_worker);
    run_test("shutdown cancels pending callbacks once; handles after free",
             test_shutdown_cancels_pending);
    run_test("faio_block_on during a shutdown: FAIO_ESHUTDOWN, fn never runs",
             test_block_on_refused_at_shutdown);
    run_test("concurrent frees of one runtime: one wins", test_concurrent_free);
    run_test("concurrent frees of one mutex or channel: one wins, the others FAIO_EBADHANDLE",
             test_concurrent_free_mutex_chan);
}
