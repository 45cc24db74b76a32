package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/faio-go/faio"
)

// W6: InFlight tasks share Reads random BlockSize reads (fixed seeds,
// block-aligned offsets) of the data file, which the setup has read once so
// the page cache holds it. Every read is checked against the file's
// pattern: at both ends always, word by word for one read in
// fullCheckEvery.

// fullCheckEvery sets how often a read is checked in full; checking every
// word of every read would cost more than a page-cache read itself.
const fullCheckEvery = 128

// readSeed fixes the offsets, so both implementations read the same blocks.
const readSeed = 6

func setupFileRead(env *Env) error {
	s := env.Sizes
	created, err := ensureDataFile(env.File, s.FileSize, false, env.Log)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Log, "faio-bench: reading %s once to warm the page cache\n", env.File)
	err = warmDataFile(env.File, s.FileSize)
	if errors.Is(err, errPatternMismatch) && !created {
		fmt.Fprintf(env.Log, "faio-bench: %v; writing it again\n", err)
		if _, err := ensureDataFile(env.File, s.FileSize, true, env.Log); err != nil {
			return err
		}
		err = warmDataFile(env.File, s.FileSize)
	}
	return err
}

func fileReadFaio(env *Env) (Measurement, error) {
	return readFaio(env, env.Sizes.Reads, os.O_RDONLY, plainBuffer)
}

func fileReadGoroutines(env *Env) (Measurement, error) {
	return readGoroutines(env, env.Sizes.Reads, os.O_RDONLY, plainBuffer)
}

// plainBuffer allocates a read buffer for page-cache reads.
func plainBuffer(size int) []byte { return make([]byte, size) }

// readFaio runs reads reads of the data file, opened with flag, on
// InFlight faio tasks.
func readFaio(env *Env, reads, flag int, newBuf func(size int) []byte) (Measurement, error) {
	s := env.Sizes
	var errs firstError
	var elapsed time.Duration
	err := withRuntime(env, func(rt *faio.Runtime) error {
		f, err := faio.OpenFile(faio.WithRuntime(context.Background(), rt), env.File, flag, 0)
		if err != nil {
			return err
		}
		elapsed, err = timeBlockOn(rt, func(ctx context.Context) error {
			spawnEach(ctx, s.InFlight, &errs, func(ctx context.Context, i int) error {
				buf := newBuf(s.BlockSize)
				return readLoop(s, readShare(reads, s.InFlight, i), uint64(i), buf, func(b []byte, off int64) (int, error) {
					return f.ReadAt(ctx, b, off)
				})
			})
			return nil
		})
		return errors.Join(err, f.Close(context.Background()))
	})
	if err = errors.Join(err, errs.get()); err != nil {
		return Measurement{}, err
	}
	return readMeasurement(s, reads, elapsed), nil
}

// readGoroutines runs reads reads of the data file, opened with flag, on
// InFlight goroutines calling os.File.ReadAt.
func readGoroutines(env *Env, reads, flag int, newBuf func(size int) []byte) (Measurement, error) {
	s := env.Sizes
	f, err := os.OpenFile(env.File, flag, 0)
	if err != nil {
		return Measurement{}, err
	}
	defer f.Close()
	var errs firstError
	start := time.Now()
	var wg sync.WaitGroup
	for i := range s.InFlight {
		wg.Go(func() {
			buf := newBuf(s.BlockSize)
			errs.set(readLoop(s, readShare(reads, s.InFlight, i), uint64(i), buf, f.ReadAt))
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errs.get(); err != nil {
		return Measurement{}, err
	}
	return readMeasurement(s, reads, elapsed), nil
}

func readMeasurement(s Sizes, reads int, elapsed time.Duration) Measurement {
	return Measurement{Ops: int64(reads), Elapsed: elapsed, Bytes: int64(reads) * int64(s.BlockSize)}
}

// readShare is how many of n reads reader i of k does.
func readShare(n, k, i int) int {
	share := n / k
	if i < n%k {
		share++
	}
	return share
}

// readLoop does n reads into buf at block-aligned offsets drawn from a
// generator seeded with seed, and checks each.
func readLoop(s Sizes, n int, seed uint64, buf []byte, readAt func([]byte, int64) (int, error)) error {
	rng := rand.New(rand.NewPCG(seed, readSeed))
	blocks := s.FileSize / int64(s.BlockSize)
	for i := range n {
		off := rng.Int64N(blocks) * int64(s.BlockSize)
		got, err := readAt(buf, off)
		if err != nil {
			return fmt.Errorf("bench: read at offset %d: %w", off, err)
		}
		if err := checkRead(buf, got, off, i); err != nil {
			return err
		}
	}
	return nil
}

// checkRead checks the seq-th read of one reader: got bytes into buf from
// offset off.
func checkRead(buf []byte, got int, off int64, seq int) error {
	if got != len(buf) {
		return fmt.Errorf("%w: read %d bytes at offset %d, want %d", ErrValidation, got, off, len(buf))
	}
	if seq%fullCheckEvery == 0 {
		return verifyPattern(buf, off)
	}
	return verifyPatternEnds(buf, off)
}
