package faiohttp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/faio-go/faio/modules/aio"
	"github.com/faio-go/faio/modules/runtime"
	"go.uber.org/goleak"
)

// serverSide returns the descriptor of the server's end of c, a
// connection to a server in this process: the socket whose peer is c's
// local address.
func serverSide(t *testing.T, c net.Conn) int {
	t.Helper()
	want := c.LocalAddr().(*net.TCPAddr)
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		sa, err := syscall.Getpeername(fd)
		if err != nil {
			continue
		}
		if in4, ok := sa.(*syscall.SockaddrInet4); ok && in4.Port == want.Port && net.IP(in4.Addr[:]).Equal(want.IP) {
			return fd
		}
	}
	t.Fatalf("no socket in this process has %v for its peer", want)
	return -1
}

// unsent returns how many bytes fd's socket holds that its peer has not
// acknowledged (SIOCOUTQ).
func unsent(fd int) int {
	var n int32
	syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&n)))
	return int(n)
}

// openConns returns how many connections srv serves.
func openConns(srv *Server) int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return len(srv.conns)
}

// The response the server writes itself to a request it refuses (400,
// 431, 501, 505) is bounded by WriteTimeout, as net/http's is. To a
// client that reads nothing it was not: the write waited for good,
// holding the connection's task and descriptor, and Shutdown waited for
// it too. The client here has a receive window too small for the
// response before, whose last TCP segment is full, so the kernel cannot
// add the refusal to it, and the server's send buffer is cut so that it
// takes nothing more.
func TestRefusalHonoursWriteTimeout(t *testing.T) {
	filled := make(chan struct{}, 1)
	addr, srv := startFaio(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		h := w.Header()
		h.Set("Content-Length", strconv.Itoa(n))
		h.Set("Content-Type", "x")
		h.Set("Date", "x")
		w.Write([]byte(strings.Repeat("f", n)))
		filled <- struct{}{}
	}), func(s *Server) { s.WriteTimeout = 300 * time.Millisecond })

	// The length of a header of a response with 5 digits of length.
	resp := rawExchange(t, addr, "GET /?n=10000 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 5*time.Second)
	<-filled
	headerLen := len(resp) - 10000

	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1) })
	}}
	c, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /?n=1 HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
		t.Fatal(err)
	}
	<-filled
	fd := serverSide(t, c)
	mss, err := syscall.GetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_MAXSEG)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /?n=%d HTTP/1.1\r\nHost: a\r\n\r\n", 20*mss-headerLen)
	<-filled
	time.Sleep(100 * time.Millisecond) // for the server to wait for the next request
	syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 1)
	if n := unsent(fd); n == 0 {
		t.Fatalf("the client took the whole response (MSS %d): nothing waits in the server's socket", mss)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\n\r\n") // no Host: 400
	for start := time.Now(); openConns(srv) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("the connection is still open 5s after a refusal to a client that reads nothing, with WriteTimeout 300ms")
		}
	}
}

// Shutdown called from a task suspends the task while it waits for the
// requests in flight, as its doc says. It blocked the worker in a Go
// select instead: on a runtime of one worker the request it waited for
// could not finish, and Shutdown returned ctx.Err() when its context
// ended (without one, it never returned).
func TestShutdownFromATaskLetsRequestsFinish(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	rt, err := runtime.New(runtime.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
		goleak.VerifyNone(t, ignore)
	})
	ln, err := aio.Listen(runtime.WithRuntime(context.Background(), rt), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var entered atomic.Bool
	srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered.Store(true)
		runtime.Sleep(r.Context(), 100*time.Millisecond)
		io.WriteString(w, "finished")
	})}
	got := make(chan string, 1)
	go func() {
		got <- rawExchange(t, ln.Addr().String(), "GET / HTTP/1.1\r\nHost: a\r\n\r\n", 10*time.Second)
	}()
	var serveErr, shutdownErr error
	var took time.Duration
	runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		h := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, srv.Serve(ctx, ln)
		})
		for !entered.Load() {
			runtime.Sleep(ctx, time.Millisecond)
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		start := time.Now()
		shutdownErr = srv.Shutdown(sctx)
		took = time.Since(start)
		_, serveErr = h.Join(ctx)
		return struct{}{}, nil
	})
	if shutdownErr != nil {
		t.Errorf("Shutdown from a task returned %v after %v, with a request of 100ms in flight", shutdownErr, took)
	}
	if !errors.Is(serveErr, ErrServerClosed) {
		t.Errorf("Serve: %v", serveErr)
	}
	if r := <-got; !strings.HasSuffix(r, "finished") {
		t.Errorf("the request in flight got %q", r)
	}
}

// Shutdown closes the connections that are reading a request's header, as
// net/http's does: a kept-alive one at once (its header read is idle
// time, net/http's StateIdle), one reading its first request once it is
// 5 s old (StateNew). It closed a connection only before its request's
// first byte: one that sent "G" and no more, without ReadHeaderTimeout
// set, kept Shutdown waiting for good (found with a slowloris client).
func TestShutdownClosesConnectionsReadingAHeader(t *testing.T) {
	addr, srv := startFaio(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}), nil)
	kept, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	br := bufio.NewReader(kept)
	io.WriteString(kept, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, err := http.ReadResponse(br, nil); err != nil {
		t.Fatal(err)
	}
	io.WriteString(kept, "GET / HTTP/1.1\r\nHo")
	fresh, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	io.WriteString(fresh, "G")
	time.Sleep(100 * time.Millisecond) // for the server to read both
	start := time.Now()
	closed := make(chan time.Duration, 2)
	for _, c := range []net.Conn{kept, fresh} {
		go func() {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			io.Copy(io.Discard, c)
			closed <- time.Since(start)
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown with a connection in the middle of its first request's header (5 s grace in net/http): %v after %v", err, time.Since(start))
	}
	first, second := <-closed, <-closed
	if first > 2*time.Second {
		t.Errorf("the kept-alive connection in the middle of its next header was closed %v after Shutdown began, want at once", first)
	}
	if second < 4*time.Second || second > 7*time.Second {
		t.Errorf("the new connection in the middle of its first header was closed %v after Shutdown began, want once it is 5 s old", second)
	}
}

// A response sent once Shutdown has begun says "Connection: close", as
// net/http's does, since the connection closes after it: it said nothing,
// and a client that reused the connection for its next request lost it.
func TestResponseDuringShutdownSaysClose(t *testing.T) {
	entered := make(chan struct{})
	addr, srv := startFaio(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		runtime.Sleep(r.Context(), 200*time.Millisecond)
		io.WriteString(w, "ok")
	}), nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	<-entered
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Close {
		t.Errorf("the response to a request in flight at Shutdown does not say Connection: close: %v", resp.Header)
	}
	if err := <-shut; err != nil {
		t.Error(err)
	}
}

// A handler's panic is logged with the stack it was raised on, as
// net/http logs it, and the server goes on: only the value was logged,
// which leaves the user to guess where it came from.
func TestHandlerPanicIsLoggedWithItsStack(t *testing.T) {
	logged := make(chan string, 1)
	addr, _ := startFaio(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panicInHandler()
		}
		io.WriteString(w, "still here")
	}), func(s *Server) {
		s.ErrorLog = func(format string, args ...any) {
			select {
			case logged <- fmt.Sprintf(format, args...):
			default:
			}
		}
	})
	if got := rawExchange(t, addr, "GET /panic HTTP/1.1\r\nHost: a\r\n\r\n", 5*time.Second); got != "" {
		t.Errorf("a panicking handler's request got %q, want the connection closed", got)
	}
	select {
	case msg := <-logged:
		if !strings.Contains(msg, "handler bug") || !strings.Contains(msg, "panicInHandler") {
			t.Errorf("the panic's log has not the value and the function that panicked:\n%s", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the panic was not logged")
	}
	if got := rawExchange(t, addr, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 5*time.Second); !strings.HasSuffix(got, "still here") {
		t.Errorf("after a handler's panic: %q", got)
	}
}

func panicInHandler() { panic("handler bug") }

// A request's context carries the connection's local address under
// http.LocalAddrContextKey, as net/http's does: it did not, and a handler
// that asserted its type (a common use, to tell listeners apart)
// panicked.
func TestRequestContextHasTheLocalAddress(t *testing.T) {
	addr, _ := startFaio(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if !ok {
			http.Error(w, "no local address", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, a.String())
	}), nil)
	got := rawExchange(t, addr, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 5*time.Second)
	if !strings.HasSuffix(got, "\r\n\r\n"+addr) {
		t.Errorf("the handler's local address: %q, want %s", got, addr)
	}
}

// A plain HTTP request to a TLS server gets net/http's 400 saying so, and
// a failed handshake is logged, as net/http logs it: the connection was
// closed without a word on either side, which left a misconfigured
// client (or certificate) to be guessed at.
func TestPlainRequestToATLSServer(t *testing.T) {
	cert, _ := selfSigned(t)
	logged := make(chan string, 10)
	addr, _ := startFaio(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}), func(s *Server) {
		s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		s.ErrorLog = func(format string, args ...any) {
			select {
			case logged <- fmt.Sprintf(format, args...):
			default:
			}
		}
	})
	got := rawExchange(t, addr, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", 5*time.Second)
	if want := "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"; got != want {
		t.Errorf("a plain request to a TLS server got %q, want %q", got, want)
	}
	// A client that does not trust the certificate.
	if c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "faio.test"}); err == nil {
		c.Close()
		t.Error("a handshake with an unknown certificate succeeded")
	}
	for _, want := range []string{"client sent an HTTP request to an HTTPS server", "bad certificate"} {
		select {
		case msg := <-logged:
			if !strings.Contains(msg, "TLS handshake error") || !strings.Contains(msg, want) {
				t.Errorf("logged %q, want a TLS handshake error saying %q", msg, want)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("no TLS handshake error saying %q was logged", want)
		}
	}
}

// When accepting fails (no descriptor left), the accept loop backs off as
// net/http's does, from 5 ms to 1 s, and logs each retry: it retried, and
// logged, every 5 ms, some 200 lines a second for as long as the
// descriptors ran short.
func TestAcceptErrorsBackOff(t *testing.T) {
	var logs atomic.Int32
	addr, _ := startFaio(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}), func(s *Server) {
		s.ErrorLog = func(format string, args ...any) {
			if strings.Contains(format, "accept") {
				logs.Add(1)
			}
		}
	})
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var files []*os.File
	var c net.Conn
	func() {
		defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
		// Every descriptor taken once the client's socket exists and
		// before it connects: freeing one for the socket instead let
		// anything else in the process take it first.
		d := net.Dialer{Control: func(string, string, syscall.RawConn) error {
			low := old
			low.Cur = uint64(len(ents) + 16)
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
				return err
			}
			for {
				f, err := os.Open(os.DevNull)
				if err != nil {
					break
				}
				files = append(files, f)
			}
			if len(files) == 0 {
				return errors.New("no descriptor left to take")
			}
			return nil
		}}
		if c, err = d.Dial("tcp", addr); err != nil {
			t.Fatal(err)
		}
		logs.Store(0)
		time.Sleep(600 * time.Millisecond)
	}()
	for _, f := range files {
		f.Close()
	}
	defer c.Close()
	// 5+10+20+40+80+160+320 ms: 7 or 8 retries in 600 ms.
	if n := logs.Load(); n == 0 || n > 10 {
		t.Errorf("%d accept errors logged in 600 ms without a descriptor to accept with, want a few (backing off from 5 ms)", n)
	}
	// The connection is served once a descriptor is free again.
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, _ := io.ReadAll(c); !strings.HasSuffix(string(b), "ok") {
		t.Errorf("after the descriptors came back: %q", b)
	}
}

// http.ResponseController works as with net/http: SetWriteDeadline and
// SetReadDeadline move the connection's deadlines (a handler streaming
// past WriteTimeout, or reading a slow upload past ReadTimeout, extends
// them), and Flush reports a failed send. They returned
// http.ErrNotSupported, and Flush nil whatever became of the send.
func TestResponseControllerAsNetHTTP(t *testing.T) {
	flushErr := make(chan error, 1)
	addr, _ := startFaio(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		switch r.URL.Path {
		case "/write":
			if err := rc.SetWriteDeadline(time.Now().Add(10 * time.Second)); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			runtime.Sleep(r.Context(), 500*time.Millisecond)
			io.WriteString(w, "written after WriteTimeout")
		case "/read":
			rc.SetWriteDeadline(time.Now().Add(10 * time.Second)) // for the response
			if err := rc.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusRequestTimeout)
				return
			}
			fmt.Fprintf(w, "read %q after ReadTimeout", b)
		case "/flush":
			var err error
			for start := time.Now(); err == nil && time.Since(start) < 5*time.Second; {
				w.Write([]byte("event\n"))
				err = rc.Flush()
				runtime.Sleep(r.Context(), time.Millisecond)
			}
			flushErr <- err
		}
	}), func(s *Server) {
		s.WriteTimeout = 200 * time.Millisecond
		s.ReadTimeout = 200 * time.Millisecond
	})
	if got := rawExchange(t, addr, "GET /write HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 5*time.Second); !strings.HasSuffix(got, "written after WriteTimeout") {
		t.Errorf("a handler that moved its write deadline past WriteTimeout: %q", got)
	}

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /read HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nConnection: close\r\n\r\n")
	time.Sleep(500 * time.Millisecond)
	io.WriteString(c, "slow")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, _ := io.ReadAll(c); !strings.HasSuffix(string(b), `read "slow" after ReadTimeout`) {
		t.Errorf("a handler that moved its read deadline past ReadTimeout: %q", b)
	}

	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c2, "GET /flush HTTP/1.1\r\nHost: a\r\n\r\n")
	c2.Read(make([]byte, 100))
	c2.Close()
	select {
	case err := <-flushErr:
		if err == nil {
			t.Error("ResponseController.Flush kept returning nil for 5 s after the client had gone")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the streaming handler did not return")
	}
}

// A handler takes the connection over with http.Hijacker, as with
// net/http: it gets the connection and a reader that holds what the
// client sent past the request, the server writes nothing more to it and
// does not close it when the handler returns, and Shutdown and Close
// leave it alone (net/http's StateHijacked), so Shutdown does not wait for
// it. The response had no Hijack: WebSocket and CONNECT handlers written
// for net/http failed.
func TestHijack(t *testing.T) {
	results := make(chan string, 10)
	released := make(chan struct{})
	addr, srv := startFaio(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			conn, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			_, _, err2 := w.(http.Hijacker).Hijack()
			_, err3 := w.Write([]byte("x"))
			results <- fmt.Sprintf("hijack again: %v, write: %v", err2, err3)
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
			rw.Flush()
			// Echo lines on the handler's task until the client is done.
			for {
				line, err := rw.ReadString('\n')
				if err != nil {
					break
				}
				rw.WriteString("echo " + line)
				rw.Flush()
			}
			conn.Close()
		case "/later":
			// The connection goes to a goroutine; the handler returns.
			conn, rw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			results <- "later hijacked"
			go func() {
				defer conn.Close()
				<-released
				rw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nlater")
				rw.Flush()
			}()
		}
	}), nil)

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// A line sent with the request, which the server has read with it.
	io.WriteString(c, "GET /echo HTTP/1.1\r\nHost: a\r\n\r\nfirst\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("GET /echo: %s", resp.Status)
	}
	if got := <-results; got != "hijack again: "+http.ErrHijacked.Error()+", write: "+http.ErrHijacked.Error() {
		t.Errorf("after Hijack, %s; want %v for both", got, http.ErrHijacked)
	}
	if line, _ := br.ReadString('\n'); line != "echo first\n" {
		t.Errorf("the line sent with the request came back as %q", line)
	}

	later, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	later.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(later, "GET /later HTTP/1.1\r\nHost: a\r\n\r\n")
	<-results
	for start := time.Now(); openConns(srv) > 0; time.Sleep(time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("the server still counts %d hijacked connections", openConns(srv))
		}
	}

	// Shutdown does not wait for the hijacked connections, nor closes them.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown with two hijacked connections: %v", err)
	}
	srv.Close()
	io.WriteString(c, "second\n")
	if line, err := br.ReadString('\n'); line != "echo second\n" {
		t.Errorf("after Shutdown and Close, the hijacked connection echoed %q (%v)", line, err)
	}
	close(released)
	if b, err := io.ReadAll(later); !strings.HasSuffix(string(b), "\r\n\r\nlater") {
		t.Errorf("a connection written to by a goroutine after its handler returned: %q (%v)", b, err)
	}
}

// Shutdown returns ctx.Err() when its context ends before a handler that
// never returns, from a goroutine and from a task, and leaves that
// connection open (net/http's behaviour).
func TestShutdownReturnsWhenItsContextEnds(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	rt := newRuntime(t)
	rctx := runtime.WithRuntime(context.Background(), rt)
	ln, err := aio.Listen(rctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		runtime.Blocking(r.Context(), func() (struct{}, error) { <-release; return struct{}{}, nil })
		io.WriteString(w, "released")
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(rctx, ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	<-entered
	for _, fromTask := range []bool{false, true} {
		start := time.Now()
		var err error
		if fromTask {
			err, _ = runtime.BlockOn(rt, func(ctx context.Context) (error, error) {
				sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
				return srv.Shutdown(sctx), nil
			})
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			err = srv.Shutdown(ctx)
			cancel()
		}
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
			t.Errorf("Shutdown (from a task: %v) with a handler that does not return: %v after %v, want %v after 200ms", fromTask, err, time.Since(start), context.DeadlineExceeded)
		}
	}
	close(release)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, _ := io.ReadAll(c); !strings.HasSuffix(string(b), "released") {
		t.Errorf("the request in flight at Shutdown got %q", b)
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
}

// A new connection's first request gets ReadHeaderTimeout from the moment
// the server waits for it, as in net/http, not from its first byte: a
// client that sent "G" just before the deadline and the rest just before
// the next held the connection for twice the timeout and was served
// (found by a reviewer). Here the rest comes after the deadline: the
// handler must not run, and the connection ends.
func TestFirstRequestsHeaderTimeoutCountsFromTheWait(t *testing.T) {
	const timeout = 500 * time.Millisecond
	served := make(chan struct{}, 1)
	addr, _ := startFaio(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served <- struct{}{}
		io.WriteString(w, "ok")
	}), func(s *Server) { s.ReadHeaderTimeout = timeout })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(timeout * 7 / 10)
	io.WriteString(c, "G")
	time.Sleep(timeout * 7 / 10) // past the deadline of the wait
	io.WriteString(c, "ET / HTTP/1.1\r\nHost: a\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, _ := io.ReadAll(c)
	select {
	case <-served:
		t.Errorf("the request was served (%q), though its header came after ReadHeaderTimeout from the connection's start", resp)
	default:
	}
}

// A TLSConfig that offers h2 does not make a client agree on h2 with a
// server that then answers in HTTP/1.1 (the client could not read it):
// Serve's clone offers "http/1.1" alone, and leaves the caller's Config
// as it was, so that a Config shared with a net/http server is not
// written to while that server reads it.
func TestTLSServerNeverAgreesOnH2(t *testing.T) {
	cert, pool := selfSigned(t)
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
	addr, _ := startFaio(t, okHandler, func(s *Server) { s.TLSConfig = conf })
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "faio.test", NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Errorf("agreed on %q, want http/1.1", p)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("got %d %q, want 200 \"ok\"", resp.StatusCode, body)
	}
	if !slices.Equal(conf.NextProtos, []string{"h2", "http/1.1"}) {
		t.Errorf("Serve changed the caller's NextProtos to %q", conf.NextProtos)
	}
}
