// A C++20 host on faio.hpp: two demonstrations in one program.
//
// 1. Producer/consumer: three producer coroutines send numbered jobs through
//    a bounded faio::channel; four consumers "process" them (a short
//    faio::sleep stands for work), and add to a total guarded by a
//    faio::mutex. The last producer closes the channel; the consumers stop
//    when it is drained.
// 2. Echo server on loopback: the server accepts a fixed number of
//    connections, each served by its own coroutine until the client shuts
//    down its side; clients send lines and check the echoes. The server stops
//    after the last connection, so the program ends by itself.
//
// Build and run (from the repository root):
//
//     bash examples/cpp/build.sh        # builds build/examples/faio-example-cpp
//     build/examples/faio-example-cpp
#include "faio.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>

using namespace std::chrono_literals;

namespace {

// ---- producer / consumer ----

constexpr int producers = 3, consumers = 4, jobs_each = 200;

struct pipeline {
    faio::channel<int> jobs;
    faio::mutex mu;
    long total = 0;             // guarded by mu
    int processed[consumers] = {}; // guarded by mu
    int producers_left = producers; // guarded by mu

    explicit pipeline(faio_runtime rt) : jobs(rt, 8), mu(rt) {}
};

faio::task<> produce(pipeline &p, int id)
{
    for (int i = 0; i < jobs_each; i++) {
        if (!co_await p.jobs.send(id * jobs_each + i + 1))
            co_return; // closed early: nobody would take more
    }
    auto guard = co_await faio::lock(p.mu);
    if (--p.producers_left == 0)
        p.jobs.close();
}

faio::task<> consume(pipeline &p, int id)
{
    while (auto job = co_await p.jobs.recv()) {
        if (*job % 50 == 0)
            co_await faio::sleep(1ms); // some jobs take a while
        auto guard = co_await faio::lock(p.mu);
        p.total += *job;
        p.processed[id]++;
    }
}

faio::task<> run_pipeline(pipeline &p)
{
    for (int i = 0; i < producers; i++)
        faio::spawn(produce(p, i));
    for (int i = 0; i < consumers; i++)
        faio::spawn(consume(p, i));
    co_return; // block_on still waits for all of them
}

// ---- echo server ----

constexpr int clients = 5, lines_each = 20;

// serve echoes one connection until the client shuts down its side. A
// spawned task must not let an exception escape (it would end the process,
// as one leaving a std::thread does): a connection that fails (reset by
// the client) just ends.
faio::task<> serve(int fd)
{
    char buf[512];
    try {
        for (;;) {
            std::size_t n = co_await faio::recv(fd, buf);
            if (n == 0)
                break; // the client shut down its side
            for (std::size_t sent = 0; sent < n;)
                sent += co_await faio::send(fd, std::span(buf + sent, n - sent));
        }
    } catch (const faio::error &e) {
        std::fprintf(stderr, "echo server: connection: %s\n", e.what());
    }
    co_await faio::close(fd);
}

// accept_loop serves the clients' connections; it ends early when
// echo_demo shuts the listening socket down (accept then fails).
faio::task<> accept_loop(int listen_fd)
{
    try {
        for (int i = 0; i < clients; i++)
            faio::spawn(serve(static_cast<int>(co_await faio::accept(listen_fd))));
    } catch (const faio::error &) {
    }
}

faio::task<int> client(sockaddr_in addr, int id)
{
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        throw faio::error(-errno);
    int good = 0;
    try {
        co_await faio::connect(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr);
        for (int i = 0; i < lines_each; i++) {
            std::string line = "client " + std::to_string(id) + " line " + std::to_string(i) + "\n";
            for (std::size_t sent = 0; sent < line.size();)
                sent += co_await faio::send(fd, std::span(line).subspan(sent));
            std::string echo(line.size(), '\0');
            std::size_t n = co_await faio::recv(fd, echo, faio::msg_flags(MSG_WAITALL));
            good += n == line.size() && echo == line;
        }
    } catch (...) {
        ::close(fd); // no co_await in a handler
        throw;
    }
    ::shutdown(fd, SHUT_WR);
    co_await faio::close(fd);
    co_return good;
}

// echo_demo runs the server and the clients one after the other. If a
// client fails, the listening socket is shut down, so that the accept loop
// waiting for the clients that will not come ends, and block_on, which
// waits for it, returns with the client's error.
faio::task<int> echo_demo(int listen_fd, sockaddr_in addr)
{
    faio::spawn(accept_loop(listen_fd));
    int good = 0;
    try {
        for (int i = 0; i < clients; i++)
            good += co_await client(addr, i);
    } catch (...) {
        ::shutdown(listen_fd, SHUT_RDWR);
        throw;
    }
    co_return good;
}

int listen_loopback(sockaddr_in &addr)
{
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    addr = sockaddr_in{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK); // loopback only
    socklen_t len = sizeof addr;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
        ::listen(fd, clients) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
        return -1;
    return fd;
}

} // namespace

int main()
{
    try {
        faio::runtime rt;

        pipeline p(rt);
        faio::block_on(rt, run_pipeline(p));
        long n = static_cast<long>(producers) * jobs_each;
        std::printf("pipeline: %ld jobs, total %ld (want %ld); per consumer:", n, p.total, n * (n + 1) / 2);
        for (int c : p.processed)
            std::printf(" %d", c);
        std::printf("\n");
        bool ok = p.total == n * (n + 1) / 2;

        sockaddr_in addr;
        int lfd = listen_loopback(addr);
        if (lfd < 0) {
            std::perror("listen");
            return 1;
        }
        int good = faio::block_on(rt, echo_demo(lfd, addr));
        ::close(lfd);
        std::printf("echo: %d of %d lines came back intact from 127.0.0.1:%d\n", good, clients * lines_each,
                    ntohs(addr.sin_port));
        ok = ok && good == clients * lines_each;
        return ok ? 0 : 1;
    } catch (const faio::error &e) {
        std::fprintf(stderr, "faio: %s\n", e.what());
        return 1;
    }
}
