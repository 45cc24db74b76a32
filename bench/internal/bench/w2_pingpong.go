package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/faio-go/faio"
)

// W2: two tasks pass a counter back and forth over two capacity-1
// channels. Each side adds one before passing it on, so after n round
// trips the counter is 2n, and each side checks every value it receives.

func pingPongFaio(env *Env) (Measurement, error) {
	n := env.Sizes.PingPongs
	final := 0
	var elapsed time.Duration
	err := withRuntime(env, func(rt *faio.Runtime) error {
		var err error
		elapsed, err = timeBlockOn(rt, func(ctx context.Context) error {
			pingTx, pingRx := faio.NewChannel[int](1)
			pongTx, pongRx := faio.NewChannel[int](1)
			peer := faio.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				defer pongTx.Close()
				defer pingRx.Close()
				want := 0
				for {
					v, err := pingRx.Recv(ctx)
					if errors.Is(err, faio.ErrChannelClosed) {
						return struct{}{}, nil
					}
					if err != nil {
						return struct{}{}, err
					}
					if err := checkHop(v, want); err != nil {
						return struct{}{}, err
					}
					if err := pongTx.Send(ctx, v+1); err != nil {
						return struct{}{}, err
					}
					want = v + 2
				}
			})
			c, err := func() (int, error) {
				defer pingTx.Close()
				defer pongRx.Close()
				c := 0
				for range n {
					if err := pingTx.Send(ctx, c); err != nil {
						return c, err
					}
					v, err := pongRx.Recv(ctx)
					if err != nil {
						return c, err
					}
					if err := checkHop(v, c+1); err != nil {
						return c, err
					}
					c = v + 1
				}
				return c, nil
			}()
			final = c
			_, perr := peer.Join(ctx)
			return errors.Join(err, perr)
		})
		return err
	})
	if err != nil {
		return Measurement{}, err
	}
	return Measurement{Ops: int64(n), Elapsed: elapsed}, checkEqual("final ping-pong counter", int64(final), 2*int64(n))
}

func pingPongGoroutines(env *Env) (Measurement, error) {
	n := env.Sizes.PingPongs
	ping, pong := make(chan int, 1), make(chan int, 1)
	var peerErr error
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(pong)
		want := 0
		for v := range ping {
			if err := checkHop(v, want); err != nil {
				peerErr = err
				return
			}
			pong <- v + 1
			want = v + 2
		}
	})
	c, err := 0, error(nil)
	for range n {
		ping <- c
		v, ok := <-pong
		if !ok {
			err = errors.New("bench: ping-pong peer stopped early")
			break
		}
		if err = checkHop(v, c+1); err != nil {
			break
		}
		c = v + 1
	}
	close(ping)
	wg.Wait()
	elapsed := time.Since(start)
	if err = errors.Join(err, peerErr); err != nil {
		return Measurement{}, err
	}
	return Measurement{Ops: int64(n), Elapsed: elapsed}, checkEqual("final ping-pong counter", int64(c), 2*int64(n))
}

// checkHop reports a counter that arrived with the wrong value.
func checkHop(got, want int) error {
	if got != want {
		return fmt.Errorf("%w: ping-pong received %d, want %d", ErrValidation, got, want)
	}
	return nil
}
