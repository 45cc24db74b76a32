package runtime

import (
	"errors"
	"fmt"
	"math"
	"os"
	goruntime "runtime"
	"time"

	"github.com/faio-go/faio/modules/driver"
)

// PanicPolicy says what happens when a task panics.
type PanicPolicy int

const (
	// PanicReturn recovers the panic: the task's JoinHandle.Join returns a
	// *PanicError carrying the value and stack (its Error is one line, the
	// stack is its Stack field), and the runtime and the other tasks keep
	// running. It is the default.
	PanicReturn PanicPolicy = iota
	// PanicCrash lets the panic propagate out of the worker, which ends the
	// process as an unrecovered panic in a goroutine does.
	PanicCrash
)

// Defaults used for the zero fields of Config.
const (
	DefaultLocalQueueCapacity  = 256
	DefaultGlobalQueueInterval = 61
	DefaultIOInterval          = 61
	DefaultRingEntries         = 1024
	DefaultTimerResolution     = 100 * time.Microsecond
	DefaultSubmitBatch         = 4
	DefaultStallThreshold      = 10 * time.Millisecond
	maxWorkers                 = 1024
	maxLocalQueueCapacity      = 1 << 16
	minPinnedLocalQueue        = 2 * CoopBudget
	maxRingEntries             = 32768
)

// Config configures a Runtime. Its zero value means sensible defaults; New
// validates it once and reports every invalid field in its error.
type Config struct {
	// Workers is the number of worker goroutines (default GOMAXPROCS).
	Workers int
	// LocalQueueCapacity is the capacity of each worker's run queue, a
	// power of two (default 256; with PinnedWorkers a smaller one is
	// raised to 256, which placing spawned tasks needs).
	LocalQueueCapacity int
	// GlobalQueueInterval: every this many ticks a worker takes its next
	// task from the global queue first, so the global queue cannot starve
	// (default 61).
	GlobalQueueInterval int
	// IOInterval: every this many ticks a busy worker reaps its ring and
	// fires due timers without waiting (default 61).
	IOInterval int
	// RingEntries is the submission queue size of each worker's io_uring
	// (default 1024; rounded up to a power of two by the kernel).
	RingEntries int
	// TimerResolution is the granularity of every worker's timer wheel
	// (default 100 µs). Sleeps fire no earlier than asked and at most about
	// one resolution step later than a Go timer would on an idle machine.
	// With 1 ms, tokio's granularity, a sleep overslept by 1.1 ms at the
	// median against time.Sleep's 0.6 ms here; at 100 µs by 0.65 ms, with
	// no measurable cost to the workloads of bench/.
	TimerResolution time.Duration
	// SubmitBatch: a worker submits its prepared I/O operations once this
	// many are queued, and in any case when it runs out of tasks, before
	// it sleeps, or every IOInterval ticks (default 4). A socket send,
	// receive or accept counts as an eighth: the kernel does it on the spot
	// or parks it on the socket, so submitting it early gains little, while
	// a file's read starts its device early. A worker held by a long task
	// holds its unsubmitted operations too, as it holds its queued tasks.
	SubmitBatch int
	// SQPollIdle, if positive, gives each worker's io_uring a kernel
	// thread that submits without system calls (IORING_SETUP_SQPOLL),
	// spinning this long without work before it sleeps (default 0: no
	// such thread). Each spins on a CPU of its own while busy: worth it
	// only with cores to spare. The portable backend ignores it.
	SQPollIdle time.Duration
	// FileIOThreads, if positive, bounds the kernel threads that each
	// OS thread submitting to a worker's io_uring may start for file reads
	// and writes the kernel cannot issue without blocking (io-wq's bounded
	// workers; default 0: the kernel's limit, min(RingEntries, 4 x CPUs)).
	// Socket operations are not limited. Workers move between OS threads,
	// so the process may have a few times this many such threads.
	// O_DIRECT reads of a file whose pages are still dirty in the page
	// cache (one the program has just written) all take that path, since
	// each must wait for the writeback: W6d's 64 readers on a newly
	// written 1 GiB file peaked at 30 threads, 24 of them io-wq, against
	// 9 with FileIOThreads 1 and 5 or 6 once the file was clean.
	FileIOThreads int
	// PanicPolicy says what a panicking task does (default PanicReturn).
	PanicPolicy PanicPolicy
	// StallThreshold is how long a worker may run one task without coming
	// back to its loop while other work waits for it (tasks in its queue,
	// overdue timers, its ring's completions not reaped and operations not
	// submitted) before the watchdog counts a stall, reports it to OnStall
	// and wakes a sleeping worker to steal the waiting tasks and fire the
	// timers, again at every sample for as long as the stall lasts with
	// work waiting (tasks woken onto the held worker meanwhile). The
	// peer also reaps the held worker's ring and submits what it
	// prepared, as Go hands a P blocked in a system call to another
	// thread, and the tasks it wakes run on the peer; a pinned
	// worker's ring belongs to its thread and waits for the task.
	// Default 10 ms, at least MinStallThreshold; negative disables the
	// watchdog. The watchdog
	// samples the workers every half threshold while any is awake and
	// sleeps while all are: idle, it costs no CPU; busy, a sample costs a
	// few loads per worker.
	StallThreshold time.Duration
	// OnStall, if set, is called from the watchdog goroutine for every
	// stall it detects. It must not block.
	OnStall func(StallInfo)
	// OnTaskFailure receives the failures nobody observed: a task that
	// returned an error or panicked (Err is then a *PanicError with the
	// stack) and whose handle was never joined. A failure is reported
	// once, at the end of the BlockOn or WaitAll it ran under, when its
	// handle is garbage collected unjoined, or at Close, whichever comes
	// first; a task that returns its own context's error after being
	// cancelled has not failed. nil (the default) writes each one to the
	// standard logger (log.Printf, so to stderr unless log.SetOutput says
	// otherwise): "faio: task 7 failed and nobody joined it: ...", and
	// for a panic its stack after that line. To silence it, set a hook
	// that does nothing, or join the handle. It is called from the
	// goroutine that ends the BlockOn, Close or from a cleanup goroutine;
	// it must not block.
	OnTaskFailure func(TaskFailure)
	// IOBackend chooses io_uring or the portable backend (default
	// BackendAuto: io_uring where the kernel allows it). The environment
	// variable FAIO_BACKEND (auto, io_uring or portable), when set,
	// overrides it, so an operator can choose without a rebuild.
	IOBackend Backend
	// OnBackendFallback, if set, is called once by New when BackendAuto
	// falls back to the portable backend, with the reason io_uring was
	// refused. nil (the default) logs one notice per process through the
	// standard logger.
	OnBackendFallback func(error)
	// PinnedWorkers runs each worker on an OS thread of its own
	// (runtime.LockOSThread), for good: its ring's completions are then
	// always posted by the thread that waits for them (every ring is set
	// up with COOP_TASKRUN, which posts them from the submitting thread),
	// and a task's thread never changes, for code that cares (thread-local
	// state of a C library, CPU affinity set by the program). On this
	// project's W7 echo it is about as fast as the default (1.06x against
	// 1.09x of Go's net, same runs), and slower elsewhere (see README).
	//
	// The price is placement. Go lets a coroutine be resumed only on the
	// thread that created it, so a task that has started runs on its
	// worker until it ends, and a busy worker's woken tasks wait for it.
	// Tasks are spread when they are spawned instead: Spawn from a task
	// starts the new task on the least loaded (in live tasks) of up to
	// four other workers when the spawner's worker has at least two more,
	// else next on its own (so a spawner and the first task it spawns stay
	// together, and a server's connections alternate between the
	// workers). Workers do not steal from each other, except tasks not yet
	// started from a worker the watchdog finds stuck (Config.StallThreshold),
	// on which nothing is placed while it stays stuck. Two tasks that
	// talk to each other from different workers pay a cross-thread wake-up
	// per message, and a spawn placed on another worker costs a wake-up
	// too: leave it off (the default) for work that is not I/O-bound.
	//
	// The environment variable FAIO_PINNED (1 or 0), when set, overrides
	// it, as FAIO_BACKEND overrides IOBackend.
	//
	// A task on a pinned worker that calls runtime.Goexit (t.FailNow in a
	// test) fails with ErrGoexit as on any worker; its coroutine's
	// goroutine stays blocked until Close, since ending it would end the
	// worker's thread.
	PinnedWorkers bool
}

// EnvPinned is the environment variable that overrides
// Config.PinnedWorkers: "1" pins the workers, "0" does not.
const EnvPinned = "FAIO_PINNED"

// StallInfo describes a worker that kept one task running past
// Config.StallThreshold while other work was waiting for it.
type StallInfo struct {
	Worker int // the stalled worker
	// TaskID is the task it was running, or completing: a task whose
	// function has returned holds its worker until the runtime has
	// completed it (woken its joiners, stopped the AfterFunc on its
	// spawn context, which runs that context's code). It is 0 when the
	// worker was held in its own loop between two tasks, with no task
	// named (its thread descheduled, say).
	TaskID  uint64
	Running time.Duration // how long that task had been running
	// Waiting counts what waited: the tasks in the worker's queues, one
	// for its overdue timers, its ring's completions not reaped, one for
	// completions the kernel holds for it, and one for operations it has
	// not submitted yet.
	Waiting int
}

// ErrInvalidConfig is wrapped by every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("faio/runtime: invalid config")

// withDefaults returns c with every zero field set to its default and an
// error naming every field that is out of range.
func (c Config) withDefaults() (Config, error) {
	if c.Workers == 0 {
		c.Workers = goruntime.GOMAXPROCS(0)
	}
	if c.LocalQueueCapacity == 0 {
		c.LocalQueueCapacity = DefaultLocalQueueCapacity
	}
	if c.GlobalQueueInterval == 0 {
		c.GlobalQueueInterval = DefaultGlobalQueueInterval
	}
	if c.IOInterval == 0 {
		c.IOInterval = DefaultIOInterval
	}
	if c.RingEntries == 0 {
		c.RingEntries = DefaultRingEntries
	}
	if c.SubmitBatch == 0 {
		c.SubmitBatch = DefaultSubmitBatch
	}
	if c.TimerResolution == 0 {
		c.TimerResolution = DefaultTimerResolution
	}
	if c.StallThreshold == 0 {
		c.StallThreshold = DefaultStallThreshold
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}
	// The Config's own value is checked even where the environment
	// overrides it: a bad value is the program's error.
	if !c.IOBackend.Valid() {
		bad("IOBackend = %d, want BackendAuto, BackendIOUring or BackendPortable", int(c.IOBackend))
	}
	if b, ok, err := driver.BackendFromEnv(); err != nil {
		errs = append(errs, err)
	} else if ok {
		c.IOBackend = b
	}
	switch v, ok := os.LookupEnv(EnvPinned); {
	case !ok || v == "":
	case v == "1":
		c.PinnedWorkers = true
	case v == "0":
		c.PinnedWorkers = false
	default:
		errs = append(errs, fmt.Errorf("%s=%q, want 1 or 0", EnvPinned, v))
	}
	if c.Workers < 1 || c.Workers > maxWorkers {
		bad("Workers = %d, want 1..%d", c.Workers, maxWorkers)
	}
	if q := c.LocalQueueCapacity; q < 2 || q > maxLocalQueueCapacity || q&(q-1) != 0 {
		bad("LocalQueueCapacity = %d, want a power of two in 2..%d", q, maxLocalQueueCapacity)
	} else if c.PinnedWorkers && q < minPinnedLocalQueue {
		// A pinned spawner waits behind its children every CoopBudget
		// spawns; a smaller queue overflowed into the global queue
		// first, where the other workers took what was placed here
		// (found by a reviewer: [62 2] started per worker at 8).
		// Raised, not refused: FAIO_PINNED=1 turns pinning on for a
		// program that chose its capacity without it.
		c.LocalQueueCapacity = minPinnedLocalQueue
	}
	// The intervals are counted in a worker's uint32 ticks: 1<<32 was
	// taken as 0, and the first tick divided by it (found by a reviewer).
	if c.GlobalQueueInterval < 1 || int64(c.GlobalQueueInterval) > math.MaxUint32 {
		bad("GlobalQueueInterval = %d, want 1..%d", c.GlobalQueueInterval, uint32(math.MaxUint32))
	}
	if c.IOInterval < 1 || int64(c.IOInterval) > math.MaxUint32 {
		bad("IOInterval = %d, want 1..%d", c.IOInterval, uint32(math.MaxUint32))
	}
	if c.RingEntries < 8 || c.RingEntries > maxRingEntries {
		bad("RingEntries = %d, want 8..%d", c.RingEntries, maxRingEntries)
	}
	if c.SubmitBatch < 1 || c.SubmitBatch > c.RingEntries {
		bad("SubmitBatch = %d, want 1..RingEntries", c.SubmitBatch)
	}
	if c.FileIOThreads < 0 || int64(c.FileIOThreads) > math.MaxInt32 {
		// (The kernel refuses more than INT_MAX, and BackendAuto took
		// that for io_uring being blocked.)
		bad("FileIOThreads = %d, want 0 (the kernel's default) up to %d", c.FileIOThreads, math.MaxInt32)
	}
	if c.SQPollIdle < 0 || c.SQPollIdle > time.Minute {
		bad("SQPollIdle = %v, want 0 (no SQPOLL) or up to 1m", c.SQPollIdle)
	}
	if c.TimerResolution < 0 || c.TimerResolution > time.Second {
		bad("TimerResolution = %v, want 0 (default) or up to 1s", c.TimerResolution)
	}
	if c.StallThreshold > 0 && c.StallThreshold < MinStallThreshold {
		bad("StallThreshold = %v, want at least %v (or negative: no watchdog)", c.StallThreshold, MinStallThreshold)
	}
	if c.PanicPolicy != PanicReturn && c.PanicPolicy != PanicCrash {
		bad("PanicPolicy = %d, want PanicReturn or PanicCrash", c.PanicPolicy)
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return c, nil
}
