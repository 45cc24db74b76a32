package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// asyncReadOp reads a pipe from an io-wq worker (IOSQE_ASYNC).
type asyncReadOp struct {
	fd  int
	buf []byte
}

func (o *asyncReadOp) Prep(sqe *uring.SQE) {
	sqe.PrepRead(o.fd, o.buf, ^uint64(0))
	sqe.SetFlags(uring.SQEAsync)
}

func spinFor(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// The cancel of an IOSQE_ASYNC read of an empty pipe that reaches the
// io-wq worker after it found the pipe empty, before it armed its poll,
// is answered -EALREADY, and the read then waits for data for good. The
// driver asked once, so the task's wait never ended (found by a reviewer:
// 1 to 5 of 3,000 rounds); it now asks again.
func TestCancelAnsweredEALREADYIsAskedAgain(t *testing.T) {
	rt := newRingRuntime(t, Config{Workers: 1})
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	rounds := 3000
	if testing.Short() {
		rounds = 300
	}
	for i := range rounds {
		started := make(chan struct{})
		h := SpawnOn(rt, func(ctx context.Context) (int, error) {
			close(started)
			_, err := Submit(ctx, &asyncReadOp{fd: p[0], buf: make([]byte, 8)})
			return 0, err
		})
		<-started
		spinFor(time.Duration(i%40) * time.Microsecond)
		h.Cancel()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := h.Join(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("round %d: the cancelled read had not returned after 5 s (a lost cancel)", i)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: %v", i, err)
		}
	}
}

// Close ends such reads too: it waited for one whose cancel was lost, for
// good.
func TestCloseEndsAsyncReadsWhoseCancelWasRefused(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	for round := range 100 {
		rt, err := New(Config{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if rt.Backend() != BackendIOUring {
			rt.Close()
			t.Skip("needs io_uring")
		}
		started := make(chan struct{}, 16)
		for range 16 {
			SpawnOn(rt, func(ctx context.Context) (int, error) {
				started <- struct{}{}
				_, err := Submit(ctx, &asyncReadOp{fd: p[0], buf: make([]byte, 8)})
				return 0, err
			})
		}
		for range 16 {
			<-started
		}
		spinFor(time.Duration(round%20) * time.Microsecond)
		done := make(chan struct{})
		go func() { rt.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Close had not returned after 10 s with cancelled reads in flight", round)
		}
	}
}

// SubmitOn from a goroutine returns the result of an operation that
// completed as its ctx ended: it returned ctx's error when the task
// completed between Join giving up on ctx and its look at the task, and
// the read's byte was lost (found by a reviewer: 2 to 15 of 100,000).
func TestSubmitOnKeepsTheResultOfACompletedOperation(t *testing.T) {
	rt := newRingRuntime(t, Config{Workers: 2})
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	rounds := 100000
	if testing.Short() || raceEnabled {
		rounds = 20000
	}
	lost := 0
	for i := range rounds {
		unix.Write(p[1], []byte{1})
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			spinFor(time.Duration(i%8) * time.Microsecond)
			cancel()
		}()
		res, err := SubmitOn(ctx, rt, &readOp{fd: p[0], buf: make([]byte, 1), off: ^uint64(0)})
		cancel()
		if err == nil {
			if res.Res != 1 {
				t.Fatalf("read = %d", res.Res)
			}
			continue
		}
		var b [1]byte // cancelled: was the byte read anyway?
		if n, _ := unix.Read(p[0], b[:]); n != 1 {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d times SubmitOn returned ctx's error for a read that completed (its byte consumed and dropped)", lost)
	}
}
