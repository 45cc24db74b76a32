/* Tests of faio_sleep and the I/O calls: files through faio_read and
 * faio_write, and a loopback TCP exchange through accept, connect, send,
 * recv and close. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

static faio_runtime rt;

/* ---- sleep ordering ---- */

enum { SLEEPS = 5, SLEEP_STEP_MS = 25 };

struct sleeper {
    int64_t ms;
    int64_t start;
    int64_t elapsed;
    int status;
};

static struct sleeper sleepers[SLEEPS];
static int woke_order[SLEEPS];
static atomic_int woke;

static void slept(void *arg, int status)
{
    struct sleeper *s = arg;
    s->elapsed = now_ns() - s->start;
    s->status = status;
    woke_order[atomic_fetch_add(&woke, 1)] = (int)(s - sleepers);
}

static void sleep_root(void *arg)
{
    (void)arg;
    /* Longest first: they must wake shortest first. */
    for (int i = 0; i < SLEEPS; i++) {
        sleepers[i].ms = (int64_t)(SLEEPS - i) * SLEEP_STEP_MS;
        sleepers[i].start = now_ns();
        CHECK_RC(faio_sleep(rt, (uint64_t)sleepers[i].ms * 1000000, slept, &sleepers[i]), 0);
    }
}

static void test_sleep_order(void)
{
    atomic_store(&woke, 0);
    CHECK_RC(faio_block_on(rt, sleep_root, NULL), 0);
    CHECK(atomic_load(&woke) == SLEEPS);
    for (int i = 0; i < SLEEPS; i++) {
        const struct sleeper *s = &sleepers[woke_order[i]];
        CHECK_RC(s->status, 0);
        CHECK(s->ms == (int64_t)(i + 1) * SLEEP_STEP_MS); /* woke in order */
        CHECK(s->elapsed >= s->ms * 1000000);              /* never early */
    }
}

/* A chain of sleeps adds up; a zero sleep completes. */
static int64_t chain_start, chain_elapsed;
static int chain_steps;

static void chain_slept(void *arg, int status)
{
    (void)arg;
    CHECK_RC(status, 0);
    if (++chain_steps < 3) {
        CHECK_RC(faio_sleep(rt, chain_steps == 1 ? 0 : 15000000, chain_slept, NULL), 0);
        return;
    }
    chain_elapsed = now_ns() - chain_start;
}

static void chain_root(void *arg)
{
    (void)arg;
    chain_start = now_ns();
    CHECK_RC(faio_sleep(rt, 10000000, chain_slept, NULL), 0);
}

static void test_sleep_chain(void)
{
    chain_steps = 0;
    CHECK_RC(faio_block_on(rt, chain_root, NULL), 0);
    CHECK(chain_steps == 3);
    CHECK(chain_elapsed >= 25000000);
}

/* ---- files ---- */

enum { FILE_SIZE = (1 << 20) + 123, CHUNK = 64 * 1024 };

static unsigned char pattern(size_t i) { return (unsigned char)(i * 31 + i / 7); }

static int temp_file(char *path, size_t n)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, n, "%s/faio-test-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    return fd;
}

struct chunk {
    int fd;
    unsigned char *buf;
    int64_t off;
    size_t len;
    int64_t result;
};

static struct chunk chunks[FILE_SIZE / CHUNK + 1];
static int nchunks;

static void chunk_done(void *arg, int64_t result)
{
    ((struct chunk *)arg)->result = result;
}

static void read_root(void *arg)
{
    (void)arg;
    for (int i = 0; i < nchunks; i++) {
        struct chunk *c = &chunks[i];
        CHECK_RC(faio_read(rt, c->fd, c->buf + c->off, CHUNK, c->off, chunk_done, c), 0);
    }
}

static void write_root(void *arg)
{
    (void)arg;
    for (int i = 0; i < nchunks; i++) {
        struct chunk *c = &chunks[i];
        CHECK_RC(faio_write(rt, c->fd, c->buf + c->off, c->len, c->off, chunk_done, c), 0);
    }
}

/* Reads at the file position (offset -1) until end of file, in a chain. */
struct seq_read {
    int fd;
    unsigned char *buf;
    size_t got;
    int calls;
};

static void seq_read_done(void *arg, int64_t result)
{
    struct seq_read *r = arg;
    r->calls++;
    CHECK(result >= 0);
    if (result <= 0)
        return;
    r->got += (size_t)result;
    CHECK_RC(faio_read(rt, r->fd, r->buf + r->got, 100000, -1, seq_read_done, r), 0);
}

static void seq_read_root(void *arg)
{
    struct seq_read *r = arg;
    CHECK_RC(faio_read(rt, r->fd, r->buf, 100000, -1, seq_read_done, r), 0);
}

static void split(int fd, unsigned char *buf)
{
    nchunks = 0;
    for (size_t off = 0; off < FILE_SIZE; off += CHUNK) {
        size_t len = FILE_SIZE - off < CHUNK ? FILE_SIZE - off : CHUNK;
        chunks[nchunks++] = (struct chunk){fd, buf, (int64_t)off, len, -1};
    }
}

static void test_file_read(void)
{
    char path[256];
    int fd = temp_file(path, sizeof path);
    unsigned char *want = malloc(FILE_SIZE);
    unsigned char *got = calloc(1, FILE_SIZE + CHUNK);
    for (size_t i = 0; i < FILE_SIZE; i++)
        want[i] = pattern(i);
    CHECK(pwrite(fd, want, FILE_SIZE, 0) == FILE_SIZE);

    /* Every chunk at its offset, all in flight together. */
    split(fd, got);
    CHECK_RC(faio_block_on(rt, read_root, NULL), 0);
    for (int i = 0; i < nchunks; i++)
        CHECK(chunks[i].result == (int64_t)chunks[i].len); /* short at the end */
    CHECK(memcmp(got, want, FILE_SIZE) == 0);

    /* Sequentially at the file position. */
    struct seq_read r = {fd, calloc(1, FILE_SIZE + 100000), 0, 0};
    CHECK(lseek(fd, 0, SEEK_SET) == 0);
    CHECK_RC(faio_block_on(rt, seq_read_root, &r), 0);
    CHECK(r.got == FILE_SIZE);
    CHECK(memcmp(r.buf, want, FILE_SIZE) == 0);
    free(r.buf);

    /* At the end of the file a read returns 0. */
    struct chunk c = {fd, got, FILE_SIZE, 10, -1};
    chunks[0] = c;
    nchunks = 1;
    CHECK_RC(faio_block_on(rt, read_root, NULL), 0);
    CHECK(chunks[0].result == 0); /* at end of file */
    unlink(path);
    free(want);
    free(got);
    close(fd);
}

static void test_file_write(void)
{
    char path[256];
    int fd = temp_file(path, sizeof path);
    unsigned char *data = malloc(FILE_SIZE);
    unsigned char *back = malloc(FILE_SIZE);
    for (size_t i = 0; i < FILE_SIZE; i++)
        data[i] = pattern(i + 5);
    split(fd, data);
    CHECK_RC(faio_block_on(rt, write_root, NULL), 0);
    for (int i = 0; i < nchunks; i++)
        CHECK(chunks[i].result == (int64_t)chunks[i].len);
    CHECK(pread(fd, back, FILE_SIZE, 0) == FILE_SIZE);
    CHECK(memcmp(back, data, FILE_SIZE) == 0);
    unlink(path);
    free(data);
    free(back);
    close(fd);
}

/* Kernel errors come to the callback as negated errnos. */
static int64_t bad_fd_result;
static int close_status[2];

static void bad_fd_done(void *arg, int64_t result)
{
    (void)arg;
    bad_fd_result = result;
}

static void close_done(void *arg, int status)
{
    *(int *)arg = status;
}

static void close_again(void *arg, int status)
{
    close_status[0] = status;
    CHECK_RC(faio_close(rt, (int)(intptr_t)arg, close_done, &close_status[1]), 0);
}

static void errors_root(void *arg)
{
    static char buf[16];
    CHECK_RC(faio_read(rt, -1, buf, sizeof buf, 0, bad_fd_done, NULL), 0);
    CHECK_RC(faio_close(rt, (int)(intptr_t)arg, close_again, arg), 0);
}

static void test_io_errors(void)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    close_status[0] = close_status[1] = 1;
    CHECK_RC(faio_block_on(rt, errors_root, (void *)(intptr_t)fd), 0);
    CHECK(bad_fd_result == -EBADF);
    CHECK_RC(close_status[0], 0);
    CHECK_RC(close_status[1], -EBADF);
    CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF);
}

/* ---- loopback TCP ---- */

static const char hello[] = "hello, faio";

struct peer {
    int fd;
    char buf[64];
    int64_t got;
    int closed;
};

static struct peer server, client;
static int listen_fd;
static struct sockaddr_in listen_addr;

static void server_closed(void *arg, int status)
{
    CHECK_RC(status, 0);
    ((struct peer *)arg)->closed = 1;
}

static void server_sent(void *arg, int64_t result)
{
    struct peer *p = arg;
    CHECK(result == p->got);
    CHECK_RC(faio_close(rt, p->fd, server_closed, p), 0);
}

static void server_received(void *arg, int64_t result)
{
    struct peer *p = arg;
    CHECK(result == (int64_t)sizeof hello);
    p->got = result;
    CHECK_RC(faio_send(rt, p->fd, p->buf, (size_t)result, 0, server_sent, p), 0);
}

static void accepted(void *arg, int64_t result)
{
    struct peer *p = arg;
    CHECK(result >= 0);
    p->fd = (int)result;
    CHECK_RC(faio_recv(rt, p->fd, p->buf, sizeof hello, MSG_WAITALL, server_received, p), 0);
}

static void client_received(void *arg, int64_t result)
{
    struct peer *p = arg;
    p->got = result;
    CHECK_RC(faio_close(rt, p->fd, server_closed, p), 0);
}

static void client_sent(void *arg, int64_t result)
{
    struct peer *p = arg;
    CHECK(result == (int64_t)sizeof hello);
    CHECK_RC(faio_recv(rt, p->fd, p->buf, sizeof hello, MSG_WAITALL, client_received, p), 0);
}

static void connected(void *arg, int status)
{
    struct peer *p = arg;
    CHECK_RC(status, 0);
    CHECK_RC(faio_send(rt, p->fd, hello, sizeof hello, 0, client_sent, p), 0);
}

static void tcp_root(void *arg)
{
    (void)arg;
    CHECK_RC(faio_accept(rt, listen_fd, SOCK_CLOEXEC, accepted, &server), 0);
    CHECK_RC(faio_connect(rt, client.fd, (const struct sockaddr *)&listen_addr,
                          sizeof listen_addr, connected, &client), 0);
}

/* loopback_listener returns a TCP socket listening on an ephemeral port of
 * 127.0.0.1, blocking, and stores its address in addr. */
static int loopback_listener(struct sockaddr_in *addr)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof *addr;
    CHECK(bind(fd, (struct sockaddr *)addr, sizeof *addr) == 0);
    CHECK(listen(fd, 8) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)addr, &len) == 0);
    return fd;
}

static void test_tcp(void)
{
    memset(&server, 0, sizeof server);
    memset(&client, 0, sizeof client);
    listen_fd = loopback_listener(&listen_addr);
    client.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_RC(faio_block_on(rt, tcp_root, NULL), 0);
    CHECK(client.got == (int64_t)sizeof hello);
    CHECK(memcmp(client.buf, hello, sizeof hello) == 0);
    CHECK(server.closed && client.closed);
    close(listen_fd);
}

/* ---- offsets on descriptors without a position ---- */

/* On a pipe or a socket, offset 0 reads and writes as -1 (read(2) and
 * write(2)) on either backend: io_uring takes it so, and a program written
 * against it must not get -ESPIPE where io_uring is unavailable. */
struct stream_rw {
    int fd;
    int write;
    char buf[8];
    int64_t result;
};

static void stream_rw_done(void *arg, int64_t result)
{
    ((struct stream_rw *)arg)->result = result;
}

static void stream_rw_root(void *arg)
{
    struct stream_rw *c = arg;
    if (c->write)
        CHECK_RC(faio_write(rt, c->fd, "xyz", 3, 0, stream_rw_done, c), 0);
    else
        CHECK_RC(faio_read(rt, c->fd, c->buf, sizeof c->buf, 0, stream_rw_done, c), 0);
}

static int64_t stream_rw(int fd, int write, char *got)
{
    struct stream_rw c = {fd, write, {0}, 12345};
    CHECK_RC(faio_block_on(rt, stream_rw_root, &c), 0);
    if (got != NULL)
        memcpy(got, c.buf, sizeof c.buf);
    return c.result;
}

static void test_offset_zero_on_streams(void)
{
    int p[2], sv[2];
    char got[8];
    CHECK(pipe(p) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    /* The data is there before each read, so a failure cannot hang. */
    CHECK(write(p[1], "abcd", 4) == 4);
    CHECK(stream_rw(p[0], 0, got) == 4);
    CHECK(memcmp(got, "abcd", 4) == 0);
    CHECK(stream_rw(p[1], 1, NULL) == 3);
    CHECK(read(p[0], got, sizeof got) == 3);
    CHECK(write(sv[1], "abcd", 4) == 4);
    CHECK(stream_rw(sv[0], 0, got) == 4);
    CHECK(memcmp(got, "abcd", 4) == 0);
    CHECK(stream_rw(sv[0], 1, NULL) == 3);
    CHECK(recv(sv[1], got, sizeof got, MSG_DONTWAIT) == 3);
    close(p[0]);
    close(p[1]);
    close(sv[0]);
    close(sv[1]);
}

/* ---- recv and send flags: MSG_DONTWAIT and MSG_WAITALL ---- */

/* A socket call completes as recv(2) and send(2) would with its flags, on
 * either backend: MSG_DONTWAIT with nothing to do is -EAGAIN at once, and
 * MSG_WAITALL on a stream socket moves every byte it was given. */
struct flagged {
    int fd;
    int send;
    int flags;
    char *buf;
    size_t len;
    int64_t result;
};

static void flagged_done(void *arg, int64_t result)
{
    ((struct flagged *)arg)->result = result;
}

static void flagged_root(void *arg)
{
    struct flagged *f = arg;
    if (f->send)
        CHECK_RC(faio_send(rt, f->fd, f->buf, f->len, f->flags, flagged_done, f), 0);
    else
        CHECK_RC(faio_recv(rt, f->fd, f->buf, f->len, f->flags, flagged_done, f), 0);
}

/* run_flagged runs one recv or send in block_on and returns its result. */
static int64_t run_flagged(int fd, int send, int flags, char *buf, size_t len)
{
    struct flagged f = {fd, send, flags, buf, len, 12345};
    CHECK_RC(faio_block_on(rt, flagged_root, &f), 0);
    return f.result;
}

/* A guard that, unless told to stop first, unblocks a hung MSG_DONTWAIT
 * call after 3 s: it writes a byte to the empty socket's peer and drains
 * the full socket's peer, so a failure is a FAIL line, not a hang. */
struct guard {
    atomic_int stop;
    int empty_peer, full_peer;
};

static void *guard_main(void *arg)
{
    struct guard *g = arg;
    for (int i = 0; i < 300 && !atomic_load(&g->stop); i++)
        usleep(10000);
    if (atomic_load(&g->stop))
        return NULL;
    char b[4096];
    CHECK(write(g->empty_peer, "x", 1) == 1);
    while (recv(g->full_peer, b, sizeof b, MSG_DONTWAIT) > 0)
        ;
    return NULL;
}

static void test_dontwait(void)
{
    int a[2], b[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b) == 0);
    char fill[4096];
    memset(fill, 'f', sizeof fill);
    while (send(b[0], fill, sizeof fill, MSG_DONTWAIT) > 0)
        ;
    struct guard g = {0, a[1], b[1]};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, guard_main, &g) == 0);
    char buf[16];
    int64_t start = now_ns();
    CHECK(run_flagged(a[0], 0, MSG_DONTWAIT, buf, sizeof buf) == -EAGAIN);
    CHECK(run_flagged(b[0], 1, MSG_DONTWAIT, fill, sizeof fill) == -EAGAIN);
    CHECK(now_ns() - start < 2000000000); /* at once, not when the guard acts */
    atomic_store(&g.stop, 1);
    pthread_join(t, NULL);
    /* With something to do, MSG_DONTWAIT transfers it. */
    CHECK(write(a[1], "hey", 3) == 3);
    CHECK(run_flagged(a[0], 0, MSG_DONTWAIT, buf, sizeof buf) == 3);
    close(a[0]);
    close(a[1]);
    close(b[0]);
    close(b[1]);
}

enum { WAITALL_CHUNK = 1000, WAITALL_CHUNKS = 8, WAITALL_SEND = 4 << 20 };

struct trickle {
    int fd;
    int64_t moved;
};

/* Writes WAITALL_CHUNKS chunks 5 ms apart. */
static void *trickle_writer(void *arg)
{
    struct trickle *t = arg;
    char chunk[WAITALL_CHUNK];
    for (int i = 0; i < WAITALL_CHUNKS; i++) {
        memset(chunk, 'a' + i, sizeof chunk);
        usleep(5000);
        t->moved += write(t->fd, chunk, sizeof chunk);
    }
    return NULL;
}

/* Reads until end of file, a little at a time. */
static void *slow_reader(void *arg)
{
    struct trickle *t = arg;
    char b[65536];
    ssize_t n;
    usleep(10000);
    while ((n = read(t->fd, b, sizeof b)) > 0) {
        t->moved += n;
        usleep(100);
    }
    return NULL;
}

static void test_waitall(void)
{
    int sv[2];
    pthread_t th;
    /* recv waits for the whole buffer while the data trickles in. */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    struct trickle w = {sv[1], 0};
    CHECK(pthread_create(&th, NULL, trickle_writer, &w) == 0);
    char *buf = calloc(1, WAITALL_SEND);
    CHECK(run_flagged(sv[0], 0, MSG_WAITALL, buf, WAITALL_CHUNK * WAITALL_CHUNKS) ==
          WAITALL_CHUNK * WAITALL_CHUNKS);
    pthread_join(th, NULL);
    CHECK(buf[0] == 'a' && buf[WAITALL_CHUNK * WAITALL_CHUNKS - 1] == 'a' + WAITALL_CHUNKS - 1);
    /* Closed early: what arrived, then the end of file. */
    CHECK(write(sv[1], "tail", 4) == 4);
    CHECK(shutdown(sv[1], SHUT_WR) == 0);
    CHECK(run_flagged(sv[0], 0, MSG_WAITALL, buf, 100) == 4);
    close(sv[0]);
    close(sv[1]);

    /* send waits until a slow reader has taken every byte. */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    struct trickle r = {sv[1], 0};
    CHECK(pthread_create(&th, NULL, slow_reader, &r) == 0);
    CHECK(run_flagged(sv[0], 1, MSG_WAITALL, buf, WAITALL_SEND) == WAITALL_SEND);
    CHECK(shutdown(sv[0], SHUT_WR) == 0);
    pthread_join(th, NULL);
    CHECK(r.moved == WAITALL_SEND);
    close(sv[0]);
    close(sv[1]);

    /* On a datagram socket MSG_WAITALL takes one datagram, as recv(2) does. */
    CHECK(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == 0);
    CHECK(send(sv[1], "one", 3, 0) == 3);
    CHECK(send(sv[1], "two", 3, 0) == 3);
    CHECK(run_flagged(sv[0], 0, MSG_WAITALL, buf, 100) == 3);
    CHECK(run_flagged(sv[0], 0, MSG_WAITALL, buf, 100) == 3);
    CHECK(memcmp(buf, "two", 3) == 0);
    close(sv[0]);
    close(sv[1]);
    free(buf);
}

/* ---- calls that would block on a blocking descriptor ---- */

/* An operation on a descriptor the program left blocking ends at shutdown
 * like any other, on either backend: a write larger than the room in a
 * pipe completes short (as the ring completes it), and of two reads racing
 * for one byte, or two accepts for one connection, the one that loses
 * waits for the next and gets FAIO_ECANCELED at faio_runtime_free. The
 * portable backend used to make the call itself blocking after poll(2),
 * and a free waited for ever (4 of 4 times for the write, 6 of 15 for the
 * reads, 3 of 15 for the accepts). */
enum { BLOCKING_OPS = 2 };

struct blocking_op {
    atomic_int calls;
    atomic_llong result;
};

static void blocking_op_done(void *arg, int64_t result)
{
    struct blocking_op *op = arg;
    atomic_store(&op->result, result);
    atomic_fetch_add(&op->calls, 1);
}

struct timed_free {
    faio_runtime rt;
    atomic_int done;
    int rc;
};

static void *timed_free_main(void *arg)
{
    struct timed_free *tf = arg;
    tf->rc = faio_runtime_free(tf->rt);
    atomic_store(&tf->done, 1);
    return NULL;
}

/* free_within frees rt on a thread of its own and reports whether it
 * returned 0 within ms; a free that hangs is left behind (and fails the
 * test) rather than hanging the test program. */
static int free_within(faio_runtime frt, int ms)
{
    static struct timed_free tfs[8];
    static int next;
    struct timed_free *tf = &tfs[next++ % 8];
    tf->rt = frt;
    atomic_store(&tf->done, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, timed_free_main, tf) != 0)
        return 0;
    for (int waited = 0; waited < ms && !atomic_load(&tf->done); waited++)
        usleep(1000);
    if (!atomic_load(&tf->done)) {
        fprintf(stderr, "  faio_runtime_free did not return within %d ms\n", ms);
        pthread_detach(t);
        return 0;
    }
    pthread_join(t, NULL);
    return tf->rc == 0;
}

static void wait_calls(struct blocking_op *ops, int n, int want, int ms)
{
    for (int waited = 0; waited < ms; waited++) {
        int calls = 0;
        for (int i = 0; i < n; i++)
            calls += atomic_load(&ops[i].calls);
        if (calls >= want)
            return;
        usleep(1000);
    }
}

/* check_one_won checks that each of the racing operations completed once:
 * one with result want (want -1: any descriptor, which it closes), the
 * other with the free's FAIO_ECANCELED. */
static void check_one_won(struct blocking_op *ops, int64_t want)
{
    int won = 0, cancelled = 0;
    for (int i = 0; i < BLOCKING_OPS; i++) {
        CHECK(atomic_load(&ops[i].calls) == 1);
        int64_t res = atomic_load(&ops[i].result);
        if (want < 0 ? res >= 0 : res == want) {
            won++;
            if (want < 0)
                close((int)res);
        }
        cancelled += res == FAIO_ECANCELED;
    }
    CHECK(won == 1 && cancelled == 1);
}

static void test_blocking_descriptors(void)
{
    enum { BIG = 4 << 20 };
    char *big = calloc(1, BIG);
    CHECK(big != NULL);

    /* A write larger than the pipe takes, nobody reading. */
    {
        faio_runtime r = new_runtime(0);
        struct blocking_op op = {0};
        int p[2];
        CHECK(pipe(p) == 0);
        CHECK_RC(faio_write(r, p[1], big, BIG, -1, blocking_op_done, &op), 0);
        wait_calls(&op, 1, 1, 2000);
        CHECK(free_within(r, 5000));
        CHECK(atomic_load(&op.calls) == 1);
        int64_t res = atomic_load(&op.result);
        CHECK(res == FAIO_ECANCELED || (res > 0 && res < BIG));
        close(p[0]);
        close(p[1]);
    }

    /* Two reads of a pipe, one byte. */
    {
        faio_runtime r = new_runtime(0);
        struct blocking_op ops[BLOCKING_OPS] = {0};
        static char bufs[BLOCKING_OPS][4];
        int p[2];
        CHECK(pipe(p) == 0);
        for (int i = 0; i < BLOCKING_OPS; i++)
            CHECK_RC(faio_read(r, p[0], bufs[i], sizeof bufs[i], -1, blocking_op_done, &ops[i]), 0);
        usleep(20000);
        CHECK(write(p[1], "x", 1) == 1);
        wait_calls(ops, BLOCKING_OPS, 1, 2000);
        usleep(20000);
        CHECK(free_within(r, 5000));
        check_one_won(ops, 1);
        close(p[0]);
        close(p[1]);
    }

    /* Two accepts on a blocking listening socket, one connection. */
    {
        faio_runtime r = new_runtime(0);
        struct blocking_op ops[BLOCKING_OPS] = {0};
        struct sockaddr_in addr;
        int lfd = loopback_listener(&addr);
        for (int i = 0; i < BLOCKING_OPS; i++)
            CHECK_RC(faio_accept(r, lfd, SOCK_CLOEXEC, blocking_op_done, &ops[i]), 0);
        usleep(20000);
        int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(connect(cfd, (struct sockaddr *)&addr, sizeof addr) == 0);
        wait_calls(ops, BLOCKING_OPS, 1, 2000);
        usleep(20000);
        CHECK(free_within(r, 5000));
        check_one_won(ops, -1);
        /* The listening socket is as the program left it: blocking. */
        CHECK((fcntl(lfd, F_GETFL) & O_NONBLOCK) == 0);
        close(cfd);
        close(lfd);
    }
    free(big);
}

void test_io(void)
{
    rt = new_runtime(0);
    run_test("sleep: five sleeps wake shortest first, never early", test_sleep_order);
    run_test("sleep: a chain of sleeps adds up, zero completes", test_sleep_chain);
    run_test("file: faio_read of 1 MiB in 17 concurrent chunks equals the file", test_file_read);
    run_test("file: faio_write of 1 MiB in chunks reads back equal", test_file_write);
    run_test("I/O errors come to the callback as negated errnos", test_io_errors);
    run_test("TCP over loopback: accept, connect, send, recv, close", test_tcp);
    run_test("faio_read and faio_write at offset 0 on a pipe and a socket", test_offset_zero_on_streams);
    run_test("recv and send with MSG_DONTWAIT and nothing to do: -EAGAIN at once", test_dontwait);
    run_test("recv and send with MSG_WAITALL move every byte of a stream", test_waitall);
    run_test("blocking descriptors: a big pipe write, racing reads and accepts end at free",
             test_blocking_descriptors);
    CHECK_RC(faio_runtime_free(rt), 0);
}
