package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/faio-go/faio"
)

// W10: one plain goroutine makes Trips round trips of MsgSize bytes to a
// loopback echo server (a goroutine per connection, package net, the same
// for both sides): through faio (faio.Dial with a context naming the
// runtime, Conn.Write, Conn.ReadFull) against net.Conn. It measures what a
// goroutine pays to use faio's I/O; each trip is timed, and every echoed
// byte is checked.

func callerFaio(env *Env) (Measurement, error) {
	var m Measurement
	err := withEchoServer(func(addr string) error {
		return withRuntime(env, func(rt *faio.Runtime) error {
			ctx := faio.WithRuntime(context.Background(), rt)
			c, err := faio.Dial(ctx, "tcp", addr)
			if err != nil {
				return err
			}
			defer c.Close(ctx)
			m, err = timeTrips(env.Sizes, func(msg, got []byte) error {
				if _, err := c.Write(ctx, msg); err != nil {
					return err
				}
				_, err := c.ReadFull(ctx, got)
				return err
			})
			return err
		})
	})
	return m, err
}

func callerGoroutines(env *Env) (Measurement, error) {
	var m Measurement
	err := withEchoServer(func(addr string) error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		m, err = timeTrips(env.Sizes, func(msg, got []byte) error {
			if _, err := c.Write(msg); err != nil {
				return err
			}
			_, err := io.ReadFull(c, got)
			return err
		})
		return err
	})
	return m, err
}

// timeTrips makes s.Trips round trips with trip (after one untimed
// warm-up trip), checks every echo and returns the latencies.
func timeTrips(s Sizes, trip func(msg, got []byte) error) (Measurement, error) {
	msg, got := make([]byte, s.MsgSize), make([]byte, s.MsgSize)
	lat := make([]time.Duration, s.Trips)
	for i := -1; i < s.Trips; i++ {
		for j := range msg {
			msg[j] = byte(i + j)
		}
		start := time.Now()
		if err := trip(msg, got); err != nil {
			return Measurement{}, err
		}
		if i >= 0 {
			lat[i] = time.Since(start)
		}
		if !bytes.Equal(msg, got) {
			return Measurement{}, fmt.Errorf("%w: trip %d came back changed", ErrValidation, i)
		}
	}
	var total time.Duration
	for _, d := range lat {
		total += d
	}
	return withLatencies(Measurement{Ops: int64(s.Trips), Elapsed: total}, lat), nil
}

// withEchoServer runs fn with the address of a loopback echo server (an
// accept goroutine, a goroutine per connection) that lives for the call.
func withEchoServer(fn func(addr string) error) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("bench: W10 echo server: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	err = fn(ln.Addr().String())
	ln.Close()
	<-done
	return err
}
