package server

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/store/index"
)

// compactor counts the stack buckets of the profiles this replica stored,
// and the hour and day rollups they complete, every
// FLEETSCOPE_COMPACT_INTERVAL, so that a day's or a week's merged flame
// graph reads them instead of counting them when first asked for
// (query.CompactBuckets, query.CompactRollups). It remembers, per tenant and app, the span of
// wall-clock time its new profiles cover; buckets not yet sealed wait for
// a later round. Nothing depends on it for being right: a bucket it did
// not count (a restart, a full map, another replica's upload) is counted
// by the query that needs it.
type compactor struct {
	q   *query.Service
	log *slog.Logger

	mu      sync.Mutex
	pending map[appKey]span
}

type appKey struct {
	tenant int64
	app    string
}

// span is unix ns [from, to).
type span struct{ from, to int64 }

// maxPending bounds the apps remembered between rounds.
const maxPending = 10_000

// stored remembers a stored profile's span (ingest.Service.Stored).
func (c *compactor) stored(tenant int64, p *fleetscope.ProfileInfo) {
	if !p.Timed {
		return // no samples in wall-clock time: no buckets
	}
	from, end := fleetscope.WallSpan(p)
	c.add(appKey{tenant, p.App}, span{from, end + 1}) // end inclusive: a sample may lie on it
}

func (c *compactor) add(k appKey, sp span) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		c.pending = map[appKey]span{}
	}
	if have, ok := c.pending[k]; ok {
		sp = span{min(sp.from, have.from), max(sp.to, have.to)}
	} else if len(c.pending) >= maxPending {
		return
	}
	c.pending[k] = sp
}

// run compacts what was stored, every interval, until ctx is done.
func (c *compactor) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.round(ctx, time.Now())
	}
}

// round compacts every pending span's sealed buckets; the rest of a span
// waits for a later round.
func (c *compactor) round(ctx context.Context, now time.Time) {
	c.mu.Lock()
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for k, sp := range pending {
		n, sealed, err := c.q.CompactBuckets(ctx, k.tenant, k.app, sp.from, sp.to, now)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("stack buckets not compacted (queries count them)", "tenant", k.tenant, "app", k.app, "err", err)
			continue
		}
		if n > 0 {
			c.log.Debug("stack buckets compacted", "tenant", k.tenant, "app", k.app, "buckets", n)
		}
		// The hours and days those buckets complete (query.CompactRollups).
		if r, err := c.q.CompactRollups(ctx, k.tenant, k.app, sp.from, min(sp.to, sealed), now); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("stack rollups not compacted (queries count them)", "tenant", k.tenant, "app", k.app, "err", err)
		} else if r > 0 {
			c.log.Debug("stack rollups compacted", "tenant", k.tenant, "app", k.app, "rollups", r)
		}
		if sp.to > sealed {
			c.add(k, span{max(sp.from, sealed), sp.to})
		}
	}
}

// beforeMove stores the stack buckets of a tenant's profiles before the
// sample tier moves their samples out of the index
// (lifecycle.Service.BeforeMove): merged flame graphs over them then read
// the buckets, not their raw files. Profiles are compacted by app, over
// the spans of their wall-clock time merged where they overlap or lie
// within a bucket of each other (a batch is a few minutes of a fleet).
func (c *compactor) beforeMove(ctx context.Context, tenant int64, ps []*fleetscope.ProfileInfo) error {
	byApp := map[string][]span{}
	for _, p := range ps {
		if p.Timed {
			from, end := fleetscope.WallSpan(p)
			byApp[p.App] = append(byApp[p.App], span{from, end + 1}) // end inclusive: a sample may lie on it
		}
	}
	now := time.Now()
	for app, spans := range byApp {
		slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
		cur := spans[0]
		for i := 1; i <= len(spans); i++ {
			if i < len(spans) && spans[i].from <= cur.to+index.BucketSeconds*1e9 {
				cur.to = max(cur.to, spans[i].to)
				continue
			}
			if _, _, err := c.q.CompactBuckets(ctx, tenant, app, cur.from, cur.to, now); err != nil {
				return err
			}
			if i < len(spans) {
				cur = spans[i]
			}
		}
	}
	return nil
}
