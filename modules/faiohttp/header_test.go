package faiohttp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/aio"
	"github.com/faio-go/faio/modules/runtime"
)

// headerCases are handlers whose responses must carry the same status
// line, headers and body from faiohttp as from net/http.
var headerCases = map[string]http.HandlerFunc{
	"/plain": func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") },
	"/html":  func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html><p>hi</p></html>") },
	"/typed": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
	},
	"/dated": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", "Mon, 02 Jan 2006 15:04:05 GMT")
		io.WriteString(w, "old")
	},
	"/empty":  func(w http.ResponseWriter, r *http.Request) {},
	"/teapot": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) },
	"/length": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "3")
		io.WriteString(w, "abc")
	},
	"/multi": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("X-Multi", "one")
		w.Header().Add("X-Multi", "two")
		io.WriteString(w, "m")
	},
	"/chunked": func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 10000))
	},
	"/large": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "16384")
		w.Write(bytes.Repeat([]byte("L"), 16384))
	},
	"/buffered-then-large": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "20000")
		w.Write(bytes.Repeat([]byte("a"), 3000))
		w.Write(bytes.Repeat([]byte("b"), 17000))
	},
	"/sniff-split": func(w http.ResponseWriter, r *http.Request) {
		// The type is sniffed from what goes out first, across writes.
		io.WriteString(w, "<")
		io.WriteString(w, "html><body>"+strings.Repeat("x", 17000)+"</body></html>")
	},
	// An encoded body is not sniffed: no Content-Type (it had one).
	"/encoded": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "x-private")
		io.WriteString(w, "<html><body>not html once decoded</body></html>")
	},
	"/close": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	},
	// A handler's own Transfer-Encoding: net/http chunks the body (and
	// drops a Content-Length), or for "identity" sends it up to the
	// close. It went out with a Content-Length as well, the body
	// unchunked (found by a reviewer).
	"/te-chunked": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "chunked")
		io.WriteString(w, "hello")
	},
	"/te-chunked-length": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "chunked")
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "hello")
	},
	"/te-chunked-length-large": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "chunked")
		w.Header().Set("Content-Length", "20000")
		w.Write(bytes.Repeat([]byte("c"), 20000))
	},
	"/te-identity": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "identity")
		io.WriteString(w, "until the close")
	},
	// The header is frozen at WriteHeader, explicit or implied by the
	// first Write: what the handler changes afterwards, even a value in
	// place, is not sent. It was, up to the header's actual send (found
	// by a reviewer).
	"/late-header": func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Before", "kept")
		h.Set("X-Changed", "before")
		w.WriteHeader(http.StatusAccepted)
		h.Set("X-After", "dropped")
		h.Del("X-Before")
		h["X-Changed"][0] = "after"
		h.Set("Content-Type", "application/late")
		io.WriteString(w, "late")
	},
	"/late-after-write": func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		io.WriteString(w, "first")
		h.Set("X-After", "dropped")
		h.Set("Content-Length", "5")
	},
	"/late-large": func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("g"), 10000))
		w.Header().Set("X-After", "dropped")
		w.Write(bytes.Repeat([]byte("h"), 10000))
	},
	// Trailers, as net/http sends them: declared in "Trailer" (but for
	// the ones a trailer must not be), or set with http.TrailerPrefix,
	// before or after WriteHeader; either forces a chunked body.
	"/trailer-declared": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum, Cache-Control")
		w.Header().Add("Trailer", "X-Count")
		io.WriteString(w, "counted")
		w.Header().Set("X-Sum", "42")
		w.Header().Set("X-Count", "1")
		w.Header().Set("Cache-Control", "no-store")
	},
	"/trailer-prefix": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(http.TrailerPrefix+"X-Early", "set before")
		io.WriteString(w, "small")
		w.Header().Set(http.TrailerPrefix+"X-Late", "set after")
	},
	// An informational response is sent with the header as it is, but
	// for Content-Length and Transfer-Encoding, which it cannot have
	// (it went with them; found by a reviewer). http.ReadResponse
	// returns it as the response, and the final one as the next.
	"/early-hints": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.Header().Set("Content-Length", "5")
		w.Header().Set("Transfer-Encoding", "chunked")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Transfer-Encoding")
		io.WriteString(w, "hints")
	},
	"/trailer-prefix-late": func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "streamed")
		w.(http.Flusher).Flush()
		w.Header().Set(http.TrailerPrefix+"X-Late", "set after the flush")
	},
}

// The headers faiohttp writes itself (Date, Content-Type, Content-Length,
// Transfer-Encoding) and the ones it leaves to the handler come out as
// net/http's do, once each, for GET and HEAD; Date is the current time
// unless the handler set one.
func TestHeadersMatchNetHTTP(t *testing.T) {
	rt := newRuntime(t)
	ctx := runtime.WithRuntime(context.Background(), rt)
	mux := http.NewServeMux()
	for path, h := range headerCases {
		mux.HandleFunc(path, h)
	}
	fln, err := aio.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fsrv := &Server{Handler: mux, ErrorLog: t.Logf}
	fdone := make(chan error, 1)
	go func() { fdone <- fsrv.Serve(ctx, fln) }()
	nln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Quiet: /te-chunked-length makes it log, as it should.
	nsrv := &http.Server{Handler: mux, ErrorLog: log.New(io.Discard, "", 0)}
	ndone := make(chan error, 1)
	go func() { ndone <- nsrv.Serve(nln) }()

	for path := range headerCases {
		for _, method := range []string{"GET", "HEAD"} {
			want, err := rawRequest(nln.Addr().String(), method, path)
			if err != nil {
				t.Fatalf("net/http %s %s: %v", method, path, err)
			}
			got, err := rawRequest(fln.Addr().String(), method, path)
			if err != nil {
				t.Errorf("faiohttp %s %s: %v", method, path, err)
				continue
			}
			if got.status != want.status || got.body != want.body || !reflect.DeepEqual(got.header, want.header) ||
				got.framing != want.framing || !reflect.DeepEqual(got.trailer, want.trailer) || got.next != want.next {
				t.Errorf("%s %s:\nfaiohttp %q, %d body bytes, %v, %s, trailer %v, then %q\nnet/http %q, %d body bytes, %v, %s, trailer %v, then %q", method, path,
					got.status, len(got.body), got.header, got.framing, got.trailer, got.next,
					want.status, len(want.body), want.header, want.framing, want.trailer, want.next)
			}
			if path == "/dated" {
				if d := got.dates; len(d) != 1 || d[0] != "Mon, 02 Jan 2006 15:04:05 GMT" {
					t.Errorf("%s /dated: Date %q, want the handler's, once", method, d)
				}
				continue
			}
			if len(want.dates) == 0 { // an informational response
				if len(got.dates) != 0 {
					t.Errorf("%s %s: Date %q, want none", method, path, got.dates)
				}
				continue
			}
			if d := got.dates; len(d) != 1 {
				t.Errorf("%s %s: Date %q, want one", method, path, d)
			} else if at, err := http.ParseTime(d[0]); err != nil || time.Since(at).Abs() > 5*time.Second {
				t.Errorf("%s %s: Date %q (%v), want now", method, path, d[0], err)
			}
		}
	}
	fsrv.Close()
	nsrv.Close()
	if err := <-fdone; !errors.Is(err, ErrServerClosed) {
		t.Error(err)
	}
	if err := <-ndone; !errors.Is(err, http.ErrServerClosed) {
		t.Error(err)
	}
}

// rawResponse is a response as it came over the wire: the status line,
// the header without Date, the Date values, the body, how it was framed
// (http.ReadResponse takes Transfer-Encoding, and Content-Length when
// chunked, out of the header), the trailer, and what a second request on
// the same connection got.
type rawResponse struct {
	status  string
	header  http.Header
	dates   []string
	body    string
	framing string
	trailer http.Header
	next    string
}

// rawRequest sends an HTTP/1.1 request on a connection of its own and
// reads the response with http.ReadResponse, which keeps repeated headers;
// unless the response closes the connection, a GET /plain follows on it,
// which stray or missing body bytes would break.
func rawRequest(addr, method, path string) (rawResponse, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return rawResponse{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: test\r\n\r\n", method, path); err != nil {
		return rawResponse{}, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		return rawResponse{}, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return rawResponse{}, err
	}
	dates := resp.Header.Values("Date")
	resp.Header.Del("Date")
	r := rawResponse{status: resp.Status, header: resp.Header, dates: dates, body: string(body),
		framing: fmt.Sprintf("length %d, transfer encoding %v, close %v", resp.ContentLength, resp.TransferEncoding, resp.Close),
		trailer: resp.Trailer}
	if resp.Close {
		return r, nil
	}
	if _, err := io.WriteString(c, "GET /plain HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		return rawResponse{}, err
	}
	next, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		r.next = "error: " + err.Error()
		return r, nil
	}
	nb, err := io.ReadAll(next.Body)
	next.Body.Close()
	r.next = fmt.Sprintf("%s %q %v", next.Status, nb, err)
	return r, nil
}

// Once a send of the response has failed, every later Write of the
// handler fails too, as with net/http, even one small enough to be
// buffered, and the connection is not reused.
func TestWriteErrorIsSticky(t *testing.T) {
	rt := newRuntime(t)
	ctx := runtime.WithRuntime(context.Background(), rt)
	ln, err := aio.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan [2]error, 1)
	srv := &Server{
		// A deadline already past when the response is written.
		WriteTimeout: time.Nanosecond,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Long enough for the deadline's timer to have fired on a
			// busy machine too.
			runtime.Sleep(r.Context(), 50*time.Millisecond)
			w.Header().Set("Content-Length", "16389")
			_, err1 := w.Write(bytes.Repeat([]byte("x"), 16384))
			_, err2 := w.Write([]byte("small"))
			errs <- [2]error{err1, err2}
		}),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-errs:
		if e[0] == nil || e[1] == nil {
			t.Errorf("Write of the body = %v, then a small Write = %v; want both to fail", e[0], e[1])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not finish")
	}
	srv.Close()
	if err := <-done; !errors.Is(err, ErrServerClosed) {
		t.Error(err)
	}
}
