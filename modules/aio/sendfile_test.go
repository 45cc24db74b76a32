package aio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// spawnFunc runs f concurrently (in a task or a goroutine) and returns a
// function that waits for its error.
type spawnFunc func(f func() error) (wait func() error)

func taskSpawner(ctx context.Context) spawnFunc {
	return func(f func() error) func() error {
		h := runtime.Spawn(ctx, func(context.Context) (int, error) { return 0, f() })
		return func() error { _, err := h.Join(ctx); return err }
	}
}

func goSpawner(f func() error) func() error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return func() error { return <-ch }
}

// connCheck is a check over a connected pair, given a way to run work
// concurrently (in a task or a goroutine, like the caller).
type connCheck func(ctx context.Context, client, server *Conn, spawn spawnFunc) error

// checkFromTask runs check in a task of rt over a pair connected on
// network (addr: where to listen).
func checkFromTask(t *testing.T, rt *runtime.Runtime, network, addr string, check connCheck) {
	t.Helper()
	runTask(t, rt, func(ctx context.Context) error {
		client, server, err := connPair(ctx, network, addr)
		if err != nil {
			return err
		}
		defer client.Close(ctx)
		defer server.Close(ctx)
		return check(ctx, client, server, taskSpawner(ctx))
	})
}

// checkFromGoroutines runs check in plain goroutines using rt, within 30 s.
func checkFromGoroutines(t *testing.T, rt *runtime.Runtime, what, network, addr string, check connCheck) {
	t.Helper()
	within(t, 30*time.Second, "goroutine "+what, func() {
		ctx := goroutineCtx(rt)
		client, server, err := goroutinePair(ctx, network, addr)
		if err != nil {
			t.Error(err)
			return
		}
		defer client.Close(ctx)
		defer server.Close(ctx)
		if err := check(ctx, client, server, goSpawner); err != nil {
			t.Error(err)
		}
	})
}

// onConnPairs runs check over a connected pair of each stream network
// ("tcp", "unix") on each backend, once from a task and once from plain
// goroutines, and checks that nothing leaks.
func onConnPairs(t *testing.T, what string, check connCheck) {
	t.Helper()
	for _, backend := range backends {
		for _, network := range []string{"tcp", "unix"} {
			t.Run(backend.String()+"/"+network, func(t *testing.T) {
				rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
				before := fdTargets(t)
				addr := "127.0.0.1:0"
				if network == "unix" {
					addr = ""
				}
				checkFromTask(t, rt, network, addr, check)
				checkFromGoroutines(t, rt, what, network, addr, check)
				checkNoFDLeak(t, before)
			})
		}
	}
}

// readAllFrom reads c to its end.
func readAllFrom(ctx context.Context, c *Conn) ([]byte, error) {
	var got []byte
	buf := make([]byte, 256<<10)
	for {
		n, err := c.Read(ctx, buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
	}
}

// sendFileChecks sends the 10 MB file twice, with SendFile to its end and
// with io.Copy on a NetConn from the file position 1000 (which ReadFrom
// advances to the end), and checks every byte the server receives.
func sendFileChecks(ctx context.Context, client, server *Conn, f *File, data []byte, spawn spawnFunc) error {
	wait := spawn(func() error {
		n, err := client.SendFile(ctx, f, 0, -1)
		if err != nil || n != int64(len(data)) {
			return fmt.Errorf("SendFile = %d, %v; want %d", n, err, len(data))
		}
		if _, err := f.Seek(ctx, 1000, io.SeekStart); err != nil {
			return err
		}
		nc := client.NetConn()
		m, err := io.Copy(nc, f.IO())
		if err != nil || m != int64(len(data)-1000) {
			return fmt.Errorf("io.Copy = %d, %v; want %d", m, err, len(data)-1000)
		}
		if pos, err := f.Seek(ctx, 0, io.SeekCurrent); pos != int64(len(data)) || err != nil {
			return fmt.Errorf("after io.Copy the file position is %d, %v", pos, err)
		}
		return client.CloseWrite(ctx)
	})
	got, err := readAllFrom(ctx, server)
	if werr := wait(); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	want := append(append([]byte{}, data...), data[1000:]...)
	if !bytes.Equal(got, want) {
		return fmt.Errorf("received %d bytes, want %d: not the same", len(got), len(want))
	}
	return nil
}

// A 10 MB file of random bytes goes over TCP and Unix connections with
// SendFile, from a task and from a goroutine, on both backends.
func TestSendFile(t *testing.T) {
	data := randomBytes(10<<20, 11)
	name := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	onConnPairs(t, "SendFile", func(ctx context.Context, client, server *Conn, spawn spawnFunc) error {
		f, err := Open(ctx, name)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		return sendFileChecks(ctx, client, server, f, data, spawn)
	})
}

// The offsets and counts at the edges of the file, the end of the file
// (not an error), io.LimitReader and other readers through NetConn.ReadFrom,
// and the errors: a negative offset, a file that is not regular, a closed
// file, a closed connection.
func TestSendFileEdges(t *testing.T) {
	data := randomBytes(100<<10, 12)
	size := int64(len(data))
	name := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
			checkFromTask(t, rt, "tcp", "127.0.0.1:0", func(ctx context.Context, client, server *Conn, _ spawnFunc) error {
				f, err := Open(ctx, name)
				if err != nil {
					return err
				}
				received := runtime.Spawn(ctx, func(ctx context.Context) ([]byte, error) { return readAllFrom(ctx, server) })
				var want []byte
				for _, c := range []struct{ off, n, sent int64 }{
					{0, 0, 0},
					{0, 1, 1},
					{5000, 10000, 10000},
					{size - 10, -1, 10},
					{size - 10, 100, 10}, // the file ends first: not an error
					{size, 10, 0},
					{size + 100, -1, 0},
					{0, size, size},
				} {
					sent, err := client.SendFile(ctx, f, c.off, c.n)
					if sent != c.sent || err != nil {
						return fmt.Errorf("SendFile(off %d, n %d) = %d, %v; want %d, nil", c.off, c.n, sent, err, c.sent)
					}
					want = append(want, data[min(c.off, size):min(c.off, size)+c.sent]...)
				}
				// NetConn.ReadFrom: a LimitedReader from the file position
				// 100, then any reader, through Write.
				nc := client.NetConn()
				if _, err := f.Seek(ctx, 100, io.SeekStart); err != nil {
					return err
				}
				lr := &io.LimitedReader{R: f.IO(), N: 777}
				if m, err := io.Copy(nc, lr); m != 777 || err != nil || lr.N != 0 {
					return fmt.Errorf("io.Copy of a LimitReader = %d, %v, N left %d", m, err, lr.N)
				}
				want = append(want, data[100:877]...)
				if pos, _ := f.Seek(ctx, 0, io.SeekCurrent); pos != 877 {
					return fmt.Errorf("after io.Copy of a LimitReader the position is %d", pos)
				}
				if m, err := io.Copy(nc, bytes.NewReader([]byte("plain"))); m != 5 || err != nil {
					return fmt.Errorf("io.Copy of a bytes.Reader = %d, %v", m, err)
				}
				want = append(want, "plain"...)
				if m, err := nc.ReadFrom(io.MultiReader(f.IO())); m != size-877 || err != nil {
					return fmt.Errorf("ReadFrom of a MultiReader = %d, %v", m, err)
				}
				want = append(want, data[877:]...)
				if err := client.CloseWrite(ctx); err != nil {
					return err
				}
				got, err := received.Join(ctx)
				if err != nil {
					return err
				}
				if !bytes.Equal(got, want) {
					return fmt.Errorf("received %d bytes, want %d: not the same", len(got), len(want))
				}

				if _, err := client.SendFile(ctx, f, -1, 10); err == nil || !errors.Is(err, errNegativeOffset) {
					return fmt.Errorf("SendFile at offset -1 = %v", err)
				}
				pr, pw, err := os.Pipe()
				if err != nil {
					return err
				}
				defer pr.Close()
				defer pw.Close()
				pf, err := Open(ctx, fmt.Sprintf("/proc/self/fd/%d", pr.Fd()))
				if err != nil {
					return err
				}
				if _, err := client.SendFile(ctx, pf, 0, 10); !errors.Is(err, errNotRegular) {
					return fmt.Errorf("SendFile of a pipe = %v", err)
				}
				pf.Close(ctx)
				g, err := Open(ctx, name)
				if err != nil {
					return err
				}
				g.Close(ctx)
				var oe *net.OpError
				if _, err := client.SendFile(ctx, g, 0, 10); !errors.Is(err, fs.ErrClosed) || !errors.As(err, &oe) || oe.Op != "sendfile" {
					return fmt.Errorf("SendFile of a closed file = %v", err)
				}
				// Through ReadFrom, as net.TCPConn.ReadFrom names the
				// error of a source that cannot be read.
				if _, err := client.NetConn().ReadFrom(g.IO()); !errors.Is(err, fs.ErrClosed) || !errors.As(err, &oe) || oe.Op != "readfrom" {
					return fmt.Errorf("ReadFrom of a closed file = %v (%T)", err, err)
				}
				if err := client.Close(ctx); err != nil {
					return err
				}
				if _, err := client.SendFile(ctx, f, 0, 10); !errors.Is(err, net.ErrClosed) {
					return fmt.Errorf("SendFile on a closed connection = %v", err)
				}
				// Through ReadFrom the error is named as net.TCPConn's.
				if _, err := client.NetConn().ReadFrom(f.IO()); !errors.Is(err, net.ErrClosed) || !errors.As(err, &oe) || oe.Op != "readfrom" {
					return fmt.Errorf("ReadFrom on a closed connection = %v", err)
				}
				return f.Close(ctx)
			})
		})
	}
}

// A SendFile to a peer that does not read ends promptly when its context
// does, and its count is exact: the peer then receives that many bytes and
// nothing else before what the connection sends next. Nothing is closed
// that should not be. A Close of the connection ends a SendFile in
// progress with net.ErrClosed.
func TestSendFileCancelAndClose(t *testing.T) {
	name := filepath.Join(t.TempDir(), "sparse")
	if err := os.WriteFile(name, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(name, 1<<30); err != nil { // 1 GiB of zeros, no disk
		t.Fatal(err)
	}
	for _, backend := range backends {
		for _, fromTask := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/task=%v", backend, fromTask), func(t *testing.T) {
				rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
				before := fdTargets(t)
				check := func(ctx context.Context, client, server *Conn, spawn spawnFunc) error {
					f, err := Open(ctx, name)
					if err != nil {
						return err
					}
					defer f.Close(ctx)
					// Under load the deadline may pass before the first
					// byte leaves (0 sent is exact too): try again, longer.
					var sent int64
					for timeout := 100 * time.Millisecond; ; timeout *= 4 {
						short, cancel := context.WithTimeout(ctx, timeout)
						start := time.Now()
						sent, err = client.SendFile(short, f, 0, -1)
						cancel()
						if !errors.Is(err, context.DeadlineExceeded) || sent < 0 || sent >= 1<<30 || time.Since(start) > timeout+5*time.Second {
							return fmt.Errorf("SendFile with a %v context = %d, %v after %v", timeout, sent, err, time.Since(start))
						}
						if sent > 0 {
							break
						}
						if timeout >= 2*time.Second {
							return fmt.Errorf("SendFile with a %v context sent nothing", timeout)
						}
					}
					if _, err := f.ReadAt(ctx, make([]byte, 10), 0); err != nil {
						return fmt.Errorf("the file after a cancelled SendFile: %v", err)
					}
					received := spawn(func() error {
						got, err := readAllFrom(ctx, server)
						if err != nil {
							return err
						}
						if int64(len(got)) != sent+4 || string(got[sent:]) != "END!" || bytes.ContainsFunc(got[:sent], func(r rune) bool { return r != 0 }) {
							return fmt.Errorf("received %d bytes, want the %d sent and END!", len(got), sent)
						}
						return nil
					})
					if _, err := client.Write(ctx, []byte("END!")); err != nil {
						return err
					}
					if err := client.CloseWrite(ctx); err != nil {
						return err
					}
					if err := received(); err != nil {
						return err
					}
					// Close ends a SendFile waiting for room.
					c2, s2, err := connPair2(ctx, fromTask)
					if err != nil {
						return err
					}
					defer s2.Close(ctx)
					done := spawn(func() error {
						_, err := c2.SendFile(ctx, f, 0, -1)
						if !errors.Is(err, net.ErrClosed) {
							return fmt.Errorf("SendFile across Close = %v", err)
						}
						return nil
					})
					time.Sleep(50 * time.Millisecond)
					if err := c2.Close(ctx); err != nil {
						return err
					}
					return done()
				}
				if fromTask {
					checkFromTask(t, rt, "tcp", "127.0.0.1:0", check)
				} else {
					checkFromGoroutines(t, rt, "SendFile", "tcp", "127.0.0.1:0", check)
				}
				checkNoFDLeak(t, before)
			})
		}
	}
}

// connPair2 is connPair from a task and goroutinePair from a goroutine.
func connPair2(ctx context.Context, fromTask bool) (client, server *Conn, err error) {
	if fromTask {
		return connPair(ctx, "tcp", "127.0.0.1:0")
	}
	return goroutinePair(ctx, "tcp", "127.0.0.1:0")
}

// A task's SendFile on a socket a goroutine made non-blocking (its Dial
// waited in the netpoller): the ring's splice says EAGAIN when the socket
// is full, and the task waits in the netpoller instead. A slow reader makes
// that happen; every byte is checked.
func TestSendFileOnSocketUsedByGoroutine(t *testing.T) {
	data := randomBytes(4<<20, 13)
	name := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, runtime.Config{Workers: 2})
	gctx := goroutineCtx(rt)
	client, server, err := goroutinePair(gctx, "unix", "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close(gctx)
	defer server.Close(gctx)
	received := goSpawner(func() error {
		var got []byte
		buf := make([]byte, 16<<10)
		for {
			time.Sleep(100 * time.Microsecond)
			n, err := server.Read(gctx, buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
		if !bytes.Equal(got, data) {
			return fmt.Errorf("received %d bytes, want %d: not the same", len(got), len(data))
		}
		return nil
	})
	runTask(t, rt, func(ctx context.Context) error {
		f, err := Open(ctx, name)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		if n, err := client.SendFile(ctx, f, 0, -1); n != int64(len(data)) || err != nil {
			return fmt.Errorf("SendFile = %d, %v", n, err)
		}
		return client.CloseWrite(ctx)
	})
	if err := received(); err != nil {
		t.Fatal(err)
	}
}

// A file that neither splice nor sendfile take (/proc/self/status says
// EINVAL): SendFile reports the errno, and io.Copy through
// NetConn.ReadFrom falls back to copying through a buffer.
func TestSendFileFallsBackToCopy(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
			checkFromTask(t, rt, "unix", "", func(ctx context.Context, client, server *Conn, _ spawnFunc) error {
				f, err := Open(ctx, "/proc/self/status")
				if err != nil {
					return err
				}
				defer f.Close(ctx)
				if _, err := client.SendFile(ctx, f, 0, -1); !errors.Is(err, syscall.EINVAL) {
					return fmt.Errorf("SendFile of /proc/self/status = %v, want EINVAL", err)
				}
				received := runtime.Spawn(ctx, func(ctx context.Context) ([]byte, error) { return readAllFrom(ctx, server) })
				m, err := io.Copy(client.NetConn(), f.IO())
				if cerr := client.Close(ctx); err == nil {
					err = cerr
				}
				got, rerr := received.Join(ctx)
				if err != nil || rerr != nil || m == 0 || int64(len(got)) != m || !bytes.HasPrefix(got, []byte("Name:")) {
					return fmt.Errorf("io.Copy of /proc/self/status = %d, %v; received %d bytes (%q...), %v", m, err, len(got), got[:min(len(got), 10)], rerr)
				}
				return nil
			})
		})
	}
}

// An offset past the end of the file sends nothing and is no error, however
// large: at or past the file system's largest file size (where sendfile(2)
// says EOVERFLOW), and where off+n passes the largest offset (EINVAL from
// both system calls). NetConn.ReadFrom from such a file position, likewise,
// as io.Copy to a net.TCPConn. From tasks and goroutines, on both backends.
func TestSendFilePastTheLargestOffset(t *testing.T) {
	name := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(name, []byte("some bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	forBackendsAndCallers(t, func(t *testing.T, backend runtime.Backend, inTask bool) {
		rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
		check := func(ctx context.Context, client, server *Conn, _ spawnFunc) error {
			f, err := Open(ctx, name)
			if err != nil {
				return err
			}
			defer f.Close(ctx)
			for _, c := range []struct{ off, n int64 }{
				{1 << 62, 10},
				{1 << 62, -1},
				{math.MaxInt64 - 10, 100},
				{math.MaxInt64 - 10, math.MaxInt64},
				{math.MaxInt64, -1},
				{math.MaxInt64, 1},
			} {
				if sent, err := client.SendFile(ctx, f, c.off, c.n); sent != 0 || err != nil {
					return fmt.Errorf("SendFile(off %d, n %d) = %d, %v; want 0, nil", c.off, c.n, sent, err)
				}
			}
			for _, pos := range []int64{1 << 62, math.MaxInt64 - 10} {
				if _, err := f.Seek(ctx, pos, io.SeekStart); errors.Is(err, syscall.EINVAL) {
					continue // past what this file system lets a position be
				} else if err != nil {
					return err
				}
				if m, err := client.NetConn().ReadFrom(f.IO()); m != 0 || err != nil {
					return fmt.Errorf("ReadFrom at the file position %d = %d, %v; want 0, nil", pos, m, err)
				}
			}
			// Nothing went out: the next bytes the server reads are these.
			if _, err := client.Write(ctx, []byte("end")); err != nil {
				return err
			}
			got := make([]byte, 3)
			if _, err := server.ReadFull(ctx, got); err != nil || string(got) != "end" {
				return fmt.Errorf("the server read %q, %v", got, err)
			}
			return nil
		}
		if inTask {
			checkFromTask(t, rt, "tcp", "127.0.0.1:0", check)
		} else {
			checkFromGoroutines(t, rt, "SendFile past the largest offset", "tcp", "127.0.0.1:0", check)
		}
	})
}

// busyIOWorkers counts the process's io_uring worker threads that are not
// idle in io-wq's own loop (their wchan is not io_wq_worker): the file
// half of a SendFile may leave idle workers behind, which hold no wait.
// A thread whose wchan cannot be read counts as busy.
func busyIOWorkers(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		comm, err := os.ReadFile("/proc/self/task/" + e.Name() + "/comm")
		if err != nil || !strings.HasPrefix(string(comm), "iou-wrk") {
			continue
		}
		if w, err := os.ReadFile("/proc/self/task/" + e.Name() + "/wchan"); err != nil || string(w) != "io_wq_worker" {
			n++
		}
	}
	return n
}

// SendFiles waiting for slow readers, from tasks on the ring, wait with a
// ring poll, not in a splice that io_uring runs (and blocks) in one of its
// kernel worker threads: 32 SendFiles of 4 MiB, through send buffers of
// 64 KiB, to clients that read nothing for a while hold far fewer than 32
// busy iou-wrk threads, and once
// the clients read, each receives the whole file and SendFile counts it.
func TestSendFileWaitHoldsNoKernelWorker(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	if rt.Backend() != runtime.BackendIOUring {
		t.Skip("the ring path needs the io_uring backend")
	}
	const sends = 32
	data := randomBytes(4<<20, 7)
	name := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	runTask(t, rt, func(ctx context.Context) error {
		clients, servers, closeAll, err := tcpPairs(ctx, sends)
		defer closeAll()
		if err != nil {
			return err
		}
		// The file is opened first: an open may take a worker thread of
		// its own for a moment.
		f, err := Open(ctx, name)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		// A small send buffer, as on a link slower than loopback: a
		// pipeful is then more than the room a poll finds.
		for i := range sends {
			if err := syscall.SetsockoptInt(servers[i].guard.fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 64<<10); err != nil {
				return err
			}
		}
		before := busyIOWorkers(t)
		hs := make([]*runtime.JoinHandle[int64], sends)
		for i := range sends {
			hs[i] = runtime.Spawn(ctx, func(ctx context.Context) (int64, error) {
				return servers[i].SendFile(ctx, f, 0, -1)
			})
		}
		if err := runtime.Sleep(ctx, 300*time.Millisecond); err != nil {
			return err
		}
		waiting := busyIOWorkers(t)
		reads := make([]func() error, sends)
		for i := range sends {
			c := clients[i]
			reads[i] = goSpawner(func() error {
				got := make([]byte, len(data))
				if _, err := io.ReadFull(c, got); err != nil {
					return err
				}
				if !bytes.Equal(got, data) {
					return errors.New("received bytes differ from the file")
				}
				return nil
			})
		}
		for i, h := range hs {
			m, err := h.Join(ctx)
			if m != int64(len(data)) || err != nil {
				return fmt.Errorf("SendFile %d = %d, %v; want %d, nil", i, m, err, len(data))
			}
		}
		for i := range sends {
			if err := reads[i](); err != nil {
				return fmt.Errorf("client %d: %w", i, err)
			}
		}
		if grew := waiting - before; grew >= sends/4 {
			return fmt.Errorf("%d SendFiles waiting for their readers held %d more busy io_uring worker threads (%d before, %d while waiting)",
				sends, grew, before, waiting)
		}
		t.Logf("busy io_uring worker threads: %d before, %d while %d SendFiles waited", before, waiting, sends)
		return nil
	})
}
