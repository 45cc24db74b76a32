package faio

import (
	"context"
	"time"

	"github.com/faio-go/faio/modules/channel"
	"github.com/faio-go/faio/modules/runtime"
	fsync "github.com/faio-go/faio/modules/sync"
)

// The runtime: workers, tasks and their handles.
type (
	// Runtime is a pool of workers running tasks; see New. Its methods
	// (Close, Stats, Backend, Workers, ...) are documented in package
	// runtime: go doc github.com/faio-go/faio/modules/runtime Runtime.
	Runtime = runtime.Runtime
	// Config configures a Runtime; its zero value means defaults. Its
	// fields: go doc -all github.com/faio-go/faio/modules/runtime Config.
	Config = runtime.Config
	// Task is a running task; a *Task is the context.Context its function
	// receives.
	Task = runtime.Task
	// JoinHandle is the handle of a spawned task: Join, Cancel, Done, ID.
	// The zero JoinHandle has no task: its Join fails with ErrNilHandle.
	JoinHandle[T any] = runtime.JoinHandle[T]
	// Stats are a runtime's counters (Runtime.Stats). They lag the
	// workers: Live is no exact count of live tasks (see its comment).
	Stats = runtime.Stats
	// WorkerStats are one worker's counters.
	WorkerStats = runtime.WorkerStats
	// StallInfo describes a stall the watchdog saw (Config.OnStall).
	StallInfo = runtime.StallInfo
	// TaskFailure is a failure nobody joined (Config.OnTaskFailure).
	TaskFailure = runtime.TaskFailure
	// PanicError is the error Join returns for a task that panicked: its
	// message is one line, the stack is its Stack field.
	PanicError = runtime.PanicError
	// PanicPolicy says what a panicking task does (Config.PanicPolicy).
	PanicPolicy = runtime.PanicPolicy
	// Backend is io_uring or the portable backend (Config.IOBackend).
	Backend = runtime.Backend
	// Interval ticks at a fixed period on the worker's timer wheel.
	Interval = runtime.Interval
	// MissedTickBehavior says what an Interval does after missed ticks.
	MissedTickBehavior = runtime.MissedTickBehavior
)

// Panic policies and missed-tick behaviours.
const (
	PanicReturn = runtime.PanicReturn // a panic fails only its task (default)
	PanicCrash  = runtime.PanicCrash  // a panic ends the process

	BackendAuto     = runtime.BackendAuto     // io_uring where allowed, else portable (default)
	BackendIOUring  = runtime.BackendIOUring  // io_uring or New fails
	BackendPortable = runtime.BackendPortable // no io_uring: a task's sockets wait in the runtime's epoll, files use a blocking pool (O_DIRECT: Linux AIO)

	Burst = runtime.Burst // fire the missed ticks back to back (default)
	Delay = runtime.Delay // restart the period from the late tick
	Skip  = runtime.Skip  // skip the missed ticks, stay on the grid

	// EnvPinned is the environment variable that overrides
	// Config.PinnedWorkers ("1" or "0").
	EnvPinned = runtime.EnvPinned
)

// Errors of the runtime.
var (
	ErrClosed        = runtime.ErrClosed        // the runtime is closed
	ErrOnWorker      = runtime.ErrOnWorker      // BlockOn, WaitAll or Close called from a task
	ErrNoRuntime     = runtime.ErrNoRuntime     // a context that names no runtime (for Spawn: no task's)
	ErrNilContext    = runtime.ErrNilContext    // a nil context.Context; the call did nothing
	ErrNilRuntime    = runtime.ErrNilRuntime    // a nil *Runtime, or the zero Runtime (not made by New)
	ErrNilHandle     = runtime.ErrNilHandle     // Join on a nil or zero JoinHandle, which has no task
	ErrNilFunc       = runtime.ErrNilFunc       // a nil function to run (Spawn, BlockOn, Blocking...); nothing ran
	ErrSelfJoin      = runtime.ErrSelfJoin      // a task joined its own handle
	ErrInvalidConfig = runtime.ErrInvalidConfig // New was given a bad Config
	ErrGoexit        = runtime.ErrGoexit        // the task called runtime.Goexit
)

// New starts a runtime configured by cfg (the zero Config means defaults).
func New(cfg Config) (*Runtime, error) { return runtime.New(cfg) }

// BlockOn runs fn as a root task on rt and returns its result once it and
// everything spawned under it have finished. Call it from a plain
// goroutine (in a task it returns ErrOnWorker). A nil rt, or one not made
// by New, gets ErrNilRuntime.
func BlockOn[T any](rt *Runtime, fn func(context.Context) (T, error)) (T, error) {
	return runtime.BlockOn(rt, fn)
}

// WaitAll runs every fn as a root task on rt, concurrently, and returns
// their results in order once all of them have finished.
func WaitAll[T any](rt *Runtime, fns ...func(context.Context) (T, error)) ([]T, error) {
	return runtime.WaitAll(rt, fns...)
}

// Spawn starts fn as a new task, child of the task ctx belongs to. ctx
// must be a task's context (or derive from one): from a plain goroutine,
// use SpawnOn, even with a context from WithRuntime, which names a
// runtime but no task. Otherwise the handle's Join fails with
// ErrNoRuntime (ErrNilContext for a nil ctx) and fn does not run.
func Spawn[T any](ctx context.Context, fn func(context.Context) (T, error)) *JoinHandle[T] {
	return runtime.Spawn(ctx, fn)
}

// SpawnOn starts fn as a new task on rt from any goroutine. With a nil
// rt, or one not made by New, the handle's Join fails with ErrNilRuntime.
func SpawnOn[T any](rt *Runtime, fn func(context.Context) (T, error)) *JoinHandle[T] {
	return runtime.SpawnOn(rt, fn)
}

// Sleep pauses for d on the worker's timer wheel (a task suspends; a plain
// goroutine blocks), or until ctx is cancelled.
func Sleep(ctx context.Context, d time.Duration) error { return runtime.Sleep(ctx, d) }

// SleepUntil pauses until deadline, or until ctx is cancelled.
func SleepUntil(ctx context.Context, deadline time.Time) error {
	return runtime.SleepUntil(ctx, deadline)
}

// Yield lets the other tasks queued on the worker run first.
func Yield(ctx context.Context) error { return runtime.Yield(ctx) }

// NewInterval returns an Interval with the given period.
func NewInterval(period time.Duration, missed MissedTickBehavior) (*Interval, error) {
	return runtime.NewInterval(period, missed)
}

// Timeout runs op with a context that ends after d: the per-call timeout.
func Timeout[T any](ctx context.Context, d time.Duration, op func(context.Context) (T, error)) (T, error) {
	return runtime.Timeout(ctx, d, op)
}

// Blocking calls f, which blocks in plain Go (http.Client.Do, cgo, package
// sync), on a goroutine of its own while the calling task is suspended, so
// that its worker runs other tasks meanwhile; it returns ctx.Err() at once
// if ctx ends first (f runs on). See runtime.Blocking.
func Blocking[T any](ctx context.Context, f func() (T, error)) (T, error) {
	return runtime.Blocking(ctx, f)
}

// Current returns the task ctx belongs to, or nil.
func Current(ctx context.Context) *Task { return runtime.Current(ctx) }

// WithRuntime returns a copy of ctx that names rt, so a plain goroutine can
// use the I/O functions (Open, Dial, ...) on rt; in a task, the task's
// context already names its runtime.
func WithRuntime(ctx context.Context, rt *Runtime) context.Context {
	return runtime.WithRuntime(ctx, rt)
}

// Locks, events and the rest of package sync: the zero values are ready to
// use, and every wait takes a context and suspends a task without blocking
// its worker.
type (
	Mutex          = fsync.Mutex
	RWMutex        = fsync.RWMutex
	Cond           = fsync.Cond
	Event          = fsync.Event
	Promise[T any] = fsync.Promise[T]
	Semaphore      = fsync.Semaphore
	WaitGroup      = fsync.WaitGroup
	Latch          = fsync.Latch
	Barrier        = fsync.Barrier
)

// ErrAlreadySet is returned by Promise.Set after the first Set.
var ErrAlreadySet = fsync.ErrAlreadySet

// ErrTooManyPermits is returned by Semaphore.Acquire for more permits than
// the semaphore's size.
var ErrTooManyPermits = fsync.ErrTooManyPermits

// NewSemaphore returns a semaphore with n permits.
func NewSemaphore(n int64) *Semaphore { return fsync.NewSemaphore(n) }

// NewLatch returns a latch that opens after n CountDowns.
func NewLatch(n int) *Latch { return fsync.NewLatch(n) }

// NewBarrier returns a barrier for n parties.
func NewBarrier(n int) *Barrier { return fsync.NewBarrier(n) }

// Channels: a bounded multi-producer multi-consumer channel with separate
// ends, and Select over several operations.
type (
	Sender[T any]    = channel.Sender[T]
	Receiver[T any]  = channel.Receiver[T]
	SendError[T any] = channel.SendError[T]
	// Case is one operation of a Select (Sender.SendCase,
	// Receiver.RecvCase).
	Case = channel.Case
)

// Errors of the channels.
var (
	ErrChannelClosed = channel.ErrClosed    // the other side is gone
	ErrChannelFull   = channel.ErrFull      // TrySend found no room
	ErrChannelEmpty  = channel.ErrEmpty     // TryRecv found nothing
	ErrNoCaseReady   = channel.ErrNoneReady // TrySelect found no case ready
	// ErrDuplicateCase: Select was given one Case twice, or one in use by another Select.
	ErrDuplicateCase = channel.ErrDuplicateCase
)

// NewChannel returns the two ends of a new channel that buffers capacity
// values (0: a rendezvous channel). It panics if capacity is negative, as
// make(chan T, capacity) does (see channel.New).
func NewChannel[T any](capacity int) (*Sender[T], *Receiver[T]) { return channel.New[T](capacity) }

// Select waits until one of cases can proceed, performs it and returns its
// index.
func Select(ctx context.Context, cases ...Case) (int, error) { return channel.Select(ctx, cases...) }

// TrySelect performs one of cases that can proceed without waiting and
// returns its index, or returns -1 and ErrNoCaseReady: a select statement
// with a default branch.
func TrySelect(cases ...Case) (int, error) { return channel.TrySelect(cases...) }
