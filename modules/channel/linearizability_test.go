package channel

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/faio-go/faio/modules/runtime"
)

// Operations of a linearizability history.
type linOp int

const (
	opSend linOp = iota
	opRecv
	opTrySend
	opTryRecv
)

type linInput struct {
	op linOp
	v  int // the value sent
}

// Results of an operation.
type linResult int

const (
	resOK linResult = iota
	resFull
	resEmpty
	resCancelled // a Send or Recv whose deadline passed: it moved nothing
)

type linOutput struct {
	res linResult
	v   int // the value received
}

// linState is a bounded FIFO as a comparable value, so porcupine can
// compare and cache states with ==.
type linState struct {
	n int
	v [4]int
}

// queueModel is the sequential specification: a FIFO of capacity cap
// (at least 1; the rendezvous case has no FIFO state to check and is
// covered by TestRendezvousSendCompletesOnlyWhenTaken).
func queueModel(capacity int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return linState{} },
		Step: func(state, input, output any) (bool, any) {
			s, in, out := state.(linState), input.(linInput), output.(linOutput)
			if out.res == resCancelled {
				return true, s
			}
			switch in.op {
			case opSend, opTrySend:
				if out.res == resFull {
					return s.n == capacity, s
				}
				if s.n == capacity {
					return false, s
				}
				s.v[s.n] = in.v
				s.n++
				return true, s
			default:
				if out.res == resEmpty {
					return s.n == 0, s
				}
				if s.n == 0 || s.v[0] != out.v {
					return false, s
				}
				copy(s.v[:], s.v[1:s.n])
				s.n--
				s.v[s.n] = 0
				return true, s
			}
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(linInput), output.(linOutput)
			return fmt.Sprintf("op %d(%d) -> %d, %d", in.op, in.v, out.res, out.v)
		},
	}
}

// history runs clients concurrently, each doing ops random operations on
// one channel, and records what happened with a logical clock.
func history(t *testing.T, rt *runtime.Runtime, capacity, clients, ops int, seed uint64) []porcupine.Operation {
	tx, rx := New[int](capacity)
	var clock atomic.Int64
	var mu sync.Mutex
	var hist []porcupine.Operation
	var fns []func(context.Context) error
	var where []placement
	for c := range clients {
		rng := rand.New(rand.NewPCG(seed, uint64(c)))
		fns = append(fns, func(ctx context.Context) error {
			for j := range ops {
				in := linInput{op: linOp(rng.IntN(4)), v: c*1000 + j}
				dctx, cancel := context.WithTimeout(ctx, time.Duration(50+rng.IntN(200))*time.Microsecond)
				call := clock.Add(1)
				var out linOutput
				var err error
				switch in.op {
				case opSend:
					err = tx.Send(dctx, in.v)
				case opTrySend:
					err = tx.TrySend(in.v)
				case opRecv:
					out.v, err = rx.Recv(dctx)
				case opTryRecv:
					out.v, err = rx.TryRecv()
				}
				ret := clock.Add(1)
				cancel()
				switch {
				case err == nil:
				case errors.Is(err, ErrFull):
					out.res = resFull
				case errors.Is(err, ErrEmpty):
					out.res = resEmpty
				case errors.Is(err, context.DeadlineExceeded):
					out.res = resCancelled
				default:
					return err
				}
				mu.Lock()
				hist = append(hist, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
			return nil
		})
		where = append(where, placement(c%2))
	}
	if err := runEach(rt, where, fns); err != nil {
		t.Fatal(err)
	}
	return hist
}

// Small concurrent histories of Send, Recv (some cancelled by their
// deadline), TrySend and TryRecv, half of the clients tasks and half
// goroutines, must be linearizable against a FIFO queue.
func TestLinearizableAgainstQueue(t *testing.T) {
	histories := 300
	if raceEnabled {
		histories = 150
	}
	rt := newRuntime(t, 2)
	for h := range histories {
		capacity := 1 + h%3
		hist := history(t, rt, capacity, 4, 6, uint64(h))
		res := porcupine.CheckOperationsTimeout(queueModel(capacity), hist, 10*time.Second)
		if res != porcupine.Ok {
			for _, op := range hist {
				t.Logf("client %d [%d,%d] %s", op.ClientId, op.Call, op.Return,
					queueModel(capacity).DescribeOperation(op.Input, op.Output))
			}
			t.Fatalf("history %d (capacity %d): %v", h, capacity, res)
		}
	}
}

// The checker itself must reject a history that no FIFO explains: a value
// received before it was sent, out of order.
func TestLinearizabilityCheckerRejectsReordering(t *testing.T) {
	hist := []porcupine.Operation{
		{ClientId: 0, Input: linInput{op: opSend, v: 1}, Call: 1, Output: linOutput{}, Return: 2},
		{ClientId: 0, Input: linInput{op: opSend, v: 2}, Call: 3, Output: linOutput{}, Return: 4},
		{ClientId: 1, Input: linInput{op: opRecv}, Call: 5, Output: linOutput{v: 2}, Return: 6},
	}
	if porcupine.CheckOperations(queueModel(2), hist) {
		t.Fatal("a reordered history was accepted")
	}
}
