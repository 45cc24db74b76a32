// Package faiohttp is an HTTP/1.1 server that runs each connection as a
// faio task and calls a standard http.Handler inside it. Requests are
// parsed by net/http's own http.ReadRequest over a bufio.Reader on the
// connection, so keep-alive, pipelining, chunked bodies and the request's
// header syntax are net/http's (ReadRequest itself refuses a second Host
// header). The server then refuses, with net/http's status and text, what
// net/http's server refuses after parsing: a protocol other than HTTP/1.x,
// an HTTP/1.1 request without a Host header, a malformed Host, an invalid
// header name or value. "OPTIONS *" the server answers itself, as
// net/http's does by default (there is no DisableGeneralOptionsHandler).
// On the response side, as in net/http, a handler's own
// Transfer-Encoding frames the body, the header is frozen at WriteHeader
// and trailers are sent. The response is an http.Hijacker, and
// http.ResponseController's Flush, Hijack, SetReadDeadline and
// SetWriteDeadline work as with net/http; EnableFullDuplex returns
// http.ErrNotSupported. A hijacked connection is the handler's: a task
// that reads it suspends, and a plain goroutine may use it too.
//
// A request's Context ends when the handler returns, and when the client
// closes or resets the connection while the handler runs, once the
// request's body has been read, as net/http's does. Watching for the
// client costs a goroutine and a receive per request (in Go's netpoller,
// so that a handler waiting for Done in plain Go, which holds its worker,
// still sees the client go), so it starts only when something asks for
// the context's Done (a select on it, a context derived with a cancel or a
// timeout, a faio call that may wait), and only for a request still
// running 1 to 2 ms later: a handler that never looks, or ends sooner,
// pays next to nothing. Over TLS a client that closes with a
// close_notify alert is taken for one that sends its next request, so its
// request's context does not end then. The connection's I/O runs on the
// io_uring of the task's worker, the task suspending while it waits.
//
//	srv := &faiohttp.Server{Handler: mux, ReadTimeout: 10 * time.Second}
//	err := srv.Serve(ctx, ln) // ln from aio.Listen; ctx a task's or runtime.WithRuntime's
//
// # What a handler must not do
//
// A handler runs on a worker. A call that blocks in plain Go (a Go mutex
// held elsewhere, a Go channel, time.Sleep, a blocking syscall, a database
// driver built on package net) holds that worker, and the connections
// queued on it wait: the runtime's watchdog notices a worker stuck for
// Config.StallThreshold (10 ms by default) with tasks waiting and wakes
// another worker to take them, so the others see that much extra latency,
// but the completions of the stuck worker's ring wait until the call
// returns. With every worker held so, nothing else runs: Shutdown cannot
// close the idle connections until a call returns. Waiting for the client
// with <-r.Context().Done() holds the worker too, but ends when the client
// goes whatever holds the workers: the watch for the client waits in Go's
// netpoller. Use faio's primitives (faio.Sleep, faio.Mutex, faio channels,
// aio I/O), or run the blocking call with faio.Blocking (runtime.Blocking),
// which runs it on a goroutine while the task suspends:
//
//	res, err := faio.Blocking(r.Context(), func() (result, error) { // github.com/faio-go/faio
//		return blockingCall()
//	})
package faiohttp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/faio-go/faio/modules/aio"
	"github.com/faio-go/faio/modules/runtime"
)

// Server serves HTTP/1.1 on faio connections. Its zero value serves
// http.DefaultServeMux with no timeouts; a Server must not be copied after
// first use.
type Server struct {
	// Handler answers the requests (http.DefaultServeMux if nil).
	Handler http.Handler
	// TLSConfig, if set, makes every connection TLS (crypto/tls over the
	// faio connection, the handshake done in the connection's task).
	// Serve takes a clone of it when it starts, as net/http's ServeTLS
	// does, so changes made after that do not reach its connections.
	// The clone's NextProtos offers "http/1.1" and never "h2": faiohttp
	// speaks HTTP/1.1 only, and a client that had agreed on h2 could
	// not read its answers.
	TLSConfig *tls.Config
	// ReadTimeout bounds reading one request, body included, from the
	// first byte of its header (a new connection's first request: from
	// the connection's start); ReadHeaderTimeout the header alone
	// (zero: ReadTimeout). Zero or negative: no bound. A TLS handshake
	// is bounded by the shortest positive one of these and WriteTimeout,
	// as in net/http.
	ReadTimeout, ReadHeaderTimeout time.Duration
	// WriteTimeout bounds writing one response.
	WriteTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection (zero: ReadTimeout; negative: no bound). Without one,
	// that wait is not bounded: ReadHeaderTimeout starts with the
	// request's first byte, as in net/http.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and header (default
	// http.DefaultMaxHeaderBytes, 1 MiB); a larger one gets 431.
	MaxHeaderBytes int
	// ErrorLog receives accept and handler-panic errors (default: the
	// standard logger).
	ErrorLog func(format string, args ...any)

	mu        sync.Mutex
	listeners map[*aio.Listener]struct{}
	conns     map[*conn]struct{}
	shutdown  atomic.Bool
	done      chan struct{} // closed when the last connection is gone after Shutdown
}

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = http.ErrServerClosed

// Serve accepts connections on ln and serves each in a task of its own,
// spawned under ctx, until Shutdown or Close (then it returns
// ErrServerClosed), ctx is cancelled (then it returns ctx's error), or ln
// fails for good (closed, not listening, a nil or zero Listener: that
// error). Accept errors that pass, such as running out of descriptors, are
// logged and retried, waiting from 5 ms up to 1 s. Serve always closes ln,
// as net/http's Serve closes its listener. Called from a task, the accept
// loop runs in that task; from a plain goroutine, ctx must name a runtime
// (runtime.WithRuntime) and Serve blocks until the loop and every
// connection have ended.
func (s *Server) Serve(ctx context.Context, ln *aio.Listener) error {
	if ctx == nil {
		return fmt.Errorf("faiohttp: Serve: %w", runtime.ErrNilContext)
	}
	if runtime.Current(ctx) == nil {
		rt := runtime.RuntimeOf(ctx)
		if rt == nil {
			return fmt.Errorf("faiohttp: Serve: %w", runtime.ErrNoRuntime)
		}
		// The loop and the connections' tasks end with ctx, too:
		// BlockOn's task does not derive from ctx. Not when the loop
		// returns: after Shutdown, the connections finish their requests.
		var cancel context.CancelFunc = func() {}
		stop := func() bool { return false }
		_, err := runtime.BlockOn(rt, func(tctx context.Context) (struct{}, error) {
			var sctx context.Context
			sctx, cancel = context.WithCancel(tctx)
			stop = context.AfterFunc(ctx, cancel)
			return struct{}{}, s.serve(sctx, ln)
		})
		stop()
		cancel()
		if err != nil && ctx.Err() != nil && !errors.Is(err, ErrServerClosed) {
			return ctx.Err()
		}
		return err
	}
	return s.serve(ctx, ln)
}

func (s *Server) serve(ctx context.Context, ln *aio.Listener) error {
	// Closed whichever way the loop ends: left open after ctx's end, it
	// took connections into its backlog that nobody would answer (found
	// by a reviewer). Waited for even then, so that a dial after Serve
	// returned is refused.
	defer ln.Close(context.WithoutCancel(ctx))
	s.mu.Lock()
	if s.shutdown.Load() {
		s.mu.Unlock()
		return ErrServerClosed
	}
	if s.listeners == nil {
		s.listeners = map[*aio.Listener]struct{}{}
		s.conns = map[*conn]struct{}{}
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	tlsConf := s.tlsConfig()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()
	// The wait after a failed accept (no descriptor left, say): from
	// 5 ms, doubling up to 1 s, as net/http's; it retried every 5 ms,
	// logging some 200 lines a second.
	var backoff time.Duration
	for {
		c, err := ln.Accept(ctx)
		if err != nil {
			if s.shutdown.Load() {
				return ErrServerClosed
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if acceptFatal(err) {
				return err
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.logf("faiohttp: accept error: %v; retrying in %v", err, backoff)
			if err := runtime.Sleep(ctx, backoff); err != nil {
				return err
			}
			continue
		}
		backoff = 0
		cn := &conn{srv: s, nc: c.NetConn(), tls: tlsConf, start: time.Now()}
		if !s.track(cn, true) {
			cn.nc.Close()
			return ErrServerClosed
		}
		runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			defer s.track(cn, false)
			cn.serve(ctx)
			return struct{}{}, nil
		})
	}
}

// tlsConfig returns the Config that one Serve's connections use: nil
// without TLSConfig, else a clone of it whose NextProtos has "http/1.1"
// and not "h2" (see TLSConfig).
func (s *Server) tlsConfig() *tls.Config {
	if s.TLSConfig == nil {
		return nil
	}
	conf := s.TLSConfig.Clone()
	protos := make([]string, 0, len(conf.NextProtos)+1)
	for _, p := range conf.NextProtos {
		if p != "h2" {
			protos = append(protos, p)
		}
	}
	if !slices.Contains(protos, "http/1.1") {
		protos = append(protos, "http/1.1")
	}
	conf.NextProtos = protos
	return conf
}

// acceptFatal reports whether err, from Accept, says that the listener
// itself cannot accept: closed, not a listening socket, a nil or zero
// Listener, a closed runtime. Serve returns those; it retried them every
// second for good (found by a reviewer). Anything else is retried after a
// wait: no descriptor or memory left (net/http's temporary errors), and
// the errors of a connection that failed in the backlog, which accept(2)
// passes on and its manual says to retry.
func acceptFatal(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrInvalid) ||
		errors.Is(err, syscall.EBADF) || errors.Is(err, syscall.ENOTSOCK) ||
		errors.Is(err, syscall.EFAULT) || errors.Is(err, runtime.ErrClosed) ||
		errors.Is(err, runtime.ErrNilContext)
}

// track adds or removes a connection; adding fails after Shutdown.
func (s *Server) track(c *conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.shutdown.Load() {
			return false
		}
		s.conns[c] = struct{}{}
		return true
	}
	delete(s.conns, c)
	if s.shutdown.Load() && len(s.conns) == 0 && s.done != nil {
		close(s.done)
		s.done = nil
	}
	return true
}

// Shutdown stops accepting, closes idle connections, lets the requests in
// flight finish (their connections close after the response, which says
// so) and waits for them until ctx ends; then it returns ctx.Err() and the
// connections still open are left to finish. As with net/http, a
// connection is idle while it waits for a request and while it reads the
// header of a request after its first; one reading its first request's
// header (or its TLS handshake, once the first byte has come) is closed
// once it is 5 s old. Called from a task with its context (or one
// derived from it), the task suspends.
func (s *Server) Shutdown(ctx context.Context) error {
	lns, conns, done := s.stop(true)
	for _, ln := range lns {
		ln.Close(context.Background())
	}
	for {
		// The time until the youngest connection reading its first
		// header is due, if any is left.
		var next time.Duration
		now := time.Now()
		for _, c := range conns {
			if d := c.closeIfIdle(now); d > 0 && (next == 0 || d < next) {
				next = d
			}
		}
		if next == 0 {
			return waitDone(ctx, done, nil)
		}
		t := time.NewTimer(next)
		err := waitDone(ctx, done, t.C)
		t.Stop()
		if err != errTick {
			return err
		}
		conns = s.openConns()
	}
}

// errTick is waitDone's error when tick fired first.
var errTick = errors.New("faiohttp: tick")

// waitDone waits until done is closed, ctx ends or tick fires. A task
// waits in Blocking, suspended: in a select it held its worker, and with
// it the requests it waited for that ran there (on a runtime of one
// worker, Shutdown from a task waited for its ctx, whatever the requests
// took).
func waitDone(ctx context.Context, done <-chan struct{}, tick <-chan time.Time) error {
	select {
	case <-done:
		return nil
	default:
	}
	_, err := runtime.Blocking(ctx, func() (struct{}, error) {
		select {
		case <-done:
			return struct{}{}, nil
		case <-ctx.Done():
			return struct{}{}, ctx.Err()
		case <-tick:
			return struct{}{}, errTick
		}
	})
	return err
}

// openConns returns the connections open.
func (s *Server) openConns() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

// Close closes the listeners and every connection at once.
func (s *Server) Close() error {
	lns, conns, _ := s.stop(false)
	for _, ln := range lns {
		ln.Close(context.Background())
	}
	for _, c := range conns {
		c.nc.Close()
	}
	return nil
}

// stop marks the server shut down and returns what is open. s.mu guards
// only the maps, never I/O: a task waiting for a Go mutex blocks its
// worker, and a close under the lock could wait for a completion on that
// very worker's ring. With wait set it also returns a channel closed once
// no connection is left, the same one for every Shutdown under way (each
// Shutdown making its own, an earlier one's was never closed: found by a
// reviewer).
func (s *Server) stop(wait bool) ([]*aio.Listener, []*conn, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutdown.Store(true)
	var done chan struct{}
	if wait {
		switch {
		case len(s.conns) == 0:
			done = make(chan struct{})
			close(done)
		case s.done != nil:
			done = s.done
		default:
			done = make(chan struct{})
			s.done = done
		}
	}
	lns := make([]*aio.Listener, 0, len(s.listeners))
	for ln := range s.listeners {
		lns = append(lns, ln)
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return lns, conns, done
}

func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog(format, args...)
		return
	}
	defaultLog(format, args...)
}

// conn is one connection's state, owned by its task.
type conn struct {
	srv    *Server
	nc     *aio.NetConn
	tls    *tls.Config   // Serve's clone of srv.TLSConfig; nil: plain HTTP
	remote string        // nc's remote address, every request's RemoteAddr
	rwc    net.Conn      // nc, or the TLS connection over it
	lr     *limitReader  // bounds the header read
	br     *bufio.Reader // over lr
	bw     *bufio.Writer // over rwc
	start  time.Time     // when it was accepted
	state  atomic.Int32  // for Shutdown: stateActive, stateIdle, ...
	served bool          // a request has been read: the next are kept-alive ones
	// hijacked says a handler took the connection over (Hijack): the
	// server no longer tracks, reads, writes or closes it.
	hijacked  bool
	stopClose func() bool  // stops Serve's ctx from closing the connection
	linger    bool         // the client may still be sending: see lingerClose
	tlsIn     tlsTransport // what the TLS connection runs over
	// sent and sentValues hold the header of the response being sent,
	// copied from the handler's at WriteHeader (response.snapshot); they
	// are the connection's, reused from one response to the next, so
	// that the copy allocates nothing once they have grown.
	sent       http.Header
	sentValues []string
}

// A connection's states, as Shutdown sees them (net/http's StateActive,
// StateIdle and StateNew). Only the connection's task moves it out of
// stateIdle or stateNew, but for Shutdown's move to stateClosed: a
// compare-and-swap on either side, so that Shutdown never closes a
// connection that has begun to serve a request it read.
const (
	// stateActive: serving a request, or not started yet. Shutdown
	// waits for it (the task checks for Shutdown before each request).
	stateActive int32 = iota
	// stateIdle: waiting for a request, or reading the header of a
	// request after its first. Shutdown closes it.
	stateIdle
	// stateNew: reading its first request's header, or its TLS
	// handshake once the first byte has come. Shutdown closes it once it
	// is newConnGrace old.
	stateNew
	// stateClosed: closed by Shutdown.
	stateClosed
)

// newConnGrace is how old a connection still reading its first request's
// header must be for Shutdown to close it: net/http's 5 s (Go issue 22682).
const newConnGrace = 5 * time.Second

// tlsTransport is the connection under TLS: the handshake's first byte
// makes a new connection's state stateNew.
type tlsTransport struct {
	*aio.NetConn
	c *conn
}

func (t *tlsTransport) Read(p []byte) (int, error) {
	n, err := t.NetConn.Read(p)
	if n > 0 && !t.c.served {
		t.c.state.CompareAndSwap(stateIdle, stateNew)
	}
	return n, err
}

// closeIfIdle closes the connection if it is idle, or new and at least
// newConnGrace old at now; for a new one younger than that it returns the
// time left.
func (c *conn) closeIfIdle(now time.Time) time.Duration {
	for {
		switch st := c.state.Load(); st {
		case stateNew:
			if left := c.start.Add(newConnGrace).Sub(now); left > 0 {
				return left
			}
			fallthrough
		case stateIdle:
			if c.state.CompareAndSwap(st, stateClosed) {
				c.nc.Close()
				return 0
			}
		default:
			return 0
		}
	}
}

// activate moves the connection from stateIdle or stateNew to stateActive
// once a request has been read; false means Shutdown has closed it.
func (c *conn) activate() bool {
	for {
		switch st := c.state.Load(); st {
		case stateIdle, stateNew:
			if c.state.CompareAndSwap(st, stateActive) {
				return true
			}
		case stateActive:
			return true
		default:
			return false
		}
	}
}

func (c *conn) serve(ctx context.Context) {
	s := c.srv
	defer func() {
		if r := recover(); r != nil {
			s.logf("faiohttp: panic serving %v: %v\n%s", c.nc.RemoteAddr(), r, debug.Stack())
		}
		if c.hijacked {
			return // the handler's now
		}
		if c.linger {
			c.lingerClose()
		}
		c.rwc.Close()
	}()
	// Serve's ctx ends the connection, idle or not, as Close does (its
	// reads wait on the connection's deadlines, not on ctx).
	stop := context.AfterFunc(ctx, func() { c.nc.Close() })
	defer stop()
	c.stopClose = stop
	c.rwc = c.nc
	c.remote = c.nc.RemoteAddr().String()
	if c.tls != nil {
		// Idle, for Shutdown, until its first byte, as a plain one
		// waiting for its first request: Shutdown waited for one that
		// never sent its hello (found by a reviewer). net/http closes
		// such a connection once it is 5 s old. From its first byte,
		// it is new (tlsTransport).
		c.state.Store(stateIdle)
		if s.shutdown.Load() {
			return
		}
		c.tlsIn = tlsTransport{NetConn: c.nc, c: c}
		tc := tls.Server(&c.tlsIn, c.tls)
		if d := s.tlsHandshakeTimeout(); d > 0 {
			c.nc.SetDeadline(time.Now().Add(d))
		}
		if err := tc.HandshakeContext(ctx); err != nil {
			c.rwc = tc
			c.handshakeFailed(ctx, err)
			return
		}
		c.nc.SetDeadline(time.Time{})
		c.rwc = tc
	}
	maxHeader := s.MaxHeaderBytes
	if maxHeader <= 0 {
		maxHeader = http.DefaultMaxHeaderBytes
	}
	c.lr = &limitReader{r: c.rwc, n: -1}
	c.br = bufio.NewReaderSize(c.lr, 4096)
	c.bw = bufio.NewWriterSize(c.rwc, 4096)
	afterPost := false
	for first := true; ; first = false {
		// Wait for the request's first byte under the idle timeout.
		// Idle, then the check: Shutdown stores shutdown, then closes
		// the idle connections, so one of the two sees the other. A
		// TLS connection's first request is read in the state its
		// handshake left.
		if !first || c.tls == nil {
			c.state.Store(stateIdle)
		}
		if s.shutdown.Load() {
			return
		}
		// A later request's wait is bounded by the idle timeout alone:
		// without one it is not bounded, as in net/http, where a
		// ReadHeaderTimeout alone closed a kept-alive connection that
		// was idle for that long.
		var waitStart time.Time
		if !first {
			if d := s.idleTimeout(); d > 0 {
				c.nc.SetReadDeadline(time.Now().Add(d))
			} else {
				c.nc.SetReadDeadline(time.Time{})
			}
		} else {
			waitStart = time.Now()
			if d := s.readHeaderTimeout(); d > 0 {
				c.nc.SetReadDeadline(waitStart.Add(d))
			}
		}
		// The header read, from its first byte, may consume only so
		// much (what bufio already holds of a pipelined request is
		// not counted again, as in net/http).
		c.lr.n = int64(maxHeader) + 4096 // net/http's slack for the request line
		// A later request's first four bytes come under the idle
		// timeout, as net/http waits for them; a new connection's
		// first byte.
		peek := 1
		if !first {
			peek = 4
		}
		if _, err := c.br.Peek(peek); err != nil {
			if c.lr.hitLimit {
				c.badRequest(err)
			}
			return
		}
		if afterPost {
			// Some old clients send a CRLF after a POST's body: it is
			// skipped, as net/http does (RFC 9112 2.2 says a server
			// should); it got a 400. Still idle: a client that sent
			// just that is closed by Shutdown, and waited for under
			// the idle timeout. An error is ReadRequest's to see.
			peek, _ := c.br.Peek(4)
			c.br.Discard(leadingCRorLF(peek))
		}
		// The first request's header is a new connection's (Shutdown
		// closes it once it is 5 s old); a later one's is idle time
		// (Shutdown closes it at once), as in net/http: a client that
		// sent a byte of it and no more kept Shutdown waiting for good.
		if first {
			c.state.CompareAndSwap(stateIdle, stateNew)
		}
		// ReadTimeout counts from here, as ReadHeaderTimeout does: the
		// header's time is part of the request's (net/http's rule). A
		// later request's time starts at its first byte, its wait for
		// that being idle time; the first request's starts with the
		// wait, as net/http's: a client that sent its first byte just
		// before the deadline, and the rest just before the next, held
		// a new connection for twice the timeout (found by a reviewer).
		t0 := time.Now()
		if first {
			// Under TLS too: the wait starts after the handshake,
			// where net/http starts the header's time (it restarted
			// at the first byte, found by a reviewer).
			t0 = waitStart
		}
		if d := s.readHeaderTimeout(); d > 0 {
			c.nc.SetReadDeadline(t0.Add(d))
		} else if !first {
			c.nc.SetReadDeadline(time.Time{}) // the idle timeout's, ended
		}
		// http.ReadRequest drops the Host header, and takes req.Host
		// from a target in absolute or authority form instead: then
		// the header's bytes are kept for checkRequest, which would
		// otherwise serve such a request without a Host header, or
		// with a malformed one (found by a reviewer). A target that is
		// a path, the common case, costs nothing.
		var raw []byte
		if !pathTarget(c.br) {
			b, _ := c.br.Peek(c.br.Buffered())
			raw = append([]byte{}, b...)
			c.lr.copy = &raw
		}
		req, err := http.ReadRequest(c.br)
		c.lr.n, c.lr.copy = -1, nil
		if !c.activate() {
			return // Shutdown closed it
		}
		c.served = true
		if err != nil {
			c.badRequest(err)
			return
		}
		afterPost = req.Method == http.MethodPost
		if !req.ProtoAtLeast(1, 1) {
			// An HTTP/1.0 connection stays only if the first
			// Connection header lists keep-alive (commas, spaces or
			// tabs between), as net/http's server decides it;
			// http.ReadRequest's req.Close looks at every such
			// header, and splits at commas only.
			req.Close = !hasToken(req.Header.Get("Connection"), "keep-alive")
		}
		var hosts []string
		switch {
		case raw != nil:
			hosts = hostHeaders(raw)
		case req.Host != "":
			hosts = []string{req.Host}
		}
		if code, text := checkRequest(req, hosts); code != 0 {
			c.reject(code, text)
			return
		}
		if d := s.ReadTimeout; d > 0 {
			c.nc.SetReadDeadline(t0.Add(d))
		} else {
			c.nc.SetReadDeadline(time.Time{})
		}
		if d := s.WriteTimeout; d > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(d))
		}
		keep := c.serveRequest(ctx, req)
		if !keep || s.shutdown.Load() {
			return
		}
		c.nc.SetWriteDeadline(time.Time{})
	}
}

// handshakeFailed answers a client that spoke plain HTTP to the TLS
// server with net/http's 400, on the connection under TLS, and logs the
// failure as net/http does, but for a connection the server closed itself
// (Shutdown, Close, Serve's ctx). The connection closed without a word on
// either side.
func (c *conn) handshakeFailed(ctx context.Context, err error) {
	if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
		return
	}
	reason := err.Error()
	var re tls.RecordHeaderError
	if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
		io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
		reason = "client sent an HTTP request to an HTTPS server"
	}
	c.srv.logf("faiohttp: TLS handshake error from %s: %v", c.remote, reason)
}

// looksLikeHTTP reports whether a TLS record's header is the start of a
// plain HTTP request (net/http's tlsRecordHeaderLooksLikeHTTP).
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

// lingerTimeout bounds lingerClose: net/http's rstAvoidanceDelay.
const lingerTimeout = 500 * time.Millisecond

// lingerClose readies for its close a connection whose client may still
// be sending, a request body left unread. Closed at once with bytes
// unread, the connection sends a reset, and a client still writing often
// loses the response it has not read yet (a Go client did for one 8 MB
// upload in four). So, the response sent, it shuts down its sending side,
// then reads and drops what comes until the client closes or
// lingerTimeout passes, where net/http's closeWriteAndWait sleeps that
// long: reading lets the client finish its write, and leaves nothing
// unread at the close. Close and Serve's ctx end it at once, as they
// end any read.
func (c *conn) lingerClose() {
	c.nc.SetDeadline(time.Now().Add(lingerTimeout))
	if tc, ok := c.rwc.(*tls.Conn); ok {
		tc.CloseWrite() // close_notify, which the client may wait for
	}
	c.nc.CloseWrite()
	// Raw bytes, TLS or not: they are dropped.
	c.br.Reset(c.nc)
	c.br.Discard(math.MaxInt)
}

// tlsHandshakeTimeout bounds a TLS handshake: the shortest of the
// positive ReadHeaderTimeout, ReadTimeout and WriteTimeout, as in
// net/http (it was ReadHeaderTimeout's alone, falling back to ReadTimeout:
// with WriteTimeout alone, a handshake had no bound; found by a
// reviewer).
func (s *Server) tlsHandshakeTimeout() time.Duration {
	var d time.Duration
	for _, v := range [...]time.Duration{s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout} {
		if v > 0 && (d == 0 || v < d) {
			d = v
		}
	}
	return d
}

// readHeaderTimeout and idleTimeout fall back to ReadTimeout when their
// own field is zero, as net/http's do; a negative one means no timeout,
// not ReadTimeout's.
func (s *Server) readHeaderTimeout() time.Duration {
	if s.ReadHeaderTimeout != 0 {
		return s.ReadHeaderTimeout
	}
	return s.ReadTimeout
}

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout != 0 {
		return s.IdleTimeout
	}
	return s.ReadTimeout
}

// badRequest answers a request that could not be read, as net/http does.
func (c *conn) badRequest(err error) {
	var code int
	var text string
	switch {
	case c.lr.hitLimit:
		code, text = http.StatusRequestHeaderFieldsTooLarge, "431 Request Header Fields Too Large"
		c.linger = true // the rest of the header is on its way
	case isTimeout(err), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return // the client went away or was too slow: nothing to say
		// (A header cut short, io.ErrUnexpectedEOF, gets the 400:
		// the client may still read, as net/http answers it.)
	case fmt.Sprintf("%T", err) == "*http.unsupportedTEError":
		// A Transfer-Encoding other than one "chunked": RFC 9112 6.1
		// says 501, as net/http answers (which tests for that type; it
		// is unexported). Without echoing the value.
		code, text = http.StatusNotImplemented, "Unsupported transfer encoding"
	default:
		code, text = http.StatusBadRequest, "400 Bad Request"
	}
	c.reject(code, text)
}

// reject answers a request it will not serve with code and text, and the
// connection closes. The write is bounded by WriteTimeout, as net/http
// bounds it: the deadline of the previous response was cleared, and a
// client that reads nothing held the connection for good.
func (c *conn) reject(code int, text string) {
	if d := c.srv.WriteTimeout; d > 0 {
		c.nc.SetWriteDeadline(time.Now().Add(d))
	}
	// A text that names the status and a reason ("400 Bad Request:
	// missing required Host header") is the status line's reason phrase
	// too, as in net/http's refusals.
	reason := http.StatusText(code)
	if status := strconv.Itoa(code) + " "; strings.HasPrefix(text, status+reason+": ") {
		reason = text[len(status):]
	}
	fmt.Fprintf(c.rwc, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n%s", code, reason, text)
}

// checkRequest makes the checks that net/http's server makes on a request
// http.ReadRequest accepted, whose Host header had the values hosts, and
// returns the status and text of the refusal, or 0. Without them a header
// name with a space before its colon ("Transfer-Encoding : chunked", which
// textproto keeps as an unknown header) left the body to be framed by
// Content-Length, where a proxy in front may have framed it as chunked:
// request smuggling (found by a reviewer).
//
// Two refusals are net/http's answers only nearly. An empty Host header
// on a request whose target is a path is refused as a missing one (net/http
// serves it with an empty r.Host): http.ReadRequest leaves nothing to tell
// the two apart by. And "PRI * HTTP/2.0", which net/http hands to the
// handler for an HTTP/2 upgrade it may take over, gets 505: faiohttp
// serves no HTTP/2.
func checkRequest(req *http.Request, hosts []string) (int, string) {
	if req.ProtoMajor != 1 {
		return http.StatusHTTPVersionNotSupported, "505 HTTP Version Not Supported: unsupported protocol version"
	}
	// http.ReadRequest has refused a second Host header itself.
	switch {
	case req.ProtoAtLeast(1, 1) && len(hosts) == 0 && req.Method != http.MethodConnect:
		return http.StatusBadRequest, "400 Bad Request: missing required Host header"
	case len(hosts) == 1 && !validHost(hosts[0]):
		return http.StatusBadRequest, "400 Bad Request: malformed Host header"
	}
	for name, values := range req.Header {
		if !validHeaderName(name) {
			return http.StatusBadRequest, "400 Bad Request: invalid header name"
		}
		for _, v := range values {
			if !validHeaderValue(v) {
				return http.StatusBadRequest, "400 Bad Request: invalid header value"
			}
		}
	}
	return 0, ""
}

// pathTarget reports whether the request line at the head of br, as far as
// br holds it, has a target that is a path ("GET /x HTTP/1.1"), whose
// request's Host comes from the Host header alone.
func pathTarget(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	i := bytes.IndexByte(b, ' ')
	return i >= 0 && i+1 < len(b) && b[i+1] == '/'
}

// leadingCRorLF returns how many bytes at the head of b are CR or LF.
func leadingCRorLF(b []byte) int {
	n := 0
	for n < len(b) && (b[n] == '\r' || b[n] == '\n') {
		n++
	}
	return n
}

// hostHeaders returns the values of the Host header of the request whose
// header raw begins with.
func hostHeaders(raw []byte) []string {
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw)))
	tp.ReadLine()
	h, _ := tp.ReadMIMEHeader()
	return h["Host"]
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if b := name[i]; !isAlnum(b) && strings.IndexByte("!#$%&'*+-.^_`|~", b) < 0 {
			return false
		}
	}
	return true
}

// validHost reports whether h has only the bytes net/http allows in a Host
// header.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		if b := h[i]; !isAlnum(b) && strings.IndexByte("!$%&'()*+,-.:;=[]_~", b) < 0 {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v has no control byte but tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// hasToken reports whether the list v has token, in any case. As in
// net/http, the list's elements are separated by commas, spaces or tabs.
func hasToken(v, token string) bool {
	for f := range strings.FieldsFuncSeq(v, isTokenSeparator) {
		if strings.EqualFold(f, token) {
			return true
		}
	}
	return false
}

func isTokenSeparator(r rune) bool { return r == ',' || r == ' ' || r == '\t' }

func isAlnum(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// serveRequest runs the handler for req and reports whether the
// connection may serve another request.
func (c *conn) serveRequest(ctx context.Context, req *http.Request) (keep bool) {
	s := c.srv
	req.RemoteAddr = c.remote
	if tc, ok := c.rwc.(*tls.Conn); ok {
		st := tc.ConnectionState()
		req.TLS = &st
	}
	w := &response{c: c, header: http.Header{}, status: 0}
	rc := &w.ctx
	rc.Context, rc.cancel = context.WithCancel(ctx)
	rc.conn, rc.task = c, ctx
	defer rc.end()
	if req.Trailer == nil && len(req.TransferEncoding) > 0 {
		// The body merges the trailers it reads into the request it
		// was read with, whose Trailer WithContext copies: a nil one
		// would be replaced there alone, and the handler's copy would
		// see no trailer the client did not declare (net/http's does).
		// A map of their own is shared by both.
		req.Trailer = http.Header{}
	}
	req = req.WithContext(rc)
	w.req = req
	if req.Body == nil || req.Body == http.NoBody {
		rc.bodyRead = true
	} else {
		w.reqBody = requestBody{src: req.Body, w: w, remaining: req.ContentLength}
		// Not for a request without a body (net/http's rule too): its
		// connection would close for want of a 100 Continue it never
		// needed, losing the requests pipelined after it.
		w.reqBody.continueOwed = req.ProtoAtLeast(1, 1) && hasToken(req.Header.Get("Expect"), "100-continue")
		req.Body = &w.reqBody
	}
	if e := req.Header.Get("Expect"); e != "" && !hasToken(e, "100-continue") {
		// An expectation it cannot meet: 417, and the connection closes,
		// as net/http answers (RFC 9110 10.1.1 allows it).
		w.header.Set("Connection", "close")
		w.WriteHeader(http.StatusExpectationFailed)
		w.finish()
		c.linger = w.reqBody.src != nil
		return false
	}
	handler := s.Handler
	if handler == nil {
		handler = http.DefaultServeMux
	}
	if req.RequestURI == "*" && req.Method == http.MethodOptions {
		handler = http.HandlerFunc(optionsStar)
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					w.abort = true
					return
				}
				// With its stack, as net/http logs it.
				s.logf("faiohttp: panic serving %v: %v\n%s", req.RemoteAddr, r, debug.Stack())
				w.abort = true
			}
		}()
		handler.ServeHTTP(w, req)
	}()
	rc.end()
	if c.hijacked {
		return false
	}
	if w.abort {
		// What the response had sent is sent whole before the
		// connection closes, as net/http's final flush does: a
		// streamed response cut off by the panic lost the part still
		// in the connection's buffer (found by a reviewer), and the
		// pending chunk goes too (net/http drops what its 2 KiB chunk
		// buffer holds). A response not begun has sent nothing, and
		// sends nothing.
		w.sendChunk()
		c.bw.Flush()
		return false
	}
	// The rest of the body must be read before the next request, and is
	// if it is small (requestBody.Close); a larger one closes the
	// connection instead, as in net/http. sendHeader reads it before the
	// response's header goes out, so that the header says so; what is
	// left after a header that said close is read below, for the close.
	hasBody := w.reqBody.src != nil
	if err := w.finish(); err != nil {
		return false
	}
	if hasBody {
		w.reqBody.Close()
		if w.reqBody.unread {
			c.linger = true
			return false
		}
	}
	// http.ReadRequest set req.Close for an HTTP/1.0 request without
	// keep-alive; sendHeader set closeAfter for a body of unknown length
	// there, and for Connection: close.
	return !w.closeAfter && !req.Close
}

// optionsStar answers "OPTIONS *", a question about the server rather
// than a resource, as net/http's server does by default: 200 with no body,
// reading at most 4 KiB of a request body, the connection closing if there
// is more. It went to the handler, and http.ServeMux answers it 400.
func optionsStar(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "0")
	if r.ContentLength != 0 {
		if n, _ := io.CopyN(io.Discard, r.Body, 4<<10+1); n > 4<<10 {
			w.Header().Set("Connection", "close")
		}
	}
}

// limitReader bounds what the header read may consume: n >= 0 bytes may
// still be read; n < 0 means no limit. What it reads is appended to copy
// if set.
type limitReader struct {
	r        io.Reader
	n        int64
	hitLimit bool
	copy     *[]byte
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n == 0 {
		l.hitLimit = true
		return 0, io.EOF
	}
	if l.n > 0 && int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	if l.n > 0 {
		l.n -= int64(n)
	}
	if l.copy != nil {
		*l.copy = append(*l.copy, p[:n]...)
	}
	return n, err
}

// maxPostHandlerRead is how much of a request body the handler left
// unread is read to keep the connection (net/http's
// maxPostHandlerReadBytes, about a socket's buffer).
const maxPostHandlerRead = 256 << 10

// requestBody is the request's Body as the handler gets it, over
// http.ReadRequest's. It sends "100 Continue" before the first read if the
// client asked for it, and its Close reads at most maxPostHandlerRead of
// what is left, where http.ReadRequest's read all of it, however large.
type requestBody struct {
	src          io.ReadCloser
	w            *response
	remaining    int64 // of the declared length; -1: chunked
	continueOwed bool  // "100 Continue" is to be sent before the first read
	sawEOF       bool
	closed       bool
	// unread says the body was closed before its end: the connection
	// cannot serve another request.
	unread bool
}

func (b *requestBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.continueOwed {
		b.continueOwed = false
		if !b.w.wroteHeader {
			b.w.c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
			if err := b.w.c.bw.Flush(); err != nil {
				return 0, err
			}
		}
	}
	n, err := b.src.Read(p)
	if b.remaining > 0 {
		b.remaining -= int64(n)
	}
	if err == io.EOF || b.remaining == 0 {
		if !b.sawEOF {
			b.sawEOF = true
			b.w.ctx.bodyDone()
		}
	}
	return n, err
}

// Close reads what is left of the body, so that the connection can serve
// the next request, if that is at most maxPostHandlerRead bytes; if more
// is left, or the declared length says so, or the client waits for a
// "100 Continue" before sending it, it stops there and the connection
// closes after the response, as with net/http's server. Later reads
// fail with http.ErrBodyReadAfterClose.
func (b *requestBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	switch {
	case b.sawEOF:
		return nil
	case b.continueOwed, b.remaining > maxPostHandlerRead:
		b.unread = true
		return nil
	}
	// One byte past the bound, as net/http reads: a rest of exactly
	// maxPostHandlerRead then ends in io.EOF, and the connection goes
	// on; it closed.
	_, err := io.CopyN(io.Discard, b.src, maxPostHandlerRead+1)
	if err == io.EOF {
		b.sawEOF = true
		b.w.ctx.bodyDone()
		return nil
	}
	b.unread = true // more is left, or the read failed
	return err
}

// requestContext is a request's Context. As net/http's, it is cancelled
// when the handler returns, and when the client closes or resets the
// connection while the handler runs, once the request's body has been
// read (until then the client is still sending). The watch for the client
// is a plain goroutine whose Peek waits on the connection in Go's
// netpoller: a byte there is the client's next request, which ends the
// watch and stays for the server to read; an end or an error there
// cancels the request. It costs a goroutine and a receive, so it starts
// only once somebody has asked for Done (a select on it,
// context.AfterFunc, a context derived with a cancel or a timeout, a faio
// call that may wait): a handler that never looks pays nothing, where
// net/http starts its background read for every request.
//
// The watch starts watchDelay after that (see watches), so that a request
// that ends sooner pays for two short critical sections only. It is not a
// task: a handler that waits for Done in plain Go (<-r.Context().Done(),
// net/http's idiom) holds its worker, and with as many such handlers as
// workers a task's watch would never have run, nor its receive been
// reaped from a ring; every one of those handlers waited for ever after
// its client had gone.
//
// Over TLS the watch sees the raw connection: a client that closes with a
// close_notify alert has sent a byte, and is taken for one that sends its
// next request; one that just closes or resets is seen.
type requestContext struct {
	context.Context // WithCancel of the connection task's context
	cancel          context.CancelFunc
	conn            *conn
	task            context.Context // the connection's task, which waits for the watch to end
	asked           atomic.Bool     // Done was called (set under mu)
	mu              sync.Mutex
	bodyRead        bool // the body is read to its end, or there is none
	ended           bool // the handler has returned
	queued          bool // given to watches (under mu)

	// Under watches.mu: the request's place in the queue of watches to
	// start, and its watch once started.
	wstate       uint8
	wprev, wnext *requestContext
	wsince       time.Time
	watch        *watch
}

// Value answers http.LocalAddrContextKey with the connection's local
// address, as net/http's request context does (a handler that asserted
// its type panicked), and passes other keys on. http.ServerContextKey,
// which names an *http.Server, has no value.
func (r *requestContext) Value(key any) any {
	if key == http.LocalAddrContextKey {
		return r.conn.nc.LocalAddr()
	}
	return r.Context.Value(key)
}

// Done returns the context's Done channel, and starts the watch for the
// client if the body has been read.
func (r *requestContext) Done() <-chan struct{} {
	if !r.asked.Load() {
		r.mu.Lock()
		r.asked.Store(true)
		r.startWatch()
		r.mu.Unlock()
	}
	return r.Context.Done()
}

// bodyDone records that the body has been read to its end, on the
// handler's side.
func (r *requestContext) bodyDone() {
	r.mu.Lock()
	r.bodyRead = true
	r.startWatch()
	r.mu.Unlock()
}

// watchDelay is how long a request runs, after its context's Done was
// asked for and its body read, before the watch for its client starts.
// Most requests end sooner, and their watch costs two short critical
// sections, not a goroutine, a netpoller wait and a wake-up of the
// connection's task: sequential keep-alive requests that asked for Done
// took 6-12 µs more each when the watch started at once (a watch that
// was a task cost 0.3-0.8 µs, and hung as requestContext says). A client
// that goes away is seen up to twice that much later.
const watchDelay = time.Millisecond

// startWatch queues the watch for the client once both Done has been
// asked for and the body read, unless the request is over; under mu.
func (r *requestContext) startWatch() {
	if !r.asked.Load() || !r.bodyRead || r.ended || r.queued {
		return
	}
	r.queued = true
	watches.add(r)
}

// end cancels the context once the handler has returned, and ends the
// watch: its Peek no longer holds the connection's reads when the rest of
// the body or the next request is read. A second call does nothing more.
func (r *requestContext) end() {
	r.mu.Lock()
	r.ended = true
	queued := r.queued
	r.queued = false
	r.mu.Unlock()
	r.cancel()
	if queued {
		if w := watches.remove(r); w != nil {
			w.stop()
			w.wait(r.task) // the watch has begun: it ends at once now
		}
	}
}

// watches starts the watches of the requests that asked for Done
// watchDelay ago and still run. One goroutine serves the whole process:
// started with the first such request, it ticks every watchDelay and
// ends at the first tick that finds none. A Go timer per request instead
// made each 3-4 µs slower (alternated runs of 100,000 sequential
// keep-alive requests: 16.4-18.1 µs against 13.6-14.2 µs; with a timer
// pending, Go's scheduler wakes an idle thread, 0.54 more context
// switches per request).
var watches watchQueue

// The states of a request's watch (requestContext.wstate).
const (
	watchNone    = iota // not queued, or ended
	watchPending        // queued, not started
	watchStarted        // started: its goroutine peeks at the connection
)

// watchQueue is the queue of watches to start, oldest first.
type watchQueue struct {
	mu         sync.Mutex
	head, tail *requestContext
	running    bool // the goroutine ticks
}

// add queues r's watch, and starts the goroutine if it is not running.
func (q *watchQueue) add(r *requestContext) {
	q.mu.Lock()
	r.wstate, r.wsince = watchPending, time.Now()
	r.wprev, r.wnext = q.tail, nil
	if q.tail != nil {
		q.tail.wnext = r
	} else {
		q.head = r
	}
	q.tail = r
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		go q.run()
	}
}

// unlink takes r out of the queue; under mu.
func (q *watchQueue) unlink(r *requestContext) {
	if r.wprev != nil {
		r.wprev.wnext = r.wnext
	} else {
		q.head = r.wnext
	}
	if r.wnext != nil {
		r.wnext.wprev = r.wprev
	} else {
		q.tail = r.wprev
	}
	r.wprev, r.wnext = nil, nil
}

// remove ends r's place in the queue, and returns its watch if it has
// started (the caller stops it and waits for it).
func (q *watchQueue) remove(r *requestContext) *watch {
	q.mu.Lock()
	defer q.mu.Unlock()
	w := r.watch
	if r.wstate == watchPending {
		q.unlink(r)
	}
	r.wstate, r.watch = watchNone, nil
	return w
}

// run starts the watches that are due, every watchDelay, until a tick
// finds the queue empty.
func (q *watchQueue) run() {
	var due []*watch
	for {
		time.Sleep(watchDelay)
		q.mu.Lock()
		now := time.Now()
		due = due[:0]
		for r := q.head; r != nil && now.Sub(r.wsince) >= watchDelay; r = q.head {
			q.unlink(r)
			ctx, stop := context.WithCancel(context.Background())
			w := &watch{ctx: ctx, stop: stop, nc: r.conn.nc.Conn(), cancel: r.cancel}
			r.wstate, r.watch = watchStarted, w
			due = append(due, w)
		}
		if q.head == nil && len(due) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		for _, w := range due {
			go w.run()
		}
		clear(due)
	}
}

// watch is a request's watch for its client (see requestContext): a
// goroutine that peeks at the connection. The connection's task waits for
// it to end, suspended.
type watch struct {
	ctx    context.Context
	stop   context.CancelFunc // ends the watch's Peek
	nc     *aio.Conn
	cancel context.CancelFunc // the request's
	mu     sync.Mutex
	done   bool
	waiter runtime.Waker
}

// run peeks at the connection: a byte is the client's next request; an
// end or an error there cancels the request.
func (w *watch) run() {
	defer w.finish()
	var b [1]byte
	if n, _ := w.nc.Peek(w.ctx, b[:]); n == 0 && w.ctx.Err() == nil {
		w.cancel() // the client went away, or Close or Shutdown closed the connection
	}
}

// finish records that the watch is done with the connection, and wakes
// the task waiting for that.
func (w *watch) finish() {
	w.mu.Lock()
	w.done = true
	wk := w.waiter
	w.waiter = runtime.Waker{}
	w.mu.Unlock()
	wk.Wake()
}

// wait returns once the watch is done with the connection. It suspends
// the task of task (blocks a plain goroutine), and is not cut short by
// the task's cancellation: the connection's next read must not race with
// the watch's Peek, which stop has already ended.
func (w *watch) wait(task context.Context) {
	_ = runtime.Suspend(context.WithoutCancel(task), func(wk runtime.Waker) bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.done {
			return false
		}
		w.waiter = wk
		return true
	})
}

// response is the http.ResponseWriter of one request. A body that the
// handler finishes within the buffer gets a Content-Length; a longer one
// is sent chunked (HTTP/1.1) or up to the connection's close (HTTP/1.0).
//
// The header sent is the handler's as it was at WriteHeader (explicit, or
// implied by the first Write or Flush), as in net/http: the handler's map
// is copied then into sent, which the server alone changes, and what the
// handler does to its map afterwards is ignored, but for the trailers.
// Those are sent after a chunked body, as net/http sends them: the final
// values of the keys the header declared in "Trailer", and the keys the
// handler set with http.TrailerPrefix.
type response struct {
	c             *conn
	req           *http.Request
	header        http.Header // the handler's
	sent          http.Header // the one sent: header at WriteHeader, c.sent
	trailers      []string    // the keys sent declares in "Trailer"
	trailerKeys   bool        // header had http.TrailerPrefix keys at WriteHeader
	reqBody       requestBody // the request's Body, if it has one
	ctx           requestContext
	status        int
	wroteHeader   bool // the status line and header are in bw
	buf           []byte
	buffering     bool // the body is still held in buf
	chunked       bool
	pend          []byte // of a chunked body, the next chunk (see body)
	contentLength int64  // -1: unknown until the end
	written       int64
	closeAfter    bool
	abort         bool
	// werr is the error of a vectored send that failed: bufio, which
	// keeps the first error of its writes, was bypassed, so the response
	// keeps it instead and returns it from every later Write, and the
	// connection closes.
	werr error
}

// bufferLimit is how much of a body is held back before the header is
// sent: a handler that writes no more than this and returns gets a
// Content-Length, a longer body is chunked (net/http's
// bufferBeforeChunkingSize; at 4096, bodies of 2049 to 4096 bytes were
// framed differently from net/http's).
const bufferLimit = 2048

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.status != 0 || w.c.hijacked {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("faiohttp: invalid WriteHeader code %v", code))
	}
	if code == http.StatusContinue {
		// The handler's own 100 Continue replaces the one the body's
		// first read would send (net/http's rule): the client sends the
		// body now, so it can be read after the handler, too.
		w.reqBody.continueOwed = false
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		// An informational response goes out at once, with the header
		// as it is but its framing (RFC 9110 8.6, 15.2: it has no
		// body), as net/http sends it; the real one follows.
		proto := "HTTP/1.1 "
		if !w.req.ProtoAtLeast(1, 1) {
			proto = "HTTP/1.0 " // as net/http writes it
		}
		w.c.bw.Write(appendStatus(append(w.c.bw.AvailableBuffer(), proto...), code))
		w.header.WriteSubset(w.c.bw, framingHeaders)
		w.c.bw.WriteString("\r\n")
		w.c.bw.Flush()
		return
	}
	w.status = code
	w.buffering = true
	w.snapshot()
	w.contentLength = -1
	if cl := headerValue(w.sent, "Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			w.contentLength = n
		} else {
			w.c.srv.logf("faiohttp: invalid Content-Length of %q", cl)
			w.sent.Del("Content-Length")
		}
	}
}

// snapshot copies the handler's header into the connection's sent, values
// included (a handler may change a value in place), leaving out the keys
// with http.TrailerPrefix, which name trailers. net/http clones the
// header instead, an allocation per response whose handler touched it.
func (w *response) snapshot() {
	c := w.c
	if c.sent == nil {
		c.sent = make(http.Header, len(w.header))
	} else {
		clear(c.sent)
	}
	values := c.sentValues[:0]
	for k, vv := range w.header {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			w.trailerKeys = true
			continue
		}
		n := len(values)
		values = append(values, vv...)
		c.sent[k] = values[n:len(values):len(values)]
	}
	c.sentValues = values
	w.sent = c.sent
}

func (w *response) Write(p []byte) (int, error) {
	if w.c.hijacked {
		return 0, http.ErrHijacked
	}
	if w.werr != nil {
		return 0, w.werr
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.contentLength >= 0 && w.written+int64(len(p)) > w.contentLength {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if w.buffering {
		if len(w.buf)+len(p) <= bufferLimit {
			w.buf = append(w.buf, p...)
			return len(p), nil
		}
		// Not when the handler set a Transfer-Encoding: that body may
		// be chunked whatever its length.
		if nc, ok := w.c.rwc.(*aio.NetConn); ok && w.contentLength >= 0 && w.c.bw.Buffered() == 0 && w.req.Method != http.MethodHead && !hasKey(w.sent, "Transfer-Encoding") {
			return w.sendVectored(nc, p)
		}
		if err := w.sendHeader(false, p, w.c.bw); err != nil {
			return 0, err
		}
		if err := w.sendBuffered(); err != nil {
			return 0, err
		}
	}
	if err := w.body(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// sendVectored sends the header, what is buffered and p in one vectored
// send, for a body of declared length that outgrew the buffer on a
// connection that takes one (not TLS). As two sends, bufio's flush and
// then p, a 16 KiB response cost 1.13x net/http's time on W9 instead of
// 0.88x.
func (w *response) sendVectored(nc *aio.NetConn, p []byte) (int, error) {
	hb := headerBufs.Get().(*bytes.Buffer)
	defer headerBufs.Put(hb)
	hb.Reset()
	if err := w.sendHeader(false, p, hb); err != nil {
		return 0, err
	}
	_, err := nc.Writev([][]byte{hb.Bytes(), w.buf, p})
	w.buf = nil
	if err != nil {
		w.werr, w.closeAfter = err, true
		return 0, err
	}
	return len(p), nil
}

// Flush sends what is buffered (http.Flusher).
func (w *response) Flush() { w.FlushError() }

// FlushError is Flush, returning the send's error, as net/http's response
// has it: http.ResponseController.Flush calls it, and a streaming handler
// learns there that the client has gone (it got nil).
func (w *response) FlushError() error {
	if w.c.hijacked {
		return http.ErrHijacked
	}
	if w.werr != nil {
		return w.werr
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.buffering {
		if err := w.sendHeader(false, nil, w.c.bw); err != nil {
			return err
		}
		if err := w.sendBuffered(); err != nil {
			return err
		}
	}
	if err := w.sendChunk(); err != nil {
		return err
	}
	return w.c.bw.Flush()
}

// Hijack hands the connection over to the handler (http.Hijacker), as
// net/http's response does: what the response has buffered is sent
// first, the deadlines are cleared, and the returned reader holds what
// the client sent past the request. From then on the server neither
// reads, writes nor closes the connection, not when the handler returns
// nor at Close, and Shutdown does not wait for it (net/http's
// StateHijacked); the response's methods return http.ErrHijacked. A
// second call returns http.ErrHijacked.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c := w.c
	if c.hijacked {
		return nil, nil, http.ErrHijacked
	}
	// No automatic 100 Continue on the handler's connection.
	w.reqBody.continueOwed = false
	if w.status != 0 {
		if err := w.FlushError(); err != nil {
			return nil, nil, err
		}
	}
	c.hijacked = true
	c.stopClose()
	c.srv.track(c, false)
	c.nc.SetDeadline(time.Time{})
	return c.rwc, bufio.NewReadWriter(c.br, c.bw), nil
}

// SetReadDeadline sets the connection's read deadline, which bounds the
// reads of the request's body, for http.ResponseController, as net/http's
// response does: a handler reading a slow upload may move ReadTimeout's.
// The next request's read sets its own.
func (w *response) SetReadDeadline(t time.Time) error { return w.c.nc.SetReadDeadline(t) }

// SetWriteDeadline sets the connection's write deadline, which bounds the
// response's sends, for http.ResponseController, as net/http's response
// does: a handler streaming a response may move WriteTimeout's.
func (w *response) SetWriteDeadline(t time.Time) error { return w.c.nc.SetWriteDeadline(t) }

// sendHeader writes the status line and header to out; final says the
// whole body is in buf, and next is the body's next bytes when buf is to be
// followed by more (Content-Type is sniffed from what goes out first). A
// HEAD request's response is framed as its GET's would be where the length
// is known, and not at all otherwise, as net/http does. The headers the
// server adds (Date, Content-Type, Content-Length, Transfer-Encoding) go
// straight to out after the handler's, as net/http writes them, instead of
// into the handler's map: a response costs no header allocation beyond
// what the handler made.
func (w *response) sendHeader(final bool, next []byte, out headerWriter) error {
	w.buffering = false
	w.wroteHeader = true
	h := w.sent
	for _, v := range h["Trailer"] {
		forEachElement(v, w.declareTrailer)
	}
	// Trailers, declared or set with the prefix before WriteHeader, need
	// a chunked body: no Content-Length of the server's (net/http's rule).
	trailers := w.trailerKeys || len(h["Trailer"]) > 0
	// What goes out first, up to the 512 bytes DetectContentType reads.
	sniff := w.buf
	if len(sniff) == 0 {
		sniff = next
	} else if len(sniff) < 512 && len(next) > 0 {
		sniff = append(sniff[:len(sniff):len(sniff)], next[:min(len(next), 512-len(sniff))]...)
	}
	var contentType string
	// Not for an encoded body (net/http's rule, Go issue 31753): its
	// bytes say nothing of what it is.
	if bodyAllowed(w.status) && len(sniff) > 0 && !hasKey(h, "Content-Type") && !hasKey(h, "Transfer-Encoding") && headerValue(h, "Content-Encoding") == "" {
		contentType = http.DetectContentType(sniff)
	}
	// The framing, decided as net/http's chunkWriter.writeHeader does. A
	// Transfer-Encoding of the handler's own overrides its Content-Length
	// (which still bounds its writes) and the one the server would add;
	// "chunked" the server writes itself, "identity" means up to the
	// connection's close.
	te := headerValue(h, "Transfer-Encoding")
	hasLength := w.contentLength >= 0
	if hasLength && te != "" && te != "identity" {
		w.c.srv.logf("faiohttp: WriteHeader called with both Transfer-Encoding of %q and a Content-Length of %d", te, w.contentLength)
		h.Del("Content-Length")
		hasLength = false
	}
	contentLength := -1
	var transferEncoding string
	switch {
	case !bodyAllowed(w.status):
		h.Del("Content-Length")
		h.Del("Transfer-Encoding")
		if w.status == http.StatusNotModified {
			h.Del("Content-Type") // net/http's rule
		}
	case hasLength:
		h.Del("Transfer-Encoding")
	case final && te == "" && !trailers:
		w.contentLength = int64(len(w.buf))
		if w.req.Method != http.MethodHead || len(w.buf) > 0 {
			contentLength = len(w.buf)
		}
	case w.req.Method == http.MethodHead:
		// The header of a body that is never sent: no framing.
		h.Del("Transfer-Encoding")
	case w.req.ProtoAtLeast(1, 1) && te == "identity":
		w.closeAfter = true
		h.Del("Transfer-Encoding")
	case w.req.ProtoAtLeast(1, 1):
		w.chunked = true
		transferEncoding = "chunked"
		if te == "chunked" {
			h.Del("Transfer-Encoding")
		}
	default:
		w.closeAfter = true
		h.Del("Transfer-Encoding")
	}
	if w.req.Close || hasKey(h, "Connection") && strings.EqualFold(h.Get("Connection"), "close") {
		w.closeAfter = true
	}
	if w.c.srv.shutdown.Load() {
		// The connection closes after this response (serve), and says
		// so, as net/http's does once keep-alives are off: a client
		// that reused it lost its next request.
		w.closeAfter = true
	}
	if b := &w.reqBody; b.src != nil && !b.sawEOF && !b.closed && !b.continueOwed && !w.closeAfter {
		// As net/http's chunkWriter.writeHeader: what is left of the
		// request body is read before the header goes out, if it is at
		// most maxPostHandlerRead, so that a client that sends its
		// whole request before it reads the response does not wait for
		// ever against a response larger than the buffers between them
		// (Go issue 15527); a larger rest closes the connection after
		// the response, which says so. The handler's later reads of
		// the body then fail, as net/http's do.
		if b.remaining > maxPostHandlerRead {
			w.closeAfter = true
		} else {
			b.Close()
		}
	}
	if w.reqBody.continueOwed || w.reqBody.unread {
		// The client waits for 100 Continue or this response and may
		// never send the body, or the handler closed the body before
		// its end: the connection closes after the response
		// (serveRequest), which says so, as net/http's does.
		w.closeAfter = true
	}
	if w.closeAfter && w.req.ProtoAtLeast(1, 1) {
		h.Set("Connection", "close")
	} else if !w.req.ProtoAtLeast(1, 1) && !w.closeAfter {
		h.Set("Connection", "keep-alive")
	}
	line := out.AvailableBuffer()
	if w.req.ProtoAtLeast(1, 1) {
		line = append(line, "HTTP/1.1 "...)
	} else {
		line = append(line, "HTTP/1.0 "...)
	}
	line = appendStatus(line, w.status)
	out.Write(line)
	if err := h.Write(out); err != nil {
		return err
	}
	tail := out.AvailableBuffer()
	if !hasKey(h, "Date") {
		tail = append(tail, "Date: "...)
		tail = appendDate(tail)
		tail = append(tail, "\r\n"...)
	}
	if contentType != "" {
		tail = append(tail, "Content-Type: "...)
		tail = append(tail, contentType...)
		tail = append(tail, "\r\n"...)
	}
	if contentLength >= 0 {
		tail = append(tail, "Content-Length: "...)
		tail = strconv.AppendInt(tail, int64(contentLength), 10)
		tail = append(tail, "\r\n"...)
	}
	if transferEncoding != "" {
		tail = append(tail, "Transfer-Encoding: "...)
		tail = append(tail, transferEncoding...)
		tail = append(tail, "\r\n"...)
	}
	tail = append(tail, "\r\n"...)
	_, err := out.Write(tail)
	return err
}

// headerWriter is where sendHeader writes: the connection's bufio.Writer,
// or a buffer of headerBufs for sendVectored.
type headerWriter interface {
	io.Writer
	io.StringWriter
	AvailableBuffer() []byte
}

// framingHeaders are the header keys that frame a body, left out of a
// response without one.
var framingHeaders = map[string]bool{"Content-Length": true, "Transfer-Encoding": true}

var headerBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// headerValue returns the first value of h's key, given in canonical form,
// without Get's canonicalisation.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// hasKey reports whether h has key, given in canonical form, without
// Get's canonicalisation.
func hasKey(h http.Header, key string) bool {
	_, ok := h[key]
	return ok
}

// appendStatus appends "code text\r\n", the rest of a status line.
func appendStatus(b []byte, code int) []byte {
	b = append(b, byte('0'+code/100), byte('0'+code/10%10), byte('0'+code%10), ' ')
	b = append(b, http.StatusText(code)...)
	return append(b, "\r\n"...)
}

// date caches the Date header's value for the second it names: formatting
// it costs more than the rest of a small response's header.
var date atomic.Pointer[dateValue]

type dateValue struct {
	sec int64
	val []byte
}

// appendDate appends the current time as an HTTP date (http.TimeFormat).
func appendDate(b []byte) []byte {
	now := time.Now()
	if d := date.Load(); d != nil && d.sec == now.Unix() {
		return append(b, d.val...)
	}
	d := &dateValue{sec: now.Unix(), val: now.UTC().AppendFormat(nil, http.TimeFormat)}
	date.Store(d)
	return append(b, d.val...)
}

// body writes p as body bytes (one chunk when chunked).
func (w *response) body(p []byte) error {
	if len(p) == 0 || w.req.Method == http.MethodHead {
		return nil
	}
	if !w.chunked {
		_, err := w.c.bw.Write(p)
		return err
	}
	// A chunked body's bytes gather in pend and go out as one chunk of up
	// to bufferLimit bytes, as net/http's go through a 2 KiB bufio.Writer
	// in front of its chunk writer: a handler writing many small pieces
	// (a template, fmt.Fprintf in a loop) paid a chunk header per piece,
	// some 7 bytes each (found by a reviewer). Flush sends what is
	// pending; a piece of bufferLimit bytes or more goes as a chunk of
	// its own.
	if len(w.pend)+len(p) <= bufferLimit {
		w.pend = append(w.pend, p...)
		return nil
	}
	if err := w.sendChunk(); err != nil {
		return err
	}
	if len(p) < bufferLimit {
		w.pend = append(w.pend, p...)
		return nil
	}
	return w.writeChunk(p)
}

// sendBuffered sends what the response held back in buf, after its
// header: of a chunked body it becomes the pending chunk, buf and all.
func (w *response) sendBuffered() error {
	b := w.buf
	w.buf = nil
	if w.chunked && len(w.pend) == 0 && w.req.Method != http.MethodHead {
		w.pend = b
		return nil
	}
	return w.body(b)
}

// sendChunk writes the pending chunk to bw.
func (w *response) sendChunk() error {
	if len(w.pend) == 0 {
		return nil
	}
	err := w.writeChunk(w.pend)
	w.pend = w.pend[:0]
	return err
}

// writeChunk writes p to bw as one chunk.
func (w *response) writeChunk(p []byte) error {
	bw := w.c.bw
	bw.Write(append(strconv.AppendInt(bw.AvailableBuffer(), int64(len(p)), 16), "\r\n"...))
	bw.Write(p)
	_, err := bw.WriteString("\r\n")
	return err
}

// finish completes the response after the handler returned.
func (w *response) finish() error {
	if w.werr != nil {
		return w.werr
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.buffering {
		if err := w.sendHeader(true, nil, w.c.bw); err != nil {
			return err
		}
		if err := w.sendBuffered(); err != nil {
			return err
		}
	}
	if w.chunked {
		if err := w.sendChunk(); err != nil {
			return err
		}
		w.c.bw.WriteString("0\r\n")
		w.writeTrailers()
		w.c.bw.WriteString("\r\n")
	}
	// A 204 or 304 has no body whatever its header declared (a handler
	// sets a file's Content-Length, then finds it not modified).
	if w.contentLength >= 0 && w.written < w.contentLength && w.req.Method != http.MethodHead && bodyAllowed(w.status) {
		w.closeAfter = true // the declared length was not honoured
	}
	return w.c.bw.Flush()
}

// declareTrailer notes a trailer that sent's "Trailer" declares, unless
// RFC 9110 forbids it as a trailer (net/http's list).
func (w *response) declareTrailer(key string) {
	key = http.CanonicalHeaderKey(key)
	if strings.HasPrefix(key, "If-") || forbiddenTrailers[key] {
		return
	}
	w.trailers = append(w.trailers, key)
}

var forbiddenTrailers = map[string]bool{
	"Authorization": true, "Cache-Control": true, "Connection": true, "Content-Encoding": true,
	"Content-Length": true, "Content-Range": true, "Content-Type": true, "Expect": true,
	"Host": true, "Keep-Alive": true, "Max-Forwards": true, "Pragma": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true, "Proxy-Connection": true,
	"Range": true, "Realm": true, "Te": true, "Trailer": true, "Transfer-Encoding": true,
	"Www-Authenticate": true,
}

// writeTrailers writes the trailers after the last chunk: the handler's
// values, now, of the keys declared, and of the keys with
// http.TrailerPrefix, without it.
func (w *response) writeTrailers() {
	var t http.Header
	for k, vv := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			if t == nil {
				t = http.Header{}
			}
			t[name] = vv
		}
	}
	for _, k := range w.trailers {
		for _, v := range w.header[k] {
			if t == nil {
				t = http.Header{}
			}
			t.Add(k, v)
		}
	}
	if t != nil {
		t.Write(w.c.bw)
	}
}

// forEachElement calls fn for each non-empty element of the
// comma-separated list v.
func forEachElement(v string, fn func(string)) {
	for f := range strings.SplitSeq(v, ",") {
		if f = textproto.TrimString(f); f != "" {
			fn(f)
		}
	}
}

func bodyAllowed(status int) bool {
	return (status < 100 || status > 199) && status != http.StatusNoContent && status != http.StatusNotModified
}

func defaultLog(format string, args ...any) { log.Printf(format, args...) }
