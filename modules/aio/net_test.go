package aio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/faio-go/faio/modules/runtime"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// 200 clients each make 1,000 round trips of random sizes (1 B..64 KiB)
// through an echo server; every byte that comes back is checked.
func TestTCPEchoManyClients(t *testing.T) {
	clients, trips := 200, 1000
	if raceEnabled {
		// The race detector makes the 6.5 GB of the full run take most of
		// the package's time budget; the concurrency stays.
		trips = 200
	}
	pattern := randomBytes(128<<10, 8)
	rt := newRuntime(t, runtime.Config{Workers: 2})
	var bytesChecked atomic.Int64
	runTask(t, rt, func(ctx context.Context) error {
		l, err := Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		server := runtime.Spawn(ctx, func(ctx context.Context) (int, error) { return 0, echo(ctx, l) })
		var hs []*runtime.JoinHandle[int]
		for i := range clients {
			hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
				c, err := Dial(ctx, "tcp", l.Addr().String())
				if err != nil {
					return 0, err
				}
				defer c.Close(ctx)
				rng := rand.New(rand.NewPCG(uint64(i), 1))
				got := make([]byte, 64<<10)
				for j := range trips {
					n := 1 + rng.IntN(64<<10)
					off := rng.IntN(len(pattern) - n)
					msg := pattern[off : off+n]
					// Send and receive at once: a large message must not
					// wait for its echo to be read to finish sending.
					w := runtime.Spawn(ctx, func(ctx context.Context) (int, error) { return c.Write(ctx, msg) })
					if k, err := c.ReadFull(ctx, got[:n]); err != nil || k != n {
						return 0, fmt.Errorf("client %d trip %d: ReadFull = %d, %v", i, j, k, err)
					}
					if k, err := w.Join(ctx); err != nil || k != n {
						return 0, fmt.Errorf("client %d trip %d: Write = %d, %v", i, j, k, err)
					}
					if !bytes.Equal(got[:n], msg) {
						return 0, fmt.Errorf("client %d trip %d: %d bytes came back changed", i, j, n)
					}
					bytesChecked.Add(int64(n))
				}
				return 0, c.CloseWrite(ctx)
			}))
		}
		err = joinAll(ctx, hs)
		if cerr := l.Close(ctx); err == nil {
			err = cerr
		}
		if _, serr := server.Join(ctx); err == nil {
			err = serr
		}
		return err
	})
	t.Logf("%d bytes echoed and checked", bytesChecked.Load())
}

func TestDialConnectionRefused(t *testing.T) {
	port := freePort(t)
	rt := newRuntime(t, runtime.Config{Workers: 1})
	runTask(t, rt, func(ctx context.Context) error {
		_, err := Dial(ctx, "tcp", "127.0.0.1:"+port)
		var oe *net.OpError
		if !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &oe) || oe.Op != "dial" || oe.Addr.String() != "127.0.0.1:"+port {
			return fmt.Errorf("Dial to a closed port = %v", err)
		}
		return nil
	})
}

// A peer that resets the connection (SO_LINGER 0, then Close) while a Read
// waits makes the Read fail with ECONNRESET.
func TestTCPPeerResetMidRead(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	runTask(t, rt, func(ctx context.Context) error {
		client, server, err := connPair(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer server.Close(ctx)
		reader := runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			return server.Read(ctx, make([]byte, 16))
		})
		if err := runtime.Sleep(ctx, 10*time.Millisecond); err != nil {
			return err
		}
		if err := client.SetLinger(0); err != nil {
			return err
		}
		if err := client.Close(ctx); err != nil {
			return err
		}
		_, err = reader.Join(ctx)
		var oe *net.OpError
		if !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &oe) || oe.Op != "read" {
			return fmt.Errorf("Read across a reset = %v, want ECONNRESET", err)
		}
		return nil
	})
}

// CloseWrite ends one direction: the peer reads io.EOF and can still
// answer.
func TestTCPHalfClose(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	runTask(t, rt, func(ctx context.Context) error {
		client, server, err := connPair(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer client.Close(ctx)
		defer server.Close(ctx)
		if _, err := client.Write(ctx, []byte("question")); err != nil {
			return err
		}
		if err := client.CloseWrite(ctx); err != nil {
			return err
		}
		var got []byte
		buf := make([]byte, 3)
		for {
			n, err := server.Read(ctx, buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
		if string(got) != "question" {
			return fmt.Errorf("server read %q", got)
		}
		if _, err := server.Write(ctx, []byte("answer")); err != nil {
			return err
		}
		if err := server.Close(ctx); err != nil {
			return err
		}
		ans := make([]byte, 6)
		if n, err := client.ReadFull(ctx, ans); err != nil || string(ans[:n]) != "answer" {
			return fmt.Errorf("client ReadFull = %q, %v", ans[:n], err)
		}
		if n, err := client.ReadFull(ctx, ans); n != 0 || err != io.EOF {
			return fmt.Errorf("ReadFull at end = %d, %v, want io.EOF", n, err)
		}
		if _, err := client.Write(ctx, []byte("x")); err == nil {
			return errors.New("Write after CloseWrite succeeded")
		}
		return nil
	})
}

func TestTCPReadFullUnexpectedEOF(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	runTask(t, rt, func(ctx context.Context) error {
		client, server, err := connPair(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer server.Close(ctx)
		if _, err := client.Write(ctx, []byte("abc")); err != nil {
			return err
		}
		if err := client.Close(ctx); err != nil {
			return err
		}
		buf := make([]byte, 10)
		if n, err := server.ReadFull(ctx, buf); n != 3 || err != io.ErrUnexpectedEOF || string(buf[:3]) != "abc" {
			return fmt.Errorf("ReadFull of a short stream = %d, %v", n, err)
		}
		return nil
	})
}

func TestTCPAcceptCancelledByContext(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	within(t, 10*time.Second, "cancelled Accept", func() {
		runTask(t, rt, func(ctx context.Context) error {
			l, err := Listen(ctx, "tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			defer l.Close(ctx)
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			h := runtime.Spawn(cctx, func(ctx context.Context) (*Conn, error) { return l.Accept(ctx) })
			if err := runtime.Sleep(ctx, 10*time.Millisecond); err != nil {
				return err
			}
			cancel()
			if _, err := h.Join(ctx); !errors.Is(err, context.Canceled) {
				return fmt.Errorf("cancelled Accept = %v", err)
			}
			// The listener still works.
			c, err := Dial(ctx, "tcp", l.Addr().String())
			if err != nil {
				return err
			}
			defer c.Close(ctx)
			s, err := l.Accept(ctx)
			if err != nil {
				return err
			}
			return s.Close(ctx)
		})
	})
}

// A Read cut off by its deadline returns promptly with
// context.DeadlineExceeded, consumes nothing, and the connection goes on.
func TestTCPReadDeadlineKeepsConnUsable(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	within(t, 10*time.Second, "Read past its deadline", func() {
		runTask(t, rt, func(ctx context.Context) error {
			client, server, err := connPair(ctx, "tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			defer client.Close(ctx)
			defer server.Close(ctx)
			buf := make([]byte, 8)
			for range 3 {
				dctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
				n, err := server.Read(dctx, buf)
				cancel()
				var oe *net.OpError
				if n != 0 || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &oe) || !oe.Timeout() {
					return fmt.Errorf("Read past deadline = %d, %v", n, err)
				}
				if _, err := client.Write(ctx, []byte("still ok")); err != nil {
					return err
				}
				if n, err := server.ReadFull(ctx, buf); err != nil || string(buf[:n]) != "still ok" {
					return fmt.Errorf("Read after a deadline = %q, %v", buf[:n], err)
				}
			}
			return nil
		})
	})
}

func TestTCPAddressesAndNetworks(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	runTask(t, rt, func(ctx context.Context) error {
		for _, c := range []struct{ listenNet, listenAddr, dialNet, dialHost string }{
			{"tcp", "127.0.0.1:0", "tcp", "127.0.0.1"},
			{"tcp4", "127.0.0.1:0", "tcp4", "localhost"},
			{"tcp", "localhost:0", "tcp", "localhost"},
			{"tcp6", "[::1]:0", "tcp6", "::1"},
			{"tcp", "[::1]:0", "tcp", "::1"},
		} {
			l, err := Listen(ctx, c.listenNet, c.listenAddr)
			if err != nil {
				return fmt.Errorf("Listen(%s, %s): %v", c.listenNet, c.listenAddr, err)
			}
			port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
			cl, err := Dial(ctx, c.dialNet, net.JoinHostPort(c.dialHost, port))
			if err != nil {
				l.Close(ctx)
				return fmt.Errorf("Dial(%s, %s): %v", c.dialNet, c.dialHost, err)
			}
			sv, err := l.Accept(ctx)
			if err != nil {
				return err
			}
			if cl.LocalAddr().String() != sv.RemoteAddr().String() || cl.RemoteAddr().String() != sv.LocalAddr().String() {
				return fmt.Errorf("%v: client %v->%v, server %v->%v", c, cl.LocalAddr(), cl.RemoteAddr(), sv.LocalAddr(), sv.RemoteAddr())
			}
			if cl.RemoteAddr().String() != l.Addr().String() {
				return fmt.Errorf("%v: dialled %v, listener at %v", c, cl.RemoteAddr(), l.Addr())
			}
			for _, x := range []interface{ Close(context.Context) error }{cl, sv, l} {
				if err := x.Close(ctx); err != nil {
					return err
				}
			}
		}
		bad := []struct{ network, addr string }{
			{"tcp4", "[::1]:80"},
			{"tcp6", "127.0.0.1:80"},
			{"sctp", "127.0.0.1:80"},
			{"tcp", "127.0.0.1"},
			{"tcp", "127.0.0.1:99999"},
		}
		for _, b := range bad {
			if c, err := Dial(ctx, b.network, b.addr); err == nil {
				c.Close(ctx)
				return fmt.Errorf("Dial(%s, %s) succeeded", b.network, b.addr)
			}
			if l, err := Listen(ctx, b.network, b.addr); err == nil {
				l.Close(ctx)
				return fmt.Errorf("Listen(%s, %s) succeeded", b.network, b.addr)
			}
		}
		_, err := Dial(ctx, "sctp", "127.0.0.1:80")
		var une net.UnknownNetworkError
		if !errors.As(err, &une) {
			return fmt.Errorf("Dial(sctp) = %v, want UnknownNetworkError", err)
		}
		return nil
	})
}

func TestTCPSocketOptions(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	runTask(t, rt, func(ctx context.Context) error {
		client, server, err := connPair(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer client.Close(ctx)
		defer server.Close(ctx)
		fd := client.guard.fd
		get := func(level, name int) int {
			v, err := unix.GetsockoptInt(fd, level, name)
			if err != nil {
				return -1
			}
			return v
		}
		if get(unix.IPPROTO_TCP, unix.TCP_NODELAY) == 0 {
			return errors.New("TCP_NODELAY is off by default")
		}
		if err := client.SetNoDelay(false); err != nil || get(unix.IPPROTO_TCP, unix.TCP_NODELAY) != 0 {
			return fmt.Errorf("SetNoDelay(false): %v", err)
		}
		if err := client.SetKeepAlive(true); err != nil || get(unix.SOL_SOCKET, unix.SO_KEEPALIVE) == 0 {
			return fmt.Errorf("SetKeepAlive(true): %v", err)
		}
		if err := client.SetKeepAlivePeriod(1500 * time.Millisecond); err != nil ||
			get(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE) != 2 || get(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL) != 2 {
			return fmt.Errorf("SetKeepAlivePeriod: %v", err)
		}
		if err := client.SetKeepAlivePeriod(-1); err != nil ||
			get(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE) != 2 || get(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL) != 2 {
			return fmt.Errorf("SetKeepAlivePeriod(-1) changed the period: %v", err)
		}
		if err := client.SetKeepAlivePeriod(0); err != nil ||
			get(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE) != 15 || get(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL) != 15 {
			return fmt.Errorf("SetKeepAlivePeriod(0), want net's 15 s: %v", err)
		}
		if err := client.SetLinger(7); err != nil {
			return err
		}
		l, err := unix.GetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER)
		if err != nil || l.Onoff == 0 || l.Linger != 7 {
			return fmt.Errorf("SetLinger(7): %+v, %v", l, err)
		}
		if err := client.SetLinger(-1); err != nil {
			return err
		}
		if l, err := unix.GetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER); err != nil || l.Onoff != 0 {
			return fmt.Errorf("SetLinger(-1): %+v, %v", l, err)
		}
		// Listeners reuse addresses.
		ln, err := Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer ln.Close(ctx)
		if v, err := unix.GetsockoptInt(ln.guard.fd, unix.SOL_SOCKET, unix.SO_REUSEADDR); err != nil || v == 0 {
			return fmt.Errorf("SO_REUSEADDR on a listener = %d, %v", v, err)
		}
		return nil
	})
}

// Listeners and connections work from plain goroutines, and interoperate
// with package net.
func TestTCPFromGoroutinesAndNet(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	ctx := goroutineCtx(rt)
	l, err := Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			done <- err
			return
		}
		_, err = c.Write([]byte("ping"))
		b := make([]byte, 4)
		if err == nil {
			_, err = io.ReadFull(c, b)
		}
		if err == nil && string(b) != "pong" {
			err = fmt.Errorf("net client got %q", b)
		}
		c.Close() // before done: nothing of this test may close after it returns
		done <- err
	}()
	c, err := l.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if _, err := c.ReadFull(ctx, b); err != nil || string(b) != "ping" {
		t.Fatalf("ReadFull = %q, %v", b, err)
	}
	if _, err := c.Write(ctx, []byte("pong")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Dial from a goroutine to a net listener.
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echoed := make(chan struct{})
	defer func() {
		nl.Close() // ends an Accept still waiting
		<-echoed   // s is closed once the goroutine is done
	}()
	go func() {
		defer close(echoed)
		s, err := nl.Accept()
		if err == nil {
			io.Copy(s, s)
			s.Close()
		}
	}()
	d, err := Dial(ctx, "tcp", nl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(ctx) // on a failure below; ends the echo's io.Copy
	if _, err := d.Write(ctx, []byte("echo")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadFull(ctx, b); err != nil || string(b) != "echo" {
		t.Fatalf("echo through net = %q, %v", b, err)
	}
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Without a task or an attached runtime there is nothing to run on,
	// and the error says how to attach one.
	_, err = Dial(context.Background(), "tcp", nl.Addr().String())
	if !errors.Is(err, runtime.ErrNoRuntime) || !strings.Contains(err.Error(), "WithRuntime(ctx, rt)") ||
		strings.Count(err.Error(), "plain goroutine") > 1 {
		t.Fatalf("Dial without a runtime = %v, want ErrNoRuntime pointing to WithRuntime(ctx, rt), once", err)
	}
}

// A task's receive of data already in the socket is made on the spot,
// without a ring entry; one that has to wait goes to the ring; and either
// way the bytes, the stream's end and cancellation come out as before.
func TestTaskReceiveOfWaitingDataSkipsTheRing(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	if rt.Backend() != runtime.BackendIOUring {
		t.Skip("the ring path needs the io_uring backend")
	}
	submitted := func() uint64 { return rt.Stats().IOSubmitted }
	runTask(t, rt, func(ctx context.Context) error {
		client, server, err := connPair(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer server.Close(ctx)
		const msgs = 100
		var all []byte
		for i := range msgs {
			all = append(all, fmt.Sprintf("msg-%04d", i)...)
		}
		if _, err := client.Write(ctx, all); err != nil {
			return err
		}
		// On loopback the bytes are in the server's receive queue once
		// the send has completed.
		before := submitted()
		buf := make([]byte, 8)
		for i := range msgs {
			if n, err := server.Read(ctx, buf); err != nil || n != 8 || string(buf) != fmt.Sprintf("msg-%04d", i) {
				return fmt.Errorf("Read %d of waiting data = %d %q, %v", i, n, buf[:n], err)
			}
		}
		if d := submitted() - before; d > msgs/10 {
			return fmt.Errorf("%d Reads of data already received submitted %d ring entries", msgs, d)
		}

		// A cancelled context receives nothing, even with data waiting.
		if _, err := client.Write(ctx, []byte("kept")); err != nil {
			return err
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if n, err := server.Read(cctx, buf); n != 0 || !errors.Is(err, context.Canceled) {
			return fmt.Errorf("Read with a cancelled context = %d, %v", n, err)
		}
		if n, err := server.Read(ctx, buf); err != nil || string(buf[:n]) != "kept" {
			return fmt.Errorf("Read after the cancelled one = %q, %v; want the bytes it left", buf[:n], err)
		}

		// ReadFull takes what is there on the spot and waits on the ring
		// for the rest.
		if _, err := client.Write(ctx, []byte("head")); err != nil {
			return err
		}
		writer := runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			if err := runtime.Sleep(ctx, 20*time.Millisecond); err != nil {
				return 0, err
			}
			return client.Write(ctx, []byte("tail"))
		})
		before = submitted()
		if n, err := server.ReadFull(ctx, buf); err != nil || string(buf[:n]) != "headtail" {
			return fmt.Errorf("ReadFull across a wait = %q, %v", buf[:n], err)
		}
		if _, err := writer.Join(ctx); err != nil {
			return err
		}
		if submitted() == before {
			return fmt.Errorf("a ReadFull that waited submitted no ring entry")
		}

		// The stream's end, already there, is io.EOF on the spot.
		if err := client.Close(ctx); err != nil {
			return err
		}
		if n, err := server.Read(ctx, buf); n != 0 || err != io.EOF {
			return fmt.Errorf("Read at the stream's end = %d, %v", n, err)
		}
		return nil
	})
}
