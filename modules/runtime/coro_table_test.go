package runtime

import (
	"sync"
	"testing"
)

// The coroutine table under concurrent use, as coroutines use it (each
// goroutine enters and removes its own keys) while others look up keys
// nobody stored: a stored key is found with its value until deleted, and
// then no more. A burst of entries that goes away must not leave its
// storage behind: once a tenth remains, every shard has been rebuilt.
func TestCoroTable(t *testing.T) {
	var tb coroTable
	const owners, keys = 8, 3000
	key := func(o, i int) uintptr { return uintptr(o*keys+i)*448 + 1<<20 } // like g addresses
	cs := make([][]*coro, owners)
	var wg sync.WaitGroup
	readers := func() {
		for r := range 2 {
			wg.Go(func() {
				for i := range 20000 {
					if _, ok := tb.load(uintptr(r*20000+i)*448 + 1<<40); ok {
						t.Errorf("a key never stored was found")
						return
					}
				}
			})
		}
	}
	readers()
	for o := range owners {
		cs[o] = make([]*coro, keys)
		wg.Go(func() {
			for i := range keys {
				cs[o][i] = &coro{}
				tb.store(key(o, i), cs[o][i])
				if c, ok := tb.load(key(o, i)); !ok || c != cs[o][i] {
					t.Errorf("key %#x: load after store gave %p %v, want %p", key(o, i), c, ok, cs[o][i])
					return
				}
			}
		})
	}
	wg.Wait()
	if n, _ := tb.len(); n != owners*keys {
		t.Fatalf("%d entries after storing %d", n, owners*keys)
	}
	readers()
	for o := range owners {
		wg.Go(func() {
			for i := range keys {
				g := key(o, i)
				if i%10 != 0 {
					tb.delete(g)
					if _, ok := tb.load(g); ok {
						t.Errorf("key %#x still there after delete", g)
						return
					}
				} else if c, ok := tb.load(g); !ok || c != cs[o][i] {
					t.Errorf("key %#x: load gave %p %v, want %p", g, c, ok, cs[o][i])
					return
				}
			}
		})
	}
	wg.Wait()
	n, peaks := tb.len()
	if want := owners * keys / 10; n != want {
		t.Fatalf("%d entries left, want %d", n, want)
	}
	// Each shard peaked at about 1,500 entries (above coroShrinkMin)
	// and holds about 150: it was rebuilt when it fell below an eighth of
	// its peak, and its peak is now what it held then.
	if peaks > 2*owners*keys/8 {
		t.Errorf("the shards' peaks sum to %d after going from %d entries to %d: the maps were not rebuilt smaller", peaks, owners*keys, n)
	}
}

// len returns the number of coroutines in the table, and the sum of the
// shards' peaks.
func (tb *coroTable) len() (n, peaks int) {
	for i := range tb.shards {
		s := &tb.shards[i]
		s.mu.RLock()
		n += len(s.m)
		peaks += s.peak
		s.mu.RUnlock()
	}
	return n, peaks
}
