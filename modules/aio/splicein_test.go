package aio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
	"golang.org/x/sys/unix"
)

// uploadPair returns a package net client connected to the faio Conn that
// a Listen on network accepted (from ctx's task or goroutine): the uploads
// below come from a net.Conn, as a server's do.
func uploadPair(ctx context.Context, network string) (client net.Conn, server *Conn, err error) {
	addr := "127.0.0.1:0"
	if network != "tcp" {
		addr = ""
	}
	l, err := Listen(ctx, network, addr)
	if err != nil {
		return nil, nil, err
	}
	defer l.Close(ctx)
	// The backlog completes the connection before Accept.
	client, err = net.Dial(network, l.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	server, err = l.Accept(ctx)
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return client, server, nil
}

// sendFrom writes data to c in a goroutine, then closes c if close is set,
// and returns a function that waits for it and returns its error. On a
// unixpacket connection each 1000 bytes are a message of their own, which
// a buffered copy reads whole.
func sendFrom(c net.Conn, data []byte, close bool) func() error {
	return goSpawner(func() error {
		piece := len(data)
		if c.LocalAddr().Network() == "unixpacket" {
			piece = 1000
		}
		for len(data) > 0 {
			n, err := c.Write(data[:min(piece, len(data))])
			if err != nil {
				return err
			}
			data = data[n:]
		}
		if close {
			return c.Close()
		}
		return nil
	})
}

// pause waits d in ctx's task, or in the goroutine.
func pause(ctx context.Context, d time.Duration) error {
	if runtime.InTask(ctx) {
		return runtime.Sleep(ctx, d)
	}
	time.Sleep(d)
	return nil
}

// waitSize waits until the file name is size bytes long.
func waitSize(ctx context.Context, name string, size int64) error {
	for deadline := time.Now().Add(10 * time.Second); ; {
		fi, err := os.Stat(name)
		if err == nil && fi.Size() == size {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not reach %d bytes (%v, %v)", name, size, fi, err)
		}
		if err := pause(ctx, time.Millisecond); err != nil {
			return err
		}
	}
}

// pipeCount counts the process's open pipes, which countFDs and fdTargets
// leave out.
func pipeCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, "pipe:") {
			n++
		}
	}
	return n
}

// uploadCheck is a check given a client and the Conn it is connected to,
// a directory for its files, and ctx (a task's or a goroutine's).
type uploadCheck func(ctx context.Context, dir string, client net.Conn, server *Conn) error

// onUploadPairs runs check over an upload pair of each network on each
// backend, from a task and from a goroutine, and checks that no
// descriptor leaked: neither the socket's nor a file's, nor a splice
// pipe (Go's own pool of pipes is not used by these tests, so their count
// cannot grow on its own; it may shrink when a collection empties it).
func onUploadPairs(t *testing.T, networks []string, check uploadCheck) {
	t.Helper()
	for _, backend := range backends {
		for _, network := range networks {
			t.Run(backend.String()+"/"+network, func(t *testing.T) {
				rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
				before, pipes := fdTargets(t), pipeCount(t)
				dir := t.TempDir()
				runTask(t, rt, func(ctx context.Context) error {
					client, server, err := uploadPair(ctx, network)
					if err != nil {
						return err
					}
					defer client.Close()
					defer server.Close(ctx)
					if err := check(ctx, filepath.Join(dir, "task"), client, server); err != nil {
						return fmt.Errorf("task: %w", err)
					}
					return nil
				})
				within(t, 60*time.Second, "goroutine upload", func() {
					ctx := goroutineCtx(rt)
					client, server, err := uploadPair(ctx, network)
					if err != nil {
						t.Error(err)
						return
					}
					defer client.Close()
					defer server.Close(ctx)
					if err := check(ctx, filepath.Join(dir, "goroutine"), client, server); err != nil {
						t.Errorf("goroutine: %v", err)
					}
				})
				checkNoFDLeak(t, before)
				if after := pipeCount(t); after > pipes {
					t.Errorf("%d pipes open before, %d after: a splice pipe leaked", pipes, after)
				}
			})
		}
	}
}

// checkFile fails unless name holds want.
func checkFile(name string, want []byte) error {
	got, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		return fmt.Errorf("%s holds %d bytes, want %d; they differ from byte %d", name, len(got), len(want), i)
	}
	return nil
}

// Several MiB from a net.Conn client into a faio file, over TCP and Unix
// sockets, from a task and from a goroutine, on both backends, checked
// byte for byte: a part through io.Copy of an io.LimitReader
// (FileIO.ReadFrom), a part through the splice itself (which must take
// it: the pair can splice), the rest through io.Copy of the NetConn
// (NetConn.WriteTo), each at and advancing the file position, which a
// first Write moved.
func TestUploadSplicesIntoFile(t *testing.T) {
	data := randomBytes(9<<20+12345, 21)
	prefix := []byte("a prefix the copies must not overwrite")
	onUploadPairs(t, []string{"tcp", "unix"}, func(ctx context.Context, name string, client net.Conn, server *Conn) error {
		f, err := Create(ctx, name)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		if _, err := f.Write(ctx, prefix); err != nil {
			return err
		}
		sent := sendFrom(client, data, true)
		nc := server.NetConn()
		first, second := int64(3<<20+7), int64(2<<20+1)
		lr := &io.LimitedReader{R: nc, N: first}
		if m, err := io.Copy(f.IO(), lr); m != first || err != nil || lr.N != 0 {
			return fmt.Errorf("io.Copy of a LimitReader = %d, %v (N left %d); want %d, nil", m, err, lr.N, first)
		}
		m, handled, err := server.spliceToFile(ctx, f, second)
		if m != second || !handled || err != nil {
			return fmt.Errorf("spliceToFile = %d, %v, %v; want %d, true, nil", m, handled, err, second)
		}
		rest := int64(len(data)) - first - second
		if m, err := io.Copy(f.IO(), nc); m != rest || err != nil {
			return fmt.Errorf("io.Copy of the NetConn = %d, %v; want %d, nil", m, err, rest)
		}
		if err := sent(); err != nil {
			return err
		}
		if pos, err := f.Seek(ctx, 0, io.SeekCurrent); pos != int64(len(prefix)+len(data)) || err != nil {
			return fmt.Errorf("the file position after the copies is %d, %v; want %d", pos, err, len(prefix)+len(data))
		}
		// At the end of the stream: nothing more, and no error.
		if m, err := io.Copy(f.IO(), nc); m != 0 || err != nil {
			return fmt.Errorf("io.Copy at the end of the stream = %d, %v", m, err)
		}
		return checkFile(name, append(append([]byte{}, prefix...), data...))
	})
}

// A source shorter than the limit ends the copy at its end without an
// error, and the LimitedReader keeps what is left of its limit; a limit
// shorter than the source takes exactly that many bytes, and the rest
// stays to be read.
func TestUploadShortSourceAndLimit(t *testing.T) {
	data := randomBytes(300<<10, 22)
	onUploadPairs(t, []string{"tcp", "unix"}, func(ctx context.Context, name string, client net.Conn, server *Conn) error {
		f, err := Create(ctx, name)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		sent := sendFrom(client, data, true)
		nc := server.NetConn()
		lr := &io.LimitedReader{R: nc, N: 1000}
		if m, err := f.IO().ReadFrom(lr); m != 1000 || err != nil || lr.N != 0 {
			return fmt.Errorf("ReadFrom of a LimitReader of 1000 = %d, %v (N left %d)", m, err, lr.N)
		}
		rest, err := io.ReadAll(nc)
		if err != nil || !bytes.Equal(rest, data[1000:]) {
			return fmt.Errorf("after a LimitReader of 1000 the connection reads %d bytes, %v; want the %d that follow", len(rest), err, len(data)-1000)
		}
		if err := sent(); err != nil {
			return err
		}
		if err := checkFile(name, data[:1000]); err != nil {
			return err
		}

		// A second connection, shorter than the limit.
		c2, s2, err := uploadPair(ctx, server.network)
		if err != nil {
			return err
		}
		defer c2.Close()
		defer s2.Close(ctx)
		sent = sendFrom(c2, data[:5000], true)
		lr = &io.LimitedReader{R: s2.NetConn(), N: 1 << 40}
		if m, err := io.Copy(f.IO(), lr); m != 5000 || err != nil || lr.N != 1<<40-5000 {
			return fmt.Errorf("io.Copy of a LimitReader past the end = %d, %v (N left %d); want 5000, nil", m, err, lr.N)
		}
		if err := sent(); err != nil {
			return err
		}
		// A LimitedReader with nothing left copies nothing.
		lr.N = 0
		if m, err := f.IO().ReadFrom(lr); m != 0 || err != nil {
			return fmt.Errorf("ReadFrom of an exhausted LimitReader = %d, %v", m, err)
		}
		return checkFile(name, append(append([]byte{}, data[:1000]...), data[:5000]...))
	})
}

// The read deadline passing ends a copy that waits for the peer: with the
// bytes that came before it all in the file and counted, a *net.OpError
// "writeto" that is a timeout from NetConn.WriteTo, a *fs.PathError
// matching os.ErrDeadlineExceeded from FileIO.ReadFrom, as net and os give
// them. The connection stays usable once the deadline is cleared.
func TestUploadDeadline(t *testing.T) {
	data := randomBytes(50000, 23)
	onUploadPairs(t, []string{"tcp"}, func(ctx context.Context, name string, client net.Conn, server *Conn) error {
		f, err := Create(ctx, name)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		nc := server.NetConn()
		sent := sendFrom(client, data, false)
		if err := nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond)); err != nil {
			return err
		}
		start := time.Now()
		m, err := io.Copy(f.IO(), nc)
		took := time.Since(start)
		var oe *net.OpError
		if m != int64(len(data)) || !deadlineOpError(err) || !errors.As(err, &oe) || oe.Op != "writeto" || took < 250*time.Millisecond || took > 10*time.Second {
			return fmt.Errorf("io.Copy past the deadline = %d, %v after %v; want %d and a writeto timeout after 300ms", m, err, took, len(data))
		}
		if err := sent(); err != nil {
			return err
		}
		// Past the deadline FileIO.ReadFrom fails at once, as os does.
		var pe *fs.PathError
		lr := &io.LimitedReader{R: nc, N: 10}
		if m, err := f.IO().ReadFrom(lr); m != 0 || !errors.Is(err, os.ErrDeadlineExceeded) || !os.IsTimeout(err) || !errors.As(err, &pe) || pe.Op != "write" || lr.N != 10 {
			return fmt.Errorf("ReadFrom past the deadline = %d, %v (%T)", m, err, err)
		}
		// A deadline that passes while FileIO.ReadFrom waits.
		if err := nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
			return err
		}
		if m, err := f.IO().ReadFrom(nc); m != 0 || !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &pe) || pe.Op != "write" || pe.Path != name {
			return fmt.Errorf("ReadFrom waiting past the deadline = %d, %v (%T)", m, err, err)
		}
		if err := nc.SetReadDeadline(time.Time{}); err != nil {
			return err
		}
		sent = sendFrom(client, []byte("rest"), true)
		if m, err := io.Copy(f.IO(), nc); m != 4 || err != nil {
			return fmt.Errorf("io.Copy after the deadline was cleared = %d, %v", m, err)
		}
		if err := sent(); err != nil {
			return err
		}
		return checkFile(name, append(append([]byte{}, data...), "rest"...))
	})
}

// Close of the connection ends a copy waiting for the peer with
// net.ErrClosed, the bytes before it in the file and counted.
func TestUploadClose(t *testing.T) {
	data := randomBytes(70000, 24)
	onUploadPairs(t, []string{"tcp", "unix"}, func(ctx context.Context, name string, client net.Conn, server *Conn) error {
		f, err := Create(ctx, name)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		if err := sendFrom(client, data, false)(); err != nil {
			return err
		}
		spawn := goSpawner
		if runtime.InTask(ctx) {
			spawn = taskSpawner(ctx)
		}
		var m int64
		done := spawn(func() error {
			var err error
			m, err = io.Copy(f.IO(), server.NetConn())
			return err
		})
		// Once the bytes sent are in the file the copy waits for more.
		if err := waitSize(ctx, name, int64(len(data))); err != nil {
			return err
		}
		if err := pause(ctx, 20*time.Millisecond); err != nil {
			return err
		}
		if err := server.Close(ctx); err != nil {
			return err
		}
		err = done()
		var oe *net.OpError
		if m != int64(len(data)) || !errors.Is(err, net.ErrClosed) || !errors.As(err, &oe) || oe.Op != "writeto" {
			return fmt.Errorf("io.Copy across Close = %d, %v; want %d, net.ErrClosed in a writeto error", m, err, len(data))
		}
		return checkFile(name, data)
	})
}

// The splice's wait for the peer ends when its context does, from a
// task and from a goroutine, on both backends: a cancelled context, and
// (from a task) the cancellation of the task whose context it is, which
// on io_uring interrupts a splice blocked in the kernel's worker. Every
// byte taken from the socket is in the file and counted, and the
// connection goes on. (NetConn's methods take the read deadline's context,
// which TestUploadDeadline ends.)
func TestUploadCancel(t *testing.T) {
	data := randomBytes(80000, 25)
	onUploadPairs(t, []string{"tcp", "unix"}, func(ctx context.Context, name string, client net.Conn, server *Conn) error {
		f, err := Create(ctx, name)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		if err := sendFrom(client, data, false)(); err != nil {
			return err
		}
		spawn := goSpawner
		if runtime.InTask(ctx) {
			spawn = taskSpawner(ctx)
		}
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var m int64
		var handled bool
		done := spawn(func() error {
			var err error
			m, handled, err = server.spliceToFile(cctx, f, -1)
			return err
		})
		// Once the bytes sent are in the file the splice waits for more.
		if err := waitSize(ctx, name, int64(len(data))); err != nil {
			return err
		}
		if err := pause(ctx, 20*time.Millisecond); err != nil {
			return err
		}
		cancel()
		if err := done(); m != int64(len(data)) || !handled || !errors.Is(err, context.Canceled) {
			return fmt.Errorf("spliceToFile cancelled = %d, %v, %v; want %d, true, context.Canceled", m, handled, err, len(data))
		}
		want := data
		if runtime.InTask(ctx) {
			h := runtime.Spawn(ctx, func(ctx context.Context) (int64, error) {
				m, _, err := server.spliceToFile(ctx, f, -1)
				return m, err
			})
			if err := sendFrom(client, []byte("more"), false)(); err != nil {
				return err
			}
			if err := waitSize(ctx, name, int64(len(data)+4)); err != nil {
				return err
			}
			if err := pause(ctx, 20*time.Millisecond); err != nil {
				return err
			}
			h.Cancel()
			if m, err := h.Join(ctx); m != 4 || !errors.Is(err, context.Canceled) {
				return fmt.Errorf("spliceToFile of a cancelled task = %d, %v; want 4, context.Canceled", m, err)
			}
			want = append(append([]byte{}, data...), "more"...)
		}
		sent := sendFrom(client, []byte("end"), true)
		if m, err := io.Copy(f.IO(), server.NetConn()); m != 3 || err != nil {
			return fmt.Errorf("io.Copy after the cancellation = %d, %v", m, err)
		}
		if err := sent(); err != nil {
			return err
		}
		return checkFile(name, append(want, "end"...))
	})
}

// The copies that cannot splice go through a buffer and copy right: into
// a file opened with O_APPEND, into a character device, from a unixpacket
// connection, and through a FileIO hidden behind another writer; and into
// a regular file whose file system cannot splice (/proc/self/comm says
// EINVAL), where the bytes the first splice took from the socket must not
// be lost. A closed file fails as os and net say.
func TestUploadFallbacksAndErrors(t *testing.T) {
	data := randomBytes(200<<10, 26)
	onUploadPairs(t, []string{"tcp", "unixpacket"}, func(ctx context.Context, name string, client net.Conn, server *Conn) error {
		nc := server.NetConn()
		// O_APPEND: os.File.ReadFrom does not splice into it either.
		if err := os.WriteFile(name, []byte("head"), 0o600); err != nil {
			return err
		}
		f, err := OpenFile(ctx, name, unix.O_WRONLY|unix.O_APPEND, 0)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		if _, handled, _ := server.spliceToFile(ctx, f, 10); handled {
			return errors.New("spliceToFile handled a file opened with O_APPEND")
		}
		chunk := data[:60000]
		sent := sendFrom(client, chunk, false)
		if m, err := io.Copy(f.IO(), io.LimitReader(nc, int64(len(chunk)))); m != int64(len(chunk)) || err != nil {
			return fmt.Errorf("io.Copy into an O_APPEND file = %d, %v", m, err)
		}
		if err := sent(); err != nil {
			return err
		}
		if err := checkFile(name, append([]byte("head"), chunk...)); err != nil {
			return err
		}
		// A character device.
		null, err := OpenFile(ctx, "/dev/null", unix.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer null.Close(ctx)
		chunk = data[60000:100000]
		sent = sendFrom(client, chunk, false)
		lr := &io.LimitedReader{R: nc, N: int64(len(chunk))}
		if m, err := null.IO().ReadFrom(lr); m != int64(len(chunk)) || err != nil || lr.N != 0 {
			return fmt.Errorf("ReadFrom into /dev/null = %d, %v", m, err)
		}
		if err := sent(); err != nil {
			return err
		}
		// A FileIO behind another writer: NetConn.WriteTo copies with a
		// buffer.
		g, err := Create(ctx, name+".2")
		if err != nil {
			return err
		}
		defer g.Close(ctx)
		chunk = data[100000:150000]
		sent = sendFrom(client, chunk, false)
		if m, err := io.Copy(struct{ io.Writer }{g.IO()}, io.LimitReader(nc, int64(len(chunk)))); m != int64(len(chunk)) || err != nil {
			return fmt.Errorf("io.Copy into a wrapped FileIO = %d, %v", m, err)
		}
		if err := sent(); err != nil {
			return err
		}
		if err := checkFile(name+".2", chunk); err != nil {
			return err
		}
		// A closed file: the error of a write to it, as os gives it,
		// inside a writeto error from NetConn.WriteTo.
		if err := g.Close(ctx); err != nil {
			return err
		}
		// A copy that cannot splice reads before it writes, as os's
		// does: a message each for unixpacket's.
		if err := sendFrom(client, data[:2000], false)(); err != nil {
			return err
		}
		var oe *net.OpError
		var pe *fs.PathError
		if _, err := io.Copy(g.IO(), nc); !errors.Is(err, fs.ErrClosed) || !errors.As(err, &oe) || oe.Op != "writeto" || !errors.As(err, &pe) {
			return fmt.Errorf("io.Copy into a closed file = %v (%T)", err, err)
		}
		// From FileIO.ReadFrom a *fs.PathError as os.File.ReadFrom's
		// (the buffered copy of unixpacket goes through NetConn.WriteTo,
		// as os's through net.TCPConn.WriteTo, which wraps it).
		if _, err := g.IO().ReadFrom(nc); !errors.Is(err, fs.ErrClosed) || !errors.As(err, &pe) || errors.As(err, &oe) != (server.network == "unixpacket") {
			return fmt.Errorf("ReadFrom into a closed file = %v (%T)", err, err)
		}
		return nil
	})
}

// /proc/self/comm is a regular file without splice_write: the first
// splice into it fails with EINVAL after the socket's bytes are in the
// pipe, and those bytes must still reach the file (written through a
// buffer, as the rest of the copy is).
func TestUploadIntoFileThatCannotSplice(t *testing.T) {
	orig, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile("/proc/self/comm", bytes.TrimSuffix(orig, []byte("\n")), 0); err != nil {
			t.Errorf("restoring the process's name: %v", err)
		}
	})
	onUploadPairs(t, []string{"tcp"}, func(ctx context.Context, _ string, client net.Conn, server *Conn) error {
		f, err := OpenFile(ctx, "/proc/self/comm", unix.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		if !f.regular {
			return errors.New("/proc/self/comm is not a regular file here")
		}
		name := []byte("faio-upload")
		sent := sendFrom(client, name, true)
		if m, err := io.Copy(f.IO(), server.NetConn()); m != int64(len(name)) || err != nil {
			return fmt.Errorf("io.Copy into /proc/self/comm = %d, %v", m, err)
		}
		if err := sent(); err != nil {
			return err
		}
		return checkFile("/proc/self/comm", append(name, '\n'))
	})
}

// A task's upload on a socket a goroutine made non-blocking (its Read
// waited in the netpoller): the ring's splice says EAGAIN when the socket
// is empty, and the task waits in the netpoller instead. A sender that
// pauses makes that happen; every byte is checked.
func TestUploadOnSocketUsedByGoroutine(t *testing.T) {
	data := randomBytes(2<<20, 27)
	before, pipes := fdTargets(t), pipeCount(t)
	// After the runtime's Close (cleanups run last first), which closes
	// its readiness poller, which the task's wait made.
	t.Cleanup(func() {
		checkNoFDLeak(t, before)
		if after := pipeCount(t); after > pipes {
			t.Errorf("%d pipes open before, %d after: a splice pipe leaked", pipes, after)
		}
	})
	rt := newRuntime(t, runtime.Config{Workers: 2})
	gctx := goroutineCtx(rt)
	client, server, err := uploadPair(gctx, "tcp")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	defer server.Close(gctx)
	nc := server.NetConn()
	sent := goSpawner(func() error {
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 64<<10)
			if _, err := client.Write(rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
			time.Sleep(time.Millisecond)
		}
		return client.Close()
	})
	first := make([]byte, 1)
	if _, err := io.ReadFull(nc, first); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "up")
	runTask(t, rt, func(ctx context.Context) error {
		f, err := Create(ctx, name)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		if _, err := f.Write(ctx, first); err != nil {
			return err
		}
		if m, err := io.Copy(f.IO(), nc); m != int64(len(data)-1) || err != nil {
			return fmt.Errorf("io.Copy = %d, %v; want %d, nil", m, err, len(data)-1)
		}
		return nil
	})
	if err := sent(); err != nil {
		t.Fatal(err)
	}
	if err := checkFile(name, data); err != nil {
		t.Fatal(err)
	}
}

// ioWorkers counts the process's io_uring worker threads (io-wq's
// iou-wrk-N), which /proc lists among its tasks.
func ioWorkers(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		comm, err := os.ReadFile("/proc/self/task/" + e.Name() + "/comm")
		if err == nil && strings.HasPrefix(string(comm), "iou-wrk") {
			n++
		}
	}
	return n
}

// tcpPairs connects n net.Dial clients to n accepted faio Conns over
// loopback TCP. closeAll closes whatever was opened, also after an error.
func tcpPairs(ctx context.Context, n int) (clients []net.Conn, servers []*Conn, closeAll func(), err error) {
	clients, servers = make([]net.Conn, n), make([]*Conn, n)
	closeAll = func() {
		for i := range n {
			if clients[i] != nil {
				clients[i].Close()
			}
			if servers[i] != nil {
				servers[i].Close(ctx)
			}
		}
	}
	l, err := Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return clients, servers, closeAll, err
	}
	defer l.Close(ctx)
	for i := range n {
		if clients[i], err = net.Dial("tcp", l.Addr().String()); err != nil {
			return clients, servers, closeAll, err
		}
		if servers[i], err = l.Accept(ctx); err != nil {
			return clients, servers, closeAll, err
		}
	}
	return clients, servers, closeAll, nil
}

// Uploads waiting for slow senders, from tasks on the ring, wait with a
// ring poll, not in a splice that io_uring runs (and blocks) in one of its
// kernel worker threads: 32 uploads whose clients send nothing for a while
// hold far fewer than 32 new iou-wrk threads, and once the clients send
// and close, every upload holds its client's bytes.
func TestUploadWaitHoldsNoKernelWorker(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	if rt.Backend() != runtime.BackendIOUring {
		t.Skip("the ring path needs the io_uring backend")
	}
	const uploads = 32
	dir := t.TempDir()
	runTask(t, rt, func(ctx context.Context) error {
		clients, servers, closeAll, err := tcpPairs(ctx, uploads)
		defer closeAll()
		if err != nil {
			return err
		}
		// The files are opened first: an open may take a worker thread
		// of its own for a moment.
		files := make([]*File, uploads)
		for i := range uploads {
			if files[i], err = Create(ctx, filepath.Join(dir, fmt.Sprint(i))); err != nil {
				return err
			}
			defer files[i].Close(ctx)
		}
		before := ioWorkers(t)
		hs := make([]*runtime.JoinHandle[int64], uploads)
		for i := range uploads {
			hs[i] = runtime.Spawn(ctx, func(ctx context.Context) (int64, error) {
				return io.Copy(files[i].IO(), servers[i].NetConn())
			})
		}
		if err := runtime.Sleep(ctx, 300*time.Millisecond); err != nil {
			return err
		}
		waiting := ioWorkers(t)
		datas := make([][]byte, uploads)
		sent := make([]func() error, uploads)
		for i := range uploads {
			datas[i] = randomBytes(100<<10+i, uint64(i+1))
			sent[i] = sendFrom(clients[i], datas[i], true)
		}
		for i := range uploads {
			if err := sent[i](); err != nil {
				return err
			}
			clients[i] = nil // closed by sendFrom
		}
		for i, h := range hs {
			m, err := h.Join(ctx)
			if m != int64(len(datas[i])) || err != nil {
				return fmt.Errorf("upload %d = %d, %v; want %d, nil", i, m, err, len(datas[i]))
			}
			if err := checkFile(filepath.Join(dir, fmt.Sprint(i)), datas[i]); err != nil {
				return err
			}
		}
		if grew := waiting - before; grew >= uploads/4 {
			return fmt.Errorf("%d uploads waiting for their senders added %d io_uring worker threads (%d before, %d while waiting)",
				uploads, grew, before, waiting)
		}
		t.Logf("io_uring worker threads: %d before, %d while %d uploads waited", before, waiting, uploads)
		return nil
	})
}
