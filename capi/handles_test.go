package main

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"
)

type mutexLike struct{ n int }
type chanLike struct{ n int }

func TestHandleInsertLookupRemove(t *testing.T) {
	var tab handleTable
	a, b := &mutexLike{1}, &chanLike{2}
	ha, err := tab.insert(a)
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := tab.insert(b)
	if ha == 0 || hb == 0 || ha == hb {
		t.Fatalf("handles %#x %#x: want distinct and non-zero", ha, hb)
	}
	if got, ok := lookupAs[*mutexLike](&tab, ha); !ok || got != a {
		t.Errorf("lookup(ha) = %v, %v; want a", got, ok)
	}
	if _, ok := lookupAs[*chanLike](&tab, ha); ok {
		t.Error("a mutex handle looked up as a channel")
	}
	if _, ok := removeAs[*chanLike](&tab, ha); ok {
		t.Error("removeAs of the wrong kind removed the handle")
	}
	if tab.lookup(ha) != a {
		t.Error("wrong-kind removeAs changed the table")
	}
	if got := tab.remove(ha); got != a {
		t.Errorf("remove(ha) = %v, want a", got)
	}
	if got := tab.remove(ha); got != nil {
		t.Errorf("double remove = %v, want nil", got)
	}
	if got := tab.lookup(ha); got != nil {
		t.Errorf("lookup after remove = %v, want nil", got)
	}
	if tab.lookup(hb) != b {
		t.Error("removing a disturbed b")
	}
}

func TestHandleGenerationCheck(t *testing.T) {
	var tab handleTable
	h1, _ := tab.insert(&mutexLike{1})
	tab.remove(h1)
	// The slot is reused (last in, first out) with the next generation.
	h2, _ := tab.insert(&mutexLike{2})
	i1, g1 := splitHandle(h1)
	i2, g2 := splitHandle(h2)
	if i1 != i2 || g2 != g1+1 {
		t.Fatalf("reuse: (%d,%d) then (%d,%d); want same index, next generation", i1, g1, i2, g2)
	}
	if tab.lookup(h1) != nil {
		t.Error("stale handle found the new value")
	}
	if tab.remove(h1) != nil {
		t.Error("stale handle removed the new value")
	}
	if v, _ := tab.lookup(h2).(*mutexLike); v == nil || v.n != 2 {
		t.Error("new handle lost its value")
	}
}

func TestHandleForged(t *testing.T) {
	var tab handleTable
	h, _ := tab.insert(&mutexLike{})
	idx, gen := splitHandle(h)
	for _, bad := range []uint64{
		0,
		makeHandle(idx, 0),
		makeHandle(idx, gen+1),
		makeHandle(idx+1, gen),
		makeHandle(chunkSize, gen),         // chunk never allocated
		makeHandle(maxHandles, gen),        // beyond the directory
		makeHandle(1<<32-1, 1<<32-1),       // all ones
		makeHandle(maxHandles-1, firstGen), // last slot, never used
	} {
		if tab.lookup(bad) != nil || tab.remove(bad) != nil {
			t.Errorf("forged handle %#x accepted", bad)
		}
	}
	if tab.lookup(h) == nil {
		t.Error("forged handles disturbed a live one")
	}
}

func TestHandleRetiredAtLastGeneration(t *testing.T) {
	var tab handleTable
	h, _ := tab.insert(&mutexLike{})
	idx, _ := splitHandle(h)
	tab.remove(h)
	// Jump the slot to its last generation.
	tab.slot(idx).gen = maxGen
	tab.free = nil
	tab.free = append(tab.free, idx)
	last, _ := tab.insert(&mutexLike{})
	if _, g := splitHandle(last); g != maxGen {
		t.Fatalf("generation %d, want %d", g, uint32(maxGen))
	}
	tab.remove(last)
	next, _ := tab.insert(&mutexLike{})
	if i, _ := splitHandle(next); i == idx {
		t.Fatal("a slot past its last generation was reused")
	}
	if tab.lookup(makeHandle(idx, firstGen)) != nil {
		t.Error("the retired slot answers a wrapped generation")
	}
}

func TestHandleGrowsAcrossChunks(t *testing.T) {
	var tab handleTable
	n := 3*chunkSize + 7
	hs := make([]uint64, n)
	for i := range hs {
		h, err := tab.insert(&mutexLike{i})
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = h
	}
	for i, h := range hs {
		if v, _ := tab.lookup(h).(*mutexLike); v == nil || v.n != i {
			t.Fatalf("handle %d lost its value", i)
		}
	}
}

// TestHandleConcurrent runs inserts, lookups and removals from many
// goroutines and checks that a lookup returns nil or the value inserted
// under that handle, that a removed handle never comes back, and that of
// racing removals of one handle exactly one wins.
func TestHandleConcurrent(t *testing.T) {
	var tab handleTable
	const workers, rounds = 8, 3000
	type pub struct {
		h uint64
		v *mutexLike
	}
	var published [workers]atomic.Pointer[pub]
	var wins, wrong atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range rounds {
				v := &mutexLike{i}
				h, err := tab.insert(v)
				if err != nil {
					t.Error(err)
					return
				}
				published[w].Store(&pub{h, v})
				// Look at what others published: their value or nothing.
				for range 4 {
					if p := published[r.IntN(workers)].Load(); p != nil {
						if got := tab.lookup(p.h); got != nil && got != any(p.v) {
							wrong.Add(1)
						}
					}
				}
				// Race a removal of someone's handle against ours.
				if p := published[r.IntN(workers)].Load(); p != nil && tab.remove(p.h) != nil {
					wins.Add(1)
				}
				if tab.remove(h) != nil {
					wins.Add(1)
				}
				if tab.lookup(h) != nil {
					wrong.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if wrong.Load() != 0 {
		t.Errorf("%d lookups returned a value of another handle or a removed one", wrong.Load())
	}
	if wins.Load() != workers*rounds {
		t.Errorf("%d successful removals of %d handles: each must be removed exactly once", wins.Load(), workers*rounds)
	}
}

// TestHandleModel checks random sequences of operations, stale and forged
// handles included, against a map.
func TestHandleModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var tab handleTable
		live := map[uint64]int{}
		var dead []uint64
		next := 0
		rt.Repeat(map[string]func(*rapid.T){
			"insert": func(rt *rapid.T) {
				h, err := tab.insert(next)
				if err != nil {
					rt.Fatal(err)
				}
				if _, dup := live[h]; dup || h == 0 {
					rt.Fatalf("insert returned live or zero handle %#x", h)
				}
				live[h] = next
				next++
			},
			"remove": func(rt *rapid.T) {
				if len(live) == 0 {
					rt.Skip("nothing live")
				}
				h := rapid.SampledFrom(keys(live)).Draw(rt, "h")
				if got := tab.remove(h); got != live[h] {
					rt.Fatalf("remove(%#x) = %v, want %d", h, got, live[h])
				}
				delete(live, h)
				dead = append(dead, h)
			},
			"stale": func(rt *rapid.T) {
				if len(dead) == 0 {
					rt.Skip("nothing removed")
				}
				h := rapid.SampledFrom(dead).Draw(rt, "h")
				if tab.lookup(h) != nil || tab.remove(h) != nil {
					rt.Fatalf("stale handle %#x accepted", h)
				}
			},
			"forged": func(rt *rapid.T) {
				h := rapid.Uint64().Draw(rt, "h")
				if _, ok := live[h]; ok {
					rt.Skip("drew a live handle")
				}
				if tab.lookup(h) != nil {
					rt.Fatalf("forged handle %#x accepted", h)
				}
			},
			"": func(rt *rapid.T) {
				for h, v := range live {
					if got := tab.lookup(h); got != v {
						rt.Fatalf("lookup(%#x) = %v, want %d", h, got, v)
					}
				}
			},
		})
	})
}

func keys(m map[uint64]int) []uint64 {
	ks := make([]uint64, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	// Map order is random; rapid needs a deterministic list to shrink.
	slices.Sort(ks)
	return ks
}
