package runtime

import (
	"context"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A sleeping task's coroutine stack holds the runtime's frames (the
// coroutine's loop, run, the JoinHandle, Sleep, suspend, iter.Pull's yield)
// around the task's own. A new goroutine's stack starts at 2 KiB, and the
// runtime's part must leave a task of a few frames room in it: when it did
// not (a recursive link, a large SleepUntil frame), every new sleeper's
// stack was copied to 4 KiB at its first suspension, 8-34% of W5's CPU
// and twice the stack memory per sleeping task.
//
// Go sizes new stacks by the average it last scanned (adaptive stack
// start), which would hide the growth, so the check runs in a child process
// with GODEBUG=adaptivestackstart=0: every goroutine starts at 2 KiB. The
// child inherits the environment, so under FAIO_PINNED=1 (a pass of
// go run mage.go test) it checks pinned workers, whose tasks have one frame
// more (execute). Frame sizes assume an optimised build: with -gcflags=-N
// -l the check fails.
func TestSleepingTasksKeepSmallStacks(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector enlarges every frame")
	}
	if goruntime.GOARCH != "amd64" && goruntime.GOARCH != "arm64" {
		// Frame sizes differ, and getg there reads runtime.Stack into
		// a buffer on the caller's stack.
		t.Skip("the frames are measured on amd64 and arm64")
	}
	if os.Getenv("FAIO_TEST_SMALL_STACKS") == "1" {
		t.Run("Sleep", func(t *testing.T) { sleepersStack(t, waitSleep) })
		t.Run("Suspend", func(t *testing.T) { sleepersStack(t, waitSuspend) })
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSleepingTasksKeepSmallStacks$", "-test.count=1", "-test.v")
	godebug := "adaptivestackstart=0"
	if cur := os.Getenv("GODEBUG"); cur != "" {
		godebug = cur + "," + godebug
	}
	cmd.Env = append(os.Environ(), "FAIO_TEST_SMALL_STACKS=1", "GODEBUG="+godebug)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "per sleeping task") || strings.Contains(line, "FAIL") {
			t.Log(strings.TrimSpace(line))
		}
	}
}

// The waits sleepersStack measures: Sleep, and Suspend (as the sync and
// channel modules wait).
const (
	waitSleep = iota
	waitSuspend
)

// sleepersStack puts 2,000 tasks to sleep, each with a frame of 128 bytes
// of locals of its own below its spawned function (as a bench task or a
// small handler has), and measures the stack memory they hold. (With the
// runtime's frames as they are, the check passes up to about 300 bytes
// there; before, it failed with 8.)
func sleepersStack(t *testing.T, wait int) {
	const n = 2000
	rt := newRuntime(t, Config{Workers: 2})
	var asleep atomic.Int64
	goruntime.GC()
	var before goruntime.MemStats
	goruntime.ReadMemStats(&before)
	done := make(chan error, 1)
	go func() {
		_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
			for i := range n {
				Spawn(ctx, func(ctx context.Context) (struct{}, error) {
					return struct{}{}, sleepyTaskBody(ctx, i, wait, &asleep)
				})
			}
			return struct{}{}, nil
		})
		done <- err
	}()
	for asleep.Load() < n {
		select {
		case err := <-done:
			t.Fatalf("BlockOn returned %v with %d of %d tasks asleep", err, asleep.Load(), n)
		case <-time.After(time.Millisecond):
		}
	}
	// A task counts itself before Sleep: give the last ones time to switch
	// away (their stack has grown, or not, by then).
	time.Sleep(100 * time.Millisecond)
	var after goruntime.MemStats
	goruntime.ReadMemStats(&after)
	perTask := (int64(after.StackInuse) - int64(before.StackInuse)) / n
	t.Logf("%d bytes of stack per sleeping task", perTask)
	if perTask > 3<<10 {
		t.Errorf("%d bytes of stack per sleeping task: new coroutines' 2 KiB stacks grew at their first suspension", perTask)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != ErrClosed {
		t.Fatalf("BlockOn after Close: %v, want ErrClosed", err)
	}
}

// sleepyTaskBody is a task's own code: a frame with some locals, and a
// wait.
//
//go:noinline
func sleepyTaskBody(ctx context.Context, i, wait int, asleep *atomic.Int64) error {
	var scratch [scratchWords]int64
	touchScratch(&scratch, i)
	start := time.Now()
	asleep.Add(1)
	var err error
	if wait == waitSleep {
		err = Sleep(ctx, time.Hour)
	} else {
		err = Suspend(ctx, func(Waker) bool { return true }) // until cancelled
	}
	if err != nil && ctx.Err() == nil {
		return err
	}
	_ = time.Since(start) + time.Duration(touchScratch(&scratch, i))
	return nil
}

const scratchWords = 16

//go:noinline
func touchScratch(s *[scratchWords]int64, i int) int64 {
	s[i%len(s)]++
	return s[(i+1)%len(s)]
}
