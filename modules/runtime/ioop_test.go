package runtime

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// readOp reads into buf at off: the simplest Op, keeping buf reachable
// through the record while the kernel writes into it.
type readOp struct {
	fd  int
	buf []byte
	off uint64
}

func (o *readOp) Prep(sqe *uring.SQE) { sqe.PrepRead(o.fd, o.buf, o.off) }

type recvOp struct {
	fd  int
	buf []byte
}

func (o *recvOp) Prep(sqe *uring.SQE) { sqe.PrepRecv(o.fd, o.buf, 0) }

func tempFile(t *testing.T, data []byte) *os.File {
	t.Helper()
	name := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestSubmitReadsAtOffsets(t *testing.T) { submitReadsAtOffsets(t, Config{Workers: 2}) }

// With SQPOLL the rings' kernel threads take the entries: same results.
func TestSubmitReadsAtOffsetsSQPoll(t *testing.T) {
	submitReadsAtOffsets(t, Config{Workers: 2, SQPollIdle: 5 * time.Millisecond})
}

func submitReadsAtOffsets(t *testing.T, cfg Config) {
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	f := tempFile(t, data)
	rt := newRingRuntime(t, cfg)
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		var hs []*JoinHandle[int]
		for i := 0; i < 256; i++ {
			hs = append(hs, Spawn(ctx, func(ctx context.Context) (int, error) {
				off := uint64(i) * 4096
				op := &readOp{fd: int(f.Fd()), buf: make([]byte, 4096), off: off}
				res, err := Submit(ctx, op)
				if err != nil {
					return 0, err
				}
				if res.Res != 4096 || !bytes.Equal(op.buf, data[off:off+4096]) {
					return 0, errors.New("wrong bytes at " + itoa(off))
				}
				return 1, nil
			}))
		}
		n := 0
		for _, h := range hs {
			v, err := h.Join(ctx)
			if err != nil {
				return 0, err
			}
			n += v
		}
		return n, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := rt.Stats(); s.IOSubmitted < 256 || s.IOCompleted < 256 {
		t.Fatalf("stats: %+v", s)
	}
}

func TestSubmitErrorIsErrno(t *testing.T) {
	rt := newRingRuntime(t, Config{Workers: 1})
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		res, err := Submit(ctx, &readOp{fd: 1 << 20, buf: make([]byte, 8)})
		if err != nil {
			return 0, err
		}
		if !errors.Is(res.Err(), syscall.EBADF) {
			return 0, errors.New("bad fd: " + errString(res.Err()))
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pollMultishotOp asks for a multishot poll, which Submit cannot hand back.
type pollMultishotOp struct{ fd int }

func (o *pollMultishotOp) Prep(sqe *uring.SQE) { sqe.PrepPollMultishot(o.fd, unix.POLLIN) }

// A multishot request fails with EINVAL at once, even on a descriptor that
// is ready: it never runs, so it cannot post results nobody collects, or
// keep Submit waiting for its end.
func TestSubmitRefusesAMultishotOp(t *testing.T) {
	rt := newRingRuntime(t, Config{Workers: 1})
	a, b := socketPair(t)
	if _, err := unix.Write(b, []byte("x")); err != nil {
		t.Fatal(err)
	}
	res, err := BlockOn(rt, func(ctx context.Context) (Result, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return Submit(ctx, &pollMultishotOp{fd: a})
	})
	if err != nil {
		t.Fatalf("Submit: %v (result %+v)", err, res)
	}
	if !errors.Is(res.Err(), syscall.EINVAL) {
		t.Fatalf("Submit of a multishot poll: %+v, want EINVAL", res)
	}
}

func socketPair(t *testing.T) (int, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

// A recv that never completes is cancelled through ASYNC_CANCEL; Submit
// returns ctx.Err() only after the kernel gave the buffer back, and the
// worker goes on serving.
func TestSubmitCancelledByDeadline(t *testing.T) {
	a, _ := socketPair(t)
	rt := newRingRuntime(t, Config{Workers: 2})
	within(t, 10*time.Second, "cancelled recv", func() {
		_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
			cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			_, err := Submit(cctx, &recvOp{fd: a, buf: make([]byte, 16)})
			if !errors.Is(err, context.DeadlineExceeded) {
				return 0, errors.New("recv past deadline: " + errString(err))
			}
			return 0, nil
		})
		if err != nil {
			t.Error(err)
		}
	})
}

// Cancellation races completion: each Submit returns exactly one outcome,
// the data (if the send won) or ctx.Err() (if the cancel did), and no byte
// is lost between them.
func TestStressCancelRacesCompletion(t *testing.T) {
	a, b := socketPair(t)
	rt := newRingRuntime(t, Config{Workers: 2})
	n := 2000
	if raceEnabled {
		n = 500
	}
	var got, cancelled atomic.Int64
	// A receive may complete with an earlier write's byte before its own
	// goroutine has run: the drain below waits for every write.
	var writers sync.WaitGroup
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		buf := make([]byte, 1)
		for i := 0; i < n; i++ {
			cctx, cancel := context.WithCancel(ctx)
			writers.Add(1)
			go func() {
				defer writers.Done()
				if i%2 == 0 {
					unix.Write(b, []byte{1})
				}
				cancel()
			}()
			res, err := Submit(cctx, &recvOp{fd: a, buf: buf})
			cancel()
			switch {
			case err == nil && res.Res == 1:
				got.Add(1)
			case errors.Is(err, context.Canceled):
				cancelled.Add(1)
			default:
				return 0, errors.New("unexpected outcome: " + errString(err) + " res " + itoa(uint64(res.Res)))
			}
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Drain what the cancelled receives left in the socket.
	writers.Wait()
	unix.SetNonblock(a, true)
	left := 0
	for {
		var p [256]byte
		k, err := unix.Read(a, p[:])
		if k <= 0 || err != nil {
			break
		}
		left += k
	}
	if sent := int64(n / 2); got.Load()+int64(left) != sent {
		t.Fatalf("sent %d bytes, received %d through Submit and %d left over", sent, got.Load(), left)
	}
	if got.Load()+cancelled.Load() != int64(n) {
		t.Fatalf("%d received + %d cancelled != %d", got.Load(), cancelled.Load(), n)
	}
}

// Buffers stay valid while the kernel owns them, whatever the GC does:
// reads run while another goroutine forces collections.
func TestSubmitSurvivesGC(t *testing.T) {
	data := make([]byte, 256<<10)
	for i := range data {
		data[i] = byte(i*31 + 5)
	}
	f := tempFile(t, data)
	rt := newRingRuntime(t, Config{Workers: 2})
	stop := make(chan struct{})
	gcDone := make(chan struct{})
	go func() {
		defer close(gcDone)
		for {
			select {
			case <-stop:
				return
			default:
				goruntime.GC()
			}
		}
	}()
	defer func() { close(stop); <-gcDone }()
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		for i := 0; i < 64; i++ {
			Spawn(ctx, func(ctx context.Context) (int, error) {
				for j := 0; j < 200; j++ {
					off := uint64((i*20+j)%64) * 4096
					op := &readOp{fd: int(f.Fd()), buf: make([]byte, 4096), off: off}
					if _, err := Submit(ctx, op); err != nil {
						return 0, err
					}
					if !bytes.Equal(op.buf, data[off:off+4096]) {
						return 0, errors.New("corrupted read under GC")
					}
				}
				return 0, nil
			})
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCloseWithIOInFlight(t *testing.T) {
	a, _ := socketPair(t)
	rt, err := New(Config{Workers: 2})
	if err == nil && rt.Backend() != BackendIOUring {
		rt.Close()
		t.Skip("needs io_uring: the runtime runs on the portable backend")
	}
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	res := make(chan error, 1)
	go func() {
		_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
			close(started)
			_, err := Submit(ctx, &recvOp{fd: a, buf: make([]byte, 16)})
			return 0, err
		})
		res <- err
	}()
	<-started
	time.Sleep(10 * time.Millisecond)
	within(t, 10*time.Second, "Close with a recv in flight", func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	if err := <-res; !errors.Is(err, ErrClosed) {
		t.Fatalf("BlockOn = %v, want ErrClosed", err)
	}
}

func TestSubmitOnFromGoroutine(t *testing.T) {
	data := []byte("hello from the ring")
	f := tempFile(t, data)
	rt := newRingRuntime(t, Config{Workers: 1})
	op := &readOp{fd: int(f.Fd()), buf: make([]byte, len(data))}
	r, err := SubmitOn(context.Background(), rt, op)
	if err != nil || int(r.Res) != len(data) || !bytes.Equal(op.buf, data) {
		t.Fatalf("SubmitOn = %+v, %v, %q", r, err, op.buf)
	}
}

// prepCounter counts how often the worker prepared it.
type prepCounter struct {
	readOp
	preps atomic.Int32
}

func (o *prepCounter) Prep(sqe *uring.SQE) { o.preps.Add(1); o.readOp.Prep(sqe) }

// SubmitOn from a goroutine with a context that has already ended does not
// start the operation, as Submit does not (a write with an expired net
// deadline used to go out anyway).
func TestSubmitOnEndedContextStartsNothing(t *testing.T) {
	rt := newRingRuntime(t, Config{Workers: 1})
	f := tempFile(t, []byte("data"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 100 {
		op := &prepCounter{readOp: readOp{fd: int(f.Fd()), buf: make([]byte, 4)}}
		if _, err := SubmitOn(ctx, rt, op); !errors.Is(err, context.Canceled) {
			t.Fatalf("SubmitOn with a cancelled context = %v, want context.Canceled", err)
		}
		if n := op.preps.Load(); n != 0 {
			t.Fatalf("the operation was prepared %d times", n)
		}
	}
}

// newRingRuntime is newRuntime for a test of Submit, which needs io_uring:
// it skips the test where the runtime runs on the portable backend
// (FAIO_BACKEND=portable, or io_uring refused).
func newRingRuntime(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	rt := newRuntime(t, cfg)
	if rt.Backend() != BackendIOUring {
		t.Skip("needs io_uring: the runtime runs on the portable backend")
	}
	return rt
}
