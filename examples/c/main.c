/*
 * A C host on libfaio.so: counts the lines, words and letters of a file with
 * faio tasks. The file is read in chunks through faio_read, all chunks in
 * flight at once; each chunk's task merges its letter counts into a shared
 * table under a faio mutex and sends its line and word counts through a
 * faio channel to a collector task. faio_block_on returns when all of it is
 * done. The program then counts again with plain read(2) and exits 1 if the
 * two disagree.
 *
 * Build and run (from the repository root):
 *
 *     bash examples/c/build.sh            # builds build/examples/faio-example-c
 *     build/examples/faio-example-c [file] # default: this source file
 *
 * The default path is the one the compiler was given: absolute when built
 * by build.sh, relative to the checkout's root when built by hand as the
 * README shows.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "faio.h"

enum { CHUNK = 4096 };

struct counts {
    long lines, words;
};

/* Everything the tasks share. */
struct job {
    faio_runtime rt;
    int fd;
    size_t size;
    faio_mutex letters_mu;
    long letters[26]; /* guarded by letters_mu */
    faio_chan results; /* struct chunk * from the chunk tasks to the collector */
    long nchunks;
    struct counts total; /* written by the collector only */
    atomic_int errors;
};

/* One chunk: its buffer belongs to the kernel from faio_read to chunk_read.
 * Chunks after the first read one byte more, the byte before them, to know
 * whether a word runs across the boundary. */
struct chunk {
    struct job *job;
    int64_t offset;
    unsigned char buf[CHUNK + 1];
    struct counts counts;
    long letters[26];
};

static void fail(struct job *j, const char *what, int code)
{
    fprintf(stderr, "%s: %s\n", what, faio_strerror(code));
    atomic_fetch_add(&j->errors, 1);
}

/* A chunk that failed still reaches the collector, with no counts, so the
 * collector receives one item per chunk and the run ends. */
static void chunk_failed(struct chunk *c, const char *what, int code)
{
    fail(c->job, what, code);
    memset(&c->counts, 0, sizeof c->counts);
    if (faio_chan_try_send(c->job->results, c) != 0)
        free(c); /* cannot happen: one slot per chunk */
}

/* Runs with the letters mutex held: merge, unlock, hand the counts on. */
static void letters_locked(void *arg, int status)
{
    struct chunk *c = arg;
    struct job *j = c->job;
    if (status != 0) {
        chunk_failed(c, "faio_mutex_lock", status);
        return;
    }
    for (int i = 0; i < 26; i++)
        j->letters[i] += c->letters[i];
    faio_mutex_unlock(j->letters_mu);
    int rc = faio_chan_try_send(j->results, c);
    if (rc != 0) {
        /* The channel holds one slot per chunk, so it cannot be full. */
        fail(j, "faio_chan_try_send", rc);
        free(c);
    }
}

static void chunk_read(void *arg, int64_t result)
{
    struct chunk *c = arg;
    struct job *j = c->job;
    if (result < 0) {
        chunk_failed(c, "faio_read", (int)result);
        return;
    }
    const unsigned char *data = c->buf;
    size_t len = (size_t)result;
    int in_word = 0;
    if (c->offset > 0 && len > 0) {
        in_word = !isspace(data[0]);
        data++;
        len--;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = data[i];
        if (ch == '\n')
            c->counts.lines++;
        if (isspace(ch)) {
            in_word = 0;
        } else if (!in_word) {
            in_word = 1;
            c->counts.words++;
        }
        if (isalpha(ch))
            c->letters[tolower(ch) - 'a']++;
    }
    int rc = faio_mutex_lock(j->letters_mu, letters_locked, c);
    if (rc != 0)
        chunk_failed(c, "faio_mutex_lock", rc);
}

/* A chunk task: starts the read of its chunk. */
static void chunk_task(void *arg)
{
    struct chunk *c = arg;
    int64_t from = c->offset > 0 ? c->offset - 1 : 0;
    size_t len = c->offset > 0 ? CHUNK + 1 : CHUNK;
    int rc = faio_read(c->job->rt, c->job->fd, c->buf, len, from, chunk_read, c);
    if (rc != 0)
        chunk_failed(c, "faio_read", rc);
}

/* The collector: receives one result per chunk, then stops. */
static void collected(void *arg, void *item, int status)
{
    struct job *j = arg;
    if (status != 0) {
        fail(j, "faio_chan_recv", status);
        return;
    }
    struct chunk *c = item;
    j->total.lines += c->counts.lines;
    j->total.words += c->counts.words;
    free(c);
    if (--j->nchunks > 0) {
        int rc = faio_chan_recv(j->results, collected, j);
        if (rc != 0)
            fail(j, "faio_chan_recv", rc);
    }
}

/* The root task: one task per chunk and the collector. */
static void root(void *arg)
{
    struct job *j = arg;
    for (size_t off = 0; off < j->size; off += CHUNK) {
        struct chunk *c = calloc(1, sizeof *c);
        c->job = j;
        c->offset = (int64_t)off;
        int rc = faio_spawn(j->rt, chunk_task, c);
        if (rc != 0) {
            fail(j, "faio_spawn", rc);
            free(c);
            j->nchunks--;
        }
    }
    if (j->nchunks > 0) {
        int rc = faio_chan_recv(j->results, collected, j);
        if (rc != 0)
            fail(j, "faio_chan_recv", rc);
    }
}

/* The same counts with plain read(2), to check the faio ones. */
static struct counts count_plainly(int fd, long letters[26])
{
    struct counts n = {0, 0};
    unsigned char buf[CHUNK];
    int in_word = 0;
    ssize_t got;
    memset(letters, 0, 26 * sizeof letters[0]);
    off_t off = 0;
    while ((got = pread(fd, buf, sizeof buf, off)) > 0) {
        for (ssize_t i = 0; i < got; i++) {
            if (buf[i] == '\n')
                n.lines++;
            if (isspace(buf[i])) {
                in_word = 0;
            } else if (!in_word) {
                in_word = 1;
                n.words++;
            }
            if (isalpha(buf[i]))
                letters[tolower(buf[i]) - 'a']++;
        }
        off += got;
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc > 2) {
        fprintf(stderr, "usage: %s [file]   (default: %s)\n", argv[0], __FILE__);
        return 2;
    }
    const char *path = argc > 1 ? argv[1] : __FILE__;
    struct job j;
    memset(&j, 0, sizeof j);
    /* O_NONBLOCK: a FIFO is refused below, not waited on for a writer. */
    j.fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (j.fd < 0 || fstat(j.fd, &st) != 0) {
        perror(path);
        return 1;
    }
    /* The file is read in chunks at offsets its size gives: a file whose
     * size says nothing of its content (a pipe, a device, a /proc or /sys
     * file, which stat as 0 bytes) is refused instead of counted as empty. */
    char probe;
    if (!S_ISREG(st.st_mode) || (st.st_size == 0 && pread(j.fd, &probe, 1, 0) > 0)) {
        fprintf(stderr, "%s: not a regular file with a known size (this example reads one in chunks by offset)\n",
                path);
        return 1;
    }
    /* Blocking again: io_uring answers EAGAIN, instead of waiting for the
     * disk, on a descriptor in non-blocking mode. */
    int fl = fcntl(j.fd, F_GETFL);
    if (fl < 0 || fcntl(j.fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        perror(path);
        return 1;
    }
    j.size = (size_t)st.st_size;
    j.nchunks = (long)((j.size + CHUNK - 1) / CHUNK);

    int rc = faio_runtime_new(NULL, &j.rt);
    if (rc == 0)
        rc = faio_mutex_new(j.rt, &j.letters_mu);
    if (rc == 0)
        rc = faio_chan_new(j.rt, (size_t)j.nchunks + 1, &j.results);
    if (rc == 0)
        rc = faio_block_on(j.rt, root, &j);
    if (rc != 0) {
        fprintf(stderr, "faio: %s\n", faio_strerror(rc));
        return 1;
    }
    faio_chan_free(j.results);
    faio_mutex_free(j.letters_mu);
    faio_runtime_free(j.rt);

    int top = 0;
    for (int i = 1; i < 26; i++)
        if (j.letters[i] > j.letters[top])
            top = i;
    if (j.letters[top] == 0)
        printf("%s: %zu bytes, %ld lines, %ld words, no letters\n", path, j.size, j.total.lines, j.total.words);
    else
        printf("%s: %zu bytes, %ld lines, %ld words, most common letter '%c' (%ld)\n", path, j.size,
               j.total.lines, j.total.words, 'a' + top, j.letters[top]);

    long letters[26];
    struct counts want = count_plainly(j.fd, letters);
    close(j.fd);
    if (atomic_load(&j.errors) != 0 || want.lines != j.total.lines || want.words != j.total.words ||
        memcmp(letters, j.letters, sizeof letters) != 0) {
        fprintf(stderr, "mismatch: read(2) counts %ld lines, %ld words\n", want.lines, want.words);
        return 1;
    }
    return 0;
}
