package fleetscope

import "context"

// CheckEvery is how many units of work (frames, stacks, nodes) a query's
// loop does between two looks at its context.
const CheckEvery = 4096

// Checker looks at a context every CheckEvery units of work, so that a
// long loop stops soon after its request's deadline passes or its client
// goes away, for a counter's cost per unit.
type Checker struct {
	ctx  context.Context
	work int
}

// NewChecker returns a Checker of ctx.
func NewChecker(ctx context.Context) *Checker { return &Checker{ctx: ctx} }

// Tick counts n units of work and returns ctx.Err() when CheckEvery or
// more have been done since the last look (nil otherwise).
func (c *Checker) Tick(n int) error {
	c.work += n
	if c.work < CheckEvery {
		return nil
	}
	c.work = 0
	return c.ctx.Err()
}
