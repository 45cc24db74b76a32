package faiohttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/aio"
	"github.com/faio-go/faio/modules/runtime"
	"go.uber.org/goleak"
)

// The common net/http idiom of waiting for the client in plain Go,
// <-r.Context().Done(), holds the handler's worker. When every worker was
// held so, the watch for the client that would end the wait never ran: it
// was a task, and its receive waited on a ring that no worker reaped. One
// worker and one such handler are the plain case: before, the handler
// waited for ever after its client had gone.
func TestDoneWaitOnTheOnlyWorkerEndsWhenTheClientGoes(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	rt, err := runtime.New(runtime.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
		goleak.VerifyNone(t, ignore)
	}()
	ctx := runtime.WithRuntime(context.Background(), rt)
	ln, err := aio.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{}, 1)
	ended := make(chan error, 1)
	srv := &Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			waiting <- struct{}{}
			<-r.Context().Done()
			ended <- r.Context().Err()
		}),
		ErrorLog: t.Logf,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() {
		srv.Close()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Error(err)
		}
	}()

	c := startRequest(t, ln.Addr().String(), "/", waiting)
	time.Sleep(20 * time.Millisecond)
	c.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the handler's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the handler waiting on <-r.Context().Done() did not end within 20 s of its client leaving")
	}
}

// Many requests ask for Done and end before their watch starts, others
// wait for their client to go, from connections served at once: every
// fast one is answered, every waiting one ends when its client closes,
// and no watch is left behind (newRuntime's goroutine leak check).
func TestWatchesOfManyRequests(t *testing.T) {
	const conns, fast = 16, 50
	ended := make(chan error, conns)
	waiting := make(chan struct{}, conns)
	mux := http.NewServeMux()
	mux.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) {
		_ = r.Context().Done()
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("/wait", func(w http.ResponseWriter, r *http.Request) {
		waiting <- struct{}{}
		if err := runtime.Sleep(r.Context(), 20*time.Second); err == nil {
			ended <- errors.New("slept 20 s after the client left")
			return
		}
		ended <- r.Context().Err()
	})
	addr, _ := startFaio(t, mux, nil)
	errs := make(chan error, conns)
	for range conns {
		go func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			br := bufio.NewReader(c)
			for range fast {
				io.WriteString(c, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != "ok" {
					errs <- fmt.Errorf("fast request: %q, %v", b, err)
					return
				}
			}
			io.WriteString(c, "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
			<-waiting
			time.Sleep(5 * time.Millisecond) // past watchDelay: the watch has begun
			errs <- nil
		}()
	}
	for range conns {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(20 * time.Second)
	for i := range conns {
		select {
		case err := <-ended:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("a waiting handler ended with %v, want context.Canceled", err)
			}
		case <-deadline:
			t.Fatalf("%d of %d waiting handlers ended within 20 s of their clients leaving", i, conns)
		}
	}
}

// A handler that blocks in plain Go holds its worker, ring included. The
// accept loop's Accept is an operation on the ring of the worker its task
// last ran on, which is usually where the blocking request's task was
// spawned and runs: new connections were then not accepted until that
// handler returned. A peer now reaps the held worker's ring once the
// watchdog finds it stuck, and each round's request on a new connection
// is served while the blocking handler still holds its worker.
func TestServedWhileAHandlerBlocksItsWorker(t *testing.T) {
	if os.Getenv(runtime.EnvPinned) == "1" {
		t.Skip("a pinned worker's ring belongs to its thread: nobody else reaps it")
	}
	held, hold := make(chan struct{}), make(chan struct{})
	addr, _ := startFaio(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			held <- struct{}{}
			<-hold // plain Go: the worker is held
			return
		}
		io.WriteString(w, "ok")
	}), nil)
	t.Cleanup(func() { close(hold) }) // before the server's Close
	for round := range 8 {
		c := startRequest(t, addr, "/block", held)
		resp := rawExchange(t, addr, "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 5*time.Second)
		if !strings.HasSuffix(resp, "ok") {
			t.Fatalf("round %d: a request on a new connection, while a handler held its worker, got %q within 5 s", round, resp)
		}
		hold <- struct{}{}
		c.Close()
	}
}

// startRequest sends a GET of path on a new connection to addr, waits
// (up to 10 s) for the handler to say on started that it runs, and
// returns the connection, which the caller closes.
func startRequest(t *testing.T, addr, path string, started <-chan struct{}) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		c.Close()
		t.Fatalf("the handler of %s did not start", path)
	}
	return c
}
