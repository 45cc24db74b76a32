package aio

import (
	"context"
	"errors"
	"fmt"
	"github.com/faio-go/faio/modules/runtime"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Stress: tasks and goroutines take and drop references while Close runs.
// Every reference granted is to an open descriptor, none is granted after
// Close began, the descriptor is closed exactly once (a second close(2)
// would fail with EBADF, or close another file and change the count), and
// Close returns only once it is closed.
func TestStressFdGuard(t *testing.T) {
	const rounds = 300
	rt := newRuntime(t, runtime.Config{Workers: 2})
	before := countFDs(t)
	runTask(t, rt, func(ctx context.Context) error {
		for r := range rounds {
			fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
			if err != nil {
				return err
			}
			var g fdGuard
			g.init(rt, fd, false)
			var closeStarted atomic.Bool
			user := func(ctx context.Context) (int, error) {
				refs := 0
				for {
					if !g.incref() {
						if !closeStarted.Load() {
							return 0, errors.New("reference refused before Close")
						}
						return refs, nil
					}
					refs++
					if _, err := unix.FcntlInt(uintptr(g.fd), unix.F_GETFD, 0); err != nil {
						return 0, fmt.Errorf("descriptor closed under a reference: %v", err)
					}
					if refs%7 == 0 {
						if err := runtime.Yield(ctx); err != nil {
							return 0, err
						}
					}
					if refs%2 == 0 {
						g.decrefNow()
					} else {
						g.decref(ctx)
					}
				}
			}
			var hs []*runtime.JoinHandle[int]
			for range 4 {
				hs = append(hs, runtime.Spawn(ctx, user))
			}
			goroutineDone := make(chan error, 1)
			go func() {
				_, err := user(context.Background())
				goroutineDone <- err
			}()
			if err := runtime.Sleep(ctx, time.Duration(r%2)*time.Millisecond); err != nil {
				return err
			}
			closeStarted.Store(true)
			if err := g.close(ctx); err != nil {
				return fmt.Errorf("round %d: close = %v", r, err)
			}
			if done, err := g.closeResult(); !done || err != nil {
				return fmt.Errorf("round %d: close returned before the descriptor was closed (%v)", r, err)
			}
			if err := joinAll(ctx, hs); err != nil {
				return err
			}
			if err := <-goroutineDone; err != nil {
				return err
			}
			if s := g.state.Load(); s != guardClosing {
				return fmt.Errorf("round %d: state %#x after close, want only the closing bit", r, s)
			}
			if err := g.close(ctx); err != errAlreadyClosed {
				return fmt.Errorf("second close = %v", err)
			}
		}
		return nil
	})
	if after := countFDs(t); after != before {
		t.Fatalf("%d descriptors before, %d after", before, after)
	}
}

// Stress: tasks and goroutines take an opLock, some with contexts that are
// cancelled while they wait. At most one holds it at a time, every
// successful lock is matched by one unlock, a cancelled waiter never ends
// up holding it, and it is free at the end.
func TestStressOpLock(t *testing.T) {
	const perTask = 2000
	rt := newRuntime(t, runtime.Config{Workers: 2})
	var l opLock
	var holders, acquired, cancelled atomic.Int64
	locker := func(ctx context.Context, id int) error {
		for i := range perTask {
			lctx, cancel := ctx, context.CancelFunc(func() {})
			if (i+id)%5 == 0 {
				lctx, cancel = context.WithTimeout(ctx, time.Duration(i%3)*time.Microsecond)
			}
			err := l.lock(lctx)
			cancel()
			if err != nil {
				if !errors.Is(err, context.DeadlineExceeded) {
					return err
				}
				cancelled.Add(1)
				continue
			}
			if h := holders.Add(1); h != 1 {
				return fmt.Errorf("%d holders at once", h)
			}
			acquired.Add(1)
			if i%3 == 0 {
				if runtime.Current(ctx) != nil { // a task: Yield; a goroutine: go on
					if err := runtime.Yield(ctx); err != nil {
						return err
					}
				}
			}
			holders.Add(-1)
			l.unlock()
		}
		return nil
	}
	errs := make(chan error, 2)
	for g := range 2 {
		go func() { errs <- locker(context.Background(), 100+g) }()
	}
	within(t, 60*time.Second, "lockers", func() {
		runTask(t, rt, func(ctx context.Context) error {
			var hs []*runtime.JoinHandle[int]
			for id := range 8 {
				hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (int, error) { return 0, locker(ctx, id) }))
			}
			return joinAll(ctx, hs)
		})
	})
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if acquired.Load()+cancelled.Load() != int64(10*perTask) {
		t.Fatalf("%d acquired + %d cancelled != %d attempts", acquired.Load(), cancelled.Load(), 10*perTask)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held || l.head != len(l.waiters) {
		t.Fatalf("lock left held=%v with %d waiters", l.held, len(l.waiters)-l.head)
	}
	t.Logf("%d acquired, %d cancelled while waiting", acquired.Load(), cancelled.Load())
}

// The guard of a zero value grants no reference, is not closing, and its
// close fails at once without waiting, whoever calls it.
func TestZeroFdGuard(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	check := func(ctx context.Context) error {
		var g fdGuard
		if g.incref() {
			return errors.New("a zero fdGuard granted a reference")
		}
		if g.closing() {
			return errors.New("a zero fdGuard is closing")
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		for range 2 {
			if err := g.close(ctx); err != os.ErrInvalid {
				return fmt.Errorf("close of a zero fdGuard = %v, want os.ErrInvalid", err)
			}
		}
		if g.state.Load() != 0 || g.incref() {
			return fmt.Errorf("close changed a zero fdGuard (state %d)", g.state.Load())
		}
		return nil
	}
	fromGoroutineAndTask(t, rt, check)
}
