package faiohttp

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// startNetHTTP serves h with net/http's server, configured as cfg
// configures a faiohttp Server (the timeouts and TLSConfig), and returns
// its address. Its connections, which end up to 500 ms after their
// response (its closeWriteAndWait), are waited for at the end, for the
// leak check.
func startNetHTTP(t *testing.T, h http.Handler, cfg func(*Server)) string {
	t.Helper()
	var fs Server
	if cfg != nil {
		cfg(&fs)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0),
		ReadTimeout: fs.ReadTimeout, ReadHeaderTimeout: fs.ReadHeaderTimeout,
		WriteTimeout: fs.WriteTimeout, IdleTimeout: fs.IdleTimeout,
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				conns.Add(1)
			case http.StateClosed:
				conns.Done()
			}
		}}
	if fs.TLSConfig != nil {
		// A clone: ServeTLS writes NextProtos into the Config it is
		// given, while the faiohttp server reads the one cfg set.
		srv.TLSConfig = fs.TLSConfig.Clone()
		go srv.ServeTLS(ln, "", "")
	} else {
		go srv.Serve(ln)
	}
	t.Cleanup(func() {
		srv.Close()
		conns.Wait()
	})
	return ln.Addr().String()
}

// okHandler answers every request "ok".
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

// tlsConfig is a server configuration with a self-signed certificate.
func tlsConfig(t *testing.T) *tls.Config {
	cert, _ := selfSigned(t)
	return &tls.Config{Certificates: []tls.Certificate{cert}}
}

// bothServers runs check against a faiohttp server and a net/http server
// of the same handler and configuration, and fails when what check
// returns differs.
func bothServers(t *testing.T, name string, h http.Handler, cfg func(*Server), check func(addr string) string) {
	t.Helper()
	faddr, _ := startFaio(t, h, cfg)
	naddr := startNetHTTP(t, h, cfg)
	var fgot, ngot string
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); fgot = check(faddr) }()
	go func() { defer wg.Done(); ngot = check(naddr) }()
	wg.Wait()
	if fgot != ngot {
		t.Errorf("%s:\n faiohttp %s\n net/http %s", name, fgot, ngot)
	}
}

// A header cut short by the client's half-close gets net/http's 400, with
// its status line, byte for byte; so do the refusals whose reason net/http
// puts in the status line ("400 Bad Request: missing required Host
// header"). faiohttp closed the first without a word, and gave the
// second the bare reason phrase.
func TestRefusalsAreNetHTTPsByteForByte(t *testing.T) {
	for _, req := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX-Long: abc",
		"GET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n",
		"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
	} {
		bothServers(t, fmt.Sprintf("%q", req), okHandler, nil, func(addr string) string {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return err.Error()
			}
			defer c.Close()
			io.WriteString(c, req)
			c.(*net.TCPConn).CloseWrite()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			b, err := io.ReadAll(c)
			if err != nil {
				return err.Error()
			}
			return string(b)
		})
	}
}

// The timeouts count as net/http's do: with ReadHeaderTimeout alone, a
// kept-alive connection may stay idle past it (faiohttp closed it); a
// negative IdleTimeout or ReadHeaderTimeout means none, not ReadTimeout
// (faiohttp used ReadTimeout).
func TestTimeoutsAsNetHTTP(t *testing.T) {
	const d = 300 * time.Millisecond
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok "+r.URL.Path) })
	// served sends "GET /1", waits idle, then sends "GET /2" in two
	// parts, "G" and the rest, with split between them, and reports
	// what was answered.
	served := func(idle, split time.Duration) func(addr string) string {
		return func(addr string) string {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return err.Error()
			}
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(c)
			var got []string
			for i, wait := range []time.Duration{0, idle} {
				time.Sleep(wait)
				if _, err := io.WriteString(c, "G"); err != nil {
					return strings.Join(append(got, err.Error()), "; ")
				}
				if i == 1 {
					time.Sleep(split)
				}
				if _, err := fmt.Fprintf(c, "ET /%d HTTP/1.1\r\nHost: a\r\n\r\n", i+1); err != nil {
					return strings.Join(append(got, "write: closed"), "; ")
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					return strings.Join(append(got, "read: closed"), "; ")
				}
				b, _ := io.ReadAll(resp.Body)
				got = append(got, fmt.Sprintf("%d %s", resp.StatusCode, b))
			}
			return strings.Join(got, "; ")
		}
	}
	for _, tc := range []struct {
		name        string
		cfg         func(*Server)
		idle, split time.Duration
	}{
		{"ReadHeaderTimeout alone, idle past it", func(s *Server) { s.ReadHeaderTimeout = d }, 2 * d, 0},
		{"ReadHeaderTimeout alone, slow header", func(s *Server) { s.ReadHeaderTimeout = d }, 0, 2 * d},
		{"IdleTimeout negative, ReadTimeout", func(s *Server) { s.ReadTimeout, s.IdleTimeout = d, -1 }, 2 * d, 0},
		{"IdleTimeout from ReadTimeout", func(s *Server) { s.ReadTimeout = d }, 2 * d, 0},
		{"ReadHeaderTimeout negative, ReadTimeout, slow header", func(s *Server) { s.ReadTimeout, s.ReadHeaderTimeout = d, -1 }, 0, 2 * d},
		{"ReadHeaderTimeout negative, IdleTimeout, slow header", func(s *Server) { s.IdleTimeout, s.ReadHeaderTimeout = d, -1 }, 0, 2 * d},
	} {
		bothServers(t, tc.name, h, tc.cfg, served(tc.idle, tc.split))
	}
}

// A body of up to 2048 bytes, written before the handler returns, gets a
// Content-Length; a longer one is chunked, as net/http frames them
// (faiohttp held back 4096 bytes).
func TestBufferedBodyFramingAsNetHTTP(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n, parts int
		fmt.Sscanf(r.URL.Path, "/%d/%d", &n, &parts)
		for i := 0; i < parts; i++ {
			w.Write([]byte(strings.Repeat("x", n/parts)))
		}
	})
	for _, size := range []int{2046, 2048, 2050, 3000, 4096, 4098} {
		for _, parts := range []int{1, 2} {
			path := fmt.Sprintf("/%d/%d", size, parts)
			bothServers(t, path, h, nil, func(addr string) string {
				resp, err := http.Get("http://" + addr + path)
				if err != nil {
					return err.Error()
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				return fmt.Sprintf("length %d, transfer %v, %d bytes (%v)", resp.ContentLength, resp.TransferEncoding, len(b), err)
			})
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

// Under TLS, the first request's header time counts from the end of the
// handshake, as in net/http: it restarted at the request's first byte, so
// a client sending "G" just before the deadline and the rest just before
// the next was served (found by a reviewer).
func TestTLSFirstRequestsHeaderTimeoutAsNetHTTP(t *testing.T) {
	const timeout = 500 * time.Millisecond
	conf := tlsConfig(t)
	bothServers(t, "a header sent over 1.4 ReadHeaderTimeouts after the handshake", okHandler,
		func(s *Server) { s.ReadHeaderTimeout, s.TLSConfig = timeout, conf },
		func(addr string) string {
			c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
			if err != nil {
				return err.Error()
			}
			defer c.Close()
			time.Sleep(timeout * 7 / 10)
			io.WriteString(c, "G")
			time.Sleep(timeout * 7 / 10) // past the deadline counted from the handshake
			io.WriteString(c, "ET / HTTP/1.1\r\nHost: a\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return "no response"
			}
			resp.Body.Close()
			return resp.Status
		})
}

// A TLS handshake is bounded by the shortest of ReadHeaderTimeout,
// ReadTimeout and WriteTimeout, as in net/http: with WriteTimeout alone, a
// client that never sent its hello held its connection for good (found by
// a reviewer).
func TestTLSHandshakeTimeoutAsNetHTTP(t *testing.T) {
	const timeout = 300 * time.Millisecond
	conf := tlsConfig(t)
	bothServers(t, "a TLS client silent for 10 WriteTimeouts", okHandler,
		func(s *Server) { s.WriteTimeout, s.TLSConfig = timeout, conf },
		func(addr string) string {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return err.Error()
			}
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(10 * timeout))
			if _, err = c.Read(make([]byte, 1)); isTimeout(err) {
				return "still open"
			}
			return "closed"
		})
}
