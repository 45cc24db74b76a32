package aio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// From a plain goroutine, every File method is the system call itself and
// behaves as from a task: the same data, the same errors.
func TestFileMethodsFromGoroutine(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	ctx := goroutineCtx(rt)
	name := filepath.Join(t.TempDir(), "f")
	f, err := Create(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.Write(ctx, []byte("hello, ")); n != 7 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if n, err := f.Writev(ctx, [][]byte{[]byte("wor"), nil, []byte("ld")}); n != 5 || err != nil {
		t.Fatalf("Writev = %d, %v", n, err)
	}
	big := int64(5 << 30) // past 4 GiB: the offset's high half matters
	if n, err := f.WriteAt(ctx, []byte("far"), big); n != 3 || err != nil {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	fi, err := f.Stat(ctx)
	if err != nil || fi.Size() != big+3 {
		t.Fatalf("Stat = %v, %v; want size %d", fi, err, big+3)
	}
	b := make([]byte, 12)
	if n, err := f.ReadAt(ctx, b, 0); n != 12 || err != nil || string(b) != "hello, world" {
		t.Fatalf("ReadAt = %d, %v, %q", n, err, b[:n])
	}
	if n, err := f.ReadAt(ctx, b, big); n != 3 || err != io.EOF || string(b[:3]) != "far" {
		t.Fatalf("ReadAt at the end = %d, %v, %q", n, err, b[:n])
	}
	if pos, err := f.Seek(ctx, 7, io.SeekStart); pos != 7 || err != nil {
		t.Fatalf("Seek = %d, %v", pos, err)
	}
	x, y := make([]byte, 2), make([]byte, 3)
	if n, err := f.Readv(ctx, [][]byte{x, y}); n != 5 || err != nil || string(x)+string(y) != "world" {
		t.Fatalf("Readv = %d, %v, %q %q", n, err, x, y)
	}
	if _, err := f.Seek(ctx, 0, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Read(ctx, b); n != 0 || err != io.EOF {
		t.Fatalf("Read at the end = %d, %v", n, err)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := f.ReadAt(ctx, b, 0); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("ReadAt after Close = %v", err)
	}
	if _, err := Open(ctx, filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a missing file = %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ReadFile(cancelled, name); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadFile with a cancelled context = %v", err)
	}
	if err := WriteFile(ctx, name, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(name); err != nil || string(got) != "new" {
		t.Fatalf("after WriteFile: %q, %v", got, err)
	}
}

// From plain goroutines, a TCP connection waits in Go's netpoller: echo,
// half close, a read cut short by its context (the connection stays
// usable), and Close waking a blocked Read and Accept with net.ErrClosed.
func TestTCPFromGoroutineWaitsInNetpoller(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	before := countFDs(t)
	ctx := goroutineCtx(rt)
	within(t, 10*time.Second, "goroutine TCP", func() {
		l, err := Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			t.Error(err)
			return
		}
		accepted := make(chan *Conn, 1)
		go func() {
			c, err := l.Accept(ctx)
			if err != nil {
				t.Error(err)
			}
			accepted <- c
		}()
		client, err := Dial(ctx, "tcp", l.Addr().String())
		if err != nil {
			t.Error(err)
			return
		}
		server := <-accepted
		if server == nil {
			return
		}
		if err := goroutineConnChecks(ctx, l, client, server); err != nil {
			t.Error(err)
		}
	})
	if after := countFDs(t); after != before {
		t.Fatalf("%d descriptors before, %d after", before, after)
	}
}

func goroutineConnChecks(ctx context.Context, l *Listener, client, server *Conn) error {
	msg := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB: more than one send
	go func() { client.Write(ctx, msg) }()
	got := make([]byte, len(msg))
	if n, err := server.ReadFull(ctx, got); n != len(msg) || err != nil || !bytes.Equal(got, msg) {
		return fmt.Errorf("ReadFull = %d, %v", n, err)
	}

	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	start := time.Now()
	_, err := server.Read(short, got)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		return fmt.Errorf("Read with a 30 ms context = %v after %v", err, time.Since(start))
	}
	if _, err := client.Write(ctx, []byte("again")); err != nil {
		return err
	}
	if n, err := server.Read(ctx, got); err != nil || string(got[:n]) != "again" {
		return fmt.Errorf("Read after a cancelled Read = %q, %v", got[:n], err)
	}
	if err := client.CloseWrite(ctx); err != nil {
		return err
	}
	if n, err := server.Read(ctx, got); n != 0 || err != io.EOF {
		return fmt.Errorf("Read after CloseWrite = %d, %v", n, err)
	}

	readErr := make(chan error, 1)
	go func() {
		_, err := client.Read(ctx, got[:1])
		readErr <- err
	}()
	acceptErr := make(chan error, 1)
	go func() {
		_, err := l.Accept(ctx)
		acceptErr <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := client.Close(ctx); err != nil {
		return fmt.Errorf("Close: %v", err)
	}
	if err := l.Close(ctx); err != nil {
		return fmt.Errorf("listener Close: %v", err)
	}
	if err := <-readErr; !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("Read across Close = %v", err)
	}
	if err := <-acceptErr; !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("Accept across Close = %v", err)
	}
	return server.Close(ctx)
}

// A socket a goroutine used (non-blocking since) still works from tasks:
// io_uring's operations wait for the peer instead of failing with EAGAIN.
// And the other way round.
func TestSocketSharedByGoroutinesAndTasks(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	gctx := goroutineCtx(rt)
	l, err := Listen(gctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(gctx)
	// A goroutine's Accept registers the listener with the netpoller.
	var dialer sync.WaitGroup
	defer dialer.Wait()
	dialer.Go(func() {
		c, err := Dial(gctx, "tcp", l.Addr().String())
		if err == nil {
			c.Write(gctx, []byte("from a goroutine"))
			defer c.Close(gctx)
			time.Sleep(50 * time.Millisecond)
			c.Write(gctx, []byte("late"))
			time.Sleep(50 * time.Millisecond)
		}
	})
	server, err := l.Accept(gctx)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close(gctx)
	buf := make([]byte, 64)
	if n, err := server.ReadFull(gctx, buf[:16]); n != 16 || err != nil {
		t.Fatalf("goroutine ReadFull = %d, %v", n, err)
	}
	late := make(chan *Conn, 1)
	within(t, 10*time.Second, "tasks on non-blocking sockets", func() {
		runTask(t, rt, func(ctx context.Context) error {
			// The data comes 50 ms later: the task's recv must wait.
			if n, err := server.Read(ctx, buf); err != nil || string(buf[:n]) != "late" {
				return fmt.Errorf("task Read = %q, %v", buf[:n], err)
			}
			// So must the task's accept on the non-blocking listener.
			go func() {
				time.Sleep(30 * time.Millisecond)
				c, err := Dial(gctx, "tcp", l.Addr().String())
				if err != nil {
					c = nil
				}
				late <- c
			}()
			c, err := l.Accept(ctx)
			if err != nil {
				return fmt.Errorf("task Accept: %v", err)
			}
			return c.Close(ctx)
		})
	})
	if c := <-late; c != nil {
		c.Close(gctx)
	}

	// UDP: a goroutine's ReadFrom, then a task's that waits.
	u, err := ListenUDP(gctx, "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close(gctx)
	peer, err := net.Dial("udp", u.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	peer.Write([]byte("one"))
	if n, from, err := u.ReadFrom(gctx, buf); err != nil || string(buf[:n]) != "one" || from != netip.MustParseAddrPort(peer.LocalAddr().String()) {
		t.Fatalf("goroutine ReadFrom = %q from %v, %v", buf[:n], from, err)
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		peer.Write([]byte("two"))
	}()
	runTask(t, rt, func(ctx context.Context) error {
		if n, _, err := u.ReadFrom(ctx, buf); err != nil || string(buf[:n]) != "two" {
			return fmt.Errorf("task ReadFrom = %q, %v", buf[:n], err)
		}
		return nil
	})
}

// Stress: connections closed while goroutines and tasks read and write
// them at once (the same socket in the netpoller and on the rings). Every
// operation ends with data or net.ErrClosed, and no descriptor is left.
func TestStressCloseRacesGoroutineAndTaskIO(t *testing.T) {
	const rounds = 100
	rt := newRuntime(t, runtime.Config{Workers: 2})
	before := countFDs(t)
	gctx := goroutineCtx(rt)
	l, err := Listen(gctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := runtime.SpawnOn(rt, func(ctx context.Context) (int, error) { return 0, echo(ctx, l) })
	var closedSeen, dataSeen atomic.Int64
	var mu sync.Mutex
	var failures []error
	fail := func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
	}
	loop := func(ctx context.Context, c *Conn, write bool) {
		buf := make([]byte, 1024)
		for {
			var err error
			if write {
				_, err = c.Write(ctx, buf)
			} else {
				_, err = c.Read(ctx, buf)
			}
			switch {
			case err == nil:
				dataSeen.Add(1)
			case errors.Is(err, net.ErrClosed):
				closedSeen.Add(1)
				return
			default:
				fail(err)
				return
			}
		}
	}
	for r := range rounds {
		c, err := Dial(gctx, "tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for k := range 4 {
			write := k%2 == 0
			if k < 2 {
				wg.Go(func() { loop(gctx, c, write) })
				continue
			}
			h := runtime.SpawnOn(rt, func(ctx context.Context) (int, error) { loop(ctx, c, write); return 0, nil })
			wg.Go(func() { h.Join(context.Background()) })
		}
		time.Sleep(time.Duration(r%3) * time.Millisecond)
		if err := c.Close(gctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
	l.Close(gctx)
	server.Join(context.Background())
	if len(failures) > 0 {
		t.Fatalf("%d operations failed, first: %v", len(failures), failures[0])
	}
	if closedSeen.Load() != 4*rounds {
		t.Fatalf("%d operations saw Close, want %d", closedSeen.Load(), 4*rounds)
	}
	if after := countFDs(t); after != before {
		t.Fatalf("%d descriptors before, %d after", before, after)
	}
	t.Logf("%d transfers, %d closes seen", dataSeen.Load(), closedSeen.Load())
}

// A task's cached read that completed is never undone by a cancellation
// that comes right after it: every byte Read returns was read, and the
// file position says so.
func TestCachedReadSurvivesCancellation(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, bytes.Repeat([]byte("x"), 1<<16), 0o600); err != nil {
		t.Fatal(err)
	}
	runTask(t, rt, func(ctx context.Context) error {
		f, err := Open(ctx, name)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		rctx, cancel := context.WithCancel(ctx)
		runtime.Spawn(ctx, func(context.Context) (int, error) { cancel(); return 0, nil })
		total := 0
		b := make([]byte, 1)
		for {
			n, err := f.Read(rctx, b)
			total += n
			if err != nil {
				if !errors.Is(err, context.Canceled) {
					return fmt.Errorf("Read: %v", err)
				}
				break
			}
		}
		pos, err := f.Seek(ctx, 0, io.SeekCurrent)
		if err != nil {
			return err
		}
		if int64(total) != pos {
			return fmt.Errorf("Read returned %d bytes in all, but the file position is %d", total, pos)
		}
		return nil
	})
}

// A pipe waits for its peer forever, so its reads wait where ctx can end
// them: from a goroutine (the netpoller), from a task on either backend,
// and the runtime's Close does not hang behind one.
func TestPipeReadEndsWithContext(t *testing.T) {
	for _, backend := range []runtime.Backend{runtime.BackendAuto, runtime.BackendPortable} {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
			gctx := goroutineCtx(rt)
			f := openFIFO(t, gctx)
			defer f.Close(gctx)
			read := func(ctx context.Context) error {
				short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
				start := time.Now()
				_, err := f.Read(short, make([]byte, 8))
				if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
					return fmt.Errorf("Read of an empty pipe with a 50 ms context = %v after %v", err, time.Since(start))
				}
				return nil
			}
			within(t, 10*time.Second, "pipe reads", func() {
				if err := read(gctx); err != nil {
					t.Errorf("goroutine: %v", err)
				}
				runTask(t, rt, read)
				if _, err := f.Write(gctx, []byte("ok")); err != nil {
					t.Error(err)
				}
				b := make([]byte, 8)
				if n, err := f.Read(gctx, b); err != nil || string(b[:n]) != "ok" {
					t.Errorf("Read after the cancelled ones = %q, %v", b[:n], err)
				}
			})
			// A task blocked on the pipe when the runtime closes: Close
			// cancels it and returns.
			h := runtime.SpawnOn(rt, func(ctx context.Context) (int, error) { return f.Read(ctx, make([]byte, 8)) })
			time.Sleep(20 * time.Millisecond)
			within(t, 10*time.Second, "Close with a task reading a pipe", func() {
				if err := rt.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			if _, err := h.Join(context.Background()); !errors.Is(err, context.Canceled) {
				t.Errorf("the reading task ended with %v", err)
			}
		})
	}
}

// On the portable backend a task whose socket is always ready still lets
// the other tasks of its worker run: operations that complete without
// suspending charge the cooperative budget.
func TestPortableReadySocketYields(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1, IOBackend: runtime.BackendPortable})
	runTask(t, rt, func(ctx context.Context) error {
		u, err := DialUDP(ctx, "udp", "127.0.0.1:9") // discard: sends never wait
		if err != nil {
			return err
		}
		defer u.Close(ctx)
		var ran atomic.Bool
		runtime.Spawn(ctx, func(context.Context) (int, error) { ran.Store(true); return 0, nil })
		for i := range 10 * runtime.CoopBudget {
			if ran.Load() {
				return nil
			}
			if _, err := u.Write(ctx, []byte("x")); err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
				return fmt.Errorf("write %d: %v", i, err)
			}
		}
		return fmt.Errorf("the other task did not run during %d ready writes", 10*runtime.CoopBudget)
	})
}

// recvTry and recvTried: a socket whose tries find data keeps trying; after
// a miss with no credit left, the next recvHintSkip receives go straight to
// the ring and the one after is tried again; credit is capped, so a socket
// whose traffic changes stops trying after at most recvHintMax+1 misses.
func TestRecvHint(t *testing.T) {
	var g fdGuard
	tries := func(n int) (tried int) {
		for range n {
			if g.recvTry() {
				tried++
				g.recvTried(false)
			}
		}
		return tried
	}
	if !g.recvTry() {
		t.Fatal("a new socket does not try")
	}
	g.recvTried(false) // a miss at 0: skip the next recvHintSkip
	for i := range recvHintSkip {
		if g.recvTry() {
			t.Fatalf("receive %d after the miss is tried, want %d skipped", i+1, recvHintSkip)
		}
	}
	if !g.recvTry() {
		t.Fatal("the receive after the skipped ones is not tried")
	}
	for range 100 {
		g.recvTried(true)
		if !g.recvTry() {
			t.Fatal("a socket that hits stopped trying")
		}
	}
	// Now at recvHintMax: that many misses use the credit up, the next one
	// starts skipping.
	if got := tries(recvHintMax + 1); got != recvHintMax+1 {
		t.Fatalf("%d receives tried of the first %d misses, want all", got, recvHintMax+1)
	}
	if got := tries(recvHintSkip); got != 0 {
		t.Fatalf("%d receives tried after the credit ran out, want 0", got)
	}
	// Always missing: one try in recvHintSkip+1 receives.
	if got, n := tries(90*(recvHintSkip+1)), 90; got != n {
		t.Fatalf("a socket that never hits tried %d receives of %d, want %d", got, 90*(recvHintSkip+1), n)
	}
	// A socket whose tries hit one in two, a hit first, tries every time.
	g.recvHint.Store(0)
	tried, hit := 0, true
	for range 100 {
		if g.recvTry() {
			tried++
			g.recvTried(hit)
			hit = !hit
		}
	}
	if tried != 100 {
		t.Fatalf("a socket hitting one try in two tried %d receives of 100", tried)
	}
}
