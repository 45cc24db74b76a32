/*
 * A minimal test harness for the C tests of libfaio.so. CHECK may be used
 * from any thread, callbacks on workers included: failures are counted
 * atomically and reported on stderr. Each test prints one line, PASS or FAIL
 * with its name, which capi/test/run.sh counts.
 */
#ifndef FAIO_TEST_HARNESS_H
#define FAIO_TEST_HARNESS_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "faio.h"

extern atomic_int test_failures;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            atomic_fetch_add(&test_failures, 1);                                    \
            fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                           \
    } while (0)

/* CHECK_RC checks that an int expression equals an expected code. */
#define CHECK_RC(expr, want)                                                        \
    do {                                                                            \
        int rc_ = (expr);                                                           \
        int want_ = (want);                                                         \
        if (rc_ != want_) {                                                         \
            atomic_fetch_add(&test_failures, 1);                                    \
            fprintf(stderr, "  %s:%d: %s = %d (%s), want %d (%s)\n", __FILE__, __LINE__, \
                    #expr, rc_, faio_strerror(rc_), want_, faio_strerror(want_));   \
        }                                                                           \
    } while (0)

static inline int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Every FAIO_E* code of faio.h, in test_misuse.c: the tests of error texts
 * iterate this one list, which a new code must join. */
extern const int faio_codes[];
extern const int faio_codes_count;

/* new_runtime makes a runtime with n workers (0: default) or fails the test
 * run: nothing else can be tested without one. */
faio_runtime new_runtime(int workers);

/* The test groups, one per file. */
void test_tasks(void);    /* test_tasks.c: spawn, mutex */
void test_channels(void); /* test_chan.c */
void test_io(void);       /* test_io.c: sleep, files, sockets */
void test_errors(void);   /* test_errors.c: bad input, shutdown, workers */
void test_runtimes(void); /* test_runtimes.c: two runtimes, stats, config */
void test_misuse(void);   /* test_misuse.c: a C program's mistakes */

/* run_test runs fn and prints its verdict. */
void run_test(const char *name, void (*fn)(void));

#endif
