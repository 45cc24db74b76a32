package runtime

import (
	"context"
	"fmt"
	"iter"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faio-go/faio/modules/timerwheel"
)

// coro is a pooled stackful coroutine. Its goroutine runs one task's
// function at a time; between tasks it waits in yield for the next one.
// Creating a coroutine costs about a microsecond, a resume and yield about a
// tenth of that, hence the pool.
type coro struct {
	next   func() (struct{}, bool)
	stop   func()
	yield  func(struct{}) bool
	goid   atomic.Uintptr // identity (getg) of the coroutine's goroutine, set when it starts
	task   *Task
	taskID atomic.Uint64 // id of task, for the watchdog's report
	owner  *worker       // the worker that created it: on pinned workers, the only one that may resume it

	// Why the task switched back, and the suspension it asks the worker
	// to complete. They live here, not in Task, because only a task that
	// holds a coroutine needs them: a task is smaller for it.
	yieldReason uint8
	kind        uint8
	budget      int // coop budget spent since the last resume
	suspendCtx  context.Context
	register    func(Waker) bool
	joinTarget  *Task
	sleepUntil  time.Duration
	timer       timerwheel.Handle
	timerWorker *worker
	// An I/O wait (Submit): the operation and its completion.
	ioOp    Op
	ioRes   int32
	ioFlags uint32
	ioDone  bool // the completion arrived (set by ioDone)
}

// coroutines maps the identity of every live coroutine goroutine to its
// coro, so BlockOn and Close can refuse to run on one.
var coroutines coroTable

// coroTable is a set of coroutines keyed by their goroutine's identity,
// in shards that each hold a plain map under a read-write mutex. Every new
// coroutine is entered and every ended one removed, so a workload of many
// sleepers (a coroutine each) pays for it per task: a sync.Map took 3-5%
// of W5's CPU and about 80 bytes per coroutine, a shard's map about 25.
// Lookups come from BlockOn and Close, from a task suspending with a
// context not its own, and from plain goroutines calling faio (each of
// their operations asks whether it runs in a task): they share the read
// lock. A shard's map is rebuilt smaller once it holds an eighth of its
// peak, so that a burst of a million sleepers does not keep its table.
type coroTable struct {
	shards [coroShards]struct {
		mu   sync.RWMutex
		m    map[uintptr]*coro
		peak int      // most entries m held since it was made
		_    [24]byte // one shard per cache line
	}
}

const (
	coroShardBits = 4
	coroShards    = 1 << coroShardBits
	// coroShrinkMin is the smallest peak worth rebuilding a map for.
	coroShrinkMin = 1024
)

// shard picks g's shard by Fibonacci hashing: g is a goroutine's address
// on amd64 and arm64 (see getg), a sequential id elsewhere.
func (tb *coroTable) shard(g uintptr) int {
	return int(uint64(g) * 0x9E3779B97F4A7C15 >> (64 - coroShardBits))
}

func (tb *coroTable) store(g uintptr, c *coro) {
	s := &tb.shards[tb.shard(g)]
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[uintptr]*coro)
	}
	s.m[g] = c
	s.peak = max(s.peak, len(s.m))
	s.mu.Unlock()
}

func (tb *coroTable) delete(g uintptr) {
	s := &tb.shards[tb.shard(g)]
	s.mu.Lock()
	delete(s.m, g)
	if n := len(s.m); s.peak >= coroShrinkMin && n < s.peak/8 {
		// A Go map keeps its storage when entries go: copy what is
		// left into a map of its size. The copy is paid for by the
		// 7/8 of the peak deleted since the last one.
		m := make(map[uintptr]*coro, n)
		for k, v := range s.m {
			m[k] = v
		}
		s.m, s.peak = m, n
	}
	s.mu.Unlock()
}

func (tb *coroTable) load(g uintptr) (*coro, bool) {
	s := &tb.shards[tb.shard(g)]
	s.mu.RLock()
	c, ok := s.m[g]
	s.mu.RUnlock()
	return c, ok
}

// newCoro starts a coroutine and runs it up to its first yield, so that its
// goid is known before any task is bound to it.
//
// The coroutine's body is a function literal rather than a method value,
// and runs a task's function through as few frames as it can (see
// execute): a suspended task's stack holds these frames, every new
// coroutine's stack starts at 2 KiB (growing it costs a copy), and the
// garbage collector walks every frame of every sleeping task.
func newCoro() *coro {
	c := &coro{}
	c.next, c.stop = iter.Pull(func(yield func(struct{}) bool) {
		c.yield = yield
		g := getg()
		c.goid.Store(g)
		coroutines.store(g, c)
		defer coroutines.delete(g)
		if !yield(struct{}{}) {
			return
		}
		for {
			if t := c.task; c.owner.pinned {
				t.execute()
			} else {
				setProfLabel(t.labels)
				t.run(c)
			}
			if c.task.worker.runInline(c) {
				continue
			}
			if !yield(struct{}{}) {
				return
			}
		}
	})
	c.next()
	return c
}

// onCoroutine reports whether the caller runs on a faio coroutine, that is
// in a task. Worker loops are not in the map: the only code of others they
// run is the register functions given to Suspend, which must not block.
func onCoroutine() bool {
	_, ok := coroutines.load(getg())
	return ok
}

// PanicError is the error Join returns for a task that panicked.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the task's stack at the panic
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("faio task panicked: %v\n\n%s", e.Value, e.Stack)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// execute runs the task's function on its coroutine, on a pinned worker.
// (On others the coroutine's loop calls run itself, one frame less.)
func (t *Task) execute() {
	c := t.coro
	setProfLabel(t.labels)
	// On a pinned worker a runtime.Goexit must not reach the worker (see
	// retire). A Goexit is what leaves run without returning: run
	// recovers panics itself, even one raised by a deferred call while
	// a Goexit is under way (after which the Goexit resumes). With
	// PanicCrash it does not, so a panic passes here too: it is passed on.
	exited := true
	defer func() {
		if !exited {
			return
		}
		if t.rt.cfg.PanicPolicy == PanicCrash {
			if r := recover(); r != nil {
				panic(r)
			}
		}
		c.retire(t)
	}()
	t.run(c)
	exited = false
}

// run runs the task's function and notes that it is done. A panic fails the
// task with a *PanicError, unless the policy is PanicCrash.
func (t *Task) run(c *coro) {
	if t.rt.cfg.PanicPolicy == PanicCrash {
		t.body.run(t)
		c.yieldReason = reasonDone
		return
	}
	defer func() {
		if r := recover(); r != nil {
			t.body.fail(&PanicError{Value: r, Stack: debug.Stack()})
		}
		c.yieldReason = reasonDone
	}()
	t.body.run(t)
}

// retire is called on a pinned worker by a task whose function called
// runtime.Goexit, from execute's deferred call, with the Goexit under way.
// On other workers the Goexit ends the coroutine and then the worker's
// goroutine, which onExit replaces; here that goroutine is locked to the
// thread that alone may resume the worker's suspended tasks, so it must not
// end. The task fails with ErrGoexit and its coroutine switches back to the
// worker for good (reasonRetired) instead of ending: the worker stops it at
// shutdown (unpinAtShutdown), and only then does the Goexit finish.
func (c *coro) retire(t *Task) {
	t.body.fail(ErrGoexit)
	c.yieldReason = reasonRetired
	for c.yield(struct{}{}) {
		// Nothing resumes a retired coroutine but stop.
	}
}
