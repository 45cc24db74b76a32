package aio

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
	"golang.org/x/net/nettest"
)

// netPipe returns two connected faio NetConns over loopback TCP, made
// with ctx (a goroutine context naming rt).
func netPipe(ctx context.Context) (c1, c2 net.Conn, stop func(), err error) {
	return netPipeOn(ctx, "tcp", "127.0.0.1:0")
}

// netPipeOn is netPipe over a listener on network and address.
func netPipeOn(ctx context.Context, network, address string) (c1, c2 net.Conn, stop func(), err error) {
	ln, err := Listen(ctx, network, address)
	if err != nil {
		return nil, nil, nil, err
	}
	defer ln.Close(ctx)
	type accepted struct {
		c   *Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept(ctx)
		ch <- accepted{c, err}
	}()
	d, err := Dial(ctx, network, ln.Addr().String())
	if err != nil {
		return nil, nil, nil, err
	}
	a := <-ch
	if a.err != nil {
		d.Close(ctx)
		return nil, nil, nil, a.err
	}
	c1, c2 = d.NetConn(), a.c.NetConn()
	return c1, c2, func() { c1.Close(); c2.Close() }, nil
}

// The net.Conn conformance suite of golang.org/x/net: basic I/O, ping-pong,
// racy reads and writes, Close while blocked, deadlines in the past, in the
// future, moved while waiting, and cleared, concurrent method calls.
func TestNetConnConformance(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	nettest.TestConn(t, func() (net.Conn, net.Conn, func(), error) {
		return netPipe(goroutineCtx(rt))
	})
}

// The same suite with every Read and Write made by a task (spawned for
// the call, which nettest makes from its goroutines): the task suspends in
// the operation, and deadlines set from other goroutines reach it.
func TestNetConnConformanceFromTasks(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	nettest.TestConn(t, func() (net.Conn, net.Conn, func(), error) {
		c1, c2, stop, err := netPipe(goroutineCtx(rt))
		if err != nil {
			return nil, nil, nil, err
		}
		return taskConn{c1, rt}, taskConn{c2, rt}, stop, nil
	})
}

// The suite from tasks on the portable backend too, whose tasks wait in
// the runtime's readiness poller rather than on a ring, and over Unix
// sockets on both backends (TCP on io_uring is the test above).
func TestNetConnConformanceFromTasksOnEveryBackend(t *testing.T) {
	for _, backend := range backends {
		for _, network := range []string{"tcp", "unix"} {
			if backend == runtime.BackendAuto && network == "tcp" {
				continue
			}
			t.Run(backend.String()+"/"+network, func(t *testing.T) {
				rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
				address := "127.0.0.1:0"
				if network == "unix" {
					address = "" // an abstract name the kernel picks
				}
				nettest.TestConn(t, func() (net.Conn, net.Conn, func(), error) {
					c1, c2, stop, err := netPipeOn(goroutineCtx(rt), network, address)
					if err != nil {
						return nil, nil, nil, err
					}
					return taskConn{c1, rt}, taskConn{c2, rt}, stop, nil
				})
			})
		}
	}
}

// taskConn runs the Reads and Writes of its net.Conn in tasks of rt.
type taskConn struct {
	net.Conn
	rt *runtime.Runtime
}

func (c taskConn) Read(b []byte) (int, error) {
	return runtime.SpawnOn(c.rt, func(context.Context) (int, error) { return c.Conn.Read(b) }).Join(context.Background())
}

func (c taskConn) Write(b []byte) (int, error) {
	return runtime.SpawnOn(c.rt, func(context.Context) (int, error) { return c.Conn.Write(b) }).Join(context.Background())
}

// The deadline rules of package net, from a task: the task suspends in
// Read, and another task moving the deadline ends that Read.
func TestNetConnDeadlinesFromTask(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	c1, c2, stop, err := netPipe(goroutineCtx(rt))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	runTask(t, rt, func(ctx context.Context) error {
		buf := make([]byte, 8)
		// A deadline in the past fails at once.
		c1.SetReadDeadline(time.Now().Add(-time.Second))
		start := time.Now()
		_, err := c1.Read(buf)
		if !isTimeout(err) || time.Since(start) > time.Second {
			return errors.Join(errors.New("past deadline: want an immediate timeout"), err)
		}
		// The zero time clears it: the Read waits for data.
		c1.SetReadDeadline(time.Time{})
		runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			if err := runtime.Sleep(ctx, 20*time.Millisecond); err != nil {
				return 0, err
			}
			return c2.Write([]byte("hi"))
		})
		if n, err := c1.Read(buf); err != nil || string(buf[:n]) != "hi" {
			return errors.Join(errors.New("read after clearing the deadline"), err)
		}
		// A Read waiting with no deadline ends when another task sets one
		// in the past.
		runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			if err := runtime.Sleep(ctx, 20*time.Millisecond); err != nil {
				return 0, err
			}
			return 0, c1.SetReadDeadline(time.Now())
		})
		_, err = c1.Read(buf)
		if !isTimeout(err) {
			return errors.Join(errors.New("moving the deadline did not end the waiting Read"), err)
		}
		// Moved later while waiting: the Read lasts until the new one.
		c1.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			return 0, c1.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		})
		start = time.Now()
		_, err = c1.Read(buf)
		if el := time.Since(start); !isTimeout(err) || el < 150*time.Millisecond {
			return errors.Join(errors.New("deadline moved later: want a timeout after ~200ms, got it after "+el.String()), err)
		}
		return nil
	})
}

// NetConn.Writev sends its buffers in order, from a task and from a
// goroutine, and honours the write deadline as Write does.
func TestNetConnWritev(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	c1, c2, stop, err := netPipe(goroutineCtx(rt))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	w := c1.(*NetConn)
	bufs := [][]byte{[]byte("head|"), nil, bytes.Repeat([]byte("b"), 100<<10), []byte("|tail")}
	want := bytes.Join(bufs, nil)
	check := func(ctx context.Context) error {
		got := make(chan []byte, 1)
		go func() {
			b := make([]byte, len(want))
			io.ReadFull(c2, b)
			got <- b
		}()
		if n, err := w.Writev(bufs); n != len(want) || err != nil {
			return fmt.Errorf("Writev = %d, %v; want %d, nil", n, err, len(want))
		}
		if b := <-got; !bytes.Equal(b, want) {
			return errors.New("the peer read other bytes than Writev's buffers")
		}
		return nil
	}
	if err := check(goroutineCtx(rt)); err != nil {
		t.Fatal("from a goroutine: ", err)
	}
	runTask(t, rt, func(ctx context.Context) error {
		if err := check(ctx); err != nil {
			return fmt.Errorf("from a task: %w", err)
		}
		c1.SetWriteDeadline(time.Now().Add(-time.Second))
		if _, err := w.Writev(bufs); !isTimeout(err) {
			return fmt.Errorf("Writev past the write deadline = %v, want a timeout", err)
		}
		return nil
	})
}

// A goroutine's Write and Read through a NetConn that need not wait
// allocate nothing: the wait's set-up (an AfterFunc on the deadline
// context, a channel) is made only for a call that has to wait.
func TestNetConnGoroutineCallsThatNeedNotWaitAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	rt := newRuntime(t, runtime.Config{Workers: 1})
	c1, c2, stop, err := netPipe(goroutineCtx(rt))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	msg, buf := []byte("sixteen bytes!!!"), make([]byte, 16)
	// Warm up: the first calls register the sockets with the netpoller.
	c1.Write(msg)
	io.ReadFull(c2, buf)
	// 100 writes of 16 bytes fit in the socket buffers, so none waits,
	// and neither do the reads of what they wrote.
	if a := testing.AllocsPerRun(100, func() {
		if _, err := c1.Write(msg); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("a Write that need not wait allocated %v times", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		if _, err := io.ReadFull(c2, buf); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("a Read of data already there allocated %v times", a)
	}
}

// A task reading data that is already there through a NetConn, whose
// deadline context is not the task's, still gives way to the other tasks
// of its worker: every read done on the spot charges the running task's
// cooperative budget.
func TestNetConnReadsOnTheSpotLetOtherTasksRun(t *testing.T) {
	for _, backend := range []runtime.Backend{runtime.BackendAuto, runtime.BackendPortable} {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{Workers: 1, IOBackend: backend})
			c1, c2, stop, err := netPipe(goroutineCtx(rt))
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			// 32 KiB fit in the socket buffers: every 16-byte read
			// below finds its bytes already there.
			const total = 32 << 10
			if _, err := c2.Write(make([]byte, total)); err != nil {
				t.Fatal(err)
			}
			runTask(t, rt, func(ctx context.Context) error {
				var other atomic.Bool
				runtime.Spawn(ctx, func(context.Context) (int, error) { other.Store(true); return 0, nil })
				buf := make([]byte, 16)
				for got := 0; got < total; {
					n, err := c1.Read(buf)
					if err != nil {
						return err
					}
					got += n
				}
				if !other.Load() {
					return fmt.Errorf("%d reads of data already received never let the other task of the worker run", total/16)
				}
				return nil
			})
		})
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) && errors.As(err, &ne) && ne.Timeout()
}

// deadlineOpError reports whether err is a deadline error as package net
// gives it: a *net.OpError whose Timeout() is true and whose Err is
// os.ErrDeadlineExceeded.
func deadlineOpError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Timeout() && oe.Err == os.ErrDeadlineExceeded
}

// A deadline that has passed by the time an operation returns does not
// replace what the operation returned: package net reports a deadline
// error only for an operation the deadline ended. An operation on a closed
// adapter fails with net.ErrClosed even past its deadline, a Read at the
// end of the stream gives io.EOF or a timeout (never a bare
// os.ErrDeadlineExceeded that hides the end), a Read that returns bytes
// returns no error, and every deadline error is a timeout *net.OpError.
func TestNetAdaptersDeadlineKeepsWhatTheOperationReturned(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{Workers: 1, IOBackend: backend})
			ctx := goroutineCtx(rt)
			past := time.Now().Add(-time.Second)

			// Closed past the deadline: net.ErrClosed, not a timeout.
			c1, _, stop, err := netPipe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			c1.SetDeadline(past)
			c1.Close()
			buf := make([]byte, 8)
			if _, err := c1.Read(buf); !errors.Is(err, net.ErrClosed) || isTimeout(err) {
				t.Errorf("NetConn.Read after Close, past the deadline = %v, want net.ErrClosed", err)
			}
			if _, err := c1.Write(buf); !errors.Is(err, net.ErrClosed) || isTimeout(err) {
				t.Errorf("NetConn.Write after Close, past the deadline = %v, want net.ErrClosed", err)
			}
			l, err := Listen(ctx, "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			nl := l.NetListener()
			nl.SetDeadline(past)
			nl.Close()
			if _, err := nl.Accept(); !errors.Is(err, net.ErrClosed) || isTimeout(err) {
				t.Errorf("NetListener.Accept after Close, past the deadline = %v, want net.ErrClosed", err)
			}
			u, err := ListenUDP(ctx, "udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			pc := u.NetPacketConn()
			pc.SetDeadline(past)
			pc.Close()
			if _, _, err := pc.ReadFrom(buf); !errors.Is(err, net.ErrClosed) || isTimeout(err) {
				t.Errorf("NetPacketConn.ReadFrom after Close, past the deadline = %v, want net.ErrClosed", err)
			}
			if _, err := pc.WriteTo(buf, u.LocalAddr()); !errors.Is(err, net.ErrClosed) || isTimeout(err) {
				t.Errorf("NetPacketConn.WriteTo after Close, past the deadline = %v, want net.ErrClosed", err)
			}

			// The end of the stream racing the deadline.
			r, w, stop2, err := netPipe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer stop2()
			w.Close()
			odd := map[string]int{}
			for i := range 5000 {
				r.SetReadDeadline(time.Now().Add(time.Duration(i%40) * time.Microsecond))
				if _, err := r.Read(buf); err != io.EOF && !deadlineOpError(err) {
					odd[fmt.Sprintf("%T %v", err, err)]++
				}
			}
			for k, v := range odd {
				t.Errorf("%d of 5000 Reads at the end of the stream, its deadline passing meanwhile, returned %s; want io.EOF or a timeout *net.OpError", v, k)
			}

			// Bytes read as the deadline passes come without an error.
			r2, w2, stop3, err := netPipe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer stop3()
			// A deadline ending a waiting Read: a timeout *net.OpError.
			r2.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			if _, err := r2.Read(buf); !deadlineOpError(err) {
				t.Errorf("NetConn.Read ended by its deadline = %#v, want a timeout *net.OpError", err)
			}
			if _, err := w2.Write(make([]byte, 2000)); err != nil {
				t.Fatal(err)
			}
			for got, i := 0, 0; got < 2000; i++ {
				r2.SetReadDeadline(time.Now().Add(time.Duration(i%40) * time.Microsecond))
				n, err := r2.Read(buf[:1])
				if n > 0 && err != nil {
					t.Fatalf("Read returned %d bytes with %v", n, err)
				}
				if err != nil && !deadlineOpError(err) {
					t.Fatalf("Read = %v, want nil or a timeout *net.OpError", err)
				}
				got += n
			}
		})
	}
}

// timerArmed reports whether d has a deadline timer running.
func timerArmed(d *deadline) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.timer != nil
}

// Setting a deadline on a closed adapter fails as package net's does (a
// net.Conn's and a net.PacketConn's with a *net.OpError "set" wrapping
// net.ErrClosed, a listener's with net.ErrClosed itself) and arms no timer,
// also when the Conn was closed under the adapter and when Close races
// the SetDeadline.
func TestNetAdaptersSetDeadlineAfterClose(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	ctx := goroutineCtx(rt)
	later := time.Now().Add(time.Hour)
	wantSetErr := func(what string, err error, laddr net.Addr) {
		t.Helper()
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "set" || oe.Err != net.ErrClosed || oe.Source != nil || oe.Addr != laddr || oe.Net != laddr.Network() {
			t.Errorf("%s after Close = %#v, want &net.OpError{Op: \"set\", Net: %q, Addr: %v, Err: net.ErrClosed}", what, err, laddr.Network(), laddr)
		}
	}

	c1, c2, stop, err := netPipe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	nc := c1.(*NetConn)
	nc.Close()
	wantSetErr("NetConn.SetDeadline", nc.SetDeadline(later), nc.LocalAddr())
	wantSetErr("NetConn.SetReadDeadline", nc.SetReadDeadline(later), nc.LocalAddr())
	wantSetErr("NetConn.SetWriteDeadline", nc.SetWriteDeadline(later), nc.LocalAddr())
	if timerArmed(&nc.rd) || timerArmed(&nc.wd) {
		t.Error("a deadline set after Close armed a timer")
	}
	// Closed under the adapter: the Conn's Close.
	nc2 := c2.(*NetConn)
	nc2.Conn().Close(ctx)
	wantSetErr("NetConn.SetReadDeadline (Conn closed)", nc2.SetReadDeadline(later), nc2.LocalAddr())
	if timerArmed(&nc2.rd) {
		t.Error("a deadline set after the Conn's Close armed a timer")
	}

	l, err := Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nl := l.NetListener()
	nl.Close()
	if err := nl.SetDeadline(later); err != net.ErrClosed {
		t.Errorf("NetListener.SetDeadline after Close = %#v, want net.ErrClosed as net.TCPListener's", err)
	}
	if timerArmed(&nl.ad) {
		t.Error("a listener's deadline set after Close armed a timer")
	}

	u, err := ListenUDP(ctx, "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc := u.NetPacketConn()
	pc.Close()
	wantSetErr("NetPacketConn.SetDeadline", pc.SetDeadline(later), pc.LocalAddr())
	wantSetErr("NetPacketConn.SetReadDeadline", pc.SetReadDeadline(later), pc.LocalAddr())
	wantSetErr("NetPacketConn.SetWriteDeadline", pc.SetWriteDeadline(later), pc.LocalAddr())
	if timerArmed(&pc.rd) || timerArmed(&pc.wd) {
		t.Error("a packet connection's deadline set after Close armed a timer")
	}

	// Close racing SetDeadline: whichever comes first, no timer is left.
	for i := range 200 {
		u, err := ListenUDP(ctx, "udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		pc := u.NetPacketConn()
		started, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			close(started)
			for range 1000 {
				if pc.SetDeadline(later) != nil {
					return
				}
			}
		}()
		<-started
		if i%2 == 1 {
			goruntime.Gosched()
		}
		pc.Close()
		<-done
		if timerArmed(&pc.rd) || timerArmed(&pc.wd) {
			t.Fatalf("round %d: a deadline set as Close ran left a timer running", i)
		}
	}
}

// bufio, io.Copy and crypto/tls run over faio connections, from tasks.
func TestNetConnWithStandardLibrary(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	cert := selfSigned(t)
	runTask(t, rt, func(ctx context.Context) error {
		ln, err := Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		nl := ln.NetListener()
		defer nl.Close()
		// The server: TLS over the faio connection, echoing lines with
		// bufio and io.Copy.
		server := runtime.Spawn(ctx, func(ctx context.Context) (int64, error) {
			c, err := nl.Accept()
			if err != nil {
				return 0, err
			}
			tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}})
			defer tc.Close()
			return io.Copy(tc, bufio.NewReader(tc))
		})
		d, err := Dial(ctx, "tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		pool.AddCert(cert.Leaf)
		tc := tls.Client(d.NetConn(), &tls.Config{RootCAs: pool, ServerName: "faio.test"})
		// Handshake here, before a goroutine shares tc: otherwise the
		// task may block its worker on tls's handshake mutex (plain Go)
		// while the goroutine holding it waits for I/O that needs that
		// worker's ring (see NetConn's doc).
		if err := tc.HandshakeContext(ctx); err != nil {
			return err
		}
		const lines = 200
		go func() {
			w := bufio.NewWriter(tc)
			for range lines {
				w.WriteString("a line through TLS over io_uring\n")
			}
			w.Flush()
			tc.CloseWrite()
		}()
		r := bufio.NewScanner(tc)
		n := 0
		for r.Scan() {
			if r.Text() != "a line through TLS over io_uring" {
				return errors.New("garbled line: " + r.Text())
			}
			n++
		}
		if err := r.Err(); err != nil {
			return err
		}
		if n != lines {
			return errors.New("lines lost")
		}
		if _, err := server.Join(ctx); err != nil {
			return err
		}
		return tc.Close()
	})
}

// selfSigned makes a certificate for "faio.test".
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "faio.test"},
		DNSNames:     []string{"faio.test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}
