package timerwheel_test

import (
	"fmt"
	"time"

	"github.com/faio-go/faio/modules/timerwheel"
)

// A worker's loop: insert timers, sleep until NextDeadline, Advance to
// fire what is due.
func Example() {
	w, err := timerwheel.New[string](timerwheel.Config{})
	if err != nil {
		panic(err)
	}
	w.Insert(1500*time.Millisecond, "retry")
	w.Insert(80*time.Millisecond, "timeout")
	w.Insert(10*time.Second, "heartbeat")

	for w.Len() > 0 {
		next, _ := w.NextDeadline()
		// A real worker would sleep in io_uring_enter until next.
		w.Advance(next, func(what string) {
			fmt.Println(next, what)
		})
	}
	// Output:
	// 80ms timeout
	// 1.5s retry
	// 10s heartbeat
}

// Cancel stops a timer that has not fired yet, such as the timeout of an
// operation that completed.
func ExampleWheel_Cancel() {
	w, _ := timerwheel.New[string](timerwheel.Config{})
	h := w.Insert(time.Second, "read timed out")
	fmt.Println(w.Cancel(h)) // the read completed first
	fmt.Println(w.Cancel(h)) // a Handle works once
	fmt.Println(w.Advance(2*time.Second, func(s string) { fmt.Println(s) }))
	// Output:
	// true
	// false
	// 0
}

// An interval re-arms itself from its fire callback.
func ExampleWheel_Advance_interval() {
	w, _ := timerwheel.New[int](timerwheel.Config{})
	const period = 250 * time.Millisecond
	tick := func(n int) {
		fmt.Println("tick", n, "at", w.Now())
		if n < 3 {
			w.Insert(w.Now()+period, n+1)
		}
	}
	w.Insert(period, 1)
	for now := time.Duration(0); now <= time.Second; now += 10 * time.Millisecond {
		w.Advance(now, tick)
	}
	// Output:
	// tick 1 at 250ms
	// tick 2 at 500ms
	// tick 3 at 750ms
}

// Deadlines are rounded up to the resolution, so a timer never fires
// early; NextDeadline reports the rounded instant.
func ExampleWheel_NextDeadline() {
	w, _ := timerwheel.New[string](timerwheel.Config{Resolution: 10 * time.Millisecond})
	w.Insert(123*time.Millisecond, "a")
	next, ok := w.NextDeadline()
	fmt.Println(next, ok)
	fmt.Println(w.Advance(125*time.Millisecond, func(string) {}))
	fmt.Println(w.Advance(next, func(string) {}))
	_, ok = w.NextDeadline()
	fmt.Println(ok)
	// Output:
	// 130ms true
	// 0
	// 1
	// false
}

// A Shared wheel lets a second goroutine fire the timers of an owner that
// fell behind: it watches Next, without locking, and fires what is overdue
// with TryAdvance.
func ExampleShared() {
	s, err := timerwheel.NewShared[string](timerwheel.Config{})
	if err != nil {
		panic(err)
	}
	s.Lock()
	s.Insert(5*time.Millisecond, "wake the sleeper")
	s.Unlock()

	// Another goroutine, at 7ms, finds the owner two ticks late.
	now := 7 * time.Millisecond
	if s.Next() <= now-time.Millisecond {
		n, ok := s.TryAdvance(now, func(what string) { fmt.Println(what) })
		fmt.Println(n, ok, s.Next() == timerwheel.NoDeadline)
	}
	// Output:
	// wake the sleeper
	// 1 true true
}
