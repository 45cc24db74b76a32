package aio

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
	"golang.org/x/sys/unix"
)

// An O_DIRECT File opened on a portable runtime and read at the file
// position by a task of an io_uring runtime: each Read must return the
// next block and move the position, as os.File.Read does.
func TestDirectReadAtThePositionFromAnotherRuntimesRingTask(t *testing.T) {
	name, data := directFileAny(t, 4*directBlock)
	rtP := newRuntime(t, runtime.Config{Workers: 1, IOBackend: runtime.BackendPortable})
	rtU := ringRuntime(t)
	f, err := OpenFile(goroutineCtx(rtP), name, os.O_RDWR|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	runTask(t, rtU, func(ctx context.Context) error {
		buf := alignedBlocks(1)
		for i := range 3 {
			n, err := f.Read(ctx, buf)
			if err != nil || n != directBlock {
				return fmt.Errorf("Read %d = %d, %v", i, n, err)
			}
			if !bytes.Equal(buf, data[i*directBlock:(i+1)*directBlock]) {
				pos, _ := f.Seek(ctx, 0, io.SeekCurrent)
				return fmt.Errorf("Read %d returned the wrong block (position now %d, want %d)", i, pos, (i+1)*directBlock)
			}
		}
		return nil
	})
}

// Two Writes at the position through an O_DIRECT File of a portable
// runtime, from a task of an io_uring runtime, go one after the other, as
// os.File's do. They went to the task's ring at the position, which an
// O_DIRECT transfer does not move, and the second overwrote the first (on
// a file being overwritten, not extended: ext4 completes those
// asynchronously).
func TestDirectWriteAtThePositionFromAnotherRuntimesRingTask(t *testing.T) {
	name, _ := directFileAny(t, 4*directBlock)
	rtP := newRuntime(t, runtime.Config{Workers: 1, IOBackend: runtime.BackendPortable})
	rtU := ringRuntime(t)
	f, err := OpenFile(goroutineCtx(rtP), name, os.O_RDWR|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	runTask(t, rtU, func(ctx context.Context) error {
		buf := alignedBlocks(1)
		for i := range 2 {
			for j := range buf {
				buf[j] = byte('A' + i)
			}
			if n, err := f.Write(ctx, buf); err != nil || n != directBlock {
				return fmt.Errorf("Write %d = %d, %v", i, n, err)
			}
		}
		return f.Close(ctx)
	})
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 'A' || got[directBlock] != 'B' {
		t.Fatalf("after two Writes at the position the first two blocks begin with %q and %q, want 'A' and 'B'", got[0], got[directBlock])
	}
}

// OpenFile of a FIFO for writing, from a task of an io_uring runtime with
// a context naming a portable runtime, waits for a reader, as open(2) and
// OpenFile's doc say. The open went to the task's ring, whose inline
// attempt got ENXIO, and the retry was skipped for the portable runtime.
func TestFIFOOpenForWritingFromAnotherRuntimesRingTask(t *testing.T) {
	fifo := t.TempDir() + "/fifo"
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	rtP := newRuntime(t, runtime.Config{Workers: 1, IOBackend: runtime.BackendPortable})
	rtU := ringRuntime(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(50 * time.Millisecond)
		if r, err := os.OpenFile(fifo, os.O_RDONLY, 0); err == nil {
			defer r.Close()
			io.Copy(io.Discard, r)
		}
	}()
	_, err := runtime.BlockOn(rtU, func(ctx context.Context) (struct{}, error) {
		f, err := OpenFile(runtime.WithRuntime(context.Background(), rtP), fifo, os.O_WRONLY, 0)
		if err != nil {
			return struct{}{}, err
		}
		return struct{}{}, f.Close(ctx)
	})
	if err != nil {
		t.Error(err)
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil { // release the reader
			w.Close()
		}
	}
	<-done
}

// ringRuntime starts a one-worker runtime on io_uring, skipping the test
// where there is none (a seccomp filter, FAIO_BACKEND=portable).
func ringRuntime(t *testing.T) *runtime.Runtime {
	t.Helper()
	rt := newRuntime(t, runtime.Config{Workers: 1})
	if rt.Backend() != runtime.BackendIOUring {
		t.Skip("needs a runtime on io_uring")
	}
	return rt
}
