package uring

import "testing"

// The io-wq limits are set and read back: a second call with zeros
// changes nothing and returns what the first set.
func TestRegisterIOWQMaxWorkers(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, nil)
	if _, _, err := r.RegisterIOWQMaxWorkers(3, 5); err != nil {
		t.Fatalf("RegisterIOWQMaxWorkers: %v", err)
	}
	b, u, err := r.RegisterIOWQMaxWorkers(0, 0)
	if err != nil || b != 3 || u != 5 {
		t.Fatalf("limits read back = %d, %d, %v; want 3, 5", b, u, err)
	}
}
