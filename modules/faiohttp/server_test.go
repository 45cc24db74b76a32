package faiohttp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/aio"
	"github.com/faio-go/faio/modules/runtime"
	"go.uber.org/goleak"
)

// inSlow counts the requests that entered /slow.
var inSlow atomic.Int32

// handler answers /echo with the length and SHA-256 of the body, /slow
// after sleeping, /big with 1 MiB, and anything else with its method and
// path.
func handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		inSlow.Add(1)
		// runtime.Sleep suspends a faiohttp task and blocks a net/http
		// goroutine: right for both.
		if err := runtime.Sleep(r.Context(), 150*time.Millisecond); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "slept")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("0123456789abcdef"), 1<<16))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
	})
	return mux
}

// server is one of the two ways to serve HTTP over faio.
type server struct {
	name  string
	start func(t *testing.T, rt *runtime.Runtime, tlsConf *tls.Config, readTimeout time.Duration) (addr string, shutdown func(context.Context) error)
}

var servers = []server{
	{"net/http over NetListener", func(t *testing.T, rt *runtime.Runtime, tlsConf *tls.Config, rto time.Duration) (string, func(context.Context) error) {
		ln, err := aio.Listen(runtime.WithRuntime(context.Background(), rt), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: handler(), TLSConfig: tlsConf, ReadTimeout: rto}
		done := make(chan struct{})
		go func() {
			defer close(done)
			var err error
			if tlsConf != nil {
				err = srv.ServeTLS(ln.NetListener(), "", "")
			} else {
				err = srv.Serve(ln.NetListener())
			}
			if !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("Serve: %v", err)
			}
		}()
		return ln.Addr().String(), func(ctx context.Context) error {
			err := srv.Shutdown(ctx)
			<-done
			return err
		}
	}},
	{"faiohttp", func(t *testing.T, rt *runtime.Runtime, tlsConf *tls.Config, rto time.Duration) (string, func(context.Context) error) {
		ctx := runtime.WithRuntime(context.Background(), rt)
		ln, err := aio.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &Server{Handler: handler(), TLSConfig: tlsConf, ReadTimeout: rto}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := srv.Serve(ctx, ln); !errors.Is(err, ErrServerClosed) {
				t.Errorf("Serve: %v", err)
			}
		}()
		return ln.Addr().String(), func(ctx context.Context) error {
			err := srv.Shutdown(ctx)
			<-done
			return err
		}
	}},
}

func newRuntime(t testing.TB) *runtime.Runtime {
	// Goroutines alive now are not this test's.
	ignore := goleak.IgnoreCurrent()
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
		goleak.VerifyNone(t, ignore)
	})
	return rt
}

func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Keep-alive, pipelining, chunked uploads, a 10 MB body, TLS, a slow
// client hitting the read timeout, and Shutdown with requests in flight,
// for both servers.
func TestServers(t *testing.T) {
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			rt := newRuntime(t)
			// A read timeout that a 10 MB upload under -race on a loaded
			// machine stays well within (at 500 ms it did not, once); the
			// slow client's subtest has a server of its own with a short
			// one.
			addr, shutdown := s.start(t, rt, nil, 30*time.Second)
			base := "http://" + addr
			tr := &http.Transport{MaxIdleConnsPerHost: 1}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}

			t.Run("keep-alive", func(t *testing.T) {
				var reused atomic.Int32
				for i := range 10 {
					trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) {
						if ci.Reused {
							reused.Add(1)
						}
					}}
					req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", fmt.Sprintf("%s/k%d", base, i), nil)
					resp, err := client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if want := fmt.Sprintf("GET /k%d", i); string(b) != want {
						t.Fatalf("got %q, want %q", b, want)
					}
				}
				if reused.Load() < 9 {
					t.Fatalf("%d of 10 requests reused the connection, want 9", reused.Load())
				}
				if got := get(t, client, base+"/big"); len(got) != 1<<20 {
					t.Fatalf("/big: %d bytes", len(got))
				}
			})

			t.Run("pipelining", func(t *testing.T) {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				// Three requests in one write; the answers come in order.
				io.WriteString(c, "GET /p1 HTTP/1.1\r\nHost: x\r\n\r\nPOST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET /p3 HTTP/1.1\r\nHost: x\r\n\r\n")
				br := bufio.NewReader(c)
				sum := sha256.Sum256([]byte("hello"))
				for _, want := range []string{"GET /p1", fmt.Sprintf("5 %x", sum), "GET /p3"} {
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if string(b) != want {
						t.Fatalf("pipelined answer %q, want %q", b, want)
					}
				}
			})

			t.Run("chunked and 10 MB bodies", func(t *testing.T) {
				data := bytes.Repeat([]byte("faio-go "), 10<<20/8)
				sum := sha256.Sum256(data)
				// An io.Reader of unknown length: the client sends it chunked.
				resp, err := client.Post(base+"/echo", "application/octet-stream", io.MultiReader(bytes.NewReader(data[:1000]), bytes.NewReader(data[1000:])))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf("%d %x", len(data), sum); string(b) != want {
					t.Fatalf("chunked 10 MB upload: %q, want %q", b, want)
				}
				// Expect: 100-continue with a known length.
				req, _ := http.NewRequest("POST", base+"/echo", bytes.NewReader(data[:12345]))
				req.Header.Set("Expect", "100-continue")
				resp, err = client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf("12345 %x", sha256.Sum256(data[:12345])); string(b) != want {
					t.Fatalf("100-continue upload: %q, want %q", b, want)
				}
			})

			t.Run("slow client hits the read timeout", func(t *testing.T) {
				addr, shutdown := s.start(t, rt, nil, 500*time.Millisecond)
				defer func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					if err := shutdown(ctx); err != nil {
						t.Errorf("Shutdown: %v", err)
					}
				}()
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n") // and never the end
				start := time.Now()
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				io.Copy(io.Discard, c) // returns when the server closes
				if el := time.Since(start); el < 400*time.Millisecond || el > 5*time.Second {
					t.Fatalf("server closed the slow connection after %v, want about the 500ms read timeout", el)
				}
			})

			t.Run("shutdown with requests in flight", func(t *testing.T) {
				const n = 4
				before := inSlow.Load()
				var wg sync.WaitGroup
				results := make(chan string, n)
				for range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						resp, err := (&http.Client{Transport: &http.Transport{}}).Get(base + "/slow")
						if err != nil {
							results <- err.Error()
							return
						}
						b, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						results <- string(b)
					}()
				}
				// Shut down once all four are in the handler.
				for deadline := time.Now().Add(10 * time.Second); inSlow.Load()-before < n; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the requests never reached the handler")
					}
				}
				// The keep-alive connections of the earlier subtests are
				// still open and idle: Shutdown closes them, it does not
				// wait for them.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				start := time.Now()
				if err := shutdown(ctx); err != nil {
					t.Fatalf("Shutdown: %v", err)
				}
				if el := time.Since(start); el > 2*time.Second {
					t.Errorf("Shutdown took %v with idle connections open", el)
				}
				wg.Wait()
				close(results)
				for r := range results {
					if r != "slept" {
						t.Errorf("request in flight at Shutdown got %q", r)
					}
				}
				if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
					t.Error("still accepting after Shutdown")
				}
			})
		})
	}
}

// TLS through crypto/tls on the same connections.
func TestServersTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			rt := newRuntime(t)
			addr, shutdown := s.start(t, rt, &tls.Config{Certificates: []tls.Certificate{cert}}, 0)
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "faio.test"}}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			for i := range 3 {
				if got, want := get(t, client, fmt.Sprintf("https://%s/t%d", addr, i)), fmt.Sprintf("GET /t%d", i); got != want {
					t.Fatalf("got %q, want %q", got, want)
				}
			}
			tr.CloseIdleConnections()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := shutdown(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A header over MaxHeaderBytes gets 431; a malformed request 400.
func TestBadRequests(t *testing.T) {
	rt := newRuntime(t)
	ctx := runtime.WithRuntime(context.Background(), rt)
	ln, err := aio.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Handler: handler(), MaxHeaderBytes: 1024}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	for _, tc := range []struct{ req, status string }{
		{"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8000) + "\r\n\r\n", "431"},
		{"NOT A REQUEST\r\n\r\n", "400"},
	} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, tc.req)
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if !strings.Contains(line, tc.status) {
			t.Errorf("answer %q, want status %s", line, tc.status)
		}
	}
	srv.Shutdown(context.Background())
	if err := <-done; !errors.Is(err, ErrServerClosed) {
		t.Fatal(err)
	}
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
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
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// HEAD has no body, 204 has none, a handler's panic closes only its
// connection, a declared Content-Length is honoured, and a Flush sends
// the response chunked.
func TestResponseRules(t *testing.T) {
	rt := newRuntime(t)
	ctx := runtime.WithRuntime(context.Background(), rt)
	ln, err := aio.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logged atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/panic", func(w http.ResponseWriter, r *http.Request) { panic("handler bug") })
	mux.HandleFunc("/length", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "hello")
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "part one,")
		w.(http.Flusher).Flush()
		io.WriteString(w, " part two")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>hi</html>") })
	srv := &Server{Handler: mux, ErrorLog: func(string, ...any) { logged.Add(1) }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}

	resp, err := c.Head(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(b) != 0 {
		t.Errorf("HEAD: %d with %d body bytes", resp.StatusCode, len(b))
	}
	resp, err = c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "<html>hi</html>" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.ContentLength != 15 {
		t.Errorf("GET /: %q, type %q, length %d", b, resp.Header.Get("Content-Type"), resp.ContentLength)
	}
	resp, err = c.Get(base + "/nocontent")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("/nocontent: %d", resp.StatusCode)
	}
	if _, err := c.Get(base + "/panic"); err == nil {
		t.Error("a panicking handler's request got a response")
	}
	if logged.Load() == 0 {
		t.Error("the handler's panic was not logged")
	}
	if got := get(t, c, base+"/length"); got != "hello" {
		t.Errorf("/length: %q", got)
	}
	resp, err = c.Get(base + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "part one, part two" || len(resp.TransferEncoding) == 0 || resp.TransferEncoding[0] != "chunked" {
		t.Errorf("/stream: %q, transfer encoding %v", b, resp.TransferEncoding)
	}
	srv.Close()
	if err := <-done; !errors.Is(err, ErrServerClosed) {
		t.Fatal(err)
	}
}

// BenchmarkServe measures small keep-alive requests on one connection,
// answered by a handler like W9's (a shared Content-Type and
// Content-Length, a short body). The client writes a fixed request and
// reads the response without allocating: the allocations counted are the
// server's.
func BenchmarkServe(b *testing.B) {
	body := []byte("Hello, World!")
	contentType, contentLength := []string{"text/plain"}, []string{strconv.Itoa(len(body))}
	addr, _ := startFaio(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = contentType
		h["Content-Length"] = contentLength
		w.Write(body)
	}), nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET / HTTP/1.1\r\nHost: bench\r\n\r\n")
	buf := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		// The response ends with the body, which no header holds.
		for n := 0; !bytes.HasSuffix(buf[:n], body); {
			m, err := c.Read(buf[n:])
			if err != nil {
				b.Fatal(err)
			}
			n += m
		}
	}
}
