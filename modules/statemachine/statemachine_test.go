package statemachine

import (
	"errors"
	"strings"
	"testing"
)

type snapshot struct {
	working, searching, sleepers int
}

func snap(s *StateMachine) snapshot {
	return snapshot{s.NumWorking(), s.NumSearching(), s.Sleepers()}
}

func mustNew(t testing.TB, workers int) *StateMachine {
	t.Helper()
	s, err := New(workers)
	if err != nil {
		t.Fatalf("New(%d): %v", workers, err)
	}
	return s
}

// mustPanic runs f, requires a panic whose message starts with the
// package's prefix (see the doc's Misuse section) and contains want, and
// requires the counters to be unchanged afterwards.
func mustPanic(t *testing.T, s *StateMachine, want string, f func()) {
	t.Helper()
	before := snap(s)
	func() {
		defer func() {
			r := recover()
			if r == nil {
				t.Fatalf("no panic, want one containing %q", want)
			}
			if msg, _ := r.(string); !strings.HasPrefix(msg, "faio/statemachine: ") || !strings.Contains(msg, want) {
				t.Fatalf("panic %v, want one starting \"faio/statemachine: \" and containing %q", r, want)
			}
		}()
		f()
	}()
	if after := snap(s); after != before {
		t.Fatalf("panic changed the state: %+v -> %+v", before, after)
	}
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		workers int
		ok      bool
	}{
		{-1, false}, {0, false}, {1, true}, {2, true}, {64, true},
		{MaxWorkers, true}, {MaxWorkers + 1, false}, {1 << 40, false},
	} {
		s, err := New(tc.workers)
		if !tc.ok {
			if !errors.Is(err, ErrWorkers) || s != nil {
				t.Errorf("New(%d) = %v, %v; want nil, ErrWorkers", tc.workers, s, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("New(%d): %v", tc.workers, err)
		}
		want := snapshot{working: tc.workers}
		if got := snap(s); got != want || s.Workers() != tc.workers {
			t.Errorf("New(%d): %+v, Workers %d; want %+v", tc.workers, got, s.Workers(), want)
		}
	}
}

func TestCheckID(t *testing.T) {
	s := mustNew(t, 3)
	for id := 0; id < 3; id++ {
		if err := s.CheckID(id); err != nil {
			t.Errorf("CheckID(%d) = %v", id, err)
		}
	}
	for _, id := range []int{-1, 3, 1 << 40} {
		if err := s.CheckID(id); !errors.Is(err, ErrWorkerID) {
			t.Errorf("CheckID(%d) = %v, want ErrWorkerID", id, err)
		}
	}
}

func TestTrySearchAdmitsHalfRoundedUp(t *testing.T) {
	for workers := 1; workers <= 9; workers++ {
		s := mustNew(t, workers)
		admitted := 0
		for range workers {
			if s.TrySearch() {
				admitted++
			}
		}
		if want := (workers + 1) / 2; admitted != want || s.NumSearching() != want {
			t.Errorf("workers %d: admitted %d, searching %d; want %d", workers, admitted, s.NumSearching(), want)
		}
		if s.NumWorking() != workers {
			t.Errorf("workers %d: TrySearch changed working to %d", workers, s.NumWorking())
		}
	}
}

func TestTransitionFromSearchingReportsLast(t *testing.T) {
	s := mustNew(t, 4)
	for range 2 {
		if !s.TrySearch() {
			t.Fatal("TrySearch refused below the limit")
		}
	}
	if s.TransitionFromSearching() {
		t.Error("first of two searchers reported last")
	}
	if !s.TransitionFromSearching() {
		t.Error("second of two searchers not reported last")
	}
	if got, want := snap(s), (snapshot{working: 4}); got != want {
		t.Errorf("after both stop: %+v, want %+v", got, want)
	}
	mustPanic(t, s, "TransitionFromSearching with no searching worker", func() { s.TransitionFromSearching() })
}

func TestSetSleeping(t *testing.T) {
	for _, tc := range []struct {
		name         string
		searchers    int // TrySearch calls before SetSleeping
		wasSearching bool
		wantLast     bool
		want         snapshot
	}{
		{"working", 0, false, false, snapshot{working: 3, sleepers: 1}},
		{"working beside a searcher", 1, false, false, snapshot{working: 3, searching: 1, sleepers: 1}},
		{"last searcher", 1, true, true, snapshot{working: 3, sleepers: 1}},
		{"one of two searchers", 2, true, false, snapshot{working: 3, searching: 1, sleepers: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, 4)
			for range tc.searchers {
				s.TrySearch()
			}
			if last := s.SetSleeping(2, tc.wasSearching); last != tc.wantLast {
				t.Errorf("SetSleeping = %v, want %v", last, tc.wantLast)
			}
			if got := snap(s); got != tc.want {
				t.Errorf("state %+v, want %+v", got, tc.want)
			}
			for id := range 4 {
				if s.IsSleeping(id) != (id == 2) {
					t.Errorf("IsSleeping(%d) = %v", id, s.IsSleeping(id))
				}
			}
		})
	}
}

func TestSetSleepingMisusePanics(t *testing.T) {
	s := mustNew(t, 2)
	mustPanic(t, s, "with no searching worker", func() { s.SetSleeping(0, true) })
	if s.IsSleeping(0) {
		t.Fatal("refused SetSleeping listed the worker")
	}
	s.SetSleeping(0, false)
	mustPanic(t, s, "already sleeping", func() { s.SetSleeping(0, false) })
	if id, ok := s.WorkerToNotify(); !ok || id != 0 {
		t.Fatalf("WorkerToNotify = %d, %v; want 0, true", id, ok)
	}
	mustPanic(t, s, "has not called CancelSleeping", func() { s.SetSleeping(0, true) })
	if !s.CancelSleeping(0) {
		t.Fatal("CancelSleeping after notify = false")
	}
	// After the acknowledgement the same worker may go back to sleep.
	if !s.SetSleeping(0, true) {
		t.Error("notified worker going back to sleep was not the last searcher")
	}
	if got, want := snap(s), (snapshot{working: 1, sleepers: 1}); got != want {
		t.Errorf("state %+v, want %+v", got, want)
	}
}

func TestCancelSleeping(t *testing.T) {
	s := mustNew(t, 3)
	if s.CancelSleeping(1) {
		t.Error("CancelSleeping of an awake worker = true")
	}
	if got, want := snap(s), (snapshot{working: 3}); got != want {
		t.Fatalf("CancelSleeping of an awake worker changed the state: %+v", got)
	}

	s.SetSleeping(1, false)
	if s.CancelSleeping(1) {
		t.Error("CancelSleeping of a listed worker = true")
	}
	if got, want := snap(s), (snapshot{working: 3}); got != want || s.IsSleeping(1) {
		t.Errorf("after CancelSleeping: %+v, IsSleeping %v; want %+v, false", got, s.IsSleeping(1), want)
	}

	s.SetSleeping(1, false)
	if id, ok := s.WorkerToNotify(); !ok || id != 1 {
		t.Fatalf("WorkerToNotify = %d, %v; want 1, true", id, ok)
	}
	if !s.CancelSleeping(1) {
		t.Error("CancelSleeping of a notified worker = false")
	}
	if s.CancelSleeping(1) {
		t.Error("second CancelSleeping of a notified worker = true")
	}
	if got, want := snap(s), (snapshot{working: 3, searching: 1}); got != want {
		t.Errorf("notified worker after CancelSleeping: %+v, want %+v", got, want)
	}
	if !s.TransitionFromSearching() {
		t.Error("notified worker was not the last searcher")
	}
}

func TestWorkerToNotify(t *testing.T) {
	s := mustNew(t, 4)
	if _, ok := s.WorkerToNotify(); ok {
		t.Fatal("WorkerToNotify with nobody asleep = true")
	}
	s.SetSleeping(3, false)
	s.TrySearch()
	if _, ok := s.WorkerToNotify(); ok {
		t.Fatal("WorkerToNotify with a searcher = true")
	}
	s.TransitionFromSearching()
	id, ok := s.WorkerToNotify()
	if !ok || id != 3 {
		t.Fatalf("WorkerToNotify = %d, %v; want 3, true", id, ok)
	}
	if got, want := snap(s), (snapshot{working: 4, searching: 1}); got != want || s.IsSleeping(3) {
		t.Errorf("after notify: %+v, IsSleeping %v; want %+v, false", got, s.IsSleeping(3), want)
	}
	// The woken worker counts as a searcher, so a second spawner wakes nobody.
	s.SetSleeping(0, false)
	if id, ok := s.WorkerToNotify(); ok {
		t.Errorf("second WorkerToNotify while the first is searching = %d", id)
	}
}

func TestWorkerToNotifyIsLIFOAcrossRemovals(t *testing.T) {
	s := mustNew(t, 6)
	for _, id := range []int{0, 1, 2, 3, 4} {
		s.SetSleeping(id, false)
	}
	s.CancelSleeping(2) // middle
	s.CancelSleeping(4) // head
	s.CancelSleeping(0) // tail
	var got []int
	for {
		id, ok := s.WorkerToNotify()
		if !ok {
			break
		}
		got = append(got, id)
		s.CancelSleeping(id)
		s.TransitionFromSearching()
	}
	if want := []int{3, 1}; !equalInts(got, want) {
		t.Errorf("wake order %v, want %v", got, want)
	}
	if s.Sleepers() != 0 {
		t.Errorf("Sleepers = %d after waking all", s.Sleepers())
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestBadIDsLeaveStateConsistent(t *testing.T) {
	s := mustNew(t, 2)
	for _, id := range []int{-1, 2, 1 << 40} {
		if s.SetSleeping(id, false) {
			t.Errorf("SetSleeping(%d, false) = true", id)
		}
		if got, want := snap(s), (snapshot{working: 2}); got != want {
			t.Fatalf("SetSleeping(%d, false) changed the state: %+v", id, got)
		}
		if s.IsSleeping(id) || s.CancelSleeping(id) {
			t.Errorf("IsSleeping/CancelSleeping(%d) = true", id)
		}
		// A searcher with a bad id still leaves searching, so the count
		// cannot stay above zero and block every later wake-up.
		s.TrySearch()
		if !s.SetSleeping(id, true) {
			t.Errorf("SetSleeping(%d, true) of the only searcher = false", id)
		}
		if got, want := snap(s), (snapshot{working: 2}); got != want {
			t.Fatalf("SetSleeping(%d, true): %+v, want %+v", id, got, want)
		}
		mustPanic(t, s, "no searching worker", func() { s.SetSleeping(id, true) })
	}
}

func TestMethodsDoNotAllocate(t *testing.T) {
	s := mustNew(t, 8)
	for name, f := range map[string]func(){
		"TrySearch+TransitionFromSearching": func() { s.TrySearch(); s.TransitionFromSearching() },
		"SetSleeping+CancelSleeping":        func() { s.SetSleeping(5, false); s.CancelSleeping(5) },
		"WorkerToNotify nobody sleeps":      func() { s.WorkerToNotify() },
		"SetSleeping+WorkerToNotify+CancelSleeping+TransitionFromSearching": func() {
			s.SetSleeping(5, false)
			id, _ := s.WorkerToNotify()
			s.CancelSleeping(id)
			s.TransitionFromSearching()
		},
		"queries": func() { _, _, _, _ = s.NumWorking(), s.NumSearching(), s.Sleepers(), s.IsSleeping(5) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocs per run", name, n)
		}
	}
}
