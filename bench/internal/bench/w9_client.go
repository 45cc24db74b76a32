package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// The W9 own client runs in its own process (the internal -http-load
// flag), like the W7 client, so its CPU is not the server's. It speaks
// just enough HTTP/1.1 for the benchmark, with nothing allocated per
// request: HTTPConns keep-alive connections, each sending one untimed
// warm-up GET and then HTTPRequests timed GETs, one at a time, all
// connections at once. It checks every response (status 200,
// Content-Length, kept alive, the body byte for byte) and times every
// request.

// httpRequest is the GET the W9 clients send to the server at addr.
func httpRequest(addr string) []byte {
	return []byte("GET / HTTP/1.1\r\nHost: " + addr + "\r\n\r\n")
}

// RunHTTPClient runs the W9 client against the HTTP server at addr, whose
// every response must be body.
func RunHTTPClient(ctx context.Context, addr string, body []byte, s Sizes) (ClientReport, error) {
	conns, release, err := loopbackConns(ctx, addr, s.HTTPConns)
	if err != nil {
		return ClientReport{}, err
	}
	defer release()
	req := httpRequest(addr)
	readers := make([]*bufio.Reader, len(conns))
	for i, c := range conns {
		readers[i] = bufio.NewReader(c)
		if err := httpGet(c, readers[i], req, body, make([]byte, len(body))); err != nil {
			return ClientReport{}, fmt.Errorf("bench: client connection %d, warm-up request: %w", i, err)
		}
	}

	n := s.HTTPRequests
	lat := make([]time.Duration, len(conns)*n)
	var errs firstError
	var wg sync.WaitGroup
	startGate := make(chan struct{})
	for i, c := range conns {
		wg.Go(func() {
			br, got := readers[i], make([]byte, len(body))
			<-startGate
			for k := range n {
				begin := time.Now()
				if err := httpGet(c, br, req, body, got); err != nil {
					errs.set(fmt.Errorf("bench: client connection %d, request %d: %w", i, k, err))
					return
				}
				lat[i*n+k] = time.Since(begin)
			}
		})
	}
	start := time.Now()
	close(startGate)
	wg.Wait()
	elapsed := time.Since(start)
	if err := errs.get(); err != nil {
		return ClientReport{}, err
	}
	m := withLatencies(Measurement{}, lat)
	return ClientReport{
		Conns:      len(conns),
		Trips:      n,
		RoundTrips: int64(len(lat)),
		Nanos:      elapsed.Nanoseconds(),
		P50Nanos:   m.P50.Nanoseconds(),
		P99Nanos:   m.P99.Nanoseconds(),
		MaxNanos:   m.Max.Nanoseconds(),
	}, nil
}

// httpGet sends req on c and reads and checks its response from br (got
// holds the body).
func httpGet(c net.Conn, br *bufio.Reader, req, want, got []byte) error {
	if _, err := c.Write(req); err != nil {
		return err
	}
	return readHTTPResponse(br, want, got)
}

// readHTTPResponse reads one response from br and checks it: status 200,
// a Content-Length of len(want) (not chunked), not closing the
// connection, and the body equal to want. got must hold len(want) bytes.
func readHTTPResponse(br *bufio.Reader, want, got []byte) error {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return fmt.Errorf("reading the status line: %w", err)
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("%w: status line %q, want HTTP/1.1 200", ErrValidation, bytes.TrimSpace(line))
	}
	length := int64(-1)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading the header: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return fmt.Errorf("%w: header line %q", ErrValidation, line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length = parseLength(value); length < 0 {
				return fmt.Errorf("%w: Content-Length %q", ErrValidation, value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return fmt.Errorf("%w: Transfer-Encoding %q, want a Content-Length", ErrValidation, value)
		case bytes.EqualFold(name, []byte("Connection")) && bytes.Contains(bytes.ToLower(value), []byte("close")):
			return fmt.Errorf("%w: the server closes the connection (Connection: %s)", ErrValidation, value)
		}
	}
	if length != int64(len(want)) {
		return fmt.Errorf("%w: Content-Length %d, want %d", ErrValidation, length, len(want))
	}
	got = got[:len(want)]
	if _, err := io.ReadFull(br, got); err != nil {
		return fmt.Errorf("reading the body: %w", err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%w: the body differs from the one served", ErrValidation)
	}
	return nil
}

// parseLength parses a Content-Length value: decimal digits only; -1 if
// it is not one.
func parseLength(b []byte) int64 {
	if len(b) == 0 || len(b) > 18 {
		return -1
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// probeHTTP sends one request to the server at addr from this process and
// checks that the response is body.
func probeHTTP(addr string, body []byte) error {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return httpGet(c, bufio.NewReader(c), httpRequest(addr), body, make([]byte, len(body)))
}

// httpClientMain runs the W9 own client of the one W9 workload o selects
// and prints its report.
func httpClientMain(o Options, stdout, stderr io.Writer) int {
	if len(o.Workloads) != 1 || o.Workloads[0].body == nil {
		fmt.Fprintf(stderr, "faio-bench http client: -http-load wants -w with one W9 workload (W9-http-hello or W9-http-16k)\n")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	report, err := RunHTTPClient(ctx, o.HTTPLoad, o.Workloads[0].body, o.Sizes)
	if err != nil {
		fmt.Fprintf(stderr, "faio-bench http client: %v\n", err)
		return 1
	}
	if err := json.NewEncoder(stdout).Encode(report); err != nil {
		fmt.Fprintf(stderr, "faio-bench http client: %v\n", err)
		return 1
	}
	return 0
}
