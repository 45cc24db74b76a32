package aio

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/faio-go/faio/modules/runtime"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A 64 MiB file written by WriteAt from many tasks, in chunks taken in
// random order, has exactly the bytes (checked by a SHA-256 computed by
// os) and reads back right at random offsets from many tasks.
func TestFileWriteAtReadAtManyTasks(t *testing.T) {
	size, chunk, readers, reads := 64<<20, 256<<10, 32, 4000
	data := randomBytes(size, 1)
	want := sha256.Sum256(data)
	name := filepath.Join(t.TempDir(), "big")
	rt := newRuntime(t, runtime.Config{Workers: 2})
	runTask(t, rt, func(ctx context.Context) error {
		f, err := Create(ctx, name)
		if err != nil {
			return err
		}
		order := rand.Perm(size / chunk)
		var next atomic.Int64
		var hs []*runtime.JoinHandle[int]
		for range readers {
			hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
				for {
					i := int(next.Add(1) - 1)
					if i >= len(order) {
						return 0, nil
					}
					off := order[i] * chunk
					if n, err := f.WriteAt(ctx, data[off:off+chunk], int64(off)); err != nil || n != chunk {
						return 0, fmt.Errorf("WriteAt(%d) = %d, %v", off, n, err)
					}
				}
			}))
		}
		if err := joinAll(ctx, hs); err != nil {
			return err
		}
		if err := f.Sync(ctx); err != nil {
			return err
		}
		return f.Close(ctx)
	})
	osData, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if got := sha256.Sum256(osData); got != want {
		t.Fatalf("SHA-256 of the written file %x, want %x", got, want)
	}

	runTask(t, rt, func(ctx context.Context) error {
		f, err := Open(ctx, name)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		var hs []*runtime.JoinHandle[int]
		for r := range readers {
			hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
				rng := rand.New(rand.NewPCG(uint64(r), 7))
				buf := make([]byte, 128<<10)
				for range reads / readers {
					n := 1 + rng.IntN(len(buf))
					off := rng.IntN(size - n + 1)
					got, err := f.ReadAt(ctx, buf[:n], int64(off))
					if err != nil || got != n || !bytes.Equal(buf[:n], data[off:off+n]) {
						return 0, fmt.Errorf("ReadAt(%d bytes at %d) = %d, %v or wrong bytes", n, off, got, err)
					}
				}
				return 0, nil
			}))
		}
		return joinAll(ctx, hs)
	})
}

// Short reads at the end of the file report io.EOF exactly where os.File
// does, for ReadAt, Read and Readv.
func TestFileEOFMatchesOS(t *testing.T) {
	data := randomBytes(1000, 2)
	name := filepath.Join(t.TempDir(), "small")
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	osf, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer osf.Close()
	rt := newRuntime(t, runtime.Config{Workers: 1})
	runTask(t, rt, func(ctx context.Context) error {
		f, err := Open(ctx, name)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		for _, c := range []struct{ n, off int }{{100, 0}, {100, 950}, {100, 1000}, {100, 5000}, {0, 1000}, {1000, 0}, {1001, 0}} {
			b1, b2 := make([]byte, c.n), make([]byte, c.n)
			n1, err1 := f.ReadAt(ctx, b1, int64(c.off))
			n2, err2 := osf.ReadAt(b2, int64(c.off))
			if n1 != n2 || err1 != err2 || !bytes.Equal(b1, b2) {
				return fmt.Errorf("ReadAt(%d at %d) = %d, %v; os: %d, %v", c.n, c.off, n1, err1, n2, err2)
			}
		}
		if _, err := f.ReadAt(ctx, make([]byte, 1), -1); err == nil {
			return errors.New("ReadAt at a negative offset succeeded")
		}
		// Sequential reads: same chunks, then 0, io.EOF, repeatedly.
		for _, size := range []int{300, 300, 300, 300, 300} {
			b1, b2 := make([]byte, size), make([]byte, size)
			n1, err1 := f.Read(ctx, b1)
			n2, err2 := osf.Read(b2)
			if n1 != n2 || err1 != err2 || !bytes.Equal(b1[:n1], b2[:n2]) {
				return fmt.Errorf("Read = %d, %v; os: %d, %v", n1, err1, n2, err2)
			}
		}
		if n, err := f.Readv(ctx, [][]byte{make([]byte, 10)}); n != 0 || err != io.EOF {
			return fmt.Errorf("Readv at EOF = %d, %v", n, err)
		}
		return nil
	})
}

func TestOpenMissingFileIsNotExist(t *testing.T) {
	name := filepath.Join(t.TempDir(), "missing")
	rt := newRuntime(t, runtime.Config{Workers: 1})
	runTask(t, rt, func(ctx context.Context) error {
		_, err := Open(ctx, name)
		var pe *fs.PathError
		if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Op != "open" || pe.Path != name {
			return fmt.Errorf("Open(missing) = %v", err)
		}
		if _, err := Open(ctx, "bad\x00name"); err == nil {
			return errors.New("Open accepted a NUL in the name")
		}
		if _, err := OpenFile(ctx, filepath.Dir(name), os.O_WRONLY, 0); !errors.Is(err, syscall.EISDIR) {
			return fmt.Errorf("opening a directory for writing = %v, want EISDIR", err)
		}
		return nil
	})
}

func TestFileStatMatchesOS(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "stat")
	if err := os.WriteFile(name, randomBytes(12345, 3), 0o640); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, runtime.Config{Workers: 1})
	for _, path := range []string{name, dir} {
		want, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		runTask(t, rt, func(ctx context.Context) error {
			f, err := Open(ctx, path)
			if err != nil {
				return err
			}
			defer f.Close(ctx)
			got, err := f.Stat(ctx)
			if err != nil {
				return err
			}
			if got.Name() != want.Name() || got.Size() != want.Size() || got.Mode() != want.Mode() ||
				!got.ModTime().Equal(want.ModTime()) || got.IsDir() != want.IsDir() {
				return fmt.Errorf("Stat(%s) = %s %d %v %v %v; os: %s %d %v %v %v", path,
					got.Name(), got.Size(), got.Mode(), got.ModTime(), got.IsDir(),
					want.Name(), want.Size(), want.Mode(), want.ModTime(), want.IsDir())
			}
			return nil
		})
	}
}

// Concurrent Writes at the file position never overlap: every record lands
// whole, exactly once, and the file is as long as all of them.
func TestFilePositionWritesFromManyTasks(t *testing.T) {
	const tasks, perTask, recSize = 16, 64, 100
	name := filepath.Join(t.TempDir(), "log")
	rt := newRuntime(t, runtime.Config{Workers: 2})
	runTask(t, rt, func(ctx context.Context) error {
		f, err := Create(ctx, name)
		if err != nil {
			return err
		}
		var hs []*runtime.JoinHandle[int]
		for i := range tasks {
			hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
				for j := range perTask {
					rec := bytes.Repeat([]byte{'a' + byte(i)}, recSize)
					copy(rec, fmt.Sprintf("%02d:%03d", i, j))
					if _, err := f.Write(ctx, rec); err != nil {
						return 0, err
					}
				}
				return 0, nil
			}))
		}
		if err := joinAll(ctx, hs); err != nil {
			return err
		}
		return f.Close(ctx)
	})
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != tasks*perTask*recSize {
		t.Fatalf("file has %d bytes, want %d", len(got), tasks*perTask*recSize)
	}
	seen := map[string]bool{}
	for off := 0; off < len(got); off += recSize {
		rec := got[off : off+recSize]
		var i, j int
		if _, err := fmt.Sscanf(string(rec[:6]), "%02d:%03d", &i, &j); err != nil {
			t.Fatalf("record at %d torn: %q", off, rec[:10])
		}
		if !bytes.Equal(rec[6:], bytes.Repeat([]byte{'a' + byte(i)}, recSize-6)) || seen[string(rec[:6])] {
			t.Fatalf("record at %d torn or duplicated: %q", off, rec)
		}
		seen[string(rec[:6])] = true
	}
}

func TestFileVectorsSeekAndAppend(t *testing.T) {
	name := filepath.Join(t.TempDir(), "vec")
	rt := newRuntime(t, runtime.Config{Workers: 1})
	runTask(t, rt, func(ctx context.Context) error {
		f, err := Create(ctx, name)
		if err != nil {
			return err
		}
		big := randomBytes(3000, 4)
		if n, err := f.Writev(ctx, [][]byte{[]byte("hello, "), nil, []byte("vectored "), big}); err != nil || n != 16+len(big) {
			return fmt.Errorf("Writev = %d, %v", n, err)
		}
		if pos, err := f.Seek(ctx, 7, io.SeekStart); err != nil || pos != 7 {
			return fmt.Errorf("Seek = %d, %v", pos, err)
		}
		a, b := make([]byte, 4), make([]byte, 5)
		if n, err := f.Readv(ctx, [][]byte{a, b}); err != nil || n != 9 || string(a)+string(b) != "vectored " {
			return fmt.Errorf("Readv = %d, %v, %q %q", n, err, a, b)
		}
		rest := make([]byte, len(big))
		if n, err := f.Read(ctx, rest); err != nil || n != len(big) || !bytes.Equal(rest, big) {
			return fmt.Errorf("Read after Readv = %d, %v", n, err)
		}
		if err := f.Close(ctx); err != nil {
			return err
		}
		// O_APPEND: Write goes to the end whatever the position.
		f, err = OpenFile(ctx, name, os.O_RDWR|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		if _, err := f.Write(ctx, []byte("tail")); err != nil {
			return err
		}
		fi, err := f.Stat(ctx)
		if err != nil || fi.Size() != int64(16+len(big)+4) {
			return fmt.Errorf("size after append = %v, %v", fi, err)
		}
		return f.Close(ctx)
	})
}

// After Close every method fails with fs.ErrClosed, without touching the
// descriptor number, which the kernel may already have given to another
// file.
func TestFileUseAfterClose(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, []byte("aaaa"), 0o600); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, runtime.Config{Workers: 1})
	runTask(t, rt, func(ctx context.Context) error {
		fa, err := OpenFile(ctx, a, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		if err := fa.Close(ctx); err != nil {
			return err
		}
		fb, err := Create(ctx, b) // likely reuses fa's descriptor number
		if err != nil {
			return err
		}
		defer fb.Close(ctx)
		checks := map[string]error{}
		_, checks["ReadAt"] = fa.ReadAt(ctx, make([]byte, 1), 0)
		_, checks["WriteAt"] = fa.WriteAt(ctx, []byte("x"), 0)
		_, checks["Read"] = fa.Read(ctx, make([]byte, 1))
		_, checks["Read of nothing"] = fa.Read(ctx, nil) // as os.File.Read's
		_, checks["Write"] = fa.Write(ctx, []byte("x"))
		_, checks["Readv"] = fa.Readv(ctx, [][]byte{make([]byte, 1)})
		_, checks["Writev"] = fa.Writev(ctx, [][]byte{[]byte("x")})
		_, checks["Seek"] = fa.Seek(ctx, 0, io.SeekStart)
		_, checks["Stat"] = fa.Stat(ctx)
		checks["Sync"] = fa.Sync(ctx)
		checks["Close"] = fa.Close(ctx)
		for m, err := range checks {
			if !errors.Is(err, fs.ErrClosed) {
				return fmt.Errorf("%s after Close = %v, want fs.ErrClosed", m, err)
			}
		}
		if fi, err := fb.Stat(ctx); err != nil || fi.Size() != 0 {
			return fmt.Errorf("the other file was touched: %v, %v", fi, err)
		}
		return nil
	})
}

// Close while ReadAt runs in other tasks: each read either returns the
// right bytes or fs.ErrClosed, Close returns once they are done, and the
// descriptor is gone afterwards.
func TestFileCloseWithReadsInFlight(t *testing.T) {
	data := randomBytes(1<<20, 5)
	name := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, runtime.Config{Workers: 2})
	before := countFDs(t)
	for round := range 20 {
		runTask(t, rt, func(ctx context.Context) error {
			f, err := Open(ctx, name)
			if err != nil {
				return err
			}
			var ok, closed atomic.Int64
			var hs []*runtime.JoinHandle[int]
			for r := range 8 {
				hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
					buf := make([]byte, 4096)
					for i := 0; ; i++ {
						off := ((r*131 + i*17 + round) % 256) * 4096
						n, err := f.ReadAt(ctx, buf, int64(off))
						switch {
						case errors.Is(err, fs.ErrClosed):
							closed.Add(1)
							return 0, nil
						case err != nil || n != len(buf) || !bytes.Equal(buf, data[off:off+n]):
							return 0, fmt.Errorf("ReadAt during Close = %d, %v", n, err)
						}
						ok.Add(1)
					}
				}))
			}
			if err := runtime.Sleep(ctx, time.Millisecond); err != nil {
				return err
			}
			if err := f.Close(ctx); err != nil {
				return err
			}
			if err := joinAll(ctx, hs); err != nil {
				return err
			}
			if closed.Load() != 8 {
				return fmt.Errorf("%d readers saw the Close, want 8", closed.Load())
			}
			return nil
		})
	}
	if after := countFDs(t); after != before {
		t.Fatalf("%d descriptors before, %d after", before, after)
	}
}

// Files work from plain goroutines too, through the runtime's methods.
func TestFileFromGoroutine(t *testing.T) {
	name := filepath.Join(t.TempDir(), "g")
	rt := newRuntime(t, runtime.Config{Workers: 2})
	ctx := goroutineCtx(rt)
	data := randomBytes(100000, 6)
	if err := WriteFile(ctx, name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(ctx, name)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadFile = %d bytes, %v", len(got), err)
	}
	f, err := OpenFile(ctx, name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(ctx, []byte("xyz"), 10); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 5)
	if n, err := f.ReadAt(ctx, b, 9); err != nil || n != 5 || string(b[1:4]) != "xyz" {
		t.Fatalf("ReadAt = %d, %v, %q", n, err, b)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), name); !errors.Is(err, runtime.ErrNoRuntime) {
		t.Fatalf("Open without a runtime = %v, want ErrNoRuntime", err)
	}
}

func TestReadFileWriteFileMatchOS(t *testing.T) {
	dir := t.TempDir()
	rt := newRuntime(t, runtime.Config{Workers: 1})
	for _, size := range []int{0, 1, 511, 512, 513, 100000} {
		data := randomBytes(size, uint64(size))
		name := filepath.Join(dir, fmt.Sprint(size))
		runTask(t, rt, func(ctx context.Context) error {
			if err := WriteFile(ctx, name, data, 0o600); err != nil {
				return err
			}
			got, err := ReadFile(ctx, name)
			if err != nil || !bytes.Equal(got, data) {
				return fmt.Errorf("ReadFile(%d bytes) = %d, %v", size, len(got), err)
			}
			return nil
		})
		if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("os.ReadFile after WriteFile(%d) = %d, %v", size, len(got), err)
		}
	}
	// A file whose size stat does not know.
	runTask(t, rt, func(ctx context.Context) error {
		got, err := ReadFile(ctx, "/proc/self/status")
		if err != nil || !bytes.Contains(got, []byte("Pid:")) {
			return fmt.Errorf("ReadFile(/proc/self/status) = %q, %v", got, err)
		}
		return nil
	})
}

func TestFileCancelledContext(t *testing.T) {
	name := filepath.Join(t.TempDir(), "c")
	if err := os.WriteFile(name, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, runtime.Config{Workers: 1})
	runTask(t, rt, func(ctx context.Context) error {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := Open(cctx, name); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("Open with a cancelled context = %v", err)
		}
		f, err := Open(ctx, name)
		if err != nil {
			return err
		}
		if _, err := f.ReadAt(cctx, make([]byte, 4), 0); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("ReadAt with a cancelled context = %v", err)
		}
		// Close with a cancelled context still closes.
		if err := f.Close(cctx); err != nil {
			return fmt.Errorf("Close with a cancelled context = %v", err)
		}
		if _, err := f.ReadAt(ctx, make([]byte, 4), 0); !errors.Is(err, fs.ErrClosed) {
			return fmt.Errorf("ReadAt after Close = %v", err)
		}
		return nil
	})
}

// A plain goroutine's operations need nothing of the runtime (a file
// operation is the system call, a socket waits in Go's netpoller), so
// they go on working after the runtime's Close: a File or Conn opened
// before it reads, writes and closes as before, and a constructor given
// the closed runtime's context opens a new one. Only task-side calls
// (SpawnOn) are refused.
func TestGoroutineIOOutlivesItsRuntime(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "f")
			rt, err := runtime.New(runtime.Config{Workers: 2, IOBackend: backend})
			if err != nil {
				t.Fatal(err)
			}
			ctx := goroutineCtx(rt)
			f, err := Create(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := Listen(ctx, "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(ctx, []byte("before")); err != nil {
				t.Fatalf("Write after Close: %v", err)
			}
			if err := f.Close(ctx); err != nil {
				t.Fatalf("Close of the file after the runtime's: %v", err)
			}
			if err := WriteFile(ctx, name, []byte("after"), 0o600); err != nil {
				t.Fatalf("WriteFile after Close: %v", err)
			}
			if got, err := ReadFile(ctx, name); err != nil || string(got) != "after" {
				t.Fatalf("ReadFile after Close = %q, %v", got, err)
			}
			accepted := make(chan error, 1)
			go func() {
				s, err := ln.Accept(ctx)
				if err == nil {
					_, err = s.Write(ctx, []byte("hi"))
					if cerr := s.Close(ctx); err == nil {
						err = cerr
					}
				}
				accepted <- err
			}()
			c, err := Dial(ctx, "tcp", ln.Addr().String())
			if err != nil {
				t.Fatalf("Dial after Close: %v", err)
			}
			buf := make([]byte, 2)
			within(t, 10*time.Second, "ReadFull after Close", func() {
				if _, err := c.ReadFull(ctx, buf); err != nil || string(buf) != "hi" {
					t.Errorf("ReadFull after Close = %q, %v", buf, err)
				}
			})
			if err := <-accepted; err != nil {
				t.Fatalf("server side after Close: %v", err)
			}
			if err := c.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if err := ln.Close(ctx); err != nil {
				t.Fatal(err)
			}
			h := runtime.SpawnOn(rt, func(context.Context) (int, error) { return 0, nil })
			if _, err := h.Join(context.Background()); !errors.Is(err, runtime.ErrClosed) {
				t.Fatalf("SpawnOn after Close: Join = %v, want ErrClosed", err)
			}
		})
	}
}

// WriteAt on a file opened with O_APPEND fails without writing, as
// os.File.WriteAt does: Linux's pwrite appends there whatever the offset,
// so the bytes would land at the end while io.WriterAt promises them at
// the offset (an io.SectionWriter's, a torrent's piece). From a goroutine
// and from a task, on both backends.
func TestFileWriteAtRefusesAppendMode(t *testing.T) {
	forBackendsAndCallers(t, func(t *testing.T, backend runtime.Backend, inTask bool) {
		rt := newRuntime(t, runtime.Config{Workers: 1, IOBackend: backend})
		name := filepath.Join(t.TempDir(), "append")
		if err := os.WriteFile(name, []byte("0123456789"), 0o644); err != nil {
			t.Fatal(err)
		}
		check := func(ctx context.Context) error {
			f, err := OpenFile(ctx, name, os.O_RDWR|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			defer f.Close(ctx)
			of, err := os.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			defer of.Close()
			_, oerr := of.WriteAt([]byte("x"), 2)
			if oerr == nil {
				return errors.New("os.File.WriteAt in append mode succeeded; the test's premise is wrong")
			}
			for _, w := range []struct {
				what string
				f    func() (int, error)
			}{
				{"File.WriteAt", func() (int, error) { return f.WriteAt(ctx, []byte("AB"), 2) }},
				{"FileIO.WriteAt", func() (int, error) { return f.IO().WriteAt([]byte("AB"), 2) }},
			} {
				n, err := w.f()
				var pe *fs.PathError
				if n != 0 || !errors.As(err, &pe) || pe.Err.Error() != oerr.Error() {
					return fmt.Errorf("%s in append mode = %d, %v; want 0 and a *fs.PathError wrapping os's %q", w.what, n, err, oerr)
				}
			}
			if got, _ := os.ReadFile(name); string(got) != "0123456789" {
				return fmt.Errorf("after the refused WriteAts the file holds %q", got)
			}
			// Write still appends.
			if n, err := f.Write(ctx, []byte("!")); n != 1 || err != nil {
				return fmt.Errorf("Write in append mode = %d, %v", n, err)
			}
			if got, _ := os.ReadFile(name); string(got) != "0123456789!" {
				return fmt.Errorf("after Write the file holds %q", got)
			}
			// Closed: fs.ErrClosed first, as os.File's.
			if err := f.Close(ctx); err != nil {
				return err
			}
			if _, err := f.WriteAt(ctx, []byte("x"), 0); !errors.Is(err, fs.ErrClosed) {
				return fmt.Errorf("WriteAt after Close in append mode = %v, want fs.ErrClosed", err)
			}
			return nil
		}
		if inTask {
			runTask(t, rt, check)
		} else if err := check(goroutineCtx(rt)); err != nil {
			t.Fatal(err)
		}
	})
}

// Truncate does what os.File.Truncate does, from a goroutine and from a
// task on both backends: it shortens and extends the file (with zeros),
// leaves the file position where it was, and fails as os's does on a
// negative size, on a file opened read-only and after Close.
func TestFileTruncateMatchesOS(t *testing.T) {
	type truncater interface {
		io.ReadWriteSeeker
		io.Closer
		Truncate(int64) error
	}
	script := func(open func(name string, flag int) (truncater, error), name string) ([]string, error) {
		var log []string
		rec := func(what string, v any, err error) {
			var e string
			var pe *fs.PathError
			switch {
			case err == nil:
				e = "nil"
			case errors.As(err, &pe):
				e = fmt.Sprintf("PathError{%s: %v}", pe.Op, pe.Err)
			default:
				e = fmt.Sprintf("%T %v", err, err)
			}
			log = append(log, fmt.Sprintf("%s: %v %s", what, v, e))
		}
		if err := os.WriteFile(name, []byte("0123456789"), 0o644); err != nil {
			return nil, err
		}
		f, err := open(name, os.O_RDWR)
		if err != nil {
			return nil, err
		}
		pos, err := f.Seek(8, io.SeekStart)
		rec("Seek 8", pos, err)
		rec("Truncate 4", "", f.Truncate(4))
		pos, err = f.Seek(0, io.SeekCurrent)
		rec("position after Truncate", pos, err)
		got, _ := os.ReadFile(name)
		rec("contents", fmt.Sprintf("%q", got), nil)
		rec("Truncate 6", "", f.Truncate(6))
		got, _ = os.ReadFile(name)
		rec("contents", fmt.Sprintf("%q", got), nil)
		rec("Truncate -1", "", f.Truncate(-1))
		rec("Close", "", f.Close())
		rec("Truncate after Close", "", f.Truncate(0))
		ro, err := open(name, os.O_RDONLY)
		if err != nil {
			return nil, err
		}
		rec("Truncate read-only", "", ro.Truncate(0))
		ro.Close()
		got, _ = os.ReadFile(name)
		rec("contents", fmt.Sprintf("%q", got), nil)
		return log, nil
	}
	dir := t.TempDir()
	want, err := script(func(name string, flag int) (truncater, error) { return os.OpenFile(name, flag, 0) }, filepath.Join(dir, "os"))
	if err != nil {
		t.Fatal(err)
	}
	forBackendsAndCallers(t, func(t *testing.T, backend runtime.Backend, inTask bool) {
		rt := newRuntime(t, runtime.Config{Workers: 1, IOBackend: backend})
		check := func(ctx context.Context) error {
			got, err := script(func(name string, flag int) (truncater, error) {
				f, err := OpenFile(ctx, name, flag, 0)
				if err != nil {
					return nil, err
				}
				return f.IO(), nil
			}, filepath.Join(t.TempDir(), "faio"))
			if err != nil {
				return err
			}
			for i := range max(len(got), len(want)) {
				var g, w string
				if i < len(got) {
					g = got[i]
				}
				if i < len(want) {
					w = want[i]
				}
				if g != w {
					t.Errorf("FileIO %q, os.File %q", g, w)
				}
			}
			return nil
		}
		if inTask {
			runTask(t, rt, check)
		} else if err := check(goroutineCtx(rt)); err != nil {
			t.Fatal(err)
		}
	})
}

// A task's Read of a regular file whose page cache holds only the start of
// the requested range returns the whole range, as os.File.Read and a
// goroutine's Read do: it used to return only the cached part (found by a
// differential test of tasks against os). Two files: one whose tail was
// evicted from the cache (where the file system honours FADV_DONTNEED),
// and a sparse one whose hole is not cached, the case the test found.
func TestTaskReadOfAPartlyCachedFileReadsTheWhole(t *testing.T) {
	dir := t.TempDir()
	evicted := filepath.Join(dir, "evicted")
	data := randomBytes(8<<20, 7)
	if err := os.WriteFile(evicted, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse")
	wf, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	_, err1 := wf.Write(randomBytes(13541, 8))
	_, err2 := wf.WriteAt(randomBytes(12288, 9), 205888)
	err3 := wf.Truncate(134060)
	if err := errors.Join(err1, err2, err3, wf.Close()); err != nil {
		t.Fatal(err)
	}
	type read struct {
		name    string
		at, len int
		evict   int64 // where to evict the cached file from, -1: as written
	}
	// The page cache holds a file in folios of up to 2 MiB, which
	// FADV_DONTNEED drops whole: evict megabytes.
	reads := []read{{evicted, 0, 8 << 20, 4 << 20}, {evicted, 100, 6 << 20, 2 << 20}, {sparse, 63927, 149750, -1}}
	want := func(r read) []byte {
		f, err := os.Open(r.name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b := make([]byte, r.len)
		n, err := f.ReadAt(b, int64(r.at))
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		return b[:n]
	}
	for _, backend := range backends {
		rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
		for i, r := range reads {
			if r.evict >= 0 {
				// Write the file back, cache all of it, then evict
				// the tail (dirty pages would stay).
				of, err := os.Open(r.name)
				if err != nil {
					t.Fatal(err)
				}
				err1 := of.Sync()
				_, err2 := io.Copy(io.Discard, of)
				err3 := unix.Fadvise(int(of.Fd()), r.evict, 0, unix.FADV_DONTNEED)
				if err := errors.Join(err1, err2, err3, of.Close()); err != nil {
					t.Fatal(err)
				}
			}
			runTask(t, rt, func(ctx context.Context) error {
				f, err := Open(ctx, r.name)
				if err != nil {
					return err
				}
				defer f.Close(ctx)
				if _, err := f.Seek(ctx, int64(r.at), io.SeekStart); err != nil {
					return err
				}
				b := make([]byte, r.len)
				n, err := f.Read(ctx, b)
				if w := want(r); n != len(w) || err != nil || !bytes.Equal(b[:n], w) {
					return fmt.Errorf("%v, read %d: Read = %d, %v (equal to os's: %v); os.File reads %d", rt.Backend(), i, n, err, bytes.Equal(b[:n], w[:min(n, len(w))]), len(w))
				}
				// The position moved past what was read.
				if pos, err := f.Seek(ctx, 0, io.SeekCurrent); pos != int64(r.at+n) || err != nil {
					return fmt.Errorf("%v, read %d: position %d, %v after the read; want %d", rt.Backend(), i, pos, err, r.at+n)
				}
				return nil
			})
		}
	}
}
