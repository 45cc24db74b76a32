package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

var errReviewBroken = errors.New("broken context's error")

// brokenCtx breaks context.Context's contract: its Err is neither
// Canceled nor DeadlineExceeded.
type brokenCtx struct{ context.Context }

func (c brokenCtx) Err() error {
	if c.Context.Err() != nil {
		return errReviewBroken
	}
	return nil
}

// A task's Err answers the same every time once it is non-nil.
func TestErrStableUnderBrokenParent(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1})
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		cctx, cancel := context.WithCancel(ctx)
		h := Spawn(brokenCtx{cctx}, func(ctx context.Context) (int, error) {
			cancel()
			first := ctx.Err()
			second := ctx.Err()
			if first != second {
				return 0, fmt.Errorf("Err = %v, then %v", first, second)
			}
			return 0, nil
		})
		_, err := h.Join(ctx)
		return 0, err
	})
	if err != nil {
		t.Fatal(err)
	}
}
