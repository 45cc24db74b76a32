package statemachine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// MaxWorkers is the largest worker count New accepts. The counter word has
// room for far more; the bound keeps New's preallocation of per-worker slots
// reasonable and catches a nonsensical configuration early.
const MaxWorkers = 1 << 15

// ErrWorkers is returned, wrapped with the offending value, by New when the
// worker count is outside [1, MaxWorkers].
var ErrWorkers = errors.New("faio/statemachine: worker count out of range")

// ErrWorkerID is returned, wrapped with the offending value, by CheckID for
// a worker id outside [0, Workers()).
var ErrWorkerID = errors.New("faio/statemachine: worker id out of range")

// cacheLineSize separates the counter word, written by every searcher, from
// the mutex and sleeper slots that only the sleep/wake slow path touches.
const cacheLineSize = 64

// Per-worker phase, written under mu and read lock-free by IsSleeping.
const (
	phaseAwake    uint32 = iota // counted working
	phaseListed                 // in the sleeper list, not counted working
	phaseNotified               // popped by WorkerToNotify, counted working and searching, not yet acknowledged by CancelSleeping
)

// StateMachine is the shared accounting of one pool of workers. The zero
// value is not usable; create one with New. All methods are safe for
// concurrent use and allocate nothing, but for CheckID's error for an id
// out of range.
type StateMachine struct {
	state   atomic.Uint64 // a counters value
	workers int
	_       [cacheLineSize - 16]byte

	mu       sync.Mutex
	sleepers sleeperList
	phase    []atomic.Uint32
}

// New returns the accounting for workers workers, all of them working and
// none searching or sleeping. It fails with ErrWorkers if workers is not in
// [1, MaxWorkers].
func New(workers int) (*StateMachine, error) {
	if workers < 1 || workers > MaxWorkers {
		return nil, fmt.Errorf("%w: %d not in [1, %d]", ErrWorkers, workers, MaxWorkers)
	}
	s := &StateMachine{
		workers:  workers,
		sleepers: newSleeperList(workers),
		phase:    make([]atomic.Uint32, workers),
	}
	s.state.Store(uint64(allWorking(workers)))
	return s, nil
}

// Workers returns the number of workers the state machine was created for.
func (s *StateMachine) Workers() int { return s.workers }

// CheckID returns nil if id names a worker of this state machine, and an
// error wrapping ErrWorkerID otherwise. The other methods tolerate bad ids
// (see the package comment); CheckID lets a caller find out that it has one.
func (s *StateMachine) CheckID(id int) error {
	if !s.valid(id) {
		return fmt.Errorf("%w: %d not in [0, %d)", ErrWorkerID, id, s.workers)
	}
	return nil
}

func (s *StateMachine) valid(id int) bool { return uint(id) < uint(s.workers) }

func (s *StateMachine) load() counters { return counters(s.state.Load()) }

// NumWorking returns how many workers are not asleep. A notified worker
// counts as working from the moment WorkerToNotify returns it.
func (s *StateMachine) NumWorking() int { return s.load().working() }

// NumSearching returns how many workers are searching, including notified
// workers that have not yet acknowledged with CancelSleeping.
func (s *StateMachine) NumSearching() int { return s.load().searching() }

// Sleepers returns how many workers are listed as sleeping: Workers() minus
// NumWorking(), from one consistent load.
func (s *StateMachine) Sleepers() int { return s.workers - s.load().working() }

// IsSleeping reports whether worker id is in the sleeper list. It is false
// once WorkerToNotify has taken the worker off the list, even before the
// worker has run, and false for an id outside [0, Workers()).
func (s *StateMachine) IsSleeping(id int) bool {
	return s.valid(id) && s.phase[id].Load() == phaseListed
}
