// Package cache is a least-recently-used cache bounded in bytes, with an
// optional time to live, safe for concurrent use. What it holds must be
// recomputable: caches make repeated queries cheap, never correct. It
// knows nothing of what it caches; each entry's size is the caller's
// estimate.
package cache

import (
	"container/list"
	"sync"
	"time"
)

// LRU maps keys to values, evicting the least recently used entries once
// their sizes add up to more than its byte budget.
type LRU[K comparable, V any] struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	ttl      time.Duration // 0: entries live until evicted
	size     func(K, V) int64
	now      func() time.Time
	items    map[K]*list.Element
	order    list.List // front: most recently used
}

type entry[K comparable, V any] struct {
	key     K
	val     V
	size    int64
	expires time.Time
}

// New returns a cache of at most maxBytes, as size measures entries. An
// entry larger than half of maxBytes is not kept (it would flush the
// cache for one answer). ttl > 0 bounds how long an entry is trusted.
func New[K comparable, V any](maxBytes int64, ttl time.Duration, size func(K, V) int64) *LRU[K, V] {
	return &LRU[K, V]{maxBytes: maxBytes, ttl: ttl, size: size, now: time.Now, items: make(map[K]*list.Element)}
}

// SetClock replaces time.Now (tests).
func (c *LRU[K, V]) SetClock(now func() time.Time) { c.now = now }

// Get returns the value for k if it is cached and fresh.
func (c *LRU[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[k]
	if !ok {
		return zero, false
	}
	e := el.Value.(*entry[K, V])
	if !e.expires.IsZero() && !c.now().Before(e.expires) {
		c.remove(el)
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.val, true
}

// Put caches v for k with the cache's time to live.
func (c *LRU[K, V]) Put(k K, v V) {
	var exp time.Time
	if c.ttl > 0 {
		exp = c.now().Add(c.ttl)
	}
	c.PutUntil(k, v, exp)
}

// PutUntil caches v for k until expires (zero: no expiry of its own; the
// cache's time to live still applies if it is shorter).
func (c *LRU[K, V]) PutUntil(k K, v V, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ttl > 0 {
		if limit := c.now().Add(c.ttl); expires.IsZero() || limit.Before(expires) {
			expires = limit
		}
	}
	size := c.size(k, v)
	if el, ok := c.items[k]; ok {
		c.remove(el)
	}
	if size*2 > c.maxBytes {
		return
	}
	c.items[k] = c.order.PushFront(&entry[K, V]{key: k, val: v, size: size, expires: expires})
	c.bytes += size
	for c.bytes > c.maxBytes {
		c.remove(c.order.Back())
	}
}

func (c *LRU[K, V]) remove(el *list.Element) {
	e := el.Value.(*entry[K, V])
	c.order.Remove(el)
	delete(c.items, e.key)
	c.bytes -= e.size
}

// Drop removes every entry whose key matches.
func (c *LRU[K, V]) Drop(match func(K) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, el := range c.items {
		if match(k) {
			c.remove(el)
		}
	}
}

// Bytes returns the sum of the cached entries' sizes.
func (c *LRU[K, V]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Len returns the number of cached entries.
func (c *LRU[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}
