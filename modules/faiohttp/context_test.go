package faiohttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// A request's context ends when the client goes away while the handler
// runs, as net/http's does: after a close or a reset, with or without a
// body the handler read first, and for a faio call given the context as
// for a select on Done. Before, it ended only when the handler returned,
// so a handler waiting for a client that had left waited on.
func TestRequestContextEndsWhenTheClientGoes(t *testing.T) {
	type outcome struct {
		path string
		err  error
	}
	seen := make(chan outcome, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/select", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			seen <- outcome{r.URL.Path, r.Context().Err()}
		case <-time.After(10 * time.Second):
			seen <- outcome{r.URL.Path, errors.New("still waiting 10 s after the client left")}
		}
	})
	mux.HandleFunc("/sleep", func(w http.ResponseWriter, r *http.Request) {
		err := runtime.Sleep(r.Context(), 10*time.Second)
		seen <- outcome{r.URL.Path, err}
	})
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		if b, err := io.ReadAll(r.Body); err != nil || len(b) != 5 {
			seen <- outcome{r.URL.Path, fmt.Errorf("body %q, %v", b, err)}
			return
		}
		select {
		case <-r.Context().Done():
			seen <- outcome{r.URL.Path, r.Context().Err()}
		case <-time.After(10 * time.Second):
			seen <- outcome{r.URL.Path, errors.New("still waiting 10 s after the client left")}
		}
	})
	addr, _ := startFaio(t, mux, nil)
	for _, path := range []string{"/select", "/sleep", "/upload"} {
		for _, reset := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reset=%v", path, reset), func(t *testing.T) {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				req := "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"
				if path == "/upload" {
					req = "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
				}
				io.WriteString(c, req)
				// The handler is waiting by now, or soon: the close
				// may come before it asks for Done, or after.
				time.Sleep(50 * time.Millisecond)
				if reset {
					c.(*net.TCPConn).SetLinger(0)
				}
				c.Close()
				select {
				case o := <-seen:
					if !errors.Is(o.err, context.Canceled) {
						t.Fatalf("%s ended with %v, want context.Canceled", o.path, o.err)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("the handler never ended")
				}
			})
		}
	}
}

// The watch for the client does not take what the client sends next: a
// request pipelined behind one whose handler waits on Done leaves that
// handler alone and is served after it, whole; and handlers that ask for
// Done and return at once, on a kept-alive connection, leave each next
// request to be read as usual.
func TestRequestContextWatchKeepsTheNextRequest(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/wait", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			http.Error(w, "cancelled: "+r.Context().Err().Error(), http.StatusInternalServerError)
		case <-time.After(200 * time.Millisecond):
			io.WriteString(w, "waited")
		}
	})
	mux.HandleFunc("/ask", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			http.Error(w, "cancelled", http.StatusInternalServerError)
		default:
			io.WriteString(w, r.URL.Query().Get("i"))
		}
	})
	addr, _ := startFaio(t, mux, nil)

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /wait HTTP/1.1\r\nHost: x\r\n\r\nPOST /ask?i=2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	for i, want := range []string{"waited", "2"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i+1, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(b) != want {
			t.Fatalf("response %d: %d %q, want 200 %q", i+1, resp.StatusCode, b, want)
		}
	}

	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	for i := range 50 {
		path := fmt.Sprintf("http://%s/ask?i=%d", addr, i)
		resp, err := client.Post(path, "text/plain", strings.NewReader("body"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != fmt.Sprint(i) {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, b)
		}
	}
}

// Done may be called from any goroutine, at any time, also while and after
// the handler returns: a goroutine the handler started asks for it while
// the request ends (the watch may be starting as end stops it). Under
// -race this checks requestContext's locking; every request must still be
// served on the kept-alive connection, and every context end.
func TestRequestContextDoneFromOtherGoroutines(t *testing.T) {
	ended := make(chan struct{}, 200)
	addr, _ := startFaio(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		go func() {
			for range 3 {
				<-ctx.Done() // returns once the handler has returned
			}
			ended <- struct{}{}
		}()
		io.WriteString(w, r.URL.Query().Get("i"))
	}), nil)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	const requests = 200
	for i := range requests {
		resp, err := client.Get(fmt.Sprintf("http://%s/?i=%d", addr, i))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != fmt.Sprint(i) {
			t.Fatalf("request %d: %q", i, b)
		}
	}
	for i := range requests {
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d request contexts never ended", requests-i, requests)
		}
	}
}
