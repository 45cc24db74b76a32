package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/faio-go/faio"
)

// withRuntime runs fn on a new faio runtime with env.Workers workers on
// env.Backend (or the one FAIO_BACKEND names) and closes the runtime
// afterwards, keeping its counters in env; starting and closing it are not
// part of any measurement.
func withRuntime(env *Env, fn func(rt *faio.Runtime) error) error {
	rt, err := faio.New(faio.Config{Workers: env.Workers, IOBackend: env.Backend, PinnedWorkers: env.Pinned})
	if err != nil {
		return fmt.Errorf("bench: starting faio: %w", err)
	}
	err = fn(rt)
	st := rt.Stats()
	env.faioStats = &st
	if cerr := rt.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("bench: closing faio: %w", cerr)
	}
	return err
}

// timeBlockOn runs root as the root task of rt and returns how long
// BlockOn took, which includes every task root spawned (BlockOn returns
// only once they have all finished).
func timeBlockOn(rt *faio.Runtime, root func(ctx context.Context) error) (time.Duration, error) {
	start := time.Now()
	_, err := faio.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, root(ctx)
	})
	return time.Since(start), err
}

// spawnEach spawns n tasks running body(ctx, i) and records their errors
// in errs; BlockOn waits for them.
func spawnEach(ctx context.Context, n int, errs *firstError, body func(ctx context.Context, i int) error) {
	for i := range n {
		faio.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			errs.set(body(ctx, i))
			return struct{}{}, nil
		})
	}
}
