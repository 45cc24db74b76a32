/*
 * The C test of libfaio.so: tasks, mutex, channel, sleep, file and socket
 * I/O, error codes, shutdown and two runtimes, all through faio.h.
 * Built and run by capi/test/run.sh.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

atomic_int test_failures;

static int passed, failed;

faio_runtime new_runtime(int workers)
{
    faio_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.workers = workers;
    faio_runtime rt = {0};
    int rc = faio_runtime_new(&cfg, &rt);
    if (rc != 0) {
        fprintf(stderr, "faio_runtime_new: %s\n", faio_strerror(rc));
        exit(2);
    }
    return rt;
}

void run_test(const char *name, void (*fn)(void))
{
    int before = atomic_load(&test_failures);
    int64_t t0 = now_ns();
    fn();
    double ms = (double)(now_ns() - t0) / 1e6;
    if (atomic_load(&test_failures) == before) {
        passed++;
        printf("PASS %s (%.0f ms)\n", name, ms);
    } else {
        failed++;
        printf("FAIL %s (%.0f ms)\n", name, ms);
    }
    fflush(stdout);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    test_tasks();
    test_channels();
    test_io();
    test_errors();
    test_runtimes();
    test_misuse();
    printf("c: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
