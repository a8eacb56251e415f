package api

import (
	"container/list"
	"sync"
	"time"
)

// cache is a small LRU with an optional time-to-live, safe for concurrent
// use. Everything cached here can be recomputed from the index: the caches
// make repeated dashboard queries cheap, never correct.
type cache[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration // 0: entries live until evicted
	items map[K]*list.Element
	order list.List // front: most recently used
}

type cacheEntry[K comparable, V any] struct {
	key     K
	val     V
	expires time.Time
}

func newCache[K comparable, V any](max int, ttl time.Duration) *cache[K, V] {
	return &cache[K, V]{max: max, ttl: ttl, items: make(map[K]*list.Element)}
}

func (c *cache[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[k]
	if !ok {
		return zero, false
	}
	e := el.Value.(*cacheEntry[K, V])
	if c.ttl > 0 && time.Now().After(e.expires) {
		c.order.Remove(el)
		delete(c.items, k)
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.val, true
}

func (c *cache[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &cacheEntry[K, V]{key: k, val: v, expires: time.Now().Add(c.ttl)}
	if el, ok := c.items[k]; ok {
		el.Value = e
		c.order.MoveToFront(el)
		return
	}
	c.items[k] = c.order.PushFront(e)
	for len(c.items) > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheEntry[K, V]).key)
	}
}

// drop removes every entry for which match is true.
func (c *cache[K, V]) drop(match func(K) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, el := range c.items {
		if match(k) {
			c.order.Remove(el)
			delete(c.items, k)
		}
	}
}
