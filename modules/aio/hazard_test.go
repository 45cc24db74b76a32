package aio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// A task's read from the page cache holds no reference but its worker's
// announcement of the descriptor (fdGuard.protect). Close must still wait
// for such a read under way: closed early, the descriptor's number would
// go to the next file opened, and the read would return that file's bytes.
func TestCloseWaitsForACachedReadUnderWay(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			rt, f, mine, other := openCachedReadFile(t, backend)
			entered, proceed, read := heldCachedRead(t, rt, f, len(mine))
			<-entered
			closed := closeUnderRead(t, f, other, "a read of the descriptor")
			close(proceed)
			var r readResult
			within(t, 10*time.Second, "the read", func() { r = <-read })
			if r.err != nil || r.n != len(mine) || !bytes.Equal(r.b, mine) {
				t.Errorf("ReadAt = %d, %v, %q...; want %d bytes of the file", r.n, r.err, r.b[:8], len(mine))
			}
			within(t, 10*time.Second, "Close", func() {
				if err := <-closed; err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			runTask(t, rt, func(ctx context.Context) error {
				if _, err := f.ReadAt(ctx, make([]byte, 1), 0); !errors.Is(err, fs.ErrClosed) {
					t.Errorf("ReadAt after Close: %v, want fs.ErrClosed", err)
				}
				return nil
			})
		})
	}
}

// A read that Close interrupts after part of it was read reports that part
// with fs.ErrClosed, as an io.ReaderAt may (n < len(b) with an error):
// the bytes in b are the file's, and the count says so. It used to
// return 0, dropping what it had read.
func TestReadShortenedByCloseReportsWhatItRead(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			rt, f, mine, other := openCachedReadFile(t, backend)
			// Past the end: the cached read is short, and the rest
			// would need a reference, which Close refuses.
			entered, proceed, read := heldCachedRead(t, rt, f, 2*len(mine))
			<-entered
			closed := closeUnderRead(t, f, other, "a read of the descriptor")
			close(proceed)
			var r readResult
			within(t, 10*time.Second, "the read", func() { r = <-read })
			if !errors.Is(r.err, fs.ErrClosed) || r.n != len(mine) || !bytes.Equal(r.b[:len(mine)], mine) {
				t.Errorf("ReadAt = %d, %v, %q...; want %d bytes of the file and fs.ErrClosed", r.n, r.err, r.b[:8], len(mine))
			}
			within(t, 10*time.Second, "Close", func() {
				if err := <-closed; err != nil {
					t.Errorf("Close: %v", err)
				}
			})
		})
	}
}

// Reads of one file from tasks on every worker, racing with its Close and
// with files opened on the numbers it frees, return the file's bytes or
// fs.ErrClosed, never another file's.
func TestStressCachedReadsRacingClose(t *testing.T) {
	mine, minePath, other := cachedReadFiles(t)
	rounds := 200
	if testing.Short() {
		rounds = 40
	}
	rt := newRuntime(t, runtime.Config{Workers: 2})
	total := 0
	within(t, 60*time.Second, "the rounds", func() {
		runTask(t, rt, func(ctx context.Context) error {
			for r := range rounds {
				f, err := Open(ctx, minePath)
				if err != nil {
					return err
				}
				var hs []*runtime.JoinHandle[int]
				for range 4 {
					hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
						b := make([]byte, len(mine))
						reads := 0
						for {
							n, err := f.ReadAt(ctx, b, 0)
							if errors.Is(err, fs.ErrClosed) {
								return reads, nil
							}
							if err != nil || n != len(b) || !bytes.Equal(b, mine) {
								return reads, fmt.Errorf("round %d: ReadAt = %d, %v, %q...", r, n, err, b[:8])
							}
							reads++
						}
					}))
				}
				if err := runtime.Yield(ctx); err != nil {
					return err
				}
				if err := f.Close(ctx); err != nil {
					return err
				}
				var opened []*os.File
				for range 4 {
					o, err := os.Open(other)
					if err != nil {
						return err
					}
					opened = append(opened, o)
				}
				for _, h := range hs {
					n, jerr := h.Join(ctx)
					total += n
					if jerr != nil && err == nil {
						err = jerr
					}
				}
				for _, o := range opened {
					o.Close()
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	})
	t.Logf("%d reads in %d rounds", total, rounds)
	if total < rounds {
		t.Errorf("%d reads in %d rounds: the reads did not race with Close", total, rounds)
	}
}

// A File read by a task of another runtime than its own: the close waits
// only for the announcements of the File's runtime's workers, so that
// task must read with a reference. Before, it read under an announcement
// on its own runtime's worker, Close did not wait for it, and the read
// returned the bytes of the file opened on the freed number.
func TestCloseWaitsForACachedReadFromAnotherRuntime(t *testing.T) {
	mine, minePath, other := cachedReadFiles(t)
	rtA := newRuntime(t, runtime.Config{Workers: 1})
	var f *File
	runTask(t, rtA, func(ctx context.Context) error {
		var err error
		f, err = Open(ctx, minePath)
		return err
	})
	rtB := newRuntime(t, runtime.Config{Workers: 1})
	entered, proceed, read := heldCachedRead(t, rtB, f, len(mine))
	check := func(r readResult) {
		t.Helper()
		if r.err != nil || r.n != len(mine) || !bytes.Equal(r.b, mine) {
			t.Errorf("ReadAt = %d, %v, %q...; want %d bytes of the file", r.n, r.err, r.b[:8], len(mine))
		}
	}
	select {
	case r := <-read:
		// Read with a reference, as it must be: nothing to race.
		check(r)
		if err := f.Close(context.Background()); err != nil {
			t.Error(err)
		}
		return
	case <-entered:
	}
	closeUnderRead(t, f, other, "a cached read by a task of another runtime")
	close(proceed)
	within(t, 10*time.Second, "the read", func() { check(<-read) })
}

// cachedReadFiles writes two 4 KiB files to a temporary directory: "mine",
// of As, which the tests read, and "other", of Bs, which they open on the
// numbers a Close frees. It returns the first's contents and both paths.
func cachedReadFiles(t *testing.T) (mine []byte, minePath, otherPath string) {
	t.Helper()
	dir := t.TempDir()
	mine = bytes.Repeat([]byte("A"), 4096)
	minePath, otherPath = filepath.Join(dir, "mine"), filepath.Join(dir, "other")
	if err := os.WriteFile(minePath, mine, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(otherPath, bytes.Repeat([]byte("B"), 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	return mine, minePath, otherPath
}

// openCachedReadFile opens the first of cachedReadFiles' files on a
// runtime of 2 workers on backend, and returns the runtime, the File, its
// bytes and the other file's path.
func openCachedReadFile(t *testing.T, backend runtime.Backend) (rt *runtime.Runtime, f *File, mine []byte, otherPath string) {
	t.Helper()
	mine, minePath, otherPath := cachedReadFiles(t)
	rt = newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
	runTask(t, rt, func(ctx context.Context) error {
		var err error
		f, err = Open(ctx, minePath)
		return err
	})
	return rt, f, mine, otherPath
}

// readResult is what a ReadAt returned.
type readResult struct {
	n   int
	err error
	b   []byte
}

// heldCachedRead reads n bytes of f at 0 from a task of rt, holding the
// first cached read between its announcement and its system call until
// proceed is closed: entered closes when the read is held there, and the
// result arrives on read.
func heldCachedRead(t *testing.T, rt *runtime.Runtime, f *File, n int) (entered, proceed chan struct{}, read chan readResult) {
	entered, proceed = make(chan struct{}), make(chan struct{})
	var once sync.Once
	testHookCachedRead = func() {
		once.Do(func() {
			close(entered)
			<-proceed
		})
	}
	t.Cleanup(func() { testHookCachedRead = nil })
	read = make(chan readResult, 1)
	go func() {
		_, _ = runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
			b := make([]byte, n)
			n, err := f.ReadAt(ctx, b, 0)
			read <- readResult{n, err, b}
			return struct{}{}, nil
		})
	}()
	return entered, proceed, read
}

// closeUnderRead closes f from a goroutine while a read of it is held
// (heldCachedRead), fails the test if Close returns within 100 ms (what
// says what the read is), and then opens otherPath 8 times, so that the
// numbers an early close freed go to another file; those close with the
// test. The returned channel gets Close's result.
func closeUnderRead(t *testing.T, f *File, otherPath, what string) <-chan error {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- f.Close(context.Background()) }()
	select {
	case err := <-closed:
		t.Errorf("Close returned (%v) while %s was under way", err, what)
		closed <- err
	case <-time.After(100 * time.Millisecond):
	}
	for range 8 {
		o, err := os.Open(otherPath)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
	}
	return closed
}
