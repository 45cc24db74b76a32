/*
 * Micro-benchmarks of the C ABI from C: the cost of faio_spawn plus running
 * the task, of a channel ping-pong between two task chains and between two
 * host threads, and of a mutex try_lock/unlock pair from a host thread
 * (mostly the C->Go call). Run by hand: bash capi/test/run.sh --bench.
 * Times are wall clock per operation on whatever machine runs it; compare
 * rows, not machines.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "faio.h"

static faio_runtime rt;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void report(const char *name, long ops, int64_t ns)
{
    printf("%-52s %9.0f ns/op  (%ld ops)\n", name, (double)ns / (double)ops, ops);
}

static void must(int rc, const char *what)
{
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", what, faio_strerror(rc));
        exit(1);
    }
}

/* ---- spawn + run ---- */

static atomic_long left;
static faio_chan done;

static void nop_task(void *arg) { (void)arg; }

static void countdown_task(void *arg)
{
    (void)arg;
    if (atomic_fetch_sub(&left, 1) == 1)
        must(faio_chan_try_send(done, NULL), "try_send");
}

static void spawner(void *arg)
{
    long n = (long)(intptr_t)arg;
    for (long i = 0; i < n; i++)
        must(faio_spawn(rt, nop_task, NULL), "spawn");
}

static void bench_spawn(long n)
{
    /* From a host thread: each task goes to the global queue. */
    atomic_store(&left, n);
    void *item;
    int64_t t0 = now_ns();
    for (long i = 0; i < n; i++)
        must(faio_spawn(rt, countdown_task, NULL), "spawn");
    must(faio_chan_recv_blocking(done, &item), "recv");
    report("faio_spawn + run, from a host thread", n, now_ns() - t0);

    /* From a callback: children of the callback's task, run on its worker. */
    t0 = now_ns();
    must(faio_block_on(rt, spawner, (void *)(intptr_t)n), "block_on");
    report("faio_spawn + run, inside faio_block_on", n, now_ns() - t0);
}

/* ---- channel ping-pong between two task chains ---- */

struct pingpong {
    faio_chan ping, pong;
    long rounds, a_round;
};

static void a_sent(void *arg, int status);
static void a_got(void *arg, void *item, int status);
static void b_got(void *arg, void *item, int status);
static void b_sent(void *arg, int status);

static void a_sent(void *arg, int status)
{
    struct pingpong *p = arg;
    must(status, "send");
    must(faio_chan_recv(p->pong, a_got, p), "recv");
}

static void a_got(void *arg, void *item, int status)
{
    struct pingpong *p = arg;
    (void)item;
    must(status, "recv");
    if (++p->a_round < p->rounds)
        must(faio_chan_send(p->ping, p, a_sent, p), "send");
    else
        must(faio_chan_close(p->ping), "close");
}

static void b_got(void *arg, void *item, int status)
{
    struct pingpong *p = arg;
    (void)item;
    if (status == FAIO_ECLOSED)
        return;
    must(status, "recv");
    must(faio_chan_send(p->pong, p, b_sent, p), "send");
}

static void b_sent(void *arg, int status)
{
    struct pingpong *p = arg;
    must(status, "send");
    must(faio_chan_recv(p->ping, b_got, p), "recv");
}

static void pingpong_root(void *arg)
{
    struct pingpong *p = arg;
    must(faio_chan_send(p->ping, p, a_sent, p), "send");
    must(faio_chan_recv(p->ping, b_got, p), "recv");
}

static void bench_pingpong(long rounds, size_t cap)
{
    struct pingpong p = {{0}, {0}, rounds, 0};
    must(faio_chan_new(rt, cap, &p.ping), "chan_new");
    must(faio_chan_new(rt, cap, &p.pong), "chan_new");
    int64_t t0 = now_ns();
    must(faio_block_on(rt, pingpong_root, &p), "block_on");
    char name[80];
    snprintf(name, sizeof name, "channel ping-pong round trip, tasks, capacity %zu", cap);
    report(name, rounds, now_ns() - t0);
    faio_chan_free(p.ping);
    faio_chan_free(p.pong);
}

/* ---- channel ping-pong between two host threads ---- */

static void *host_echo(void *arg)
{
    struct pingpong *p = arg;
    void *item;
    while (faio_chan_recv_blocking(p->ping, &item) == 0)
        must(faio_chan_send_blocking(p->pong, item), "send");
    return NULL;
}

static void bench_host_pingpong(long rounds)
{
    struct pingpong p = {{0}, {0}, rounds, 0};
    must(faio_chan_new(rt, 0, &p.ping), "chan_new");
    must(faio_chan_new(rt, 0, &p.pong), "chan_new");
    pthread_t t;
    pthread_create(&t, NULL, host_echo, &p);
    void *item;
    int64_t t0 = now_ns();
    for (long i = 0; i < rounds; i++) {
        must(faio_chan_send_blocking(p.ping, &p), "send");
        must(faio_chan_recv_blocking(p.pong, &item), "recv");
    }
    report("channel ping-pong round trip, host threads, blocking", rounds, now_ns() - t0);
    faio_chan_close(p.ping);
    pthread_join(t, NULL);
    faio_chan_free(p.ping);
    faio_chan_free(p.pong);
}

/* ---- baseline: pthread mutex + condvar ping-pong ---- */

static pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pc = PTHREAD_COND_INITIALIZER;
static long turn, cv_rounds;

static void *cv_echo(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pm);
    for (long i = 0; i < cv_rounds; i++) {
        while (turn != 1)
            pthread_cond_wait(&pc, &pm);
        turn = 0;
        pthread_cond_broadcast(&pc);
    }
    pthread_mutex_unlock(&pm);
    return NULL;
}

static void bench_condvar(long rounds)
{
    pthread_t t;
    cv_rounds = rounds;
    turn = 0;
    pthread_create(&t, NULL, cv_echo, NULL);
    int64_t t0 = now_ns();
    pthread_mutex_lock(&pm);
    for (long i = 0; i < rounds; i++) {
        turn = 1;
        pthread_cond_broadcast(&pc);
        while (turn != 0)
            pthread_cond_wait(&pc, &pm);
    }
    pthread_mutex_unlock(&pm);
    report("baseline: pthread condvar ping-pong round trip", rounds, now_ns() - t0);
    pthread_join(t, NULL);
}

/* ---- mutex from a host thread ---- */

static void bench_mutex(long n)
{
    faio_mutex m;
    must(faio_mutex_new(rt, &m), "mutex_new");
    int64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        must(faio_mutex_try_lock(m), "try_lock");
        must(faio_mutex_unlock(m), "unlock");
    }
    report("faio_mutex_try_lock + unlock, host thread", n, now_ns() - t0);
    faio_mutex_free(m);
}

int main(void)
{
    faio_config cfg;
    memset(&cfg, 0, sizeof cfg);
    must(faio_runtime_new(&cfg, &rt), "runtime_new");
    must(faio_chan_new(rt, 1, &done), "chan_new");
    faio_spawn(rt, nop_task, NULL); /* bind this thread to Go before timing */
    for (int round = 0; round < 3; round++) {
        bench_spawn(200000);
        bench_pingpong(100000, 0);
        bench_pingpong(100000, 1);
        bench_host_pingpong(50000);
        bench_condvar(50000);
        bench_mutex(1000000);
        printf("\n");
    }
    faio_runtime_stats st;
    must(faio_stats(rt, &st), "stats");
    printf("runtime: %lld workers, %llu tasks spawned, %llu parks, %llu wakes, %llu steals\n",
           (long long)st.workers, (unsigned long long)st.spawned, (unsigned long long)st.parks,
           (unsigned long long)st.wakes, (unsigned long long)st.steals);
    faio_chan_free(done);
    faio_runtime_free(rt);
    return 0;
}
