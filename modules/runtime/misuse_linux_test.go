package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// FD.Wait refuses a nil context before it tries the operation, from a
// plain goroutine and from a task, like the other entry points.
func TestFDWaitRefusesNilContext(t *testing.T) {
	a, _ := socketPair(t)
	rt := newRuntime(t, Config{Workers: 1})
	fa, err := rt.RegisterFD(a)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	wait := func() error {
		tried := false
		err := catch(func() error {
			var nilCtx context.Context
			return fa.Wait(nilCtx, false, func() bool { tried = true; return false })
		})
		if tried {
			return fmt.Errorf("try was called (and Wait returned %v)", err)
		}
		return err
	}
	if err := wait(); !errors.Is(err, ErrNilContext) {
		t.Errorf("from a goroutine: Wait(nil) = %v, want ErrNilContext", err)
	}
	err, _ = BlockOn(rt, func(ctx context.Context) (error, error) { return wait(), nil })
	if !errors.Is(err, ErrNilContext) {
		t.Errorf("from a task: Wait(nil) = %v, want ErrNilContext", err)
	}
}
