// Package timerwheel is the hierarchical hashed timer wheel each faio
// worker owns: runtime.Sleep, timeouts and deadlines are entries in it.
//
// A Wheel[T] holds values of type T (the runtime stores wakers) until their
// deadlines. The owner inserts entries with Insert, cancels them with
// Cancel through the returned Handle, asks NextDeadline how long it may
// sleep, and calls Advance with the current time to fire whatever is due:
//
//	w, _ := timerwheel.New[*Task](timerwheel.Config{})
//	h := w.Insert(now+50*time.Millisecond, task)
//	...
//	if d, ok := w.NextDeadline(); ok {
//		sleepFor(d - now) // never too long: d is the exact next firing
//	}
//	w.Advance(now, wake)
//
// # Time
//
// Time is passed in, never read: every time is a time.Duration since the
// wheel's start, from a monotonic clock the owner reads. That makes tests
// deterministic. Time is kept in ticks of Config.Resolution (1 ms by
// default); a deadline is rounded up to a whole tick, so an entry fires at
// the first Advance at or past its deadline's tick: never before the
// deadline, and at the latest one Resolution after it when Advance is
// called at least that often.
//
// # Structure
//
// Six levels of 64 slots: a slot of level L spans 64^L ticks, so level 0
// resolves single ticks over 64 ticks and the top level spans 2^36 ticks
// (about 2.2 years at 1 ms). An entry is filed on the level of the highest
// 6-bit digit in which its tick differs from the wheel's cursor, in the
// slot named by that digit of its tick, so Insert and Cancel are O(1).
// Each level keeps a bitmap of its occupied slots, so finding the next
// slot that needs work is a rotate and a count of trailing zeros per level
// and never a walk over empty slots; Advance may jump any distance ahead.
//
// When the cursor reaches an upper-level slot, its entries cascade: each is
// re-placed by its exact tick, which moves it to a lower level. Only a
// level-0 slot fires, and it holds a single tick. (The C++ runtime this
// project descends from moved entries down by slot position and dropped the
// remainder, so its sleeps longer than 64 ms fired up to seconds early or
// late; re-placing by the exact tick is the fix.) An entry further away
// than the wheel's range is parked in the top slot that comes round last
// and re-placed from there; none is dropped. An Advance across the whole
// range or more sorts the entries once rather than turning lap by lap.
//
// NextDeadline is exact, not a slot boundary: the first occupied slot of
// the lowest occupied level holds the earliest entry, and each upper slot
// keeps its entries in tick order, or failing that its exact minimum, so
// the answer usually costs O(levels) (see Wheel.NextDeadline for the one
// exception). A worker sleeping until NextDeadline therefore never wakes
// up to find nothing due.
//
// # Memory
//
// Entries are nodes in one slice, linked by int32 index, with a free list;
// a Handle is an index plus a generation, so a stale Handle is detected
// instead of cancelling a stranger. Once the slice has grown to the peak
// number of live entries, Insert, Cancel and Advance allocate nothing.
//
// # Concurrency
//
// A Wheel is not safe for concurrent use. It has one owner (a worker);
// other goroutines hand timers to that owner rather than touching its
// wheel. The fire callback runs on the owner's goroutine and may call back
// into the wheel, for example to re-arm an interval.
//
// A Shared wheel is the one faio's workers own: a Wheel behind a mutex,
// with its earliest deadline published for reading without the lock
// (Next). Its owner uses it as a Wheel, and another goroutine that sees
// through Next that the owner has fallen behind fires the overdue entries
// with TryAdvance. Its fire callback runs under the lock and must not call
// back into it.
package timerwheel
