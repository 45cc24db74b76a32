// Package statemachine keeps the idle/searching accounting of faio-go's
// workers: how many are working, how many of those are searching other
// workers' queues for something to steal, and which ones are asleep. The
// runtime asks it two questions: may this worker start searching (TrySearch),
// and whom should a spawner wake (WorkerToNotify).
//
// The package is pure bookkeeping. It never blocks, never starts a goroutine
// and knows nothing about queues or eventfds: the runtime publishes work,
// checks queues and wakes threads; this package only tells it when each of
// those steps is needed.
//
// # State
//
// A worker is in one of three roles:
//
//   - working: awake, running tasks, driving I/O, or deciding what to do next;
//   - searching: working, and looking through other queues for work;
//   - sleeping: listed as a sleeper, about to block or blocked until an
//     eventfd write, a completion or a timer wakes it.
//
// The number of working and the number of searching workers share one atomic
// 64-bit word, so a single load gives a consistent pair and a single
// compare-and-swap moves both (see counters.go). The sleepers form a list
// guarded by a mutex; the list lives in slices allocated by New, so no
// method allocates. Whenever that mutex is free, the list holds exactly
// Workers()-NumWorking() ids.
//
// # Worker parking and waking: no lost wake-up
//
// The invariant: work that has been published is never left in a queue
// while a worker sleeps and no awake worker will look at that queue again.
// Put differently, after every publication either some awake worker
// re-examines the queues later than the publication, or a sleeper is
// notified.
//
// Nobody can see all the queues at once (each worker owns one, and a global
// queue sits next to them), so the invariant cannot be kept by checking a
// global predicate. It is kept instead by a handshake over the counter word:
// every side first makes its own change visible and only then reads the
// other side's. Go's sync/atomic operations are sequentially consistent, and
// sync.Mutex is built on them, so "publish with an atomic store, a
// compare-and-swap or under a mutex, then call WorkerToNotify" already
// contains the store-load barrier that the Go scheduler's proc.go has to
// spell out; no extra fence is needed.
//
// The protocol each side follows:
//
//   - A spawner publishes the task (local queue, global queue, or a ready
//     I/O completion) and then calls WorkerToNotify; if it gets an id, it
//     wakes that worker (eventfd write). WorkerToNotify only wakes when
//     nobody is searching and somebody sleeps: a searcher already on its way
//     will find the task, or will hand the duty on as described next.
//   - A searcher that found work calls TransitionFromSearching. If that was
//     the last searcher, it calls WorkerToNotify and wakes the result: a
//     spawner may have skipped its wake-up because this worker was
//     searching, and this worker is now busy with one task while the other
//     may wait behind it.
//   - A searcher that found nothing and stops searching (SetSleeping with
//     wasSearching, or TransitionFromSearching before driving I/O) must, if
//     it was the last searcher, check every queue once more after the
//     decrement. A spawner that published before the decrement may have seen
//     searching > 0 and skipped the wake-up; the re-check, which comes after
//     the decrement, sees that spawner's task. A spawner that published later
//     sees searching == 0 and wakes somebody itself.
//   - A sleeper calls SetSleeping first, then checks the queues once more,
//     and only then blocks. If the re-check finds work, it calls
//     CancelSleeping and handles it. When it wakes (eventfd, timer,
//     completion) to run, it calls CancelSleeping; a true result means a
//     spawner has already counted it as a searcher, so it behaves as one and
//     calls TransitionFromSearching or SetSleeping(id, true) when it stops.
//     A worker woken spuriously with nothing to do may block again without
//     either call as long as IsSleeping(id) still holds: it is still listed,
//     so spawners still see it as a sleeper.
//
// Why this is enough: take a spawner S that publishes task T and then loads
// the counter word, and a worker W that changes the word (stops searching or
// goes to sleep) and then re-checks the queues. Both changes to the word are
// sequentially consistent, so one comes first. If S's load comes first, T
// was published before W's change, and W's re-check sees T. If W's change
// comes first, S sees it: with no searcher left, S wakes a sleeper if there
// is one, and if there is none every worker is awake and will come back to
// the queues. If S sees searching > 0 instead, the duty moves to the
// remaining searchers, and the last of them to stop repeats the argument.
// WorkerToNotify itself never misses a sleeper that its load accounts for:
// SetSleeping decrements the count and lists the id inside one critical
// section, which WorkerToNotify's slow path takes before popping.
//
// Alternatives rejected:
//
//   - Wake a sleeper on every spawn. A wake-up costs 10-30 µs here and the
//     woken worker often finds the task already taken and sleeps again; a
//     burst of spawns would wake every worker at once. Waking only when
//     nobody searches makes wake-ups proportional to real shortage.
//   - Hand the new task directly to the woken worker. The spawner is about to
//     run out of work itself more often than not, and the task's data is hot
//     in the spawner's cache; the hand-off trades locality for a wake-up.
//   - Check the queues before SetSleeping instead of after. A spawner that
//     publishes between the check and SetSleeping loads a word that still
//     counts the sleeper as working, sees nobody to wake, and the task waits
//     for the next unrelated wake-up: exactly the lost wake-up.
//   - Two separate atomics for working and searching, as the C++ design
//     notes have them. WorkerToNotify would read a pair that never existed
//     at one instant, and the search limit would be check-then-increment, so
//     two workers could both pass "2*searching < workers" and exceed it. One
//     word gives one load for the pair, and TrySearch, a compare-and-swap,
//     keeps the limit exactly.
//   - A lock-free sleeper list. Waking a given sleeper (CancelSleeping)
//     removes an element from the middle, which lock-free stacks do badly.
//     The mutex is taken only by workers going to sleep or waking up, which
//     costs far more than the lock, and by spawners only when the lock-free
//     fast path already says someone must be woken.
//
// # Comparison with tokio
//
// tokio's multi-threaded scheduler (runtime/scheduler/multi_thread/idle.rs)
// keeps the same split: one atomic word with the searching and unparked
// counts, a mutex-guarded vector of sleeping worker ids, a lock-free "should
// I wake anyone" test before taking the lock, LIFO wake order, and a
// transition out of searching that reports the last searcher. The
// differences:
//
//   - tokio's search limit loads the word and then adds one, so concurrent
//     workers may overshoot half; here TrySearch is a compare-and-swap loop
//     and searching never exceeds (Workers()+1)/2.
//   - tokio's fast-path test is a read-modify-write (an add of zero) that
//     serves as the full fence between the queue push and the read; with
//     Go's sequentially consistent atomics a plain load after an atomic
//     publication is enough, so WorkerToNotify's fast path is one load.
//   - tokio finds a sleeper to unpark by a linear scan of its vector; here
//     the sleepers are an intrusive doubly linked list indexed by worker id,
//     so CancelSleeping is O(1) and the LIFO order survives removals.
//   - A woken tokio worker asks "am I still parked" and "remove me if I am"
//     in separate calls, each under the lock. CancelSleeping answers both in
//     one critical section: removed from the list (false), or already
//     notified and counted as searching (true), in which case the worker must
//     leave the searching role itself, or searching would stay above zero and
//     no spawner would wake anybody again. IsSleeping is lock-free.
//
// # Misuse
//
// Counting errors are bugs in the caller and would silently stall the
// runtime, so they panic with a message starting "faio/statemachine:", as
// sync.WaitGroup does for a negative counter: TransitionFromSearching or
// SetSleeping(id, true) with no searcher counted, and SetSleeping for a
// worker that is already listed or was notified and has not called
// CancelSleeping yet. A panic
// leaves the state as it was. Worker ids outside [0, Workers()) are not
// panics: such an id is never listed, IsSleeping and CancelSleeping report
// false, and SetSleeping only leaves searching; CheckID reports them as
// ErrWorkerID.
package statemachine
