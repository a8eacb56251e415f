package cache

import (
	"testing"
	"time"
)

func TestBoundedInBytes(t *testing.T) {
	c := New[int, []byte](1000, 0, func(_ int, v []byte) int64 { return int64(len(v)) })
	for i := range 100 {
		c.Put(i, make([]byte, 100))
		if c.Bytes() > 1000 {
			t.Fatalf("after %d puts: %d bytes cached, budget 1000", i+1, c.Bytes())
		}
	}
	if c.Len() != 10 {
		t.Fatalf("%d entries, want 10", c.Len())
	}
	if _, ok := c.Get(99); !ok {
		t.Fatal("newest entry evicted")
	}
	if _, ok := c.Get(0); ok {
		t.Fatal("oldest entry kept")
	}
	c.Put(1000, make([]byte, 501)) // over half the budget
	if _, ok := c.Get(1000); ok {
		t.Fatal("an entry over half the budget was kept")
	}
}

func TestLeastRecentlyUsedGoesFirst(t *testing.T) {
	c := New[string, int](3, 0, func(string, int) int64 { return 1 })
	c.Put("a", 1)
	c.Put("b", 2)
	c.Put("c", 3)
	c.Get("a")
	c.Put("d", 4)
	if _, ok := c.Get("b"); ok {
		t.Fatal("b should have been evicted")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := c.Get(k); !ok {
			t.Fatalf("%s evicted", k)
		}
	}
	c.Put("a", 10) // replacing keeps the byte count right
	if c.Bytes() != 3 {
		t.Fatalf("bytes %d after replace, want 3", c.Bytes())
	}
}

func TestExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	c := New[string, int](100, 5*time.Second, func(string, int) int64 { return 1 })
	c.SetClock(func() time.Time { return now })
	c.Put("ttl", 1)
	c.PutUntil("early", 2, now.Add(time.Second))
	c.PutUntil("late", 3, now.Add(time.Hour)) // the cache's TTL still bounds it
	now = now.Add(time.Second)
	if _, ok := c.Get("early"); ok {
		t.Fatal("entry kept past its own expiry")
	}
	if _, ok := c.Get("ttl"); !ok {
		t.Fatal("entry expired early")
	}
	now = now.Add(4 * time.Second)
	for _, k := range []string{"ttl", "late"} {
		if _, ok := c.Get(k); ok {
			t.Fatalf("%s kept past the TTL", k)
		}
	}
	if c.Bytes() != 0 {
		t.Fatalf("expired entries still counted: %d bytes", c.Bytes())
	}
}

func TestDrop(t *testing.T) {
	c := New[int, int](100, 0, func(int, int) int64 { return 1 })
	for i := range 10 {
		c.Put(i, i)
	}
	c.Drop(func(k int) bool { return k%2 == 0 })
	if c.Len() != 5 || c.Bytes() != 5 {
		t.Fatalf("len %d bytes %d after drop, want 5, 5", c.Len(), c.Bytes())
	}
}
