package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// A wait on a context derived from the task's own (WithTimeout(ctx)), which
// Close cancels through the task, ends at Close with context.Canceled, as
// before Close ended foreign waits: never with ErrClosed, even when it is
// published while Close is cancelling the tree.
func TestCloseEndsDerivedWaitsWithCanceled(t *testing.T) {
	for run := 0; run < 20; run++ {
		rt, err := New(Config{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		var closedErrs, others atomic.Int32
		var first atomic.Value
		for i := 0; i < 500; i++ {
			SpawnOn(rt, func(ctx context.Context) (int, error) {
				for {
					c, cancel := context.WithTimeout(ctx, time.Hour)
					err := Sleep(c, time.Microsecond)
					cancel()
					if err == nil {
						continue
					}
					if errors.Is(err, ErrClosed) {
						closedErrs.Add(1)
					} else if !errors.Is(err, context.Canceled) {
						others.Add(1)
						first.CompareAndSwap(nil, fmt.Sprint(err))
					}
					return 0, nil
				}
			})
		}
		time.Sleep(10 * time.Millisecond)
		within(t, 10*time.Second, "Close", func() { rt.Close() })
		if n := closedErrs.Load(); n != 0 {
			t.Fatalf("run %d: %d waits on a context derived from the task's ended with ErrClosed, want context.Canceled", run, n)
		}
		if n := others.Load(); n != 0 {
			t.Fatalf("run %d: %d waits ended with %v", run, n, first.Load())
		}
	}
}
