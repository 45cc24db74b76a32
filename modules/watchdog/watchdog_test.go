package watchdog

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeWorkers is a scheduler whose workers' samples the test sets.
type fakeWorkers struct {
	mu      sync.Mutex
	samples []Sample
	stalls  chan stall
}

type stall struct {
	worker  int
	running any
	d       time.Duration
	waiting int
}

func newFake(n int) *fakeWorkers {
	return &fakeWorkers{samples: make([]Sample, n), stalls: make(chan stall, 64)}
}

func (f *fakeWorkers) NumWorkers() int { return len(f.samples) }

func (f *fakeWorkers) Sample(i int) Sample {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.samples[i]
}

func (f *fakeWorkers) Stalled(i int, running any, d time.Duration, waiting int) {
	f.stalls <- stall{i, running, d, waiting}
}

func (f *fakeWorkers) set(i int, s Sample) {
	f.mu.Lock()
	f.samples[i] = s
	f.mu.Unlock()
}

func waitStall(t *testing.T, f *fakeWorkers) stall {
	t.Helper()
	select {
	case s := <-f.stalls:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("no stall reported within 5s")
	}
	return stall{}
}

func noStall(t *testing.T, f *fakeWorkers, for_ time.Duration) {
	t.Helper()
	select {
	case s := <-f.stalls:
		t.Fatalf("unexpected stall %+v", s)
	case <-time.After(for_):
	}
}

// One resumption that holds worker 1 past the threshold with tasks
// waiting is reported once, with how long it ran; worker 0, between tasks
// with tasks queued, is not stalled.
func TestStallReportedOnce(t *testing.T) {
	f := newFake(2)
	task := new(int)
	f.set(0, Sample{Heartbeat: 1, Waiting: 5})
	f.set(1, Sample{Running: task, Heartbeat: 7, Waiting: 3})
	d := Start(f, 5*time.Millisecond)
	defer d.Stop()
	s := waitStall(t, f)
	if s.worker != 1 || s.running != task || s.waiting != 3 || s.d < 5*time.Millisecond {
		t.Fatalf("stall %+v, want worker 1 running the task for >= 5ms with 3 waiting", s)
	}
	noStall(t, f, 50*time.Millisecond) // the same stall is not reported again
	if d.Stalls() != 1 {
		t.Fatalf("Stalls = %d, want 1", d.Stalls())
	}
	// The next resumption on the same coroutine (a new heartbeat) that
	// holds the worker again is a new stall.
	f.set(1, Sample{Running: task, Heartbeat: 8, Waiting: 1})
	if s := waitStall(t, f); s.worker != 1 || s.waiting != 1 {
		t.Fatalf("second stall %+v", s)
	}
}

// A long resumption with nothing queued behind it, or a worker between
// tasks, is no stall.
func TestNoStallWithoutWaiters(t *testing.T) {
	f := newFake(2)
	f.set(0, Sample{Running: new(int), Heartbeat: 1})
	f.set(1, Sample{Heartbeat: 1, Waiting: 4})
	d := Start(f, 2*time.Millisecond)
	noStall(t, f, 50*time.Millisecond)
	d.Stop()
}

// With every worker parked the watchdog sleeps; a worker that leaves park
// and calls WakeUp makes it sample again, and a stall after the idle
// period is reported.
func TestSleepsWhileAllParked(t *testing.T) {
	f := newFake(2)
	f.set(0, Sample{Parked: true})
	f.set(1, Sample{Parked: true})
	d := Start(f, MinThreshold)
	defer d.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for !d.Asleep() {
		if time.Now().After(deadline) {
			t.Fatal("the watchdog of an idle scheduler still samples after 5s")
		}
		time.Sleep(time.Millisecond)
	}
	f.set(0, Sample{Running: new(int), Heartbeat: 3, Waiting: 1})
	d.WakeUp()
	if s := waitStall(t, f); s.worker != 0 {
		t.Fatalf("stall %+v, want worker 0", s)
	}
}

func TestStartRefusesShortThreshold(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Start accepted a threshold below MinThreshold")
		}
	}()
	Start(newFake(1), MinThreshold/2)
}

// A nil Workers panics in Start, where the caller can recover it, not on
// the watchdog's goroutine, which would end the process.
func TestStartRefusesNilWorkers(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Start accepted nil Workers")
		}
	}()
	d := Start(nil, MinThreshold)
	d.Stop()
}

// scriptedWorkers is one worker whose samples follow a script, one entry
// per Sample call, then stay awake; a script entry may call WakeUp first,
// as a worker leaving park at that instant would.
type scriptedWorkers struct {
	ready  chan struct{} // closed once d is set
	d      *Watchdog
	calls  atomic.Int64
	script []scripted
}

type scripted struct{ parked, wake bool }

func (f *scriptedWorkers) NumWorkers() int { return 1 }

func (f *scriptedWorkers) Sample(int) Sample {
	<-f.ready
	n := f.calls.Add(1)
	if n > int64(len(f.script)) {
		return Sample{}
	}
	s := f.script[n-1]
	if s.wake {
		f.d.WakeUp()
	}
	return Sample{Parked: s.parked}
}

func (f *scriptedWorkers) Stalled(int, any, time.Duration, int) {}

// A worker that leaves park just as the watchdog goes to sleep sends a
// wake that the watchdog, seeing the worker awake, does not wait for. The
// next sleep consumed that stale wake at once; the watchdog then sampled
// again but Asleep kept reporting true for as long as it stayed awake.
func TestAsleepFalseAfterStaleWake(t *testing.T) {
	f := &scriptedWorkers{ready: make(chan struct{}), script: []scripted{
		{parked: true},              // tick: all parked, so sleep
		{parked: false, wake: true}, // sleep's second look: woke meanwhile
		{parked: true},              // next tick: all parked again
		{parked: true},              // sleep's second look: still parked
	}}
	d := Start(f, MinThreshold)
	defer d.Stop()
	f.d = d
	close(f.ready)
	deadline := time.Now().Add(5 * time.Second)
	for f.calls.Load() < int64(len(f.script))+10 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d samples in 5s", f.calls.Load())
		}
		time.Sleep(time.Millisecond)
	}
	// The worker has been awake for several samples: the watchdog is
	// sampling, not asleep.
	if d.Asleep() {
		t.Fatal("Asleep = true while the watchdog samples an awake worker")
	}
}

// Stop from two goroutines at once, then once more: it closed its quit
// channel on every call, so the second close panicked.
func TestStopTwice(t *testing.T) {
	d := Start(newFake(1), MinThreshold)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(d.Stop)
	}
	wg.Wait()
	d.Stop()
}

// rescuingWorkers is fakeWorkers that also takes Rescue calls.
type rescuingWorkers struct {
	*fakeWorkers
	rescues chan int // the waiting count of each Rescue
}

func (f *rescuingWorkers) Rescue(i int, running any, waiting int) { f.rescues <- waiting }

// A stall reported once is rescued on every later sample while it lasts
// with work waiting, and no longer once the work is gone; Stalled is not
// called again.
func TestStallRescuedWhileItLasts(t *testing.T) {
	f := &rescuingWorkers{newFake(1), make(chan int, 1024)}
	task := new(int)
	f.set(0, Sample{Running: task, Heartbeat: 7, Waiting: 2})
	d := Start(f, 4*time.Millisecond)
	defer d.Stop()
	waitStall(t, f.fakeWorkers)
	for range 3 {
		select {
		case w := <-f.rescues:
			if w != 2 {
				t.Fatalf("Rescue with %d waiting, want 2", w)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no Rescue within 5s of a stall that lasts")
		}
	}
	noStall(t, f.fakeWorkers, 20*time.Millisecond)
	f.set(0, Sample{Running: task, Heartbeat: 7}) // the waiting work was taken
	time.Sleep(10 * time.Millisecond)             // a sample in flight may still rescue
	for len(f.rescues) > 0 {
		<-f.rescues
	}
	select {
	case <-f.rescues:
		t.Fatal("Rescue with nothing waiting")
	case <-time.After(30 * time.Millisecond):
	}
}
