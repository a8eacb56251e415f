package cache

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func bytesTable[K comparable](c *Cache, name string) *Table[K, []byte] {
	return NewTable(c, name, func(_ K, v []byte) int64 { return int64(len(v)) })
}

func TestBoundedInBytes(t *testing.T) {
	c := New(1000)
	tb := bytesTable[int](c, "t")
	for i := range 100 {
		tb.Put(i, make([]byte, 100))
		if c.Bytes() > 1000 {
			t.Fatalf("after %d puts: %d bytes cached, budget 1000", i+1, c.Bytes())
		}
	}
	if tb.Len() != 10 || c.Len() != 10 {
		t.Fatalf("%d entries (%d in the cache), want 10", tb.Len(), c.Len())
	}
	if _, ok := tb.Get(99); !ok {
		t.Fatal("newest entry evicted")
	}
	if _, ok := tb.Get(0); ok {
		t.Fatal("oldest entry kept")
	}
}

// TestBudgetShared: the tables of a cache draw on its one budget. A table
// in use takes the memory another no longer uses (no share of its own
// holds it back), the tables' bytes add up to the cache's, and the
// cache never holds more than its budget.
func TestBudgetShared(t *testing.T) {
	c := New(1000)
	a := bytesTable[int](c, "a")
	b := bytesTable[string](c, "b")
	for i := range 10 {
		a.Put(i, make([]byte, 100))
	}
	if a.Bytes() != 1000 || b.Bytes() != 0 {
		t.Fatalf("a %d, b %d bytes; want 1000, 0: one table may take the whole budget", a.Bytes(), b.Bytes())
	}
	for i, k := range []string{"p", "q", "r", "s", "t", "u", "v", "w"} {
		b.Put(k, make([]byte, 100))
		if c.Bytes() > 1000 {
			t.Fatalf("after %d puts in b: %d bytes cached, budget 1000", i+1, c.Bytes())
		}
		if a.Bytes()+b.Bytes() != c.Bytes() {
			t.Fatalf("tables hold %d + %d bytes, the cache %d", a.Bytes(), b.Bytes(), c.Bytes())
		}
	}
	if a.Len() != 2 || b.Len() != 8 {
		t.Fatalf("a %d, b %d entries; want 2, 8: the table in use gets the memory", a.Len(), b.Len())
	}
	for _, i := range []int{8, 9} { // a's newest survive
		if _, ok := a.Get(i); !ok {
			t.Fatalf("a's entry %d evicted before older ones", i)
		}
	}
	st := c.Stats()
	if len(st) != 2 || st[0].Name != "a" || st[1].Name != "b" || st[0].Bytes != 200 || st[1].Bytes != 800 || st[0].Entries != 2 || st[1].Entries != 8 {
		t.Fatalf("stats %+v", st)
	}
	if st[0].Hits != 2 {
		t.Fatalf("a: %d hits, want 2", st[0].Hits)
	}
}

// TestLeastRecentlyUsedGoesFirst: one recency order across tables; a
// lookup makes an entry the most recent; replacing an entry keeps the byte
// counts right.
func TestLeastRecentlyUsedGoesFirst(t *testing.T) {
	c := New(4)
	one := func(string, int) int64 { return 1 }
	x := NewTable(c, "x", one)
	y := NewTable(c, "y", one)
	x.Put("a", 1)
	y.Put("b", 2)
	x.Put("c", 3)
	y.Put("d", 4)
	x.Get("a")
	y.Put("e", 5) // evicts y's b, the least recently used of either table
	if _, ok := y.Get("b"); ok {
		t.Fatal("b should have been evicted")
	}
	x.Put("f", 6) // then x's c
	if _, ok := x.Get("c"); ok {
		t.Fatal("c should have been evicted")
	}
	for _, k := range []string{"a", "f"} {
		if _, ok := x.Get(k); !ok {
			t.Fatalf("x's %s evicted", k)
		}
	}
	for _, k := range []string{"d", "e"} {
		if _, ok := y.Get(k); !ok {
			t.Fatalf("y's %s evicted", k)
		}
	}
	x.Put("a", 10) // replacing
	if c.Bytes() != 4 || x.Bytes() != 2 || y.Bytes() != 2 {
		t.Fatalf("bytes %d (x %d, y %d) after replace, want 4 (2, 2)", c.Bytes(), x.Bytes(), y.Bytes())
	}
	if v, _ := x.Get("a"); v != 10 {
		t.Fatalf("a = %d after replace, want 10", v)
	}
}

// TestOversizeNotKept: an entry over half the cache's budget is not kept,
// and the one cached for its key before is dropped.
func TestOversizeNotKept(t *testing.T) {
	c := New(1000)
	a := bytesTable[int](c, "a")
	b := bytesTable[int](c, "b")
	a.Put(1, make([]byte, 300))
	b.Put(1, make([]byte, 500)) // half: kept
	if _, ok := b.Get(1); !ok {
		t.Fatal("an entry of half the budget was not kept")
	}
	a.Put(1, make([]byte, 501))
	if _, ok := a.Get(1); ok {
		t.Fatal("an entry over half the budget was kept")
	}
	if a.Len() != 0 || c.Bytes() != 500 {
		t.Fatalf("a holds %d entries, the cache %d bytes; want 0, 500 (the old entry dropped, b's kept)", a.Len(), c.Bytes())
	}
}

func TestExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	c := New(100)
	c.SetClock(func() time.Time { return now })
	one := func(string, int) int64 { return 1 }
	tb := NewTable(c, "ttl", one).WithTTL(5 * time.Second)
	forever := NewTable(c, "forever", one)
	tb.Put("ttl", 1)
	tb.PutUntil("early", 2, now.Add(time.Second))
	tb.PutUntil("late", 3, now.Add(time.Hour)) // the table's TTL still bounds it
	forever.Put("x", 4)
	forever.PutUntil("own", 5, now.Add(2*time.Second))
	now = now.Add(time.Second)
	if _, ok := tb.Get("early"); ok {
		t.Fatal("entry kept past its own expiry")
	}
	if _, ok := tb.Get("ttl"); !ok {
		t.Fatal("entry expired early")
	}
	now = now.Add(4 * time.Second)
	for _, k := range []string{"ttl", "late"} {
		if _, ok := tb.Get(k); ok {
			t.Fatalf("%s kept past the TTL", k)
		}
	}
	if tb.Bytes() != 0 {
		t.Fatalf("expired entries still counted: %d bytes", tb.Bytes())
	}
	if _, ok := forever.Get("own"); ok {
		t.Fatal("an entry of a table without TTL kept past its own expiry")
	}
	if _, ok := forever.Get("x"); !ok {
		t.Fatal("a table without TTL expired an entry")
	}
}

type profileKey struct{ id string }

type rangeKey struct {
	profileKey
	from, to int
}

func TestDrop(t *testing.T) {
	c := New(100)
	one := func(int, int) int64 { return 1 }
	tb := NewTable(c, "ints", one)
	for i := range 10 {
		tb.Put(i, i)
	}
	tb.Drop(func(k int) bool { return k%2 == 0 })
	if tb.Len() != 5 || tb.Bytes() != 5 || c.Bytes() != 5 {
		t.Fatalf("len %d bytes %d (cache %d) after drop, want 5, 5 (5)", tb.Len(), tb.Bytes(), c.Bytes())
	}
	// Cache.Drop reaches every table: what is cached about profile "p",
	// whatever its key type, goes; the rest stays.
	profiles := NewTable(c, "profiles", func(profileKey, int) int64 { return 1 })
	ranges := NewTable(c, "ranges", func(rangeKey, int) int64 { return 1 })
	profiles.Put(profileKey{"p"}, 1)
	profiles.Put(profileKey{"q"}, 2)
	ranges.Put(rangeKey{profileKey{"p"}, 0, 1}, 3)
	ranges.Put(rangeKey{profileKey{"p"}, 1, 2}, 4)
	ranges.Put(rangeKey{profileKey{"q"}, 0, 1}, 5)
	c.Drop(func(k any) bool {
		switch k := k.(type) {
		case profileKey:
			return k.id == "p"
		case rangeKey:
			return k.id == "p"
		}
		return false
	})
	if profiles.Len() != 1 || ranges.Len() != 1 || tb.Len() != 5 || c.Bytes() != 7 {
		t.Fatalf("after dropping p: profiles %d, ranges %d, ints %d entries, %d bytes; want 1, 1, 5, 7", profiles.Len(), ranges.Len(), tb.Len(), c.Bytes())
	}
	if _, ok := ranges.Get(rangeKey{profileKey{"q"}, 0, 1}); !ok {
		t.Fatal("q's range dropped")
	}
	c.Clear()
	if c.Len() != 0 || c.Bytes() != 0 || tb.Len() != 0 || profiles.Bytes() != 0 {
		t.Fatalf("after Clear: %d entries, %d bytes", c.Len(), c.Bytes())
	}
}

// waitFor yields until n callers of tb wait for a load.
func waitFor[K comparable, V any](tb *Table[K, V], n int64) {
	for tb.wait.Load() < n {
		runtime.Gosched()
	}
}

// TestLoadOnce: callers that ask for a key while its load is in flight
// share that load; later callers find it cached. The value is over half
// the budget (not kept), so that only the shared flight, not the cache,
// can spare the later callers a load of their own.
func TestLoadOnce(t *testing.T) {
	c := New(100)
	tb := bytesTable[string](c, "t")
	var loads atomic.Int64
	release := make(chan struct{})
	load := func() ([]byte, error) {
		loads.Add(1)
		<-release
		return make([]byte, 60), nil
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := tb.Load(context.Background(), "k", load)
			if err == nil && len(v) != 60 {
				t.Errorf("caller %d: %d bytes", i, len(v))
			}
			errs[i] = err
		}()
	}
	waitFor(tb, n)
	close(release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if loads.Load() != 1 {
		t.Fatalf("%d loads for %d callers at once, want 1", loads.Load(), n)
	}
	if st := c.Stats()[0]; st.Loads != 1 || st.Misses != n {
		t.Fatalf("stats %+v: want 1 load, %d misses", st, n)
	}

	// A value that is kept is loaded once and then found.
	small := func() ([]byte, error) { loads.Add(1); return []byte("v"), nil }
	for range 3 {
		if v, err := tb.Load(context.Background(), "small", small); err != nil || string(v) != "v" {
			t.Fatalf("got %q, %v", v, err)
		}
	}
	if loads.Load() != 2 {
		t.Fatalf("%d loads, want 2: a cached value was loaded again", loads.Load())
	}
}

// TestLoadCanceledLeader: the caller whose load is in flight goes away and
// its load fails with its context's error; a caller that shared the load
// and is still there loads again rather than fail for another's reason,
// and caches what it loaded.
func TestLoadCanceledLeader(t *testing.T) {
	c := New(100)
	tb := bytesTable[string](c, "t")
	var loads atomic.Int64
	gone, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	leaderDone := make(chan error, 1)
	go func() {
		_, err := tb.Load(gone, "k", func() ([]byte, error) { // as a database read on the caller's context
			loads.Add(1)
			close(started)
			<-gone.Done()
			return nil, gone.Err()
		})
		leaderDone <- err
	}()
	<-started
	followerDone := make(chan error, 1)
	go func() {
		v, err := tb.Load(context.Background(), "k", func() ([]byte, error) {
			loads.Add(1)
			return []byte("mine"), nil
		})
		if err == nil && string(v) != "mine" {
			err = errors.New("got " + string(v))
		}
		followerDone <- err
	}()
	waitFor(tb, 2)
	cancel()
	if err := <-leaderDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that went away: %v, want context.Canceled", err)
	}
	if err := <-followerDone; err != nil {
		t.Fatalf("the caller that stayed: %v", err)
	}
	if loads.Load() != 2 {
		t.Fatalf("%d loads, want 2 (the canceled one, then the caller that stayed)", loads.Load())
	}
	if v, ok := tb.Get("k"); !ok || string(v) != "mine" {
		t.Fatal("the second load was not cached")
	}
}

// TestLoadCallerGoesAway: a caller whose context ends stops waiting; the
// load it shared goes on for the others and is cached.
func TestLoadCallerGoesAway(t *testing.T) {
	c := New(100)
	tb := bytesTable[string](c, "t")
	release := make(chan struct{})
	load := func() ([]byte, error) { <-release; return []byte("v"), nil }
	loaderDone := make(chan error, 1)
	go func() {
		_, err := tb.Load(context.Background(), "k", load)
		loaderDone <- err
	}()
	waitFor(tb, 1)
	ctx, cancel := context.WithCancel(context.Background())
	leftDone := make(chan error, 1)
	go func() {
		_, err := tb.Load(ctx, "k", load)
		leftDone <- err
	}()
	waitFor(tb, 2)
	cancel()
	if err := <-leftDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that went away: %v, want context.Canceled", err)
	}
	close(release)
	if err := <-loaderDone; err != nil {
		t.Fatal(err)
	}
	if _, ok := tb.Get("k"); !ok {
		t.Fatal("the shared load was not cached")
	}
}

// TestLoadErrors: an error is returned and not cached, a context error of
// the caller's own load is returned (not tried again), and a panic in a
// load is an error.
func TestLoadErrors(t *testing.T) {
	c := New(100)
	tb := bytesTable[string](c, "t")
	boom := errors.New("boom")
	if _, err := tb.Load(context.Background(), "k", func() ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if tb.Len() != 0 {
		t.Fatal("an error was cached")
	}
	n := 0
	if _, err := tb.Load(context.Background(), "k", func() ([]byte, error) { n++; return nil, context.DeadlineExceeded }); !errors.Is(err, context.DeadlineExceeded) || n != 1 {
		t.Fatalf("own load past its deadline: %v after %d loads, want context.DeadlineExceeded after 1", err, n)
	}
	_, err := tb.Load(context.Background(), "k", func() ([]byte, error) { panic("oops") })
	if err == nil || !strings.Contains(err.Error(), "oops") {
		t.Fatalf("a panicking load: %v", err)
	}
	if v, err := tb.Load(context.Background(), "k", func() ([]byte, error) { return []byte("ok"), nil }); err != nil || string(v) != "ok" {
		t.Fatalf("after the failures: %q, %v", v, err)
	}
}

// TestFlightKeys: loads in flight are told apart by their keys: keys
// holding pointers by the pointer, not by what it points to; keys holding
// strings by each string.
func TestFlightKeys(t *testing.T) {
	type thing struct{ n int }
	type key struct {
		p    *thing
		a, b string
	}
	x, y := &thing{1}, &thing{1}
	if flightKey(x) == flightKey(y) || flightKey(key{p: x}) == flightKey(key{p: y}) {
		t.Error("two pointers to equal values share a flight")
	}
	if flightKey(x) != flightKey(x) || flightKey(key{x, "a", "b"}) != flightKey(key{x, "a", "b"}) {
		t.Error("one key, two flights")
	}
	if flightKey(key{x, "a b", "c"}) == flightKey(key{x, "a", "b c"}) {
		t.Error("two keys of other strings share a flight")
	}
	if flightKey([2]int{1, 23}) == flightKey([2]int{12, 3}) {
		t.Error("two arrays share a flight")
	}
}

// TestLoadDuringDropNotCached: a value loaded while entries were dropped
// (a profile forgotten as its load was in flight) is returned but not
// cached; a load after the drop is.
func TestLoadDuringDropNotCached(t *testing.T) {
	c := New(100)
	tb := bytesTable[string](c, "t")
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		v, err := tb.Load(context.Background(), "k", func() ([]byte, error) {
			close(started)
			<-release
			return []byte("stale"), nil
		})
		if err == nil && string(v) != "stale" {
			err = errors.New("got " + string(v))
		}
		done <- err
	}()
	<-started
	c.Drop(func(k any) bool { return k == "k" })
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if tb.Len() != 0 {
		t.Fatal("a value loaded across a drop was cached")
	}
	if v, err := tb.Load(context.Background(), "k", func() ([]byte, error) { return []byte("fresh"), nil }); err != nil || string(v) != "fresh" || tb.Len() != 1 {
		t.Fatalf("after the drop: %q, %v, %d entries", v, err, tb.Len())
	}
}

// BenchmarkLoadHit is the cost of a cached answer's lookup through Load.
func BenchmarkLoadHit(b *testing.B) {
	c := New(1 << 20)
	tb := NewTable(c, "t", func(profileKey, int) int64 { return 64 })
	k := profileKey{"a-profile-id"}
	tb.Put(k, 1)
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := tb.Load(ctx, k, func() (int, error) { return 0, errors.New("loaded") }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLoadMiss is the cost of a load through Load, not counting the
// load itself (an entry over half the budget: never kept).
func BenchmarkLoadMiss(b *testing.B) {
	c := New(100)
	tb := NewTable(c, "t", func(profileKey, int) int64 { return 100 })
	k := profileKey{"a-profile-id"}
	ctx := context.Background()
	for b.Loop() {
		if _, err := tb.Load(ctx, k, func() (int, error) { return 1, nil }); err != nil {
			b.Fatal(err)
		}
	}
}
