// Package ctxtest helps tests check that loops honour their context: a
// context that turns done at its n-th look, as a client that leaves while
// the work runs, and that counts the looks, so a test can tell the work
// stopped at the first look that found it done.
package ctxtest

import (
	"context"
	"sync"
)

// Ctx is a context whose Err is context.Canceled from its n-th call on.
type Ctx struct {
	context.Context
	mu       sync.Mutex
	n, calls int
}

// CancelAfter returns a Ctx done from the n-th call of its Err.
func CancelAfter(n int) *Ctx { return &Ctx{Context: context.Background(), n: n} }

// Err counts the call; context.Canceled from the n-th on.
func (c *Ctx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.calls >= c.n {
		return context.Canceled
	}
	return nil
}

// Calls is how many times Err was called.
func (c *Ctx) Calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}
