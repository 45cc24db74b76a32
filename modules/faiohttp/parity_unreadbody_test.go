package faiohttp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A 304 (or 204) whose handler had set a Content-Length keeps its
// connection, as net/http's does: it has no body to fall short of the
// declared length. faiohttp closed the connection without saying so, and
// the client's next request on it was lost.
func TestNoBodyStatusWithContentLengthKeepsConnection(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1234")
		w.Header().Set("Etag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		io.WriteString(w, strings.Repeat("x", 1234))
	})
	bothServers(t, "two conditional GETs on one connection", h, nil, func(addr string) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err.Error()
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(c)
		var got []string
		for range 2 {
			if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\nIf-None-Match: \"v1\"\r\n\r\n"); err != nil {
				return strings.Join(append(got, "write: "+err.Error()), "; ")
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return strings.Join(append(got, "read: "+err.Error()), "; ")
			}
			resp.Body.Close()
			got = append(got, fmt.Sprintf("%d close=%v", resp.StatusCode, resp.Close))
		}
		return strings.Join(got, "; ")
	})
}

// A handler that ignores a request body and streams a response larger than
// the buffers between server and client: the body's rest is read before
// the header goes out, as net/http does (Go issue 15527), so a client that
// sends its whole request before reading (Python's http.client, say) gets
// its response. faiohttp read the rest only for a response still whole in
// its buffer, and both sides waited for good.
func TestUnreadBodyIsReadBeforeAStreamedResponse(t *testing.T) {
	const respSize = 16 << 20
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("r", 64<<10))
		for n := 0; n < respSize; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	for _, size := range []int{200 << 10, maxPostHandlerRead + 1} {
		bothServers(t, fmt.Sprintf("ignored %d-byte body, 16 MiB response", size), h, nil, func(addr string) string {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return err.Error()
			}
			defer c.Close()
			c.(*net.TCPConn).SetWriteBuffer(8 << 10)
			c.SetDeadline(time.Now().Add(5 * time.Second))
			// The body goes from its own goroutine when it is too large
			// to be read for the server: that connection then closes
			// after the response, which says so.
			body := strings.Repeat("b", size)
			go fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return "response: " + err.Error()
			}
			n, err := io.Copy(io.Discard, resp.Body)
			return fmt.Sprintf("close=%v, %d bytes, err %v", resp.Close, n, err)
		})
	}
}

// A 304 drops the handler's Content-Type, and an informational response to
// an HTTP/1.0 request names HTTP/1.0 in its status line, as net/http's do.
func TestNoBodyHeadersAndInformationalStatusLine(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/304" {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.WriteHeader(http.StatusEarlyHints)
		io.WriteString(w, "ok")
	})
	for _, req := range []string{"GET /304 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", "GET /103 HTTP/1.0\r\n\r\n"} {
		bothServers(t, req, h, nil, func(addr string) string {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return err.Error()
			}
			defer c.Close()
			io.WriteString(c, req)
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			b, _ := io.ReadAll(c)
			raw := string(b)
			first, _, _ := strings.Cut(raw, "\r\n")
			return fmt.Sprintf("status line %q, Content-Type in a 304: %v", first, strings.HasPrefix(raw, "HTTP/1.1 304") && strings.Contains(raw, "Content-Type"))
		})
	}
}
