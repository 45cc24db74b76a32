package aio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// spin busy-works for about d, as a request handler computing would.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// A server whose accept loop runs in one task spreads its connection tasks
// over the workers: with 32 busy connections (net.Dial clients, about 20 µs
// of work per message) the least busy of two workers does at least a
// quarter of the polls. Woken tasks used to stay on the worker whose ring
// woke them, so one worker served everything (polls [192130 0]). Pinned
// workers, whose tasks never move once started, spread the connection
// tasks when they are spawned.
func TestServerConnectionsSpreadOverWorkers(t *testing.T) {
	for _, pinned := range []bool{false, true} {
		t.Run(fmt.Sprintf("pinned=%v", pinned), func(t *testing.T) {
			if !pinned && os.Getenv(runtime.EnvPinned) == "1" {
				t.Skip(runtime.EnvPinned + "=1 pins every runtime's workers")
			}
			if !pinned && goruntime.GOMAXPROCS(0) < 2 {
				// Woken tasks spread by stealing, which needs the idle
				// worker to run while the busy one does: with one P it
				// runs only once the busy one has drained its queue and
				// parked, and finds nothing (polls [12895 0]). Pinned
				// workers spread at Spawn, which needs no second P.
				t.Skip("needs two Ps for the idle worker to steal alongside the busy one")
			}
			serverSpreads(t, runtime.Config{Workers: 2, PinnedWorkers: pinned})
		})
	}
}

func serverSpreads(t *testing.T, cfg runtime.Config) {
	rt := newRuntime(t, cfg)
	const conns = 32
	trips := 3000
	if raceEnabled {
		trips = 200
	}
	ctx := goroutineCtx(rt)
	ln, err := Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := runtime.SpawnOn(rt, func(ctx context.Context) (struct{}, error) {
		for {
			c, err := ln.Accept(ctx)
			if err != nil {
				return struct{}{}, nil // the listener closed
			}
			runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				defer c.Close(ctx)
				buf := make([]byte, 64)
				for {
					if _, err := c.ReadFull(ctx, buf); err != nil {
						return struct{}{}, nil // the client is done
					}
					spin(20 * time.Microsecond)
					if _, err := c.Write(ctx, buf); err != nil {
						return struct{}{}, err
					}
				}
			})
		}
	})
	before := rt.Stats()
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			msg, got := make([]byte, 64), make([]byte, 64)
			for i := range trips {
				msg[0] = byte(i)
				if _, err := c.Write(msg); err != nil {
					errs <- err
					return
				}
				if _, err := io.ReadFull(c, got); err != nil || got[0] != byte(i) {
					errs <- errors.Join(err, errors.New("echo mismatch"))
					return
				}
			}
		}()
	}
	within(t, 120*time.Second, "32 echo clients", wg.Wait)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	after := rt.Stats()
	ln.Close(ctx)
	if _, err := server.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	var polls [2]uint64
	for i := range polls {
		polls[i] = after.PerWorker[i].Polls - before.PerWorker[i].Polls
	}
	least := min(polls[0], polls[1])
	share := float64(least) / float64(polls[0]+polls[1])
	t.Logf("polls per worker %v (least busy %.0f%%), steals %d", polls, share*100, after.Steals-before.Steals)
	if share < 0.25 {
		t.Fatalf("polls per worker %v: the least busy worker did %.0f%% of them, want >= 25%%", polls, share*100)
	}
}
