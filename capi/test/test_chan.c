/* Tests of the channel: conservation under 4 producers and 4 consumers,
 * tasks and host threads mixed, and the close semantics. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static faio_runtime rt;

enum { PRODUCERS = 4, CONSUMERS = 4, PER_PRODUCER = 20000, TOTAL = PRODUCERS * PER_PRODUCER };

/* One run: items are 1..TOTAL, each sent once; seen[] counts receptions. */
struct conservation {
    faio_chan ch;
    atomic_int producers_left;
    atomic_long received;
    atomic_long sum;
    atomic_uchar seen[TOTAL + 1];
};

static struct conservation run;

struct producer {
    long next, end;
};

static void producer_done(void)
{
    if (atomic_fetch_sub(&run.producers_left, 1) == 1)
        CHECK_RC(faio_chan_close(run.ch), 0);
}

static void take(uintptr_t v)
{
    CHECK(v >= 1 && v <= TOTAL);
    if (v >= 1 && v <= TOTAL)
        atomic_fetch_add(&run.seen[v], 1);
    atomic_fetch_add(&run.received, 1);
    atomic_fetch_add(&run.sum, (long)v);
}

static void sent(void *arg, int status);

static void send_next(struct producer *p)
{
    CHECK_RC(faio_chan_send(run.ch, (void *)(uintptr_t)p->next, sent, p), 0);
}

static void sent(void *arg, int status)
{
    struct producer *p = arg;
    CHECK_RC(status, 0);
    if (++p->next < p->end)
        send_next(p);
    else
        producer_done();
}

static void received(void *arg, void *item, int status)
{
    (void)arg;
    if (status == FAIO_ECLOSED) {
        CHECK(item == NULL);
        return;
    }
    CHECK_RC(status, 0);
    take((uintptr_t)item);
    CHECK_RC(faio_chan_recv(run.ch, received, NULL), 0);
}

static struct producer producers[PRODUCERS];
static int task_producers, task_consumers;

static void conservation_root(void *arg)
{
    (void)arg;
    for (int i = 0; i < task_producers; i++)
        send_next(&producers[i]);
    for (int i = 0; i < task_consumers; i++)
        CHECK_RC(faio_chan_recv(run.ch, received, NULL), 0);
}

static void *host_producer(void *arg)
{
    struct producer *p = arg;
    for (; p->next < p->end; p->next++)
        CHECK_RC(faio_chan_send_blocking(run.ch, (void *)(uintptr_t)p->next), 0);
    producer_done();
    return NULL;
}

static void *host_consumer(void *arg)
{
    (void)arg;
    for (;;) {
        void *item = NULL;
        int rc = faio_chan_recv_blocking(run.ch, &item);
        if (rc == FAIO_ECLOSED)
            return NULL;
        CHECK_RC(rc, 0);
        take((uintptr_t)item);
    }
}

/* conserve sends 1..TOTAL through a channel of capacity cap with the given
 * numbers of producer and consumer tasks (the rest are host threads) and
 * checks that every item arrived exactly once. */
static void conserve(size_t cap, int tasks_each)
{
    memset(&run, 0, sizeof run);
    CHECK_RC(faio_chan_new(rt, cap, &run.ch), 0);
    atomic_store(&run.producers_left, PRODUCERS);
    for (int i = 0; i < PRODUCERS; i++)
        producers[i] = (struct producer){1 + (long)i * PER_PRODUCER, 1 + (long)(i + 1) * PER_PRODUCER};
    task_producers = task_consumers = tasks_each;
    pthread_t threads[PRODUCERS + CONSUMERS];
    int nthreads = 0;
    for (int i = tasks_each; i < PRODUCERS; i++)
        pthread_create(&threads[nthreads++], NULL, host_producer, &producers[i]);
    for (int i = tasks_each; i < CONSUMERS; i++)
        pthread_create(&threads[nthreads++], NULL, host_consumer, NULL);
    /* block_on returns when the consumer tasks saw FAIO_ECLOSED, that is
     * after every producer finished and the channel drained. */
    CHECK_RC(faio_block_on(rt, conservation_root, NULL), 0);
    for (int i = 0; i < nthreads; i++)
        pthread_join(threads[i], NULL);
    CHECK(atomic_load(&run.received) == TOTAL);
    CHECK(atomic_load(&run.sum) == (long)TOTAL * (TOTAL + 1) / 2);
    int bad = 0;
    for (long v = 1; v <= TOTAL; v++)
        bad += atomic_load(&run.seen[v]) != 1;
    CHECK(bad == 0);
    CHECK_RC(faio_chan_free(run.ch), 0);
}

static void test_conservation_buffered(void) { conserve(16, 4); }
static void test_conservation_rendezvous(void) { conserve(0, 4); }
static void test_conservation_mixed(void) { conserve(8, 2); }

/* ---- try variants and close ---- */

static void test_close_semantics(void)
{
    faio_chan ch;
    void *item = NULL;
    CHECK_RC(faio_chan_new(rt, 2, &ch), 0);
    CHECK_RC(faio_chan_try_recv(ch, &item), FAIO_EAGAIN);
    CHECK_RC(faio_chan_try_send(ch, (void *)(uintptr_t)7), 0);
    CHECK_RC(faio_chan_try_send(ch, (void *)(uintptr_t)8), 0);
    CHECK_RC(faio_chan_try_send(ch, (void *)(uintptr_t)9), FAIO_EAGAIN);
    CHECK_RC(faio_chan_close(ch), 0);
    CHECK_RC(faio_chan_close(ch), FAIO_ECLOSED);
    CHECK_RC(faio_chan_try_send(ch, (void *)(uintptr_t)9), FAIO_ECLOSED);
    CHECK_RC(faio_chan_send_blocking(ch, (void *)(uintptr_t)9), FAIO_ECLOSED);
    /* Receivers drain what was buffered before the close, then see it. */
    CHECK_RC(faio_chan_try_recv(ch, &item), 0);
    CHECK(item == (void *)(uintptr_t)7);
    CHECK_RC(faio_chan_recv_blocking(ch, &item), 0);
    CHECK(item == (void *)(uintptr_t)8);
    CHECK_RC(faio_chan_try_recv(ch, &item), FAIO_ECLOSED);
    CHECK_RC(faio_chan_recv_blocking(ch, &item), FAIO_ECLOSED);
    CHECK_RC(faio_chan_free(ch), 0);
    CHECK_RC(faio_chan_free(ch), FAIO_EBADHANDLE);
    CHECK_RC(faio_chan_try_send(ch, NULL), FAIO_EBADHANDLE);
    CHECK_RC(faio_chan_try_recv(ch, &item), FAIO_EBADHANDLE);
}

/* Freeing a channel wakes a host thread blocked on it. */
static void *blocked_receiver(void *arg)
{
    faio_chan *ch = arg;
    void *item = NULL;
    /* FAIO_EBADHANDLE if this thread only got here after the free. */
    int rc = faio_chan_recv_blocking(*ch, &item);
    CHECK(rc == FAIO_ECLOSED || rc == FAIO_EBADHANDLE);
    return NULL;
}

static atomic_int async_status = 1;

static void async_recv_done(void *arg, void *item, int status)
{
    (void)arg;
    CHECK(item == NULL);
    atomic_store(&async_status, status);
}

static void test_free_wakes_waiters(void)
{
    faio_chan ch;
    CHECK_RC(faio_chan_new(rt, 0, &ch), 0);
    pthread_t t;
    pthread_create(&t, NULL, blocked_receiver, &ch);
    CHECK_RC(faio_chan_recv(ch, async_recv_done, NULL), 0);
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
    CHECK_RC(faio_chan_free(ch), 0);
    pthread_join(t, NULL);
    for (int i = 0; i < 2000 && atomic_load(&async_status) == 1; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    CHECK_RC(atomic_load(&async_status), FAIO_ECLOSED);
}

void test_channels(void)
{
    rt = new_runtime(0);
    run_test("channel conservation: 4 producer and 4 consumer tasks, capacity 16",
             test_conservation_buffered);
    run_test("channel conservation: 4 producer and 4 consumer tasks, rendezvous",
             test_conservation_rendezvous);
    run_test("channel conservation: 2+2 tasks and 2+2 host threads, capacity 8",
             test_conservation_mixed);
    run_test("channel try variants and close", test_close_semantics);
    run_test("channel free wakes waiting receivers", test_free_wakes_waiters);
    CHECK_RC(faio_runtime_free(rt), 0);
}
