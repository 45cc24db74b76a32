package statemachine

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// role is what the sequential model knows about one worker.
type role int

const (
	roleWorking role = iota
	roleSearching
	roleListed
	roleNotified // popped by WorkerToNotify, CancelSleeping not yet called
)

// model is the reference: per-worker roles and the sleeper stack, with the
// counters derived from them rather than stored.
type model struct {
	roles    []role
	sleepers []int // newest last
}

func (m *model) count(match func(role) bool) int {
	n := 0
	for _, r := range m.roles {
		if match(r) {
			n++
		}
	}
	return n
}

func (m *model) working() int {
	return m.count(func(r role) bool { return r != roleListed })
}

func (m *model) searching() int {
	return m.count(func(r role) bool { return r == roleSearching || r == roleNotified })
}

func (m *model) ids(roles ...role) []int {
	var ids []int
	for id, r := range m.roles {
		if slices.Contains(roles, r) {
			ids = append(ids, id)
		}
	}
	return ids
}

// listed returns the real sleeper list, newest last, read under the mutex.
func listed(s *StateMachine) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int
	for id := s.sleepers.head; id != none; id = s.sleepers.next[id] {
		ids = append(ids, int(id))
	}
	slices.Reverse(ids)
	return ids
}

// panics runs f and reports whether it panicked.
func panics(f func()) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	f()
	return false
}

func TestModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		workers := rapid.IntRange(1, 6).Draw(t, "workers")
		s, err := New(workers)
		if err != nil {
			t.Fatal(err)
		}
		m := &model{roles: make([]role, workers)}

		pick := func(t *rapid.T, roles ...role) int {
			ids := m.ids(roles...)
			if len(ids) == 0 {
				t.Skip("no worker in a suitable role")
			}
			return rapid.SampledFrom(ids).Draw(t, "id")
		}
		badID := rapid.SampledFrom([]int{-1, workers, workers + 7, -1 << 40})

		t.Repeat(map[string]func(*rapid.T){
			"TrySearch": func(t *rapid.T) {
				id := pick(t, roleWorking)
				want := 2*m.searching() < workers
				if got := s.TrySearch(); got != want {
					t.Fatalf("TrySearch = %v, want %v", got, want)
				}
				if want {
					m.roles[id] = roleSearching
				}
			},
			"TransitionFromSearching": func(t *rapid.T) {
				id := pick(t, roleSearching)
				want := m.searching() == 1
				if got := s.TransitionFromSearching(); got != want {
					t.Fatalf("TransitionFromSearching = %v, want %v", got, want)
				}
				m.roles[id] = roleWorking
			},
			"SetSleeping": func(t *rapid.T) {
				id := pick(t, roleWorking, roleSearching)
				wasSearching := m.roles[id] == roleSearching
				want := wasSearching && m.searching() == 1
				if got := s.SetSleeping(id, wasSearching); got != want {
					t.Fatalf("SetSleeping(%d, %v) = %v, want %v", id, wasSearching, got, want)
				}
				m.roles[id] = roleListed
				m.sleepers = append(m.sleepers, id)
			},
			"CancelSleeping": func(t *rapid.T) {
				id := pick(t, roleWorking, roleSearching, roleListed, roleNotified)
				want := m.roles[id] == roleNotified
				if got := s.CancelSleeping(id); got != want {
					t.Fatalf("CancelSleeping(%d) = %v, want %v", id, got, want)
				}
				switch m.roles[id] {
				case roleListed:
					m.roles[id] = roleWorking
					m.sleepers = slices.DeleteFunc(m.sleepers, func(x int) bool { return x == id })
				case roleNotified:
					m.roles[id] = roleSearching
				}
			},
			"WorkerToNotify": func(t *rapid.T) {
				wantOK := m.searching() == 0 && len(m.sleepers) > 0
				id, ok := s.WorkerToNotify()
				if ok != wantOK {
					t.Fatalf("WorkerToNotify ok = %v, want %v", ok, wantOK)
				}
				if !ok {
					return
				}
				want := m.sleepers[len(m.sleepers)-1]
				if id != want {
					t.Fatalf("WorkerToNotify = %d, want newest sleeper %d", id, want)
				}
				m.sleepers = m.sleepers[:len(m.sleepers)-1]
				m.roles[id] = roleNotified
			},
			"SetSleepingTwice": func(t *rapid.T) {
				id := pick(t, roleListed, roleNotified)
				if !panics(func() { s.SetSleeping(id, rapid.Bool().Draw(t, "wasSearching")) }) {
					t.Fatalf("SetSleeping(%d) of a sleeping or notified worker did not panic", id)
				}
			},
			"FalseWasSearching": func(t *rapid.T) {
				if m.searching() != 0 {
					t.Skip("somebody searches")
				}
				id := pick(t, roleWorking)
				if !panics(func() { s.SetSleeping(id, true) }) {
					t.Fatal("SetSleeping(id, true) with no searcher did not panic")
				}
			},
			"TransitionWithoutSearcher": func(t *rapid.T) {
				if m.searching() != 0 {
					t.Skip("somebody searches")
				}
				if !panics(func() { s.TransitionFromSearching() }) {
					t.Fatal("TransitionFromSearching with no searcher did not panic")
				}
			},
			"BadID": func(t *rapid.T) {
				id := badID.Draw(t, "bad id")
				if s.IsSleeping(id) || s.CancelSleeping(id) || s.CheckID(id) == nil {
					t.Fatalf("bad id %d accepted", id)
				}
				if s.SetSleeping(id, false) {
					t.Fatalf("SetSleeping(%d, false) = true", id)
				}
			},
			"": func(t *rapid.T) {
				got := fmt.Sprint(s.NumWorking(), s.NumSearching(), s.Sleepers())
				want := fmt.Sprint(m.working(), m.searching(), len(m.sleepers))
				if got != want {
					t.Fatalf("working searching sleepers = %s, model %s", got, want)
				}
				for id := range workers {
					if s.IsSleeping(id) != (m.roles[id] == roleListed) {
						t.Fatalf("IsSleeping(%d) = %v, model role %d", id, s.IsSleeping(id), m.roles[id])
					}
				}
				if l := listed(s); !slices.Equal(l, m.sleepers) {
					t.Fatalf("sleeper list %v, model %v", l, m.sleepers)
				}
			},
		})
	})
}
