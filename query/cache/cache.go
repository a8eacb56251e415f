// Package cache is one least-recently-used cache bounded in bytes, shared
// by typed tables, with an optional time to live per table or entry and
// one load helper that loads a missing entry once for the callers that
// meet it in flight. It is safe for concurrent use.
//
// Every table of a Cache draws on the Cache's one byte budget and shares
// its one recency order: whichever kind of entry is in use gets the
// memory, and the least recently used entry, of any table, goes first.
// What it holds must be recomputable: caches make repeated queries cheap,
// never correct. It knows nothing of what it caches; each entry's size is
// the table's estimate.
package cache

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// Cache is a byte budget and a recency order that its tables share.
type Cache struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	now      func() time.Time
	order    list.List // of *entry; front: most recently used
	tables   []table
	drops    uint64 // Drop calls: a load that began before one is not cached
}

// table is what the Cache needs of a Table: its accounting, and removing
// an entry from its map.
type table interface {
	stats() Stats
	removed(e *entry)
}

// entry is one cached value of some table.
type entry struct {
	tbl     table
	key     any // the table's K
	val     any // the table's V
	size    int64
	expires time.Time // zero: until evicted
}

// New returns a cache of at most maxBytes for all its tables together, as
// their size functions measure entries. An entry larger than half of
// maxBytes is not kept (it would flush the cache for one answer).
func New(maxBytes int64) *Cache {
	return &Cache{maxBytes: maxBytes, now: time.Now}
}

// SetClock replaces time.Now (tests).
func (c *Cache) SetClock(now func() time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

// Bytes returns the sum of the cached entries' sizes, of every table.
func (c *Cache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Len returns the number of cached entries, of every table.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Drop removes every entry, of any table, whose key matches: the one way
// to forget what is cached about something (match tells a table's keys
// apart by their type).
func (c *Cache) Drop(match func(key any) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drops++
	for el := c.order.Front(); el != nil; {
		next := el.Next()
		if match(el.Value.(*entry).key) {
			c.remove(el)
		}
		el = next
	}
}

// Clear removes every entry.
func (c *Cache) Clear() { c.Drop(func(any) bool { return true }) }

// Stats is a table's accounting.
type Stats struct {
	Name    string
	Entries int
	Bytes   int64
	Hits    uint64 // lookups that found a fresh entry
	Misses  uint64 // lookups that did not
	Loads   uint64 // loads run by Load (one for the callers that shared it)
}

// Stats returns each table's accounting, in the order they were made.
func (c *Cache) Stats() []Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Stats, len(c.tables))
	for i, t := range c.tables {
		out[i] = t.stats()
	}
	return out
}

// remove takes el out of the order and its table. The caller holds c.mu.
func (c *Cache) remove(el *list.Element) {
	e := el.Value.(*entry)
	c.order.Remove(el)
	c.bytes -= e.size
	e.tbl.removed(e)
}

// Table is a typed view of a Cache: keys K to values V, each measured by
// the table's size function, in the Cache's budget and order.
type Table[K comparable, V any] struct {
	c     *Cache
	name  string
	size  func(K, V) int64
	ttl   time.Duration       // 0: entries live until evicted
	items map[K]*list.Element // guarded by c.mu
	bytes int64               // guarded by c.mu
	hits  atomic.Uint64
	miss  atomic.Uint64
	loads atomic.Uint64
	group singleflight.Group
	wait  atomic.Int64 // callers waiting for a load (tests)
}

// NewTable returns a table of c named name (for its Stats), whose entries
// size measures.
func NewTable[K comparable, V any](c *Cache, name string, size func(K, V) int64) *Table[K, V] {
	t := &Table[K, V]{c: c, name: name, size: size, items: make(map[K]*list.Element)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tables = append(c.tables, t)
	return t
}

// WithTTL bounds how long the table's entries are trusted (ttl > 0), and
// returns the table.
func (t *Table[K, V]) WithTTL(ttl time.Duration) *Table[K, V] {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.ttl = ttl
	return t
}

func (t *Table[K, V]) stats() Stats {
	return Stats{Name: t.name, Entries: len(t.items), Bytes: t.bytes, Hits: t.hits.Load(), Misses: t.miss.Load(), Loads: t.loads.Load()}
}

func (t *Table[K, V]) removed(e *entry) {
	delete(t.items, e.key.(K))
	t.bytes -= e.size
}

// Get returns the value for k if it is cached and fresh.
func (t *Table[K, V]) Get(k K) (V, bool) {
	v, ok := t.get(k)
	if ok {
		t.hits.Add(1)
	} else {
		t.miss.Add(1)
	}
	return v, ok
}

func (t *Table[K, V]) get(k K) (V, bool) {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := t.items[k]
	if !ok {
		return zero, false
	}
	e := el.Value.(*entry)
	if !e.expires.IsZero() && !c.now().Before(e.expires) {
		c.remove(el)
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.val.(V), true
}

// Put caches v for k with the table's time to live.
func (t *Table[K, V]) Put(k K, v V) { t.PutUntil(k, v, time.Time{}) }

// PutUntil caches v for k until expires (zero: no expiry of its own; the
// table's time to live still applies if it is shorter). An entry over half
// the Cache's budget is not kept (and one cached for k before is dropped).
// Then the least recently used entries, of any table, are evicted until
// the Cache is within its budget.
func (t *Table[K, V]) PutUntil(k K, v V, expires time.Time) { t.put(k, v, expires, nil) }

// put is PutUntil, unless drops is given and entries were dropped since it
// was read (a value loaded meanwhile may be of what was dropped).
func (t *Table[K, V]) put(k K, v V, expires time.Time, drops *uint64) {
	size := t.size(k, v)
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if drops != nil && *drops != c.drops {
		return
	}
	if t.ttl > 0 {
		if limit := c.now().Add(t.ttl); expires.IsZero() || limit.Before(expires) {
			expires = limit
		}
	}
	if el, ok := t.items[k]; ok {
		c.remove(el)
	}
	if size*2 > c.maxBytes {
		return
	}
	t.items[k] = c.order.PushFront(&entry{tbl: t, key: k, val: v, size: size, expires: expires})
	t.bytes += size
	c.bytes += size
	for c.bytes > c.maxBytes {
		c.remove(c.order.Back())
	}
}

// Drop removes every entry of the table whose key matches.
func (t *Table[K, V]) Drop(match func(K) bool) {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drops++
	for k, el := range t.items {
		if match(k) {
			c.remove(el)
		}
	}
}

// Bytes returns the sum of the table's entries' sizes.
func (t *Table[K, V]) Bytes() int64 {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.bytes
}

// Len returns the number of the table's entries.
func (t *Table[K, V]) Len() int {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return len(t.items)
}

// Load returns the value for k: the cached one, else load's, which it
// caches (an error is returned, not cached). Callers that ask for k while
// a load of it is in flight wait for that load instead of starting their
// own.
//
// load runs in a goroutine of its own. A caller whose ctx is done stops
// waiting (it returns ctx's error) while the load goes on for the others.
// A load that fails with a context error (context.Canceled or
// context.DeadlineExceeded) is taken to have been cut short by the
// context of the caller that started it: the callers that shared it and
// whose own ctx is not done try again (one of them loading), rather than
// fail for another caller's reason. A panic in load is returned as an
// error to every caller. A value loaded while entries were dropped (Drop,
// Clear: a profile forgotten) is returned but not cached: it may be of
// what was dropped.
func (t *Table[K, V]) Load(ctx context.Context, k K, load func() (V, error)) (V, error) {
	if v, ok := t.Get(k); ok {
		return v, nil
	}
	var zero V
	flight := flightKey(k)
	for {
		led := false // this caller's load ran (read after the result arrives)
		ch := t.group.DoChan(flight, func() (r any, err error) {
			led = true
			if v, ok := t.get(k); ok { // a load that ended between Get and DoChan
				return v, nil
			}
			t.loads.Add(1)
			t.c.mu.Lock()
			drops := t.c.drops
			t.c.mu.Unlock()
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("cache %s: load panicked: %v\n%s", t.name, p, debug.Stack())
				}
			}()
			v, err := load()
			if err != nil {
				return nil, err
			}
			t.put(k, v, time.Time{}, &drops)
			return v, nil
		})
		t.wait.Add(1)
		var r singleflight.Result
		select {
		case <-ctx.Done():
			t.wait.Add(-1)
			return zero, ctx.Err()
		case r = <-ch:
			t.wait.Add(-1)
		}
		if r.Err == nil {
			v, _ := r.Val.(V) // nil for a nil interface V
			return v, nil
		}
		if !led && isContextErr(r.Err) && ctx.Err() == nil {
			continue // the caller that loaded went away: not this one's failure
		}
		return zero, r.Err
	}
}

// flightKey names k's load in flight: distinct keys give distinct strings
// (strings are quoted; a pointer in a field prints as its address, not
// what it points to).
func flightKey[K comparable](k K) string { return fmt.Sprintf("%#v", struct{ K K }{k}) }

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
