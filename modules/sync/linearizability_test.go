package sync

import (
	"context"
	"math/rand/v2"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/faio-go/faio/modules/runtime"
)

type mutexOp int

const (
	opLock mutexOp = iota
	opTryLock
	opUnlock
)

// mutexModel is the sequential specification of Mutex: the state is
// whether it is locked. A Lock that failed (its ctx expired) has no
// effect; one that succeeded needs the mutex unlocked at its linearization
// point, as does a successful TryLock, while a failed TryLock needs it
// locked (a hand-off keeps the mutex locked, so TryLock never fails on a
// free one).
var mutexModel = porcupine.Model{
	Init: func() any { return false },
	Step: func(state, input, output any) (bool, any) {
		locked, ok := state.(bool), output.(bool)
		switch input.(mutexOp) {
		case opLock:
			if !ok {
				return true, locked
			}
			return !locked, true
		case opTryLock:
			if !ok {
				return locked, locked
			}
			return !locked, true
		default: // opUnlock
			return locked, false
		}
	},
	DescribeOperation: func(input, output any) string {
		return [...]string{"Lock", "TryLock", "Unlock"}[input.(mutexOp)] + map[bool]string{true: " ok", false: " failed"}[output.(bool)]
	},
}

// Histories of Lock (with random short deadlines), TryLock and Unlock from
// tasks and goroutines must be linearizable with respect to mutexModel.
func TestMutexLinearizable(t *testing.T) {
	const clients, opsPerClient = 6, 40
	histories := 30
	if raceEnabled {
		histories = 10
	}
	rt := newRuntime(t, 2)
	for h := range histories {
		var mu Mutex
		var clock atomic.Int64
		var hmu gosync.Mutex
		var history []porcupine.Operation
		record := func(client int, op mutexOp, call int64, ok bool) {
			ret := clock.Add(1)
			hmu.Lock()
			history = append(history, porcupine.Operation{ClientId: client, Input: op, Call: call, Output: ok, Return: ret})
			hmu.Unlock()
		}
		client := func(ctx context.Context, id int) error {
			rng := rand.New(rand.NewPCG(uint64(h), uint64(id)))
			for range opsPerClient / 2 {
				var ok bool
				call := clock.Add(1)
				if rng.IntN(3) == 0 {
					ok = mu.TryLock()
					record(id, opTryLock, call, ok)
				} else {
					cctx, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(100))*time.Microsecond)
					ok = mu.Lock(cctx) == nil
					cancel()
					record(id, opLock, call, ok)
				}
				if !ok {
					continue
				}
				if rng.IntN(2) == 0 {
					if err := runtime.Yield(ctx); err != nil {
						return err
					}
				}
				call = clock.Add(1)
				mu.Unlock()
				record(id, opUnlock, call, true)
			}
			return nil
		}
		var wg gosync.WaitGroup
		for id := range clients / 2 {
			wg.Go(func() { _ = client(context.Background(), id) })
		}
		run(t, rt, func(ctx context.Context) error {
			return spawnN(ctx, clients/2, func(ctx context.Context, i int) error { return client(ctx, clients/2+i) })
		})
		wg.Wait()
		fails := 0
		for _, op := range history {
			if !op.Output.(bool) {
				fails++
			}
		}
		t.Logf("history %d: %d ops, %d failed", h, len(history), fails)
		switch porcupine.CheckOperationsTimeout(mutexModel, history, 30*time.Second) {
		case porcupine.Illegal:
			t.Fatalf("history %d is not linearizable: %d operations", h, len(history))
		case porcupine.Unknown:
			t.Fatalf("history %d: the checker timed out", h)
		}
	}
}
