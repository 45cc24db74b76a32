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
			task: func(t *testing.T, f func(ctx context.Context) error) {
				t.Helper()
				if err := f(context.Background()); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
	for _, backend := range backends {
		t.Run("faio-"+backend.String(), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
			f(t, stdImpl{
				name: "faio-" + backend.String(),
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
				task: func(t *testing.T, f func(ctx context.Context) error) {
					t.Helper()
					runTask(t, rt, f)
				},
			})
		})
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
