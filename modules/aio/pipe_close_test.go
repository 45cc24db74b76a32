package aio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
	"golang.org/x/sys/unix"
)

// Close of a File on a FIFO (a pipe has no shutdown) ends the Read that
// waits for a writer and the Write that waits for room, which then report
// fs.ErrClosed, as os.File's do; Close itself returns at once. Before, a
// goroutine's wait in the netpoller and a task's read on the ring were
// never woken, and Close waited for them forever.
func TestCloseEndsWaitsOnAPipe(t *testing.T) {
	forBackendsAndCallers(t, func(t *testing.T, backend runtime.Backend, inTask bool) {
		for _, write := range []bool{false, true} {
			name := "read"
			if write {
				name = "write"
			}
			t.Run(name, func(t *testing.T) {
				testCloseEndsPipeWait(t, backend, inTask, write)
			})
		}
	})
}

func testCloseEndsPipeWait(t *testing.T, backend runtime.Backend, inTask, write bool) {
	rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
	gctx := goroutineCtx(rt)
	f := openFIFO(t, gctx)
	if write {
		// Fill the pipe, so that the next Write waits for room.
		size, err := unix.FcntlInt(uintptr(f.guard.fd), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(gctx, make([]byte, size)); err != nil {
			t.Fatal(err)
		}
	}
	opErr := make(chan error, 1)
	op := func(ctx context.Context) (int, error) {
		var err error
		if write {
			_, err = f.Write(ctx, make([]byte, 8))
		} else {
			_, err = f.Read(ctx, make([]byte, 8))
		}
		opErr <- err
		return 0, nil
	}
	if inTask {
		runtime.SpawnOn(rt, op)
	} else {
		go op(gctx)
	}
	select {
	case err := <-opErr:
		t.Fatalf("the operation did not wait: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	closed := make(chan error, 1)
	go func() { closed <- f.Close(gctx) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return while an operation waited on the pipe")
	}
	select {
	case err := <-opErr:
		if !errors.Is(err, fs.ErrClosed) {
			t.Errorf("the waiting operation ended with %v, want fs.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting operation did not return after Close")
	}
}

// A task on io_uring that opens a FIFO for writing waits for a reader, as
// open(2) and os.OpenFile do, and its ctx's deadline ends that wait. The
// ring's inline attempt, which the kernel makes non-blocking, used to fail
// at once with ENXIO (found by a reviewer).
func TestTaskOpensAFIFOForWriting(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	if rt.Backend() != runtime.BackendIOUring {
		t.Skip("io_uring only: elsewhere the open is open(2) itself")
	}
	fifo := makeFIFO(t)
	// No reader comes: the deadline ends the wait.
	runTask(t, rt, func(ctx context.Context) error {
		dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		f, err := OpenFile(dctx, fifo, os.O_WRONLY, 0)
		if err == nil {
			f.Close(ctx)
			return errors.New("OpenFile of a FIFO without a reader succeeded")
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("OpenFile = %v, want DeadlineExceeded", err)
		}
		if d := time.Since(start); d < 90*time.Millisecond {
			return fmt.Errorf("OpenFile gave up after %v, before its deadline", d)
		}
		return nil
	})
	// A reader comes later: the open waits for it, and the data goes through.
	got := make(chan string, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		r, err := os.OpenFile(fifo, os.O_RDONLY, 0)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(r)
		r.Close()
		got <- string(b)
	}()
	runTask(t, rt, func(ctx context.Context) error {
		f, err := OpenFile(ctx, fifo, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("OpenFile(fifo, O_WRONLY) = %v, want it to wait for the reader", err)
		}
		if _, err := f.Write(ctx, []byte("hello")); err != nil {
			return err
		}
		return f.Close(ctx)
	})
	if s := <-got; s != "hello" {
		t.Errorf("the reader got %q", s)
	}
}

// makeFIFO makes a FIFO in a test directory and returns its path.
func makeFIFO(t *testing.T) string {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	return fifo
}

// openFIFO opens a new FIFO for reading and writing at once: the open does
// not wait for a peer (opening one end alone would), and the FIFO never
// reports the end of its data. The caller closes it.
func openFIFO(t *testing.T, ctx context.Context) *File {
	t.Helper()
	f, err := OpenFile(ctx, makeFIFO(t), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A File on a FIFO opened O_RDWR (as a pseudo-terminal's master, a File
// both read and written) has no file position: as with os.File, a Write
// and a Seek do not wait for a Read that waits for data. The Write goes
// through and the Read returns its bytes; the Seek fails at once with
// ESPIPE. Before, Read, Write and Seek shared one lock, and the Write
// waited for the Read, which waited for the Write.
func TestPipeWriteDoesNotWaitForRead(t *testing.T) {
	forBackendsAndCallers(t, func(t *testing.T, backend runtime.Backend, inTask bool) {
		rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
		gctx := goroutineCtx(rt)
		f := openFIFO(t, gctx)
		defer f.Close(gctx) // ends the Read if the test fails
		// call runs f as the caller under test: a task or a goroutine.
		call := func(f func(ctx context.Context) (int, error)) <-chan error {
			done := make(chan error, 1)
			if inTask {
				go func() {
					_, err := runtime.SpawnOn(rt, f).Join(context.Background())
					done <- err
				}()
			} else {
				go func() { _, err := f(gctx); done <- err }()
			}
			return done
		}
		buf := make([]byte, 8)
		var n int
		read := call(func(ctx context.Context) (int, error) {
			var err error
			n, err = f.Read(ctx, buf)
			return n, err
		})
		time.Sleep(50 * time.Millisecond) // let the Read wait
		select {
		case err := <-read:
			t.Fatalf("Read of an empty FIFO returned: %v", err)
		default:
		}
		seek := call(func(ctx context.Context) (int, error) {
			_, err := f.Seek(ctx, 0, io.SeekStart)
			return 0, err
		})
		select {
		case err := <-seek:
			if !errors.Is(err, unix.ESPIPE) {
				t.Errorf("Seek on a FIFO = %v, want ESPIPE as os.File's", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Seek waited for the Read")
		}
		write := call(func(ctx context.Context) (int, error) { return f.Write(ctx, []byte("hi")) })
		select {
		case err := <-write:
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Write waited for the Read")
		}
		select {
		case err := <-read:
			if err != nil || string(buf[:n]) != "hi" {
				t.Fatalf("Read = %q, %v; want \"hi\"", buf[:n], err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Read did not return the bytes written")
		}
	})
}
