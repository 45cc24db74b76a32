package statemachine_test

import (
	"errors"
	"fmt"

	"github.com/faio-go/faio/modules/statemachine"
)

// One round of the protocol, played in sequence by two workers and a
// spawner. In the runtime each side runs on its own thread.
func Example() {
	sm, err := statemachine.New(2)
	if err != nil {
		panic(err)
	}

	// Worker 1 is out of work: it searches, finds nothing and sleeps. It was
	// the last searcher, so it re-checks every queue after SetSleeping (still
	// empty) before it blocks.
	fmt.Println("search:", sm.TrySearch())
	fmt.Println("last searcher:", sm.SetSleeping(1, true))

	// Worker 0 spawns a task: publish it, then ask whom to wake.
	id, ok := sm.WorkerToNotify()
	fmt.Println("wake:", id, ok)
	// A second spawn finds the woken worker counted as searching: no herd.
	_, ok = sm.WorkerToNotify()
	fmt.Println("wake again:", ok)

	// Worker 1 returns from its eventfd wait. It was notified, so it is a
	// searcher: it steals the task and stops searching.
	fmt.Println("notified:", sm.CancelSleeping(1))
	fmt.Println("last searcher:", sm.TransitionFromSearching())
	fmt.Println("working, searching, sleeping:", sm.NumWorking(), sm.NumSearching(), sm.Sleepers())
	// Output:
	// search: true
	// last searcher: true
	// wake: 1 true
	// wake again: false
	// notified: true
	// last searcher: true
	// working, searching, sleeping: 2 0 0
}

func ExampleNew() {
	_, err := statemachine.New(0)
	fmt.Println(errors.Is(err, statemachine.ErrWorkers))
	fmt.Println(err)
	// Output:
	// true
	// faio/statemachine: worker count out of range: 0 not in [1, 32768]
}

// At most half of the workers, rounded up, search at once.
func ExampleStateMachine_TrySearch() {
	sm, _ := statemachine.New(5)
	for range 5 {
		fmt.Print(sm.TrySearch(), " ")
	}
	fmt.Println()
	// Output:
	// true true true false false
}

// A worker whose re-check after SetSleeping finds work cancels its sleep;
// one that a spawner notified in the meantime learns it is a searcher.
func ExampleStateMachine_CancelSleeping() {
	sm, _ := statemachine.New(2)

	sm.SetSleeping(0, false)
	fmt.Println(sm.IsSleeping(0), sm.CancelSleeping(0))

	sm.SetSleeping(0, false)
	sm.WorkerToNotify()
	fmt.Println(sm.IsSleeping(0), sm.CancelSleeping(0), sm.NumSearching())
	// Output:
	// true false
	// false true 1
}
