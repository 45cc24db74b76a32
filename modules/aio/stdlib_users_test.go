package aio

// Code written against the standard interfaces, run over faio's adapters
// (NetListener, NetConn, NetPacketConn, FileIO) and over package net and
// os on the same scenario: what the standard library's user sees must be
// the same.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// stdImpl is one implementation of the standard interfaces a scenario runs
// on: package net itself, or faio's adapters on one backend.
type stdImpl struct {
	name   string
	listen func(t *testing.T) net.Listener
	dial   func(ctx context.Context, addr string) (net.Conn, error)
	// task runs f as a faio task where the implementation is faio's, and
	// in the calling goroutine for package net.
	task func(t *testing.T, f func(ctx context.Context) error)
}

// forStdImpls runs f as a subtest for package net and for faio on each
// backend; faio's adapters (listeners, connections, tasks) use one runtime
// made for the subtest.
func forStdImpls(t *testing.T, f func(t *testing.T, impl stdImpl)) {
	t.Run("net", func(t *testing.T) {
		f(t, stdImpl{
			name: "net",
			listen: func(t *testing.T) net.Listener {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				return l
			},
			dial: func(ctx context.Context, addr string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "tcp", addr)
			},
			task: runHere,
		})
	})
	forFaioBackends(t, func(t *testing.T, name string, rt *runtime.Runtime) {
		f(t, stdImpl{
			name: name,
			listen: func(t *testing.T) net.Listener {
				l, err := Listen(goroutineCtx(rt), "tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				return l.NetListener()
			},
			dial: func(ctx context.Context, addr string) (net.Conn, error) {
				if runtime.RuntimeOf(ctx) == nil {
					ctx = runtime.WithRuntime(ctx, rt)
				}
				c, err := Dial(ctx, "tcp", addr)
				if err != nil {
					return nil, err
				}
				return c.NetConn(), nil
			},
			task: func(t *testing.T, f func(ctx context.Context) error) { runTask(t, rt, f) },
		})
	})
}

// forFaioBackends runs f as a subtest "faio-<backend>" for each backend,
// with a runtime of two workers on it.
func forFaioBackends(t *testing.T, f func(t *testing.T, name string, rt *runtime.Runtime)) {
	for _, backend := range backends {
		t.Run("faio-"+backend.String(), func(t *testing.T) {
			f(t, "faio-"+backend.String(), newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend}))
		})
	}
}

// runHere runs f in the calling goroutine and fails t with its error:
// package net's stand-in for running f in a task.
func runHere(t *testing.T, f func(ctx context.Context) error) {
	t.Helper()
	if err := f(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// runIn runs f with task if inTask, else in the calling goroutine.
func runIn(t *testing.T, inTask bool, task func(*testing.T, func(context.Context) error), f func(ctx context.Context) error) {
	t.Helper()
	if inTask {
		task(t, f)
	} else {
		runHere(t, f)
	}
}

// httpClient returns a client that dials with impl and keeps one idle
// connection.
func httpClient(impl stdImpl) (*http.Client, *http.Transport) {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return impl.dial(ctx, addr)
		},
		MaxIdleConnsPerHost: 1,
	}
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}, tr
}

// serveHTTP serves h on a listener of impl and returns its URL and server;
// the server is closed at the end of the test, and Serve must have
// returned http.ErrServerClosed by then.
func serveHTTP(t *testing.T, impl stdImpl, srv *http.Server) string {
	t.Helper()
	l := impl.listen(t)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Close()
		select {
		case err := <-done:
			if err != http.ErrServerClosed {
				t.Errorf("Serve = %v, want http.ErrServerClosed", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("Serve did not return after Close")
		}
	})
	return "http://" + l.Addr().String()
}

// Keep-alive: a client's sequential requests, with and without bodies,
// all go over one connection, which the server's background read (a
// one-byte Read that each request's end cancels with a deadline in the
// past) keeps usable; a body larger than every buffer on the way arrives
// whole.
func TestStdHTTPKeepAliveAndLargeBodies(t *testing.T) {
	forStdImpls(t, func(t *testing.T, impl stdImpl) {
		var conns atomic.Int32
		srv := &http.Server{
			ConnState: func(c net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			},
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h := sha256.New()
				n, err := io.Copy(h, r.Body)
				if err != nil {
					http.Error(w, err.Error(), 500)
					return
				}
				fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
			}),
		}
		url := serveHTTP(t, impl, srv)
		client, tr := httpClient(impl)
		defer tr.CloseIdleConnections()
		body := randomBytes(3<<20, 7)
		for i := range 20 {
			var b []byte
			if i%5 == 4 {
				b = body
			}
			resp, err := client.Post(url, "application/octet-stream", bytes.NewReader(b))
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("request %d: reading the response: %v", i, err)
			}
			if want := fmt.Sprintf("%d %x", len(b), sha256.Sum256(b)); string(got) != want {
				t.Fatalf("request %d: response %q, want %q", i, got, want)
			}
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("20 sequential requests used %d connections, want 1 (keep-alive)", n)
		}
	})
}

// Server.Shutdown is graceful: it closes the listener at once, waits for
// the request in flight, whose response arrives whole, then closes the
// idle connection and returns nil.
func TestStdHTTPShutdownWaitsForRequestsInFlight(t *testing.T) {
	forStdImpls(t, func(t *testing.T, impl stdImpl) {
		entered, release := make(chan struct{}), make(chan struct{})
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			<-release
			io.WriteString(w, "finished")
		})}
		l := impl.listen(t)
		served := make(chan error, 1)
		go func() { served <- srv.Serve(l) }()
		client, tr := httpClient(impl)
		defer tr.CloseIdleConnections()
		type result struct {
			body string
			err  error
		}
		got := make(chan result, 1)
		go func() {
			resp, err := client.Get("http://" + l.Addr().String())
			if err != nil {
				got <- result{err: err}
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			got <- result{string(b), err}
		}()
		<-entered
		shut := make(chan error, 1)
		go func() { shut <- srv.Shutdown(context.Background()) }()
		// Serve returns once the listener is closed, the request still
		// running.
		select {
		case err := <-served:
			if err != http.ErrServerClosed {
				t.Errorf("Serve = %v, want http.ErrServerClosed", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Serve did not return after Shutdown closed the listener")
		}
		select {
		case err := <-shut:
			t.Fatalf("Shutdown returned (%v) with a request in flight", err)
		case <-time.After(50 * time.Millisecond):
		}
		close(release)
		select {
		case r := <-got:
			if r.err != nil || r.body != "finished" {
				t.Errorf("request in flight during Shutdown = %q, %v; want \"finished\"", r.body, r.err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the request in flight did not complete")
		}
		select {
		case err := <-shut:
			if err != nil {
				t.Errorf("Shutdown = %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Shutdown did not return once the request completed")
		}
	})
}

// Server.Close closes the connections under a running handler: the
// handler's request context ends (the server's background read fails),
// and the client gets an error, not a response.
func TestStdHTTPCloseEndsRequestsInFlight(t *testing.T) {
	forStdImpls(t, func(t *testing.T, impl stdImpl) {
		entered := make(chan struct{})
		ctxDone := make(chan bool, 1)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			select {
			case <-r.Context().Done():
				ctxDone <- true
			case <-time.After(20 * time.Second):
				ctxDone <- false
			}
		})}
		l := impl.listen(t)
		served := make(chan error, 1)
		go func() { served <- srv.Serve(l) }()
		client, tr := httpClient(impl)
		defer tr.CloseIdleConnections()
		got := make(chan error, 1)
		go func() {
			resp, err := client.Get("http://" + l.Addr().String())
			if err == nil {
				resp.Body.Close()
			}
			got <- err
		}()
		<-entered
		if err := srv.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
		if err := <-served; err != http.ErrServerClosed {
			t.Errorf("Serve = %v, want http.ErrServerClosed", err)
		}
		if !<-ctxDone {
			t.Error("the handler's request context did not end when Server.Close closed its connection")
		}
		select {
		case err := <-got:
			if err == nil {
				t.Error("the client got a response from a server closed under the handler")
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the client's request did not end after Server.Close")
		}
	})
}

// rawConn dials addr with impl for a client that speaks HTTP by hand.
func rawConn(t *testing.T, impl stdImpl, addr string) net.Conn {
	t.Helper()
	c, err := impl.dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// stdConnPair returns both ends of a new connection of impl: the dialled one
// and the accepted one, closed when the test ends.
func stdConnPair(t *testing.T, impl stdImpl) (client, server net.Conn) {
	t.Helper()
	l := impl.listen(t)
	defer l.Close()
	client = rawConn(t, impl, l.Addr().String())
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// waitClosed reads c until the server closes it and returns what came,
// failing if that takes more than limit.
func waitClosed(t *testing.T, c net.Conn, limit time.Duration) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(limit))
	b, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("waiting for the server to close the connection: %v", err)
	}
	return b
}

// The server's timeouts, which it enforces with SetReadDeadline and
// SetWriteDeadline: ReadTimeout closes a connection whose request does not
// arrive in time, IdleTimeout one that stays idle after a response, and
// WriteTimeout fails the handler's writes to a client that does not read,
// with an error that is os.ErrDeadlineExceeded.
func TestStdHTTPServerTimeouts(t *testing.T) {
	forStdImpls(t, func(t *testing.T, impl stdImpl) {
		const timeout = 100 * time.Millisecond
		writeErr := make(chan error, 1)
		srv := &http.Server{
			ReadTimeout:  timeout,
			IdleTimeout:  timeout,
			WriteTimeout: 300 * time.Millisecond,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/big" {
					io.WriteString(w, "small")
					return
				}
				chunk := make([]byte, 64<<10)
				for range 4096 { // 256 MiB: more than any socket buffers
					if _, err := w.Write(chunk); err != nil {
						writeErr <- err
						return
					}
				}
				writeErr <- nil
			}),
		}
		url := serveHTTP(t, impl, srv)
		addr := strings.TrimPrefix(url, "http://")

		// ReadTimeout: half a request line, then nothing.
		c := rawConn(t, impl, addr)
		start := time.Now()
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\n"); err != nil {
			t.Fatal(err)
		}
		waitClosed(t, c, 20*time.Second)
		if el := time.Since(start); el < timeout/2 {
			t.Errorf("ReadTimeout closed the connection after %v, want about %v", el, timeout)
		}

		// IdleTimeout: one request, then idle.
		c = rawConn(t, impl, addr)
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "small" {
			t.Fatalf("response %q", b)
		}
		start = time.Now()
		waitClosed(t, c, 20*time.Second)
		if el := time.Since(start); el < timeout/2 {
			t.Errorf("IdleTimeout closed the connection after %v, want about %v", el, timeout)
		}

		// WriteTimeout: the client asks for a lot and reads none of it.
		c = rawConn(t, impl, addr)
		if _, err := io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-writeErr:
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("handler's Write past WriteTimeout = %v, want os.ErrDeadlineExceeded", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("WriteTimeout did not end the handler's writes")
		}
	})
}

// A handler hijacks the connection and speaks its own protocol over it,
// including bytes the client sent after the request, which the server had
// already buffered.
func TestStdHTTPHijack(t *testing.T) {
	forStdImpls(t, func(t *testing.T, impl stdImpl) {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, rw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("Hijack: %v", err)
				return
			}
			defer c.Close()
			// Deadlines on the hijacked connection are the user's.
			c.SetDeadline(time.Now().Add(20 * time.Second))
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
			rw.Flush()
			for {
				line, err := rw.ReadString('\n')
				if err != nil {
					return
				}
				rw.WriteString(strings.ToUpper(line))
				rw.Flush()
			}
		})}
		url := serveHTTP(t, impl, srv)
		c := rawConn(t, impl, strings.TrimPrefix(url, "http://"))
		// The first line comes with the request, in the same write.
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nfirst\n"); err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 101 {
			t.Fatalf("status %d, want 101", resp.StatusCode)
		}
		for _, want := range []string{"FIRST\n", "SECOND\n"} {
			if want == "SECOND\n" {
				io.WriteString(c, "second\n")
			}
			if line, err := br.ReadString('\n'); err != nil || line != want {
				t.Fatalf("over the hijacked connection: %q, %v; want %q", line, err, want)
			}
		}
		c.(interface{ CloseWrite() error }).CloseWrite()
		if b, err := io.ReadAll(br); err != nil || len(b) != 0 {
			t.Errorf("after CloseWrite: %q, %v; want the server's close", b, err)
		}
	})
}

// http.ServeContent over a FileIO: the response body goes through
// NetConn.ReadFrom (SendFile) from the file position ServeContent seeked
// to and advanced by its sniffing read; a range request gets exactly its
// bytes.
func TestStdHTTPServeContentFromFileIO(t *testing.T) {
	forStdImpls(t, func(t *testing.T, impl stdImpl) {
		data := randomBytes(1<<20+123, 11)
		path := t.TempDir() + "/blob"
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		rt := newRuntime(t, runtime.Config{Workers: 1})
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f, err := Open(goroutineCtx(rt), path)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			defer f.Close(context.Background())
			http.ServeContent(w, r, "blob", time.Time{}, f.IO())
		})}
		url := serveHTTP(t, impl, srv)
		client, tr := httpClient(impl)
		defer tr.CloseIdleConnections()
		for _, rng := range []struct {
			header     string
			start, end int
		}{{"", 0, len(data)}, {"bytes=1000-", 1000, len(data)}, {"bytes=70000-800000", 70000, 800001}, {"bytes=5-9", 5, 10}} {
			req, _ := http.NewRequest("GET", url, nil)
			if rng.header != "" {
				req.Header.Set("Range", rng.header)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !bytes.Equal(b, data[rng.start:rng.end]) {
				t.Errorf("Range %q: %d bytes (%v), want bytes %d..%d of the file", rng.header, len(b), err, rng.start, rng.end)
			}
		}
	})
}

// crypto/tls over the adapters: a server whose handshake deadline passes
// (the client sends nothing) fails with a timeout net.Error that is
// os.ErrDeadlineExceeded; a completed handshake carries data both ways,
// and the client's Close sends close_notify, which the server reads as
// io.EOF.
func TestStdTLS(t *testing.T) {
	cert := selfSigned(t)
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	forStdImpls(t, func(t *testing.T, impl stdImpl) {
		l := impl.listen(t)
		defer l.Close()
		srvCfg := &tls.Config{Certificates: []tls.Certificate{cert}}
		cliCfg := &tls.Config{RootCAs: pool, ServerName: "faio.test"}

		// Handshake deadline: the client connects and stays silent.
		silent := rawConn(t, impl, l.Addr().String())
		sc, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		sc.SetDeadline(time.Now().Add(100 * time.Millisecond))
		ts := tls.Server(sc, srvCfg)
		err = ts.Handshake()
		var ne net.Error
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("TLS handshake past its deadline = %v, want a timeout net.Error matching os.ErrDeadlineExceeded", err)
		}
		ts.Close()
		silent.Close()

		// A handshake, data, close_notify.
		impl.task(t, func(ctx context.Context) error {
			cc, err := impl.dial(ctx, l.Addr().String())
			if err != nil {
				return err
			}
			sc, err := l.Accept()
			if err != nil {
				return err
			}
			ts := tls.Server(sc, srvCfg)
			defer ts.Close()
			tc := tls.Client(cc, cliCfg)
			defer tc.Close()
			// The server side in a goroutine, the client in the task
			// (or the test's goroutine).
			srvErr := make(chan error, 1)
			go func() {
				srvErr <- func() error {
					sc.SetDeadline(time.Now().Add(20 * time.Second))
					if err := ts.Handshake(); err != nil {
						return fmt.Errorf("server handshake: %w", err)
					}
					b, err := io.ReadAll(ts)
					if err != nil {
						return fmt.Errorf("server read until close_notify: %w", err)
					}
					if string(b) != "hello over tls" {
						return fmt.Errorf("server read %q", b)
					}
					return nil
				}()
			}()
			cc.SetDeadline(time.Now().Add(20 * time.Second))
			if err := tc.HandshakeContext(ctx); err != nil {
				return fmt.Errorf("client handshake: %w", err)
			}
			if _, err := io.WriteString(tc, "hello over tls"); err != nil {
				return err
			}
			if err := tc.Close(); err != nil {
				return fmt.Errorf("client Close (close_notify): %w", err)
			}
			return <-srvErr
		})
	})
}

// stdPacketImpl is package net's or faio's net.PacketConn.
type stdPacketImpl struct {
	name   string
	listen func(t *testing.T, network, address string) net.PacketConn
	task   func(t *testing.T, f func(ctx context.Context) error)
}

// forStdPacketImpls runs f as a subtest for net.ListenPacket and for
// faio's NetPacketConn on each backend.
func forStdPacketImpls(t *testing.T, f func(t *testing.T, impl stdPacketImpl)) {
	t.Run("net", func(t *testing.T) {
		f(t, stdPacketImpl{
			name: "net",
			listen: func(t *testing.T, network, address string) net.PacketConn {
				c, err := net.ListenPacket(network, address)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			},
			task: runHere,
		})
	})
	forFaioBackends(t, func(t *testing.T, name string, rt *runtime.Runtime) {
		f(t, stdPacketImpl{
			name: name,
			listen: func(t *testing.T, network, address string) net.PacketConn {
				u, err := ListenUDP(goroutineCtx(rt), network, address)
				if err != nil {
					t.Fatal(err)
				}
				c := u.NetPacketConn()
				t.Cleanup(func() { c.Close() })
				return c
			},
			task: func(t *testing.T, f func(ctx context.Context) error) { runTask(t, rt, f) },
		})
	})
}

// net.PacketConn's semantics, as net.UDPConn has them, from a goroutine
// and from a task: a datagram longer than ReadFrom's buffer is truncated
// to it without an error and the rest discarded, an empty datagram is
// one, the sender's address is a *net.UDPAddr equal to its LocalAddr,
// WriteTo without an address (nil, or a nil *net.UDPAddr) or to one of the
// other family fails without sending, and deadlines time ReadFrom out with
// a timeout *net.OpError.
func TestStdPacketConnSemantics(t *testing.T) {
	forStdPacketImpls(t, func(t *testing.T, impl stdPacketImpl) {
		for _, inTask := range []bool{false, true} {
			run := func(f func(ctx context.Context) error) {
				runIn(t, inTask, impl.task, f)
			}
			a := impl.listen(t, "udp4", "127.0.0.1:0")
			b := impl.listen(t, "udp4", "127.0.0.1:0")
			run(func(ctx context.Context) error {
				a.SetDeadline(time.Now().Add(20 * time.Second))
				b.SetDeadline(time.Now().Add(20 * time.Second))
				long := randomBytes(100, 5)
				for _, d := range [][]byte{long, {}, []byte("next")} {
					if n, err := b.WriteTo(d, a.LocalAddr()); n != len(d) || err != nil {
						return fmt.Errorf("WriteTo(%d bytes) = %d, %v", len(d), n, err)
					}
				}
				buf := make([]byte, 10)
				n, from, err := a.ReadFrom(buf)
				if n != 10 || err != nil || !bytes.Equal(buf, long[:10]) {
					return fmt.Errorf("ReadFrom of 100 bytes into 10 = %d, %v; want 10 and no error (truncated)", n, err)
				}
				if ua, ok := from.(*net.UDPAddr); !ok || ua.String() != b.LocalAddr().String() {
					return fmt.Errorf("ReadFrom's sender = %#v, want a *net.UDPAddr %v", from, b.LocalAddr())
				}
				if n, from, err = a.ReadFrom(buf); n != 0 || err != nil || from == nil {
					return fmt.Errorf("ReadFrom of an empty datagram = %d, %v, %v; want 0, the sender, nil", n, from, err)
				}
				if n, _, err = a.ReadFrom(buf); n != 4 || err != nil || string(buf[:n]) != "next" {
					return fmt.Errorf("the datagram after a truncated one = %q, %v; want \"next\"", buf[:n], err)
				}

				// WriteTo without an address, or to an IPv6 one from an
				// IPv4 socket: an error, nothing sent.
				var nilUDP *net.UDPAddr
				v6 := &net.UDPAddr{IP: net.IPv6loopback, Port: a.LocalAddr().(*net.UDPAddr).Port}
				for _, to := range []net.Addr{nil, nilUDP, v6} {
					if n, err := b.WriteTo([]byte("x"), to); n != 0 || err == nil {
						return fmt.Errorf("WriteTo(%#v) = %d, %v; want an error", to, n, err)
					} else if _, ok := err.(*net.OpError); !ok {
						return fmt.Errorf("WriteTo(%#v) = %#v, want a *net.OpError", to, err)
					}
				}

				// A deadline in the past: at once, even with a datagram
				// waiting; a near one ends a waiting ReadFrom.
				a.SetReadDeadline(time.Now().Add(-time.Second))
				n, from, err = a.ReadFrom(buf)
				if n != 0 || from != nil || !deadlineOpError(err) {
					return fmt.Errorf("ReadFrom past its deadline = %d, %v, %#v; want a timeout *net.OpError", n, from, err)
				}
				a.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				if _, _, err = a.ReadFrom(buf); !deadlineOpError(err) {
					return fmt.Errorf("ReadFrom that waits past its deadline = %#v, want a timeout *net.OpError", err)
				}
				// Cleared: the datagram is read.
				a.SetReadDeadline(time.Time{})
				if _, err := b.WriteTo([]byte("late"), a.LocalAddr()); err != nil {
					return err
				}
				if n, _, err = a.ReadFrom(buf); err != nil || string(buf[:n]) != "late" {
					return fmt.Errorf("ReadFrom after clearing the deadline = %q, %v", buf[:n], err)
				}
				return nil
			})
		}
	})
}

// WriteTo a *net.UDPAddr without an IP (what net.ResolveUDPAddr makes of
// ":port") sends to this host, as net.UDPConn's does: the unspecified
// address of the socket's family, which the kernel delivers locally. Both
// from an IPv4 socket and from a dual-stack one, from a goroutine and from
// a task. Before, NetPacketConn refused it with "invalid AddrPort".
func TestStdPacketConnWriteToAddressWithoutIP(t *testing.T) {
	forStdPacketImpls(t, func(t *testing.T, impl stdPacketImpl) {
		for _, inTask := range []bool{false, true} {
			// The receiver listens on every address, so that a datagram
			// to either loopback reaches it.
			dst := impl.listen(t, "udp", ":0")
			to, err := net.ResolveUDPAddr("udp", fmt.Sprintf(":%d", dst.LocalAddr().(*net.UDPAddr).Port))
			if err != nil {
				t.Fatal(err)
			}
			if to.IP != nil {
				t.Fatalf("net.ResolveUDPAddr(\":port\") = %#v, want no IP", to)
			}
			for _, src := range []struct{ network, address string }{{"udp4", "127.0.0.1:0"}, {"udp", ":0"}} {
				from := impl.listen(t, src.network, src.address)
				runIn(t, inTask, impl.task, func(ctx context.Context) error {
					if n, err := from.WriteTo([]byte(src.network), to); n != len(src.network) || err != nil {
						return fmt.Errorf("%s WriteTo(%v) = %d, %v; want the datagram sent, as net's", src.network, to, n, err)
					}
					dst.SetReadDeadline(time.Now().Add(10 * time.Second))
					buf := make([]byte, 16)
					n, _, err := dst.ReadFrom(buf)
					if err != nil || string(buf[:n]) != src.network {
						return fmt.Errorf("%s: received %q, %v", src.network, buf[:n], err)
					}
					return nil
				})
			}
		}
	})
}

// Close from another goroutine ends a blocked Read, Accept and ReadFrom
// with an error matching net.ErrClosed, whether the blocked call runs in
// a goroutine or a task.
func TestStdCloseEndsBlockedCalls(t *testing.T) {
	check := func(t *testing.T, what string, block func() error, closeIt func() error) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- block() }()
		// Let the call block; it must end however far it got.
		time.Sleep(20 * time.Millisecond)
		if err := closeIt(); err != nil {
			t.Errorf("%s: Close = %v", what, err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("%s blocked during Close = %v, want net.ErrClosed", what, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not end when Close was called", what)
		}
	}
	forStdImpls(t, func(t *testing.T, impl stdImpl) {
		for _, inTask := range []bool{false, true} {
			in := func(f func() error) func() error {
				if !inTask {
					return f
				}
				return func() error {
					var err error
					impl.task(t, func(context.Context) error { err = f(); return nil })
					return err
				}
			}
			l := impl.listen(t)
			check(t, "Accept", in(func() error { _, err := l.Accept(); return err }), l.Close)

			c, s := stdConnPair(t, impl)
			check(t, "Read", in(func() error { _, err := c.Read(make([]byte, 8)); return err }), c.Close)
			s.Close()
		}
	})
	forStdPacketImpls(t, func(t *testing.T, impl stdPacketImpl) {
		for _, inTask := range []bool{false, true} {
			p := impl.listen(t, "udp", "127.0.0.1:0")
			block := func() error { _, _, err := p.ReadFrom(make([]byte, 8)); return err }
			if inTask {
				block = func() error {
					var err error
					impl.task(t, func(context.Context) error { _, _, err = p.ReadFrom(make([]byte, 8)); return nil })
					return err
				}
			}
			check(t, "ReadFrom", block, p.Close)
		}
	})
}

// A deadline that passes as data arrives loses nothing: every byte the
// peer wrote is returned by exactly one Read, in order, however many
// Reads the deadlines end (a receive the kernel completed is never
// reported as cancelled). And a Write ended by its deadline reports
// exactly the bytes the peer then receives.
func TestStdDeadlinesLoseNoBytes(t *testing.T) {
	forStdImpls(t, func(t *testing.T, impl stdImpl) {
		for _, inTask := range []bool{false, true} {
			c, s := stdConnPair(t, impl)
			data := randomBytes(2<<20, 21)
			go func() {
				for off := 0; off < len(data); {
					n := min(len(data)-off, 1+off%7000)
					if _, err := s.Write(data[off : off+n]); err != nil {
						return
					}
					off += n
					if off%5 == 0 {
						time.Sleep(time.Microsecond * time.Duration(off%50))
					}
				}
			}()
			read := func(ctx context.Context) error {
				got := make([]byte, 0, len(data))
				buf := make([]byte, 3000)
				timeouts := 0
				for i := 0; len(got) < len(data); i++ {
					c.SetReadDeadline(time.Now().Add(time.Duration(i%60) * time.Microsecond))
					n, err := c.Read(buf)
					if err != nil && !isTimeout(err) {
						return fmt.Errorf("Read = %d, %v", n, err)
					}
					if err != nil {
						timeouts++
						if n != 0 {
							return fmt.Errorf("a Read that timed out returned %d bytes", n)
						}
					}
					got = append(got, buf[:n]...)
					if !bytes.Equal(buf[:n], data[len(got)-n:len(got)]) {
						return fmt.Errorf("after %d bytes, %d timeouts: the stream differs from what was written (bytes lost or repeated)", len(got), timeouts)
					}
				}
				t.Logf("%d reads timed out", timeouts)
				return nil
			}
			runIn(t, inTask, impl.task, read)
			c.Close()

			// A Write the deadline ends: its count is what arrives.
			c, s2 := stdConnPair(t, impl)
			big := randomBytes(48<<20, 22)
			write := func(ctx context.Context) error {
				c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
				n, err := c.Write(big)
				if !isTimeout(err) || n == 0 || n == len(big) {
					return fmt.Errorf("Write of 48 MiB to a peer that does not read, with a deadline = %d, %v; want a partial count and a timeout", n, err)
				}
				c.Close()
				s2.SetReadDeadline(time.Now().Add(20 * time.Second))
				got, err := io.ReadAll(s2)
				if err != nil {
					return err
				}
				if len(got) != n || !bytes.Equal(got, big[:n]) {
					return fmt.Errorf("Write reported %d bytes written, the peer received %d", n, len(got))
				}
				return nil
			}
			runIn(t, inTask, impl.task, write)
			s2.Close()
		}
	})
}

// Accept ended by short deadlines, over and over as clients connect,
// loses no connection: each is returned by exactly one Accept.
func TestStdAcceptDeadlinesLoseNoConnections(t *testing.T) {
	forStdImpls(t, func(t *testing.T, impl stdImpl) {
		for _, inTask := range []bool{false, true} {
			l := impl.listen(t)
			const clients = 100
			dialErr := make(chan error, 1)
			go func() {
				dialErr <- func() error {
					for i := range clients {
						c, err := impl.dial(context.Background(), l.Addr().String())
						if err != nil {
							return err
						}
						// The server sends the client's number back.
						c.SetReadDeadline(time.Now().Add(20 * time.Second))
						if _, err := c.Write([]byte{byte(i)}); err != nil {
							c.Close()
							return err
						}
						b := make([]byte, 1)
						_, err = io.ReadFull(c, b)
						c.Close()
						if err != nil {
							return fmt.Errorf("client %d: no answer, its connection was lost by the server's Accept: %w", i, err)
						}
						if i%3 == 0 {
							time.Sleep(time.Duration(i%40) * time.Microsecond)
						}
					}
					return nil
				}()
			}()
			accept := func(ctx context.Context) error {
				timeouts := 0
				for i, served := 0, 0; served < clients; i++ {
					l.(interface{ SetDeadline(time.Time) error }).SetDeadline(time.Now().Add(time.Duration(i%50) * time.Microsecond))
					s, err := l.Accept()
					if isTimeout(err) {
						timeouts++
						if timeouts > 1e6 {
							return errors.New("too many Accept timeouts")
						}
						continue
					}
					if err != nil {
						return fmt.Errorf("Accept = %v", err)
					}
					s.SetDeadline(time.Now().Add(20 * time.Second))
					b := make([]byte, 1)
					if _, err := io.ReadFull(s, b); err != nil {
						s.Close()
						return err
					}
					_, err = s.Write(b)
					s.Close()
					if err != nil {
						return err
					}
					served++
				}
				t.Logf("%d accepts timed out", timeouts)
				return <-dialErr
			}
			runIn(t, inTask, impl.task, accept)
			l.Close()
		}
	})
}

// net/http run from tasks: Server.Serve in a task (its Accept suspends the
// task) and requests from another task whose context the requests carry,
// so the transport dials, in its own goroutines, with a context derived
// from a task's; Shutdown from a plain goroutine ends Serve.
//
// The client's calls block in plain Go, so the task makes them through
// runtime.Blocking. Made directly, they held the client's worker: on
// pinned workers, about one run in 40-80 under -race placed both tasks on
// one worker, and the Serve task's Accept waited there until the client
// gave up after 20 s (the runtime's Close then waited for ever for that
// Accept, which TestRuntimeCloseEndsAdapterOperations now covers).
func TestStdHTTPFromTasks(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
			ln, err := Listen(goroutineCtx(rt), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			l := ln.NetListener()
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				fmt.Fprintf(w, "%s:%d", r.URL.Path, len(b))
			})}
			served := runtime.SpawnOn(rt, func(ctx context.Context) (error, error) {
				return srv.Serve(l), nil
			})
			tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := Dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return c.NetConn(), nil
			}}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
			runTask(t, rt, func(ctx context.Context) error {
				for i := range 10 {
					req, err := http.NewRequestWithContext(ctx, "POST", fmt.Sprintf("http://%s/%d", l.Addr(), i), strings.NewReader(strings.Repeat("x", i*1000)))
					if err != nil {
						return err
					}
					// The client's calls wait on its transport's goroutines:
					// through Blocking, so that the worker they would hold
					// serves the server task meanwhile (on pinned workers
					// the two may share a worker that nobody else can run).
					b, err := runtime.Blocking(ctx, func() ([]byte, error) {
						resp, err := client.Do(req)
						if err != nil {
							return nil, err
						}
						defer resp.Body.Close()
						return io.ReadAll(resp.Body)
					})
					if want := fmt.Sprintf("/%d:%d", i, i*1000); err != nil || string(b) != want {
						return fmt.Errorf("response %q, %v; want %q", b, err, want)
					}
				}
				return nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown = %v", err)
			}
			if err, _ := served.Join(ctx); err != http.ErrServerClosed {
				t.Errorf("Serve in a task = %v, want http.ErrServerClosed", err)
			}
		})
	}
}

// Calls of no bytes follow package net's order of checks: Read(nil) does
// nothing and returns 0, nil even past the read deadline, Write(nil) past
// the write deadline fails with a timeout like any Write started after
// it (net checks the deadline before it looks at the length), and after
// Close both fail with net.ErrClosed, the deadline notwithstanding.
func TestStdZeroByteCallsAndDeadlines(t *testing.T) {
	forStdImpls(t, func(t *testing.T, impl stdImpl) {
		for _, inTask := range []bool{false, true} {
			c, _ := stdConnPair(t, impl) // the server end stays open until the test ends
			check := func(ctx context.Context) error {
				c.SetDeadline(time.Now().Add(-time.Second))
				if n, err := c.Read(nil); n != 0 || err != nil {
					return fmt.Errorf("Read(nil) past the deadline = %d, %v; want 0, nil as net's", n, err)
				}
				if n, err := c.Write(nil); n != 0 || !deadlineOpError(err) {
					return fmt.Errorf("Write(nil) past the deadline = %d, %#v; want a timeout *net.OpError as net's", n, err)
				}
				// A vectored write of nothing too, as (*net.Buffers).WriteTo's
				// on a *net.TCPConn.
				bufs := net.Buffers{nil, {}}
				if n, err := bufs.WriteTo(c); n != 0 || !deadlineOpError(err) {
					return fmt.Errorf("net.Buffers{nil, {}}.WriteTo past the deadline = %d, %#v; want a timeout *net.OpError as net's", n, err)
				}
				if v, ok := c.(interface{ Writev([][]byte) (int, error) }); ok {
					if n, err := v.Writev([][]byte{nil}); n != 0 || !deadlineOpError(err) {
						return fmt.Errorf("Writev of nothing past the deadline = %d, %#v; want a timeout *net.OpError, as Write's", n, err)
					}
				}
				c.SetDeadline(time.Time{})
				if n, err := c.Write(nil); n != 0 || err != nil {
					return fmt.Errorf("Write(nil) without a deadline = %d, %v; want 0, nil", n, err)
				}
				c.SetDeadline(time.Now().Add(-time.Second))
				c.Close()
				for what, f := range map[string]func([]byte) (int, error){"Read": c.Read, "Write": c.Write} {
					if _, err := f(nil); !errors.Is(err, net.ErrClosed) || isTimeout(err) {
						return fmt.Errorf("%s(nil) after Close, past the deadline = %v; want net.ErrClosed", what, err)
					}
				}
				return nil
			}
			runIn(t, inTask, impl.task, check)
		}
	})
}

// io.Copy to a connection whose source fails returns the source's error
// inside a *net.OpError "readfrom", as net.TCPConn.ReadFrom does, whatever
// copies the bytes (NetConn.ReadFrom's buffer here), so that code that
// inspects the net.Error of an io.Copy to a net.Conn finds one.
func TestStdReadFromWrapsTheSourceError(t *testing.T) {
	forStdImpls(t, func(t *testing.T, impl stdImpl) {
		for _, inTask := range []bool{false, true} {
			c, _ := stdConnPair(t, impl)
			runIn(t, inTask, impl.task, func(ctx context.Context) error {
				boom := errors.New("boom")
				n, err := io.Copy(c, io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)))
				var oe *net.OpError
				if n != 3 || !errors.Is(err, boom) || !errors.As(err, &oe) || oe.Op != "readfrom" {
					return fmt.Errorf("io.Copy of 3 bytes and an error = %d, %#v; want 3 and a *net.OpError \"readfrom\" wrapping the error", n, err)
				}
				if oe.Source == nil || oe.Source.String() != c.LocalAddr().String() || oe.Addr == nil || oe.Addr.String() != c.RemoteAddr().String() {
					return fmt.Errorf("the error's addresses are %v and %v, want the connection's, %v and %v", oe.Source, oe.Addr, c.LocalAddr(), c.RemoteAddr())
				}
				return nil
			})
		}
	})
}

// fileAPI is what a user of os.File or of FileIO calls.
type fileAPI interface {
	io.ReadWriteSeeker
	io.ReaderAt
	io.WriterAt
	io.Closer
}

// FileIO does what os.File does on the same sequence of calls, from a
// goroutine and from a task: positions, short reads at the end, io.EOF,
// ReadAt's and WriteAt's offsets independent of the position, Seek's
// errors, writes to a read-only file, and fs.ErrClosed after Close.
func TestStdFileIOAgainstOSFile(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	dir := t.TempDir()
	script := func(ctx context.Context, open func(name string, flag int) (fileAPI, error), name string) ([]string, error) {
		var log []string
		rec := func(what string, vals ...any) { log = append(log, what+": "+fmt.Sprint(vals...)) }
		errKind := func(err error) string {
			switch {
			case err == nil:
				return "nil"
			case err == io.EOF:
				return "EOF"
			case errors.Is(err, os.ErrClosed):
				return "closed"
			}
			var pe *os.PathError
			if errors.As(err, &pe) {
				return "PathError " + pe.Op + ": " + pe.Err.Error()
			}
			return fmt.Sprintf("%T %v", err, err)
		}
		f, err := open(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
		if err != nil {
			return nil, err
		}
		n, err := f.Write([]byte("hello world"))
		rec("Write", n, " ", errKind(err))
		pos, err := f.Seek(0, io.SeekCurrent)
		rec("Seek cur", pos, " ", errKind(err))
		n, err = f.WriteAt([]byte("HELLO"), 0)
		rec("WriteAt 0", n, " ", errKind(err))
		pos, err = f.Seek(6, io.SeekStart)
		rec("Seek 6", pos, " ", errKind(err))
		buf := make([]byte, 3)
		n, err = f.Read(buf)
		rec("Read 3", string(buf[:n]), " ", errKind(err))
		big := make([]byte, 20)
		n, err = f.ReadAt(big, 0)
		rec("ReadAt 20@0", string(big[:n]), " ", errKind(err))
		n, err = f.ReadAt(big[:5], 6)
		rec("ReadAt 5@6", string(big[:n]), " ", errKind(err))
		n, err = f.ReadAt(big, 11)
		rec("ReadAt @end", n, " ", errKind(err))
		n, err = f.Read(big)
		rec("Read rest", string(big[:n]), " ", errKind(err))
		n, err = f.Read(big)
		rec("Read at end", n, " ", errKind(err))
		n, err = f.Read(nil)
		rec("Read nil at end", n, " ", errKind(err))
		n, err = f.WriteAt([]byte("!"), 20)
		rec("WriteAt past end", n, " ", errKind(err))
		pos, err = f.Seek(0, io.SeekEnd)
		rec("Seek end", pos, " ", errKind(err))
		_, err = f.Seek(-1, io.SeekStart)
		rec("Seek -1", errKind(err))
		_, err = f.Seek(0, 42)
		rec("Seek whence 42", errKind(err))
		_, err = f.ReadAt(buf, -1)
		rec("ReadAt -1", errKind(err))
		_, err = f.WriteAt(buf, -1)
		rec("WriteAt -1", errKind(err))
		all, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
		rec("SectionReader", fmt.Sprintf("%q", all), " ", errKind(err))
		rec("Close", errKind(f.Close()))
		rec("Close again", errKind(f.Close()))
		_, err = f.Read(buf)
		rec("Read after Close", errKind(err))
		_, err = f.Write(buf)
		rec("Write after Close", errKind(err))
		_, err = f.ReadAt(buf, 0)
		rec("ReadAt after Close", errKind(err))
		_, err = f.Seek(0, io.SeekStart)
		rec("Seek after Close", errKind(err))

		ro, err := open(name, os.O_RDONLY)
		if err != nil {
			return nil, err
		}
		_, err = ro.Write([]byte("x"))
		rec("Write read-only", errKind(err))
		_, err = ro.WriteAt([]byte("x"), 0)
		rec("WriteAt read-only", errKind(err))
		ro.Close()
		return log, nil
	}
	osOpen := func(name string, flag int) (fileAPI, error) { return os.OpenFile(name, flag, 0o644) }
	want, err := script(context.Background(), osOpen, dir+"/os")
	if err != nil {
		t.Fatal(err)
	}
	compare := func(ctx context.Context, name string) error {
		got, err := script(ctx, func(name string, flag int) (fileAPI, error) {
			f, err := OpenFile(ctx, name, flag, 0o644)
			if err != nil {
				return nil, err
			}
			return f.IO(), nil
		}, name)
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
	if err := compare(goroutineCtx(rt), dir+"/goroutine"); err != nil {
		t.Fatal(err)
	}
	runTask(t, rt, func(ctx context.Context) error { return compare(ctx, dir+"/task") })
}
