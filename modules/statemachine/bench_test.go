package statemachine

import "testing"

func BenchmarkTrySearchTransitionFromSearching(b *testing.B) {
	s := mustNew(b, 8)
	b.ReportAllocs()
	for b.Loop() {
		if s.TrySearch() {
			s.TransitionFromSearching()
		}
	}
}

// Contended: every P hammers the one counter word.
func BenchmarkTrySearchTransitionFromSearchingParallel(b *testing.B) {
	s := mustNew(b, 1<<10)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if s.TrySearch() {
				s.TransitionFromSearching()
			}
		}
	})
}

func BenchmarkSetSleepingCancelSleeping(b *testing.B) {
	s := mustNew(b, 8)
	b.ReportAllocs()
	for b.Loop() {
		s.SetSleeping(3, false)
		s.CancelSleeping(3)
	}
}

// The common case under load: a spawner with nobody to wake. Must stay a
// single atomic load.
func BenchmarkWorkerToNotifyNobodySleeps(b *testing.B) {
	s := mustNew(b, 8)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.WorkerToNotify(); ok {
			b.Fatal("notified with nobody asleep")
		}
	}
}

func BenchmarkWorkerToNotifyNobodySleepsParallel(b *testing.B) {
	s := mustNew(b, 8)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := s.WorkerToNotify(); ok {
				b.Error("notified with nobody asleep")
				return
			}
		}
	})
}

// Sleepers exist but a searcher is out: still the lock-free path.
func BenchmarkWorkerToNotifySomebodySearches(b *testing.B) {
	s := mustNew(b, 8)
	s.SetSleeping(7, false)
	s.TrySearch()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.WorkerToNotify(); ok {
			b.Fatal("notified while somebody searches")
		}
	}
}

// The full slow path: sleep, get notified, acknowledge, stop searching.
func BenchmarkSleepNotifyWakeCycle(b *testing.B) {
	s := mustNew(b, 8)
	b.ReportAllocs()
	for b.Loop() {
		s.SetSleeping(3, false)
		id, _ := s.WorkerToNotify()
		s.CancelSleeping(id)
		s.TransitionFromSearching()
	}
}
