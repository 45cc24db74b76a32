/* Tests of a C program's mistakes: every error text, configs out of range,
 * sleeps too long to represent, descriptors that are bad or the wrong kind,
 * handles freed under pending operations, and a runtime shut down from a
 * thread its own callback started. Each must give an error code or a
 * callback status, lose no callback, and neither crash nor hang. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "harness.h"

/* ---- error texts ---- */

const int faio_codes[] = {
    FAIO_EINVAL, FAIO_EBADHANDLE, FAIO_ESHUTDOWN, FAIO_EWOULDBLOCK_WORKER, FAIO_EBUSY,
    FAIO_EAGAIN, FAIO_ECLOSED, FAIO_ECANCELED, FAIO_ENOTLOCKED, FAIO_ENOTWORKER,
    FAIO_ENOMEM, FAIO_EINTERNAL, FAIO_ENOURING,
};
const int faio_codes_count = sizeof faio_codes / sizeof faio_codes[0];

static void test_strerror_every_code(void)
{
    for (int i = 0; i < faio_codes_count; i++) {
        const char *s = faio_strerror(faio_codes[i]);
        CHECK(s != NULL && strncmp(s, "faio: ", 6) == 0);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(s, faio_strerror(faio_codes[j])) != 0);
        CHECK(strcmp(s, faio_strerror(FAIO_OK)) != 0);
    }
    /* Codes of no kind: never NULL, never mistaken for a known one. */
    static const int unknown[] = {
        INT_MIN, INT_MAX, 1, EBADF, -10000, -10014, FAIO_EINVAL - 100, -4096, -5000,
    };
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *s = faio_strerror(unknown[i]);
        CHECK(s != NULL);
        for (int j = 0; j < faio_codes_count; j++)
            CHECK(s == NULL || strcmp(s, faio_strerror(faio_codes[j])) != 0);
    }
    /* errnos: the C library's text, for every one it knows. */
    for (int e = 1; e < 134; e++)
        CHECK(faio_strerror(-e) != NULL);
    CHECK(strcmp(faio_strerror(-ENOTSOCK), strerror(ENOTSOCK)) == 0);
}

/* ---- configs ---- */

static void check_config_refused(const faio_config *cfg, const char *what)
{
    faio_runtime rt = {0x1234};
    int rc = faio_runtime_new(cfg, &rt);
    if (rc != FAIO_EINVAL) {
        atomic_fetch_add(&test_failures, 1);
        fprintf(stderr, "  %s: faio_runtime_new = %d (%s), want FAIO_EINVAL\n", what, rc, faio_strerror(rc));
        if (rc == 0)
            faio_runtime_free(rt);
        return;
    }
    CHECK(rt.h == 0x1234); /* *out untouched */
}

static void test_configs_out_of_range(void)
{
    static const int32_t workers[] = {INT32_MIN, -1, 1025, INT32_MAX};
    static const int32_t backends[] = {INT32_MIN, -1, 3, INT32_MAX};
    static const int32_t rings[] = {INT32_MIN, -1, 7, 32769, INT32_MAX};
    static const int32_t queues[] = {INT32_MIN, -2, 1, 3, 1 << 17, 1 << 30, INT32_MAX};
    static const int32_t intervals[] = {INT32_MIN, -1};
    static const int64_t resolutions[] = {INT64_MIN, -1, 1000000001, INT64_MAX};
    static const int64_t stalls[] = {1, 999999};
    faio_config cfg;
#define EACH(field, values)                                                       \
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {               \
        memset(&cfg, 0, sizeof cfg);                                              \
        cfg.field = values[i];                                                    \
        check_config_refused(&cfg, #field);                                       \
    }
    EACH(workers, workers)
    EACH(io_backend, backends)
    EACH(ring_entries, rings)
    EACH(local_queue_capacity, queues)
    EACH(global_queue_interval, intervals)
    EACH(io_interval, intervals)
    EACH(submit_batch, intervals)
    EACH(timer_resolution_ns, resolutions)
    EACH(stall_threshold_ns, stalls)
#undef EACH
    memset(&cfg, 0, sizeof cfg);
    cfg.ring_entries = 8;
    cfg.submit_batch = 9; /* more than a ring holds */
    check_config_refused(&cfg, "submit_batch > ring_entries");
    for (int i = 0; i < 7; i++) {
        memset(&cfg, 0, sizeof cfg);
        cfg.reserved[i] = UINT64_MAX;
        check_config_refused(&cfg, "reserved[i]");
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.reserved32 = -1;
    check_config_refused(&cfg, "reserved32");

    /* The extremes that are in range: no watchdog, or one that never
     * fires. */
    static const int64_t fine[] = {INT64_MIN, INT64_MAX};
    for (int i = 0; i < 2; i++) {
        faio_runtime rt;
        memset(&cfg, 0, sizeof cfg);
        cfg.workers = 1;
        cfg.stall_threshold_ns = fine[i];
        CHECK_RC(faio_runtime_new(&cfg, &rt), 0);
        CHECK_RC(faio_runtime_free(rt), 0);
    }
}

/* ---- sleeps past the end of the clock ---- */

enum { HUGE_SLEEPS = 5 };
static atomic_int huge_calls[HUGE_SLEEPS], huge_status[HUGE_SLEEPS];

static void huge_slept(void *arg, int status)
{
    int i = (int)(intptr_t)arg;
    atomic_fetch_add(&huge_calls[i], 1);
    atomic_store(&huge_status[i], status);
}

static void test_huge_sleeps(void)
{
    static const uint64_t ns[HUGE_SLEEPS] = {
        UINT64_MAX, (uint64_t)INT64_MAX + 1, (uint64_t)INT64_MAX, (uint64_t)INT64_MAX - 1, 1ULL << 62,
    };
    faio_runtime rt = new_runtime(1);
    for (int i = 0; i < HUGE_SLEEPS; i++) {
        atomic_store(&huge_calls[i], 0);
        CHECK_RC(faio_sleep(rt, ns[i], huge_slept, (void *)(intptr_t)i), 0);
    }
    usleep(50000);
    for (int i = 0; i < HUGE_SLEEPS; i++)
        CHECK(atomic_load(&huge_calls[i]) == 0); /* no overflow into the past */
    CHECK_RC(faio_runtime_free(rt), 0);
    for (int i = 0; i < HUGE_SLEEPS; i++) {
        CHECK(atomic_load(&huge_calls[i]) == 1);
        CHECK_RC(atomic_load(&huge_status[i]), FAIO_ECANCELED);
    }
}

/* ---- descriptors ---- */

enum { MAX_OPS = 16 };

/* An I/O operation started from a host thread and its outcome. */
struct op {
    const char *what;
    int64_t want;
    atomic_int calls;
    atomic_llong result;
};

static struct op ops[MAX_OPS];
static int nops;

static void op_io(void *arg, int64_t result)
{
    struct op *o = arg;
    atomic_store(&o->result, result);
    atomic_fetch_add(&o->calls, 1);
}

static void op_done(void *arg, int status) { op_io(arg, status); }

static struct op *new_op(const char *what, int64_t want)
{
    struct op *o = &ops[nops++];
    o->what = what;
    o->want = want;
    atomic_store(&o->calls, 0);
    atomic_store(&o->result, 1);
    return o;
}

/* check_ops waits up to 2 s for every operation, then frees rt (which
 * cancels what still waits) and checks each result: an operation that
 * the ring fails at once must not wait for shutdown on any backend. */
static void check_ops(faio_runtime rt)
{
    for (int k = 0; k < 2000; k++) {
        int all = 1;
        for (int i = 0; i < nops; i++)
            all &= atomic_load(&ops[i].calls) != 0;
        if (all)
            break;
        usleep(1000);
    }
    CHECK_RC(faio_runtime_free(rt), 0);
    for (int i = 0; i < nops; i++) {
        int64_t got = atomic_load(&ops[i].result);
        if (atomic_load(&ops[i].calls) != 1 || got != ops[i].want) {
            atomic_fetch_add(&test_failures, 1);
            fprintf(stderr, "  %s: %d callbacks, result %lld (%s), want %lld (%s)\n", ops[i].what,
                    atomic_load(&ops[i].calls), (long long)got, faio_strerror((int)got),
                    (long long)ops[i].want, faio_strerror((int)ops[i].want));
        }
    }
    nops = 0;
}

static void test_bad_descriptors(void)
{
    faio_runtime rt = new_runtime(2);
    static char buf[16];
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int closed = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CHECK(closed >= 0);
    close(closed);
    int never = 1 << 20; /* beyond any descriptor this test opens */
    CHECK(fcntl(never, F_GETFD) == -1);
    static const int bad[] = {-1, INT_MIN};
    const int fds[] = {bad[0], bad[1], closed, never};
    for (int i = 0; i < 4; i++) {
        int fd = fds[i];
        CHECK_RC(faio_read(rt, fd, buf, sizeof buf, -1, op_io, new_op("read", -EBADF)), 0);
        CHECK_RC(faio_read(rt, fd, buf, sizeof buf, 0, op_io, new_op("pread", -EBADF)), 0);
        CHECK_RC(faio_write(rt, fd, buf, sizeof buf, -1, op_io, new_op("write", -EBADF)), 0);
        CHECK_RC(faio_recv(rt, fd, buf, sizeof buf, 0, op_io, new_op("recv", -EBADF)), 0);
        CHECK_RC(faio_send(rt, fd, buf, sizeof buf, 0, op_io, new_op("send", -EBADF)), 0);
        CHECK_RC(faio_accept(rt, fd, 0, op_io, new_op("accept", -EBADF)), 0);
        CHECK_RC(faio_connect(rt, fd, (struct sockaddr *)&sin, sizeof sin, op_done,
                              new_op("connect", -EBADF)), 0);
        CHECK_RC(faio_close(rt, fd, op_done, new_op("close", -EBADF)), 0);
        check_ops(rt);
        rt = new_runtime(2);
    }
    CHECK_RC(faio_runtime_free(rt), 0);
}

/* Descriptors of the wrong kind for the call, which poll(2) never reports
 * ready for it: the ring fails each at once, and so must the portable
 * backend, which used to poll first and hold the operation (and any
 * faio_block_on above it) until the runtime was freed. */
static void test_wrong_kind_descriptors(void)
{
    faio_runtime rt = new_runtime(2);
    static char buf[16];
    int p[2];
    CHECK(pipe2(p, O_CLOEXEC) == 0);
    int lst = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int unlistened = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(lst, (struct sockaddr *)&sin, sizeof sin) == 0);
    CHECK(listen(lst, 1) == 0);
    CHECK(bind(unlistened, (struct sockaddr *)&sin, sizeof sin) == 0);

    CHECK_RC(faio_read(rt, p[1], buf, sizeof buf, -1, op_io, new_op("read of a pipe's write end", -EBADF)), 0);
    CHECK_RC(faio_write(rt, p[0], "x", 1, -1, op_io, new_op("write to a pipe's read end", -EBADF)), 0);
    CHECK_RC(faio_accept(rt, p[0], 0, op_io, new_op("accept on a pipe", -ENOTSOCK)), 0);
    CHECK_RC(faio_accept(rt, unlistened, 0, op_io, new_op("accept on an unlistened socket", -EINVAL)), 0);
    CHECK_RC(faio_accept(rt, lst, 1, op_io, new_op("accept with bad flags", -EINVAL)), 0);
    CHECK_RC(faio_read(rt, lst, buf, sizeof buf, -1, op_io, new_op("read of a listening socket", -ENOTCONN)), 0);
    CHECK_RC(faio_recv(rt, p[0], buf, sizeof buf, 0, op_io, new_op("recv on a pipe", -ENOTSOCK)), 0);
    check_ops(rt);
    close(p[0]);
    close(p[1]);
    close(lst);
    close(unlistened);
}

/* Zero lengths with NULL buffers, and a length far beyond the data. */
static void test_lengths(void)
{
    faio_runtime rt = new_runtime(1);
    static char buf[16];
    int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    int out = open("/dev/null", O_WRONLY | O_CLOEXEC);
    int p[2];
    CHECK(pipe2(p, O_CLOEXEC) == 0);
    CHECK(write(p[1], "hello", 5) == 5);
    CHECK_RC(faio_read(rt, fd, NULL, 0, 0, op_io, new_op("read of 0 bytes", 0)), 0);
    CHECK_RC(faio_write(rt, out, NULL, 0, -1, op_io, new_op("write of 0 bytes", 0)), 0);
    /* Only 5 bytes are there: the kernel stops at them, within buf. */
    CHECK_RC(faio_read(rt, p[0], buf, SIZE_MAX, -1, op_io, new_op("read of SIZE_MAX bytes", 5)), 0);
    check_ops(rt);
    close(fd);
    close(out);
    close(p[0]);
    close(p[1]);
}

/* Reads shorter than what an eventfd, a timerfd or a signalfd hands out
 * (8 bytes, 8 bytes, one struct signalfd_siginfo): the kernel refuses them
 * at once with EINVAL, and so does the ring, while poll(2) reports the
 * descriptor readable only once a value, an expiry or a signal comes (for
 * a disarmed timer, never). The portable backend used to poll first and
 * hold the operation until shutdown. */
static void test_short_reads_of_special_descriptors(void)
{
    faio_runtime rt = new_runtime(1);
    static char buf[sizeof(struct signalfd_siginfo)];
    sigset_t none;
    sigemptyset(&none);
    int efd = eventfd(0, EFD_CLOEXEC);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    int sfd = signalfd(-1, &none, SFD_CLOEXEC);
    CHECK(efd >= 0 && tfd >= 0 && sfd >= 0);
    CHECK_RC(faio_read(rt, efd, buf, 4, -1, op_io, new_op("4-byte read of an eventfd", -EINVAL)), 0);
    CHECK_RC(faio_read(rt, tfd, buf, 7, -1, op_io, new_op("7-byte read of a timerfd", -EINVAL)), 0);
    CHECK_RC(faio_read(rt, sfd, buf, sizeof buf - 1, -1, op_io,
                       new_op("short read of a signalfd", -EINVAL)), 0);
    /* So do writes to those that take none, whose poll never says writable. */
    CHECK_RC(faio_write(rt, tfd, buf, 8, -1, op_io, new_op("write to a timerfd", -EINVAL)), 0);
    CHECK_RC(faio_write(rt, sfd, buf, sizeof buf, -1, op_io, new_op("write to a signalfd", -EINVAL)), 0);
    check_ops(rt);
    /* Full-size reads still wait for their value. */
    rt = new_runtime(1);
    CHECK(eventfd_write(efd, 42) == 0);
    static uint64_t v;
    CHECK_RC(faio_read(rt, efd, &v, sizeof v, -1, op_io, new_op("8-byte read of an eventfd", 8)), 0);
    check_ops(rt);
    CHECK(v == 42);
    close(efd);
    close(tfd);
    close(sfd);
}

/* ---- handles freed under operations a callback started ---- */

struct freed_under {
    faio_runtime rt;
    faio_mutex m;
    faio_chan ch;
};

static atomic_int under_calls, under_closed, under_badhandle;

static void under_done(void *arg, int status)
{
    (void)arg;
    atomic_fetch_add(&under_calls, 1);
    if (status == FAIO_ECLOSED)
        atomic_fetch_add(&under_closed, 1);
    if (status == FAIO_EBADHANDLE)
        atomic_fetch_add(&under_badhandle, 1);
}

static void under_recv(void *arg, void *item, int status)
{
    CHECK(item == NULL);
    under_done(arg, status);
}

/* The operations start when the callback returns, after the frees: each
 * finds its handle gone and says so in its callback. */
static void free_under_root(void *arg)
{
    struct freed_under *u = arg;
    CHECK_RC(faio_chan_send(u->ch, (void *)1, under_done, NULL), 0);
    CHECK_RC(faio_chan_recv(u->ch, under_recv, NULL), 0);
    CHECK_RC(faio_mutex_lock(u->m, under_done, NULL), 0);
    CHECK_RC(faio_chan_free(u->ch), 0);
    CHECK_RC(faio_mutex_free(u->m), 0); /* not locked yet: the lock has not started */
    CHECK_RC(faio_chan_free(u->ch), FAIO_EBADHANDLE);
    CHECK_RC(faio_mutex_free(u->m), FAIO_EBADHANDLE);
}

static void test_freed_under_operations(void)
{
    struct freed_under u = {new_runtime(2), {0}, {0}};
    atomic_store(&under_calls, 0);
    atomic_store(&under_closed, 0);
    atomic_store(&under_badhandle, 0);
    CHECK_RC(faio_mutex_new(u.rt, &u.m), 0);
    CHECK_RC(faio_chan_new(u.rt, 1, &u.ch), 0);
    CHECK_RC(faio_block_on(u.rt, free_under_root, &u), 0);
    CHECK(atomic_load(&under_calls) == 3);
    CHECK(atomic_load(&under_closed) == 2);
    CHECK(atomic_load(&under_badhandle) == 1);
    CHECK_RC(faio_runtime_free(u.rt), 0);
}

/* ---- a runtime shut down while its own callback runs ---- */

struct self_free {
    faio_runtime rt;
    pthread_t freer;
    int freed;
    atomic_int accepted, called;
};

static void *free_it(void *arg)
{
    struct self_free *sf = arg;
    sf->freed = faio_runtime_free(sf->rt);
    return NULL;
}

static void never_runs(void *arg)
{
    (void)arg;
    CHECK(0);
}

static void self_free_done(void *arg, int status)
{
    struct self_free *sf = arg;
    CHECK(status == 0 || status == FAIO_ECANCELED);
    atomic_fetch_add(&sf->called, 1);
}

static void self_free_root(void *arg)
{
    struct self_free *sf = arg;
    faio_mutex m;
    faio_chan ch;
    /* One operation accepted before the free can begin, so that it has
     * one to cancel or complete: the free used to win the race against
     * the first faio_sleep of the loop below in about one run in ten. */
    CHECK_RC(faio_sleep(sf->rt, 0, self_free_done, sf), 0);
    atomic_fetch_add(&sf->accepted, 1);
    /* Inside its callback the runtime cannot be freed... */
    CHECK_RC(faio_runtime_free(sf->rt), FAIO_EWOULDBLOCK_WORKER);
    /* ...but a thread the callback starts can, while it still runs. */
    CHECK(pthread_create(&sf->freer, NULL, free_it, sf) == 0);
    int rc = 0;
    for (int i = 0; i < 5000 && rc == 0; i++) {
        rc = faio_sleep(sf->rt, 0, self_free_done, sf);
        if (rc == 0) {
            atomic_fetch_add(&sf->accepted, 1);
            usleep(1000);
        }
    }
    CHECK_RC(rc, FAIO_ESHUTDOWN);
    CHECK_RC(faio_spawn(sf->rt, never_runs, sf), FAIO_ESHUTDOWN);
    CHECK_RC(faio_mutex_new(sf->rt, &m), FAIO_ESHUTDOWN);
    CHECK_RC(faio_chan_new(sf->rt, 1, &ch), FAIO_ESHUTDOWN);
    CHECK_RC(faio_block_on(sf->rt, never_runs, sf), FAIO_EWOULDBLOCK_WORKER);
    faio_runtime cur;
    CHECK_RC(faio_current(&cur), 0);
    CHECK(cur.h == sf->rt.h);
}

static void test_free_from_own_callback(void)
{
    struct self_free sf = {new_runtime(2), 0, 1, 0, 0};
    CHECK_RC(faio_block_on(sf.rt, self_free_root, &sf), FAIO_ECANCELED);
    pthread_join(sf.freer, NULL);
    CHECK_RC(sf.freed, 0);
    CHECK(atomic_load(&sf.accepted) > 0);
    CHECK(atomic_load(&sf.called) == atomic_load(&sf.accepted));
    faio_runtime_stats st;
    CHECK_RC(faio_stats(sf.rt, &st), FAIO_EBADHANDLE);
    CHECK_RC(faio_runtime_free(sf.rt), FAIO_EBADHANDLE);
}

void test_misuse(void)
{
    run_test("misuse: faio_strerror of every code and of unknown codes", test_strerror_every_code);
    run_test("misuse: configs out of range are FAIO_EINVAL, out untouched", test_configs_out_of_range);
    run_test("misuse: sleeps past the end of the clock wait until shutdown", test_huge_sleeps);
    run_test("misuse: negative, closed and never-opened descriptors are -EBADF in cb",
             test_bad_descriptors);
    run_test("misuse: descriptors of the wrong kind fail at once, as on the ring",
             test_wrong_kind_descriptors);
    run_test("misuse: zero lengths with NULL buffers, SIZE_MAX lengths", test_lengths);
    run_test("misuse: short reads of an eventfd, timerfd or signalfd, writes to the last two: -EINVAL at once",
             test_short_reads_of_special_descriptors);
    run_test("misuse: a mutex and a channel freed under operations a callback started",
             test_freed_under_operations);
    run_test("misuse: a runtime freed by a thread its own callback started",
             test_free_from_own_callback);
}
