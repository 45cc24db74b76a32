package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/faio-go/faio"
	"github.com/faio-go/faio/modules/faiohttp"
	"github.com/valyala/fasthttp"
)

// W9: an HTTP/1.1 server on 127.0.0.1 answering every GET with a fixed
// text/plain body (W9-http-hello: "Hello, World!"; W9-http-16k: 16 KiB),
// Content-Length set, loaded over HTTPConns keep-alive connections by a
// separate process: wrk when Env.Wrk is set, else the program's own client
// (RunHTTPClient). Four servers take turns: faiohttp (faio-native),
// net/http over a faio listener (faio-adapter), net/http and fasthttp.
// Before the load, one probe request from this process checks the
// server's answer byte for byte.

// helloBody is W9-http-hello's response body, TechEmpower's plaintext one.
var helloBody = []byte("Hello, World!")

// body16k is W9-http-16k's response body: 256 lines of 64 bytes, each
// starting with its number, so a body that is cut, shifted or mixed up
// cannot pass for it.
var body16k = func() []byte {
	b := make([]byte, 0, 16<<10)
	for line := range 256 {
		b = fmt.Appendf(b, "%04x ", line)
		for i := 5; i < 63; i++ {
			b = append(b, 'a'+byte((line+i)%26))
		}
		b = append(b, '\n')
	}
	return b
}()

// httpWorkload is one W9 workload: its four servers, answering with body.
func httpWorkload(name string, body []byte) *Workload {
	w := &Workload{ID: "W9", Name: name, Unit: "one request", Target: Target{MaxRatio: 1.0}, body: body}
	w.impls = []implRun{
		{FaioNative, Faio, func(env *Env) (Measurement, error) { return httpFaioNative(env, w) }},
		{FaioAdapter, Faio, func(env *Env) (Measurement, error) { return httpFaioAdapter(env, w) }},
		{NetHTTP, Goroutines, func(env *Env) (Measurement, error) { return httpNetHTTP(env, w) }},
		{FastHTTP, Goroutines, func(env *Env) (Measurement, error) { return httpFastHTTP(env, w) }},
	}
	return w
}

// textPlain is the Content-Type of every W9 response.
var (
	textPlain      = []string{"text/plain"}
	textPlainBytes = []byte("text/plain")
)

// httpHandler answers every request with body and counts the requests in
// served. Its header values are made once, so answering allocates nothing
// in the handler itself (the servers do what they do).
type httpHandler struct {
	body   []byte
	length []string // Content-Length
	served atomic.Int64
}

func newHTTPHandler(body []byte) *httpHandler {
	return &httpHandler{body: body, length: []string{strconv.Itoa(len(body))}}
}

// ServeHTTP is the handler of faiohttp and net/http. The header values
// are shared, never modified, slices: both servers only read them.
func (h *httpHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.served.Add(1)
	hdr := w.Header()
	hdr["Content-Type"] = textPlain
	hdr["Content-Length"] = h.length
	w.Write(h.body)
}

// serveFast is the fasthttp handler; fasthttp sets Content-Length, and
// SetBodyRaw sends body without copying it.
func (h *httpHandler) serveFast(ctx *fasthttp.RequestCtx) {
	h.served.Add(1)
	ctx.Response.Header.SetContentTypeBytes(textPlainBytes)
	ctx.Response.SetBodyRaw(h.body)
}

// httpServer is a started W9 server: serve runs it until shutdown (or
// closeAll, after a shutdown that timed out; nil if the server has none)
// ends it.
type httpServer struct {
	addr     string
	served   *atomic.Int64
	serve    func() error
	shutdown func(context.Context) error
	closeAll func() error
}

// httpStopTimeout bounds a server's graceful shutdown; the clients have
// closed their connections by then, so it takes far less.
const httpStopTimeout = 10 * time.Second

// run serves the load of w and stops the server.
func (s httpServer) run(env *Env, w *Workload) (Measurement, error) {
	served := make(chan error, 1)
	go func() { served <- s.serve() }()
	m, err := loadHTTP(env, w, s.addr, s.served)
	ctx, cancel := context.WithTimeout(context.Background(), httpStopTimeout)
	defer cancel()
	serr := s.shutdown(ctx)
	if serr != nil && s.closeAll != nil {
		s.closeAll()
	}
	rerr := <-served
	if errors.Is(rerr, http.ErrServerClosed) {
		rerr = nil
	}
	if serr != nil || rerr != nil {
		return Measurement{}, errors.Join(err, fmt.Errorf("bench: %s server: %w", w.Label(), errors.Join(serr, rerr)))
	}
	return m, err
}

// httpFaioNative: faiohttp.Server on a faio listener, each connection a
// task on a runtime with env.Workers workers.
func httpFaioNative(env *Env, w *Workload) (Measurement, error) {
	var m Measurement
	err := withRuntime(env, func(rt *faio.Runtime) error {
		ctx := faio.WithRuntime(context.Background(), rt)
		ln, err := faio.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		h := newHTTPHandler(w.body)
		srv := &faiohttp.Server{Handler: h}
		m, err = httpServer{
			addr:     ln.Addr().String(),
			served:   &h.served,
			serve:    func() error { return srv.Serve(ctx, ln) },
			shutdown: srv.Shutdown,
			closeAll: srv.Close,
		}.run(env, w)
		return err
	})
	return m, err
}

// httpFaioAdapter: net/http's http.Server on the faio listener's
// net.Listener adapter: a goroutine per connection, its reads and writes
// done by the runtime's tasks.
func httpFaioAdapter(env *Env, w *Workload) (Measurement, error) {
	var m Measurement
	err := withRuntime(env, func(rt *faio.Runtime) error {
		ln, err := faio.Listen(faio.WithRuntime(context.Background(), rt), "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		h := newHTTPHandler(w.body)
		srv := &http.Server{Handler: h}
		m, err = httpServer{
			addr:     ln.Addr().String(),
			served:   &h.served,
			serve:    func() error { return srv.Serve(ln.NetListener()) },
			shutdown: srv.Shutdown,
			closeAll: srv.Close,
		}.run(env, w)
		return err
	})
	return m, err
}

// httpNetHTTP: net/http's http.Server on a net listener.
func httpNetHTTP(env *Env, w *Workload) (Measurement, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Measurement{}, err
	}
	h := newHTTPHandler(w.body)
	srv := &http.Server{Handler: h}
	return httpServer{
		addr:     ln.Addr().String(),
		served:   &h.served,
		serve:    func() error { return srv.Serve(ln) },
		shutdown: srv.Shutdown,
		closeAll: srv.Close,
	}.run(env, w)
}

// httpFastHTTP: fasthttp's Server on a net listener, without its Server
// header (the others send none).
func httpFastHTTP(env *Env, w *Workload) (Measurement, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Measurement{}, err
	}
	h := newHTTPHandler(w.body)
	srv := &fasthttp.Server{Handler: h.serveFast, NoDefaultServerHeader: true}
	return httpServer{
		addr:     ln.Addr().String(),
		served:   &h.served,
		serve:    func() error { return srv.Serve(ln) },
		shutdown: srv.ShutdownWithContext,
	}.run(env, w)
}

// loadHTTP checks the server at addr with one probe request, then loads
// it with wrk or the own client and validates the outcome against the
// requests the server counted.
func loadHTTP(env *Env, w *Workload, addr string, served *atomic.Int64) (Measurement, error) {
	if err := probeHTTP(addr, w.body); err != nil {
		return Measurement{}, fmt.Errorf("bench: %s probe request: %w", w.Label(), err)
	}
	if env.Wrk != "" {
		r, err := runWrk(env, addr)
		if err != nil {
			return Measurement{}, err
		}
		return wrkResult(env.Sizes, w.body, r, served.Load()-1)
	}
	r, _, err := clientProcess(env, env.Sizes, "W9 client", "-http-load", addr, "-w", w.Label())
	if err != nil {
		return Measurement{}, err
	}
	return httpClientResult(env.Sizes, r, served.Load()-1)
}

// httpClientResult checks the own client's report: every timed request
// done (each response was checked by the client), and the server answered
// exactly those and the warm-up requests.
func httpClientResult(s Sizes, r ClientReport, served int64) (Measurement, error) {
	requests := int64(s.HTTPConns) * int64(s.HTTPRequests)
	err := errors.Join(
		checkEqual("client requests", r.RoundTrips, requests),
		checkEqual("requests served", served, requests+int64(s.HTTPConns)),
	)
	if err != nil {
		return Measurement{}, err
	}
	m := r.measurement()
	m.Client = HTTPClientOwn
	return m, nil
}
