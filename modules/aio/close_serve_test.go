package aio

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// Close of the runtime ends http.Server.Serve in a task also when Close
// lands while Serve is between two Accepts (it has just accepted a
// connection), not only while it is suspended in one: under a steady
// stream of connections Serve is often running, or its Accept completes
// though Close cancelled it, and its next Accept begins after Close. That
// Accept must not wait for ever once the connections stop coming.
func TestRuntimeCloseEndsServeUnderLoad(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			for i := 0; i < 10; i++ {
				rt, l := runtimeWithListener(t, backend)
				addr := l.Addr().String()
				h := runtime.SpawnOn(rt, func(ctx context.Context) (error, error) {
					defer l.Close()
					return (&http.Server{Handler: http.NotFoundHandler()}).Serve(l), nil
				})
				stop := make(chan struct{})
				var wg sync.WaitGroup
				var dials atomic.Int64
				for range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							select {
							case <-stop:
								return
							default:
							}
							c, err := net.DialTimeout("tcp", addr, time.Second)
							if err == nil {
								dials.Add(1)
								c.Close()
							}
						}
					}()
				}
				for dials.Load() < 20 {
					time.Sleep(time.Millisecond)
				}
				closed := closeAsync(rt)
				// The load stops soon after Close began: while
				// connections keep coming, an Accept may find one
				// without waiting, and Serve goes on.
				time.Sleep(20 * time.Millisecond)
				close(stop)
				wg.Wait()
				// Past the bound Serve waits in an Accept begun after
				// Close: only the listener's own Close ends it.
				if !closedWithin(t, closed, 5*time.Second, func() { l.Close() }) {
					t.Fatalf("run %d: Close with Serve under load did not return within 5 s of the load's end (after %d dials)", i, dials.Load())
				}
				if got, err := h.Join(context.Background()); err != nil || !errors.Is(got, runtime.ErrClosed) && !errors.Is(got, net.ErrClosed) {
					t.Errorf("run %d: Serve during Close = %v (task: %v)", i, got, err)
				}
			}
		})
	}
}

// A task whose first Accept on a net.Listener adapter begins once Close
// has begun (the task was woken by Close's cancellation of its own
// context and goes on to serve) does not hold Close: the Accept fails
// with an error matching runtime.ErrClosed. On the portable backend the
// runtime's readiness poller refuses a descriptor once Close has begun,
// and the wait would go to the netpoller, where Close cannot reach it.
func TestRuntimeCloseEndsAcceptBegunDuringClose(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			rt, l := runtimeWithListener(t, backend)
			defer l.Close()
			waiting := make(chan struct{})
			h := runtime.SpawnOn(rt, func(ctx context.Context) (error, error) {
				close(waiting)
				_ = runtime.Sleep(ctx, time.Hour) // ended by Close
				c, err := l.Accept()
				if err == nil {
					c.Close()
				}
				return err, nil
			})
			<-waiting
			time.Sleep(20 * time.Millisecond)
			if !closedWithin(t, closeAsync(rt), 5*time.Second, func() { l.Close() }) {
				t.Fatal("Close did not return within 5 s: an Accept begun during Close held it")
			}
			if got, err := h.Join(context.Background()); err != nil || !errors.Is(got, runtime.ErrClosed) {
				t.Errorf("Accept begun during Close = %v (task: %v), want an error matching runtime.ErrClosed", got, err)
			}
		})
	}
}

// closeAsync starts rt.Close on a goroutine of its own; the channel gets
// its result.
func closeAsync(rt *runtime.Runtime) <-chan error {
	closed := make(chan error, 1)
	go func() { closed <- rt.Close() }()
	return closed
}

// closedWithin waits up to d for the result of closeAsync and reports a
// Close error. If Close has not returned by then, it calls unstick, which
// must let Close end (closing what the waits are in), waits for Close and
// reports false, so that the test fails instead of hanging.
func closedWithin(t *testing.T, closed <-chan error, d time.Duration, unstick func()) bool {
	t.Helper()
	select {
	case err := <-closed:
		if err != nil {
			t.Error(err)
		}
		return true
	case <-time.After(d):
		unstick()
		<-closed
		return false
	}
}

// runtimeWithListener starts a runtime of two workers on backend, which the
// test closes itself (Close is what these tests exercise), and a TCP
// listener of it on a loopback port, as a net.Listener.
func runtimeWithListener(t *testing.T, backend runtime.Backend) (*runtime.Runtime, net.Listener) {
	t.Helper()
	rt, err := runtime.New(runtime.Config{Workers: 2, IOBackend: backend})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(goroutineCtx(rt), "tcp", "127.0.0.1:0")
	if err != nil {
		rt.Close()
		t.Fatal(err)
	}
	return rt, ln.NetListener()
}
