package runtime

import (
	"context"
	"testing"
	"time"
)

// A finished task keeps its coroutine (bind), which the worker hands to the
// next task: a later task on that coroutine that sleeps on, or charges, the
// finished task's context must be treated as any task using a context not
// its own, not as the finished task resumed. Sleep on it then suspends the
// caller, which resumes as itself after the delay.
func TestFinishedTasksContextOnItsReusedCoroutine(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1})
	for round := range 200 {
		ctxs := make(chan context.Context, 1)
		a := SpawnOn(rt, func(ctx context.Context) (int, error) {
			ctxs <- ctx
			return 1, nil
		})
		if v, err := a.Join(context.Background()); v != 1 || err != nil {
			t.Fatalf("round %d: A joined %d, %v", round, v, err)
		}
		actx := <-ctxs
		b := SpawnOn(rt, func(ctx context.Context) (int, error) {
			if Current(actx).running() != nil {
				t.Errorf("round %d: the finished task passes for running on its old coroutine", round)
			}
			for range 3 * CoopBudget {
				if err := Consume(actx); err != nil {
					return 0, err
				}
			}
			start := time.Now()
			if err := Sleep(actx, 2*time.Millisecond); err != nil {
				return 0, err
			}
			if d := time.Since(start); d < 2*time.Millisecond {
				t.Errorf("round %d: Sleep on the finished task's context returned after %v", round, d)
			}
			if taskFor(ctx) == nil || Current(ctx).running() == nil {
				t.Errorf("round %d: after the sleep, B is not running as itself", round)
			}
			return 2, nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		v, err := b.Join(ctx)
		cancel()
		if v != 2 || err != nil {
			t.Fatalf("round %d: B joined %d, %v; want 2, nil", round, v, err)
		}
	}
}
