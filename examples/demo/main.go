// Command demo shows faio-go at work on this machine: a tree of tasks,
// thousands of timers on the workers' wheels, file reads and a file copy
// through the workers' io_uring rings, a TCP echo server with hundreds of
// client tasks, a producer/consumer pipeline over a channel feeding a
// mutex-guarded map, a static file server on faiohttp over TLS, and the C
// and C++ examples; each step is checked and timed. It exits non-zero if a
// check fails.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/faio-go/faio"
	"github.com/faio-go/faio/modules/runtime"
	"github.com/faio-go/faio/modules/uring"
)

func main() {
	os.Exit(mainCode())
}

// mainCode runs the demo in a temporary directory of its own, which it
// removes at the end, and on Ctrl-C too: the steps' files (a 32 MiB data
// file, libfaio.so) go there, since os.MkdirTemp and the build scripts
// follow TMPDIR.
func mainCode() int {
	if _, err := os.Stat("include/faio.h"); err != nil {
		fmt.Fprintln(os.Stderr, "demo: run it from the repository's root: go run mage.go demo")
		return 2
	}
	tmp, err := os.MkdirTemp("", "faio-demo-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	os.Setenv("TMPDIR", tmp)
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-interrupted
		os.RemoveAll(tmp)
		os.Exit(130)
	}()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		return 1
	}
	return 0
}

func run() error {
	rt, err := faio.New(faio.Config{})
	if err != nil {
		return err
	}
	defer rt.Close()
	if rt.Backend() == faio.BackendIOUring {
		fmt.Printf("faio-go demo: %d workers, one io_uring and one timer wheel each\n", rt.Workers())
	} else {
		fmt.Printf("faio-go demo: %d workers on the portable backend (no io_uring here), one timer wheel each\n", rt.Workers())
	}
	for _, step := range []struct {
		name string
		fn   func(*faio.Runtime) (string, error)
	}{
		{"spawn", spawnTree},
		{"timers", timers},
		{"file", fileRead},
		{"copy", fileCopy},
		{"echo", echo},
		{"channel", pipeline},
		{"http", httpServer},
		{"C, C++", cHosts},
	} {
		msg, err := step.fn(rt)
		if err != nil {
			return fmt.Errorf("%s: %w", step.name, err)
		}
		fmt.Printf("  %-7s %s\n", step.name, msg)
	}
	s := rt.Stats()
	fmt.Printf("  stats   %d tasks, %d steals moved %d tasks, %d parks, %d I/O completions\n",
		s.Completed, s.Steals, s.Stolen, s.Parks, s.IOCompleted)
	return nil
}

// spawnTree spawns a tree of 111,110 tasks (10 levels of fan-out 10, five
// deep) and checks that every one ran once before BlockOn returned.
func spawnTree(rt *faio.Runtime) (string, error) {
	var ran atomic.Int64
	var grow func(ctx context.Context, depth int)
	grow = func(ctx context.Context, depth int) {
		if depth == 5 {
			return
		}
		for range 10 {
			faio.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				ran.Add(1)
				grow(ctx, depth+1)
				return struct{}{}, nil
			})
		}
	}
	start := time.Now()
	_, err := faio.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		grow(ctx, 0)
		return struct{}{}, nil
	})
	el := time.Since(start)
	if err != nil {
		return "", err
	}
	const want = 10 + 100 + 1000 + 10000 + 100000
	if n := ran.Load(); n != want {
		return "", fmt.Errorf("%d of %d tasks ran", n, want)
	}
	return fmt.Sprintf("%d tasks spawned and finished in %v (%.0f ns/task)",
		want, el.Round(time.Millisecond), float64(el.Nanoseconds())/want), nil
}

// timers puts 20,000 tasks to sleep for 1..100 ms and reports how late
// they woke; none may wake early.
func timers(rt *faio.Runtime) (string, error) {
	const n = 20000
	late := make([]time.Duration, n)
	start := time.Now()
	_, err := faio.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		for i := range n {
			d := time.Duration(1+i%100) * time.Millisecond
			faio.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				t0 := time.Now()
				if err := faio.Sleep(ctx, d); err != nil {
					return struct{}{}, err
				}
				late[i] = time.Since(t0) - d
				return struct{}{}, nil
			})
		}
		return struct{}{}, nil
	})
	el := time.Since(start)
	if err != nil {
		return "", err
	}
	slices.Sort(late)
	if late[0] < 0 {
		return "", fmt.Errorf("a sleep woke %v early", -late[0])
	}
	return fmt.Sprintf("%d sleeps of 1..100 ms in %v: lateness p50 %v, p99 %v",
		n, el.Round(time.Millisecond), late[n/2].Round(10*time.Microsecond),
		late[n*99/100].Round(10*time.Microsecond)), nil
}

// readOp reads len(buf) bytes at off through the worker's ring.
type readOp struct {
	fd  int
	buf []byte
	off uint64
}

func (o *readOp) Prep(sqe *uring.SQE) { sqe.PrepRead(o.fd, o.buf, o.off) }

// fileRead writes a 32 MiB file of random bytes, reads it back in 64 KiB
// pieces from 64 tasks through io_uring (runtime.Submit with the readOp
// above; on the portable backend, where there is no ring, File.ReadAt),
// and compares SHA-256 sums.
func fileRead(rt *faio.Runtime) (string, error) {
	const size, piece, readers = 32 << 20, 64 << 10, 64
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "faio-demo-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "data")
	if err := os.WriteFile(name, data, 0o600); err != nil {
		return "", err
	}
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	got := make([]byte, size)
	ring := rt.Backend() == faio.BackendIOUring
	via := "through io_uring"
	if !ring {
		via = "with File.ReadAt on the portable backend"
	}
	start := time.Now()
	_, err = faio.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		af, err := faio.Open(ctx, name)
		if err != nil {
			return struct{}{}, err
		}
		defer af.Close(ctx)
		var hs []*faio.JoinHandle[struct{}]
		for r := range readers {
			hs = append(hs, faio.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				for off := r * piece; off < size; off += readers * piece {
					buf := got[off : off+piece]
					n := 0
					if ring {
						res, err := runtime.Submit(ctx, &readOp{fd: int(f.Fd()), buf: buf, off: uint64(off)})
						if err == nil {
							err = res.Err()
						}
						if err != nil {
							return struct{}{}, err
						}
						n = int(res.Res)
					} else if n, err = af.ReadAt(ctx, buf, int64(off)); err != nil {
						return struct{}{}, err
					}
					if n != piece {
						return struct{}{}, fmt.Errorf("short read at %d: %d bytes", off, n)
					}
				}
				return struct{}{}, nil
			}))
		}
		for _, h := range hs {
			if _, err := h.Join(ctx); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	})
	el := time.Since(start)
	if err != nil {
		return "", err
	}
	want, have := sha256.Sum256(data), sha256.Sum256(got)
	if !bytes.Equal(want[:], have[:]) {
		return "", errors.New("SHA-256 of the bytes read differs from the file's")
	}
	return fmt.Sprintf("%d MiB read %s by %d tasks in %v (%.0f MiB/s), SHA-256 matches",
		size>>20, via, readers, el.Round(time.Millisecond), float64(size>>20)/el.Seconds()), nil
}
