/* Tests of faio_spawn, faio_block_on and the mutex. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static faio_runtime rt;

/* ---- 100,000 tasks spawned inside faio_block_on ---- */

enum { SPAWN_N = 100000 };

static atomic_long spawn_count;

static void count_task(void *arg)
{
    (void)arg;
    atomic_fetch_add(&spawn_count, 1);
}

static void spawn_root(void *arg)
{
    long n = (long)(intptr_t)arg;
    for (long i = 0; i < n; i++)
        CHECK_RC(faio_spawn(rt, count_task, (void *)(intptr_t)i), 0);
}

static void test_spawn_block_on(void)
{
    atomic_store(&spawn_count, 0);
    CHECK_RC(faio_block_on(rt, spawn_root, (void *)(intptr_t)SPAWN_N), 0);
    /* block_on waits for every spawned task: no polling needed. */
    CHECK(atomic_load(&spawn_count) == SPAWN_N);
}

/* ---- a binary tree of spawns: structured waiting is transitive ---- */

static void tree_task(void *arg)
{
    intptr_t depth = (intptr_t)arg;
    atomic_fetch_add(&spawn_count, 1);
    if (depth > 0) {
        CHECK_RC(faio_spawn(rt, tree_task, (void *)(depth - 1)), 0);
        CHECK_RC(faio_spawn(rt, tree_task, (void *)(depth - 1)), 0);
    }
}

static void test_spawn_tree(void)
{
    atomic_store(&spawn_count, 0);
    CHECK_RC(faio_block_on(rt, tree_task, (void *)(intptr_t)16), 0);
    CHECK(atomic_load(&spawn_count) == (1L << 17) - 1);
}

/* ---- 100,000 tasks spawned from a host thread ---- */

static faio_chan done_chan;

static void host_task(void *arg)
{
    (void)arg;
    if (atomic_fetch_add(&spawn_count, 1) + 1 == SPAWN_N)
        CHECK_RC(faio_chan_try_send(done_chan, (void *)(intptr_t)1), 0);
}

static void test_spawn_host(void)
{
    atomic_store(&spawn_count, 0);
    CHECK_RC(faio_chan_new(rt, 1, &done_chan), 0);
    for (long i = 0; i < SPAWN_N; i++)
        CHECK_RC(faio_spawn(rt, host_task, NULL), 0);
    void *item = NULL;
    CHECK_RC(faio_chan_recv_blocking(done_chan, &item), 0);
    CHECK(item == (void *)(intptr_t)1);
    CHECK(atomic_load(&spawn_count) == SPAWN_N);
    CHECK_RC(faio_chan_free(done_chan), 0);
}

/* ---- mutual exclusion: 1,000 tasks and 2 host threads ---- */

enum { LOCK_TASKS = 1000, LOCK_ITERS = 100, HOST_ITERS = 1000 };

static faio_mutex mu;
static long shared_counter; /* guarded by mu, deliberately not atomic */
static atomic_int holders;
static atomic_int exclusion_violations;

struct locker {
    int iter;
    long seen;
};

static void lock_next(struct locker *l);

static void enter_critical(void)
{
    if (atomic_fetch_add(&holders, 1) != 0)
        atomic_fetch_add(&exclusion_violations, 1);
}

static void leave_critical(void)
{
    atomic_fetch_sub(&holders, 1);
}

/* The second half of the critical section runs in another task, spawned
 * while holding the lock: a broken mutex would let another holder in
 * between and lose its increment. */
static void locked_finish(void *arg)
{
    struct locker *l = arg;
    if (atomic_load(&holders) != 1)
        atomic_fetch_add(&exclusion_violations, 1);
    shared_counter = l->seen + 1;
    leave_critical();
    CHECK_RC(faio_mutex_unlock(mu), 0);
    if (++l->iter < LOCK_ITERS)
        lock_next(l);
}

static void locked(void *arg, int status)
{
    struct locker *l = arg;
    CHECK_RC(status, 0);
    enter_critical();
    l->seen = shared_counter;
    CHECK_RC(faio_spawn(rt, locked_finish, l), 0);
}

static void lock_next(struct locker *l)
{
    CHECK_RC(faio_mutex_lock(mu, locked, l), 0);
}

static void lock_root(void *arg)
{
    struct locker *ls = arg;
    for (int i = 0; i < LOCK_TASKS; i++)
        lock_next(&ls[i]);
}

static void *host_locker(void *arg)
{
    (void)arg;
    for (int i = 0; i < HOST_ITERS; i++) {
        CHECK_RC(faio_mutex_lock_blocking(mu), 0);
        enter_critical();
        shared_counter++;
        leave_critical();
        CHECK_RC(faio_mutex_unlock(mu), 0);
    }
    return NULL;
}

static void test_mutex_exclusion(void)
{
    CHECK_RC(faio_mutex_new(rt, &mu), 0);
    shared_counter = 0;
    struct locker *ls = calloc(LOCK_TASKS, sizeof *ls);
    pthread_t host[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&host[i], NULL, host_locker, NULL);
    CHECK_RC(faio_block_on(rt, lock_root, ls), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(host[i], NULL);
    CHECK(shared_counter == (long)LOCK_TASKS * LOCK_ITERS + 2L * HOST_ITERS);
    CHECK(atomic_load(&exclusion_violations) == 0);
    for (int i = 0; i < LOCK_TASKS; i++)
        CHECK(ls[i].iter == LOCK_ITERS);
    free(ls);
    /* Unlocked at the end: free succeeds, and the handle is dead after. */
    CHECK_RC(faio_mutex_try_lock(mu), 0);
    CHECK_RC(faio_mutex_try_lock(mu), FAIO_EBUSY);
    CHECK_RC(faio_mutex_free(mu), FAIO_EBUSY);
    CHECK_RC(faio_mutex_unlock(mu), 0);
    CHECK_RC(faio_mutex_unlock(mu), FAIO_ENOTLOCKED);
    CHECK_RC(faio_mutex_free(mu), 0);
    CHECK_RC(faio_mutex_free(mu), FAIO_EBADHANDLE);
    CHECK_RC(faio_mutex_try_lock(mu), FAIO_EBADHANDLE);
}

void test_tasks(void)
{
    rt = new_runtime(0);
    run_test("spawn 100,000 tasks in faio_block_on", test_spawn_block_on);
    run_test("spawn a tree of 131,071 tasks", test_spawn_tree);
    run_test("spawn 100,000 tasks from a host thread", test_spawn_host);
    run_test("mutex exclusion: 1,000 tasks x 100 and 2 host threads", test_mutex_exclusion);
    CHECK_RC(faio_runtime_free(rt), 0);
}
