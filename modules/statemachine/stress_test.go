package statemachine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The stress test runs the protocol of the package comment with real
// goroutines: workers with local queues, a global queue fed by outside
// spawners, stealing, sleeping on a wake channel that stands for the
// eventfd. It runs in rounds: spawners publish a burst to the global queue,
// each of those tasks publishes one child to the local queue of the worker
// running it, and the next round starts only when every task has run. So
// every round ends with workers falling asleep while the next burst is
// published, the race a lost wake-up needs, and a lost wake-up cannot be
// rescued by later work: the round never completes and the watchdog fails
// the test.

const (
	stressWorkers  = 8
	stressSpawners = 3
	stressRounds   = 20000
	stressBurst    = 4 // tasks per spawner per round
	// stressStallDeadline detects a hang; it is not a speed requirement.
	stressStallDeadline = 60 * time.Second
)

// counter is a queue reduced to its length: the state machine only cares
// whether work exists, not what it is.
type counter struct {
	n atomic.Int64
	_ [cacheLineSize - 8]byte
}

func (c *counter) take() bool {
	for {
		n := c.n.Load()
		if n == 0 {
			return false
		}
		if c.n.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

type stressPool struct {
	t  *testing.T
	sm *StateMachine

	global counter
	local  [stressWorkers]counter

	wake      [stressWorkers]chan struct{} // capacity 1, like an eventfd counter
	blocked   [stressWorkers]atomic.Bool   // true while waiting on wake
	notified  [stressWorkers]atomic.Int64  // WorkerToNotify results
	confirmed [stressWorkers]atomic.Int64  // CancelSleeping results that were true

	processed atomic.Int64
	target    atomic.Int64  // processed count that completes the round
	roundDone chan struct{} // signalled by the task that reaches target
	stop      chan struct{}
}

func (p *stressPool) notify() {
	id, ok := p.sm.WorkerToNotify()
	if !ok {
		return
	}
	p.notified[id].Add(1)
	select {
	case p.wake[id] <- struct{}{}:
	default: // a token is already pending; one is enough, as with an eventfd
	}
}

func (p *stressPool) anyWork() bool {
	if p.global.n.Load() > 0 {
		return true
	}
	for i := range p.local {
		if p.local[i].n.Load() > 0 {
			return true
		}
	}
	return false
}

// steal looks through every other local queue, then the global one.
func (p *stressPool) steal(self int) (ok, global bool) {
	for i := 1; i < stressWorkers; i++ {
		if p.local[(self+i)%stressWorkers].take() {
			return true, false
		}
	}
	ok = p.global.take()
	return ok, ok
}

// run executes one task taken from the global queue (withChild) or from a
// local queue.
func (p *stressPool) run(id int, withChild bool) {
	if withChild {
		p.local[id].n.Add(1) // publish first, then look for a sleeper
		p.notify()
	}
	if p.processed.Add(1) == p.target.Load() {
		p.roundDone <- struct{}{}
	}
}

func (p *stressPool) worker(id int) {
	searching := false
	for {
		if !searching {
			if p.local[id].take() {
				p.run(id, false)
				continue
			}
			if p.global.take() {
				p.run(id, true)
				continue
			}
			searching = p.sm.TrySearch()
		}
		if searching {
			if ok, global := p.steal(id); ok {
				searching = false
				if p.sm.TransitionFromSearching() {
					p.notify() // others may have skipped a wake-up because of us
				}
				p.run(id, global)
				continue
			}
		}

		// Protocol: SetSleeping, then re-check every queue, then block.
		p.sm.SetSleeping(id, searching)
		searching = false
		if !p.anyWork() {
			p.blocked[id].Store(true)
			select {
			case <-p.wake[id]:
			case <-p.stop:
				p.blocked[id].Store(false)
				p.sm.CancelSleeping(id)
				return
			}
			p.blocked[id].Store(false)
		}
		if p.sm.CancelSleeping(id) {
			p.confirmed[id].Add(1)
			searching = true
		}
	}
}

// check verifies the invariants that must hold at any instant. Holding the
// mutex freezes the list and the working count; searching may still move.
func (p *stressPool) check() error {
	c := p.sm.load()
	w, s := c.working(), c.searching()
	if w > stressWorkers || s > (stressWorkers+1)/2 || s > w {
		return fmt.Errorf("counters out of range: working %d searching %d", w, s)
	}
	p.sm.mu.Lock()
	defer p.sm.mu.Unlock()
	var seen [stressWorkers]bool
	n := 0
	for id := p.sm.sleepers.head; id != none; id = p.sm.sleepers.next[id] {
		if seen[id] || p.sm.phase[id].Load() != phaseListed {
			return fmt.Errorf("sleeper list holds %d twice or with phase %d", id, p.sm.phase[id].Load())
		}
		seen[id] = true
		n++
	}
	if w := p.sm.NumWorking(); w+n != stressWorkers {
		return fmt.Errorf("working %d + listed %d != %d", w, n, stressWorkers)
	}
	for id := range stressWorkers {
		// A worker blocked on its channel went through SetSleeping and has
		// not called CancelSleeping: it must be listed or notified, never
		// forgotten.
		if p.blocked[id].Load() && p.sm.phase[id].Load() == phaseAwake {
			return fmt.Errorf("worker %d is blocked but neither listed nor notified", id)
		}
	}
	return nil
}

func (p *stressPool) stalled(what string) {
	p.t.Helper()
	p.t.Fatalf("%s: no progress for %v: processed %d of %d, global %d, working %d, searching %d, sleepers %d",
		what, stressStallDeadline, p.processed.Load(), p.target.Load(), p.global.n.Load(),
		p.sm.NumWorking(), p.sm.NumSearching(), p.sm.Sleepers())
}

func TestStressNoLostWakeUp(t *testing.T) {
	sm := mustNew(t, stressWorkers)
	p := &stressPool{t: t, sm: sm, roundDone: make(chan struct{}, 1), stop: make(chan struct{})}
	for i := range p.wake {
		p.wake[i] = make(chan struct{}, 1)
	}

	var workers sync.WaitGroup
	defer func() {
		close(p.stop)
		workers.Wait()
	}()
	for id := range stressWorkers {
		workers.Go(func() { p.worker(id) })
	}
	// The checker samples the invariants while everything runs, not only
	// at the end; it stops with the workers.
	workers.Go(func() {
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			if err := p.check(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(20 * time.Microsecond)
		}
	})

	watchdog := time.NewTimer(stressStallDeadline)
	defer watchdog.Stop()
	for range stressRounds {
		// Set before publishing: only this round's last task can reach it.
		p.target.Add(2 * stressSpawners * stressBurst)
		var spawners sync.WaitGroup
		for range stressSpawners {
			spawners.Go(func() {
				for range stressBurst {
					p.global.n.Add(1) // publish first, then look for a sleeper
					p.notify()
				}
			})
		}
		spawners.Wait()
		watchdog.Reset(stressStallDeadline)
		select {
		case <-p.roundDone:
		case <-watchdog.C:
			p.stalled("round")
		}
	}

	// With no work left every worker must end up listed.
	for since := time.Now(); sm.NumWorking() != 0; time.Sleep(100 * time.Microsecond) {
		if time.Since(since) > stressStallDeadline {
			p.stalled("falling asleep")
		}
	}
	if err := p.check(); err != nil {
		t.Fatal(err)
	}
	if sm.NumSearching() != 0 || sm.Sleepers() != stressWorkers {
		t.Fatalf("at rest: searching %d, sleepers %d", sm.NumSearching(), sm.Sleepers())
	}
	var notified int64
	for id := range stressWorkers {
		if !sm.IsSleeping(id) {
			t.Errorf("worker %d is not listed at rest", id)
		}
		// Every notification was acknowledged exactly once: SetSleeping
		// refuses a notified worker that has not called CancelSleeping.
		n, c := p.notified[id].Load(), p.confirmed[id].Load()
		if n != c {
			t.Errorf("worker %d: notified %d times, CancelSleeping confirmed %d", id, n, c)
		}
		notified += n
	}
	if notified < stressRounds {
		t.Errorf("%d notifications in %d rounds; the test did not exercise waking", notified, stressRounds)
	}
	t.Logf("%d tasks, %d notifications", p.processed.Load(), notified)
}
