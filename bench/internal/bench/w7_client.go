package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// The W7 client runs in its own process (the internal -client flag), so
// both servers are measured by the same client code and neither shares its
// scheduler with the load. It uses plain Go net: Conns connections, each
// doing one untimed warm-up round trip and then Trips timed round trips of
// MsgSize bytes, all connections at once. It checks every echoed byte and
// times every round trip.

// ClientReport is what the W7 client, and the W9 client, print on stdout
// as one JSON line. For W9 a round trip is a request and its response.
type ClientReport struct {
	Conns      int   `json:"conns"`
	Trips      int   `json:"trips"`       // timed round trips per connection
	RoundTrips int64 `json:"round_trips"` // timed round trips done and checked
	Nanos      int64 `json:"nanos"`       // wall time of the timed part
	P50Nanos   int64 `json:"p50_ns"`      // round-trip latency percentiles
	P99Nanos   int64 `json:"p99_ns"`
	MaxNanos   int64 `json:"max_ns"`
}

// ErrNotLoopback is returned by RunClient and RunHTTPClient for an address
// that is not on the loopback interface: the benchmark never sends
// traffic elsewhere.
var ErrNotLoopback = errors.New("bench: the W7 and W9 clients connect to loopback addresses only")

// RunClient runs the W7 client against the echo server at addr. ready, if
// not nil, is called once every connection is open and has done its
// warm-up round trip, and the timed part starts when it returns; done, if
// not nil, is called as soon as the timed part is over. The client process
// uses them to tell the server's process when to take its CPU time.
func RunClient(ctx context.Context, addr string, s Sizes, ready, done func() error) (ClientReport, error) {
	if err := checkFileLimit(s.Conns); err != nil {
		return ClientReport{}, err
	}
	conns, release, err := loopbackConns(ctx, addr, s.Conns)
	if err != nil {
		return ClientReport{}, err
	}
	defer release()
	for i, c := range conns {
		if err := roundTrip(c, i, -1, make([]byte, s.MsgSize), make([]byte, s.MsgSize)); err != nil {
			return ClientReport{}, err
		}
	}

	if ready != nil {
		if err := ready(); err != nil {
			return ClientReport{}, err
		}
	}
	lat := make([]time.Duration, s.Conns*s.Trips)
	var errs firstError
	var wg sync.WaitGroup
	startGate := make(chan struct{})
	for i, c := range conns {
		wg.Go(func() {
			msg, got := make([]byte, s.MsgSize), make([]byte, s.MsgSize)
			<-startGate
			for t := range s.Trips {
				begin := time.Now()
				if err := roundTrip(c, i, t, msg, got); err != nil {
					errs.set(err)
					return
				}
				lat[i*s.Trips+t] = time.Since(begin)
			}
		})
	}
	start := time.Now()
	close(startGate)
	wg.Wait()
	elapsed := time.Since(start)
	if done != nil {
		errs.set(done())
	}
	if err := errs.get(); err != nil {
		return ClientReport{}, err
	}
	m := withLatencies(Measurement{}, lat)
	return ClientReport{
		Conns:      s.Conns,
		Trips:      s.Trips,
		RoundTrips: int64(len(lat)),
		Nanos:      elapsed.Nanoseconds(),
		P50Nanos:   m.P50.Nanoseconds(),
		P99Nanos:   m.P99.Nanoseconds(),
		MaxNanos:   m.Max.Nanoseconds(),
	}, nil
}

// loopbackConns opens n connections to addr, which must be a loopback
// address. release closes them all; so does the end of ctx, which ends
// every read and write in progress.
func loopbackConns(ctx context.Context, addr string, n int) (conns []net.Conn, release func(), err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: client address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, nil, fmt.Errorf("%w: %q", ErrNotLoopback, addr)
	}
	var mu sync.Mutex // guards open against the cancellation
	open := make([]net.Conn, 0, n)
	closeAll := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range open {
			c.Close()
		}
	}
	stop := context.AfterFunc(ctx, closeAll)
	release = func() {
		stop()
		closeAll()
	}
	var d net.Dialer
	for i := range n {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("bench: client connection %d: %w", i, err)
		}
		mu.Lock()
		open = append(open, c)
		mu.Unlock()
	}
	// open is complete: from here on it is only read.
	return open, release, nil
}

// roundTrip sends the message of connection conn's trip and checks that
// exactly it comes back; trip -1 is the warm-up.
func roundTrip(c net.Conn, conn, trip int, msg, got []byte) error {
	stampMessage(msg, conn, trip)
	if _, err := c.Write(msg); err != nil {
		return fmt.Errorf("bench: client connection %d, trip %d: %w", conn, trip, err)
	}
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("bench: client connection %d, trip %d: %w", conn, trip, err)
	}
	return checkEcho(msg, got, conn, trip)
}

// stampMessage fills msg with content unique to (conn, trip), so an echo
// from another connection or trip cannot pass for the right one.
func stampMessage(msg []byte, conn, trip int) {
	binary.LittleEndian.PutUint64(msg[0:], uint64(conn))
	binary.LittleEndian.PutUint64(msg[8:], uint64(int64(trip)))
	for i := minMsgSize; i < len(msg); i++ {
		msg[i] = byte(conn + trip + i)
	}
}

// checkEcho reports an echo that differs from the message sent.
func checkEcho(sent, got []byte, conn, trip int) error {
	if !bytes.Equal(sent, got) {
		return fmt.Errorf("%w: connection %d, trip %d: echo %x differs from message %x", ErrValidation, conn, trip, got, sent)
	}
	return nil
}
