/* Two runtimes in one process, side by side and calling each other; and
 * faio_stats. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

enum { PER_RUNTIME = 20000, CROSS = 1000 };

struct rt_run {
    faio_runtime rt, other;
    faio_chan to_other; /* created on other: its callbacks run there */
    atomic_long count;
    atomic_long wrong_runtime;
    atomic_long cross_ran;
};

static struct rt_run runs[2];

static int on_runtime(faio_runtime want)
{
    faio_runtime cur = {0};
    return faio_current(&cur) == 0 && cur.h == want.h;
}

static void counted(void *arg)
{
    struct rt_run *r = arg;
    if (!on_runtime(r->rt))
        atomic_fetch_add(&r->wrong_runtime, 1);
    atomic_fetch_add(&r->count, 1);
}

/* Spawned on the other runtime from a callback of this one: runs there,
 * outside this runtime's block_on. */
static void cross_spawned(void *arg)
{
    struct rt_run *r = arg;
    if (!on_runtime(r->other))
        atomic_fetch_add(&r->wrong_runtime, 1);
    atomic_fetch_add(&r->cross_ran, 1);
}

static void cross_received(void *arg, void *item, int status)
{
    struct rt_run *r = arg;
    CHECK_RC(status, 0);
    CHECK(item == (void *)r);
    if (!on_runtime(r->other))
        atomic_fetch_add(&r->wrong_runtime, 1);
    atomic_fetch_add(&r->cross_ran, 1);
}

static void cross_sent(void *arg, int status)
{
    CHECK_RC(status, 0);
    (void)arg;
}

static void root(void *arg)
{
    struct rt_run *r = arg;
    for (int i = 0; i < PER_RUNTIME; i++)
        CHECK_RC(faio_spawn(r->rt, counted, r), 0);
    for (int i = 0; i < CROSS; i++) {
        CHECK_RC(faio_spawn(r->other, cross_spawned, r), 0);
        /* Sent from here, received by the other runtime's callbacks. */
        CHECK_RC(faio_chan_send(r->to_other, r, cross_sent, r), 0);
        CHECK_RC(faio_chan_recv(r->to_other, cross_received, r), 0);
    }
}

static void *run_block_on(void *arg)
{
    struct rt_run *r = arg;
    CHECK_RC(faio_block_on(r->rt, root, r), 0);
    return NULL;
}

static void test_two_runtimes(void)
{
    faio_runtime a = new_runtime(2), b = new_runtime(1);
    CHECK(a.h != b.h);
    memset(runs, 0, sizeof runs);
    runs[0].rt = a;
    runs[0].other = b;
    runs[1].rt = b;
    runs[1].other = a;
    for (int i = 0; i < 2; i++)
        CHECK_RC(faio_chan_new(runs[i].other, 4, &runs[i].to_other), 0);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, run_block_on, &runs[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) {
        /* block_on waited for this runtime's own tasks... */
        CHECK(atomic_load(&runs[i].count) == PER_RUNTIME);
        /* ...but not for what it started on the other one. */
        for (int k = 0; k < 5000 && atomic_load(&runs[i].cross_ran) < 2 * CROSS; k++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        CHECK(atomic_load(&runs[i].cross_ran) == 2 * CROSS);
        CHECK(atomic_load(&runs[i].wrong_runtime) == 0);
    }

    faio_runtime_stats st;
    CHECK_RC(faio_stats(a, &st), 0);
    CHECK(st.workers == 2);
    CHECK(st.spawned >= PER_RUNTIME);
    CHECK(st.reserved[0] == 0);
    CHECK_RC(faio_stats(b, &st), 0);
    CHECK(st.workers == 1);

    for (int i = 0; i < 2; i++)
        CHECK_RC(faio_chan_free(runs[i].to_other), 0);
    /* Freeing one leaves the other working. */
    CHECK_RC(faio_runtime_free(a), 0);
    atomic_store(&runs[1].count, 0);
    CHECK_RC(faio_spawn(b, counted, &runs[1]), 0);
    CHECK_RC(faio_block_on(b, counted, &runs[1]), 0);
    CHECK_RC(faio_runtime_free(b), 0);
    CHECK(atomic_load(&runs[1].count) == 2); /* the spawned task ran, at the latest during the free */
}

/* The portable backend, chosen in faio_config: tasks, timers and I/O run,
 * faio_stats names the backend. (The whole C suite also runs on it, with
 * FAIO_BACKEND=portable: see run.sh.) A FAIO_BACKEND of auto or io_uring
 * overrides the config, so the backend is then not checked. */
static atomic_long portable_slept, portable_read;
static char portable_buf[8];
static int portable_pipe[2];

static void portable_sleep_done(void *arg, int status)
{
    (void)arg;
    CHECK_RC(status, 0);
    atomic_fetch_add(&portable_slept, 1);
}

static void portable_read_done(void *arg, int64_t result)
{
    (void)arg;
    CHECK(result == 5 && memcmp(portable_buf, "hello", 5) == 0);
    atomic_fetch_add(&portable_read, 1);
}

static void *portable_writer(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
    CHECK(write(portable_pipe[1], "hello", 5) == 5);
    return NULL;
}

static void portable_root(void *arg)
{
    faio_runtime rt = *(faio_runtime *)arg;
    for (int i = 0; i < 100; i++)
        CHECK_RC(faio_sleep(rt, 1000000, portable_sleep_done, NULL), 0);
    /* Waits for the pipe's writer, which comes 20 ms later. */
    CHECK_RC(faio_read(rt, portable_pipe[0], portable_buf, sizeof portable_buf, -1, portable_read_done, NULL), 0);
}

/* config_backend_applies reports whether faio_config's io_backend chooses
 * the backend: the environment variable FAIO_BACKEND overrides it unless
 * unset or empty (or portable, the backend asked for here anyway). */
static int config_backend_applies(void)
{
    const char *env = getenv("FAIO_BACKEND");
    if (env == NULL || *env == '\0' || strcmp(env, "portable") == 0)
        return 1;
    fprintf(stderr, "  skipped: FAIO_BACKEND=%s overrides io_backend, so the backend chosen is not checked\n",
            env);
    return 0;
}

static void test_portable_backend(void)
{
    faio_config cfg = {0};
    cfg.workers = 2;
    cfg.io_backend = FAIO_BACKEND_PORTABLE;
    faio_runtime rt;
    CHECK_RC(faio_runtime_new(&cfg, &rt), 0);
    atomic_store(&portable_slept, 0);
    atomic_store(&portable_read, 0);
    CHECK(pipe(portable_pipe) == 0);
    pthread_t writer;
    pthread_create(&writer, NULL, portable_writer, NULL);
    CHECK_RC(faio_block_on(rt, portable_root, &rt), 0);
    pthread_join(writer, NULL);
    close(portable_pipe[0]);
    close(portable_pipe[1]);
    CHECK(atomic_load(&portable_slept) == 100);
    CHECK(atomic_load(&portable_read) == 1);
    faio_runtime_stats st;
    CHECK_RC(faio_stats(rt, &st), 0);
    if (config_backend_applies())
        CHECK(st.backend == FAIO_BACKEND_PORTABLE);
    CHECK_RC(faio_runtime_free(rt), 0);

    cfg.io_backend = FAIO_BACKEND_AUTO;
    CHECK_RC(faio_runtime_new(&cfg, &rt), 0);
    CHECK_RC(faio_stats(rt, &st), 0);
    CHECK(st.backend == FAIO_BACKEND_IO_URING || st.backend == FAIO_BACKEND_PORTABLE);
    CHECK_RC(faio_runtime_free(rt), 0);

    cfg.io_backend = 7;
    CHECK_RC(faio_runtime_new(&cfg, &rt), FAIO_EINVAL);
    cfg.io_backend = 0;
    cfg.reserved32 = 1;
    CHECK_RC(faio_runtime_new(&cfg, &rt), FAIO_EINVAL);
    CHECK(strstr(faio_strerror(FAIO_ENOURING), "io_uring") != NULL);
}

/* faio_mutex_runtime and faio_chan_runtime name the runtime a handle was
 * made on: what a callback compares with faio_current to know whether a
 * wait would complete on its own runtime. */
struct made_on {
    faio_runtime a, b;
    faio_mutex ma, mb;
    faio_chan ca, cb;
    atomic_int ran;
};

static void made_on_root(void *arg)
{
    struct made_on *o = arg;
    faio_runtime cur = {0}, got = {0};
    CHECK_RC(faio_current(&cur), 0);
    CHECK(cur.h == o->a.h);
    CHECK_RC(faio_mutex_runtime(o->ma, &got), 0);
    CHECK(got.h == cur.h);
    CHECK_RC(faio_mutex_runtime(o->mb, &got), 0);
    CHECK(got.h != cur.h);
    CHECK_RC(faio_chan_runtime(o->ca, &got), 0);
    CHECK(got.h == cur.h);
    CHECK_RC(faio_chan_runtime(o->cb, &got), 0);
    CHECK(got.h != cur.h);
    atomic_fetch_add(&o->ran, 1);
}

static void test_handle_runtimes(void)
{
    struct made_on o = {new_runtime(1), new_runtime(1), {0}, {0}, {0}, {0}, 0};
    faio_runtime got = {0};
    CHECK_RC(faio_mutex_new(o.a, &o.ma), 0);
    CHECK_RC(faio_mutex_new(o.b, &o.mb), 0);
    CHECK_RC(faio_chan_new(o.a, 1, &o.ca), 0);
    CHECK_RC(faio_chan_new(o.b, 0, &o.cb), 0);
    CHECK_RC(faio_mutex_runtime(o.ma, &got), 0);
    CHECK(got.h == o.a.h);
    CHECK_RC(faio_mutex_runtime(o.mb, &got), 0);
    CHECK(got.h == o.b.h);
    CHECK_RC(faio_chan_runtime(o.ca, &got), 0);
    CHECK(got.h == o.a.h);
    CHECK_RC(faio_chan_runtime(o.cb, &got), 0);
    CHECK(got.h == o.b.h);
    CHECK_RC(faio_block_on(o.a, made_on_root, &o), 0);
    CHECK(atomic_load(&o.ran) == 1);

    /* After b is freed its handles still name it, and it stays dead. */
    CHECK_RC(faio_runtime_free(o.b), 0);
    CHECK_RC(faio_mutex_runtime(o.mb, &got), 0);
    CHECK(got.h == o.b.h);
    CHECK_RC(faio_chan_runtime(o.cb, &got), 0);
    CHECK(got.h == o.b.h);
    faio_runtime_stats st;
    CHECK_RC(faio_stats(got, &st), FAIO_EBADHANDLE);
    faio_runtime c = new_runtime(1);
    CHECK(c.h != o.b.h);

    CHECK_RC(faio_mutex_free(o.ma), 0);
    CHECK_RC(faio_mutex_free(o.mb), 0);
    CHECK_RC(faio_chan_free(o.ca), 0);
    CHECK_RC(faio_chan_free(o.cb), 0);
    CHECK_RC(faio_runtime_free(c), 0);
    CHECK_RC(faio_runtime_free(o.a), 0);
}

void test_runtimes(void)
{
    run_test("two runtimes in one process, calling each other", test_two_runtimes);
    run_test("faio_mutex_runtime and faio_chan_runtime name a handle's runtime",
             test_handle_runtimes);
    run_test("the portable backend: tasks, timers and a pipe read", test_portable_backend);
}
