package runtime

import (
	"context"
	"testing"
	"time"
)

// A SpawnOn that passed newTask's first closing check before Close began
// but counts its task on the root only once Close has found the root idle
// must fail with ErrClosed, not queue a task that no worker will run. That
// interleaving is forced here with two hooks; before, the task was queued
// after the workers' last look and its Join waited forever (a reviewer
// found it racing SpawnOn against Close at GOMAXPROCS=8, in about one
// race in 2,000).
func TestSpawnOnRacingCloseCompletes(t *testing.T) {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	inSpawn, spawnGo := make(chan struct{}), make(chan struct{})
	closeIdle, closeGo := make(chan struct{}), make(chan struct{})
	testHookRootKid = func() {
		close(inSpawn)
		<-spawnGo
	}
	testHookCloseIdle = func() {
		close(closeIdle)
		<-closeGo
	}
	defer func() { testHookRootKid, testHookCloseIdle = nil, nil }()

	spawned := make(chan *JoinHandle[int])
	go func() { spawned <- SpawnOn(rt, func(context.Context) (int, error) { return 1, nil }) }()
	<-inSpawn // past the first closing check
	testHookRootKid = nil
	closed := make(chan error)
	go func() { closed <- rt.Close() }()
	<-closeIdle // Close found the root idle
	close(spawnGo)
	h := <-spawned
	close(closeGo)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the task of a SpawnOn that raced Close never completed")
	}
	if _, err := h.Join(context.Background()); err != ErrClosed {
		t.Errorf("Join = %v, want ErrClosed", err)
	}
}
