package faiohttp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/aio"
	"github.com/faio-go/faio/modules/runtime"
)

// serveWithin runs srv.Serve(ctx, ln) and returns its error, failing the
// test if it has not returned within 5 s (then Close ends it).
func serveWithin(t *testing.T, srv *Server, ctx context.Context, ln *aio.Listener, after func()) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	if after != nil {
		after()
	}
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Error("Serve had not returned after 5 s")
		srv.Close()
		return <-done
	}
}

// A listener that cannot accept ends Serve with its error at once: a nil
// or zero one, or one closed before; Serve retried them every second until
// Close (found by a reviewer). A nil ctx is refused as such.
func TestServeReturnsWhenItsListenerCannotAccept(t *testing.T) {
	rt := newRuntime(t)
	ctx := runtime.WithRuntime(context.Background(), rt)
	var logged int
	srv := func() *Server { return &Server{ErrorLog: func(string, ...any) { logged++ }} }
	for name, ln := range map[string]*aio.Listener{"nil": nil, "zero": new(aio.Listener)} {
		if err := serveWithin(t, srv(), ctx, ln, nil); !errors.Is(err, os.ErrInvalid) {
			t.Errorf("Serve on a %s Listener: %v, want an error wrapping os.ErrInvalid", name, err)
		}
	}
	ln, err := aio.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close(ctx)
	if err := serveWithin(t, srv(), ctx, ln, nil); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve on a closed Listener: %v, want net.ErrClosed", err)
	}
	//lint:ignore SA1012 a nil ctx is the point
	if err := srv().Serve(nil, ln); !errors.Is(err, runtime.ErrNilContext) {
		t.Errorf("Serve(nil, ln): %v, want runtime.ErrNilContext", err)
	}
	if logged != 0 {
		t.Errorf("%d accept errors logged, want none", logged)
	}
}

// Serve closes its listener whichever way it ends, as net/http's does: it
// returned at ctx's end with the listener still taking connections into
// its backlog, where they waited for good (found by a reviewer).
func TestServeClosesItsListenerAtCtxsEnd(t *testing.T) {
	rt := newRuntime(t)
	for _, fromTask := range []bool{false, true} {
		ctx := runtime.WithRuntime(context.Background(), rt)
		ln, err := aio.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		srv := &Server{Handler: http.NotFoundHandler()}
		var serr error
		if fromTask {
			// Serve in a task, under a ctx derived from the task's.
			cancels := make(chan context.CancelFunc, 1)
			h := runtime.SpawnOn(rt, func(tctx context.Context) (error, error) {
				sctx, cancel := context.WithCancel(tctx)
				cancels <- cancel
				return srv.Serve(sctx, ln), nil
			})
			time.Sleep(20 * time.Millisecond)
			(<-cancels)()
			var jerr error
			if serr, jerr = h.Join(ctx); jerr != nil {
				t.Fatal(jerr)
			}
		} else {
			sctx, cancel := context.WithCancel(ctx)
			serr = serveWithin(t, srv, sctx, ln, func() {
				time.Sleep(20 * time.Millisecond)
				cancel()
			})
		}
		if !errors.Is(serr, context.Canceled) {
			t.Errorf("from a task %v: Serve: %v, want context.Canceled", fromTask, serr)
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("from a task %v: a dial after Serve returned connected, want it refused", fromTask)
		}
	}
}
