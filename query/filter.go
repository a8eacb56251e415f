package query

import (
	"context"

	"github.com/fleetscope/fleetscope/query/spans"

	"github.com/fleetscope/fleetscope"
)

// keepKey names the stacks of a dictionary a function filter keeps.
type keepKey struct {
	dict   *fleetscope.Dict
	filter string // Filter.Key
}

// filter is a compiled request filter with what it needs of one profile.
type filter struct {
	f     *fleetscope.Filter
	m     *fleetscope.Matcher // nil: keeps every sample
	spans *spans.Condition    // nil: no span condition
}

// compileFilter checks f (EINVALID if it is malformed).
func compileFilter(f fleetscope.Filter) (filter, error) {
	if f.IsZero() {
		return filter{}, nil
	}
	m, err := f.Compile()
	if err != nil {
		return filter{}, err
	}
	out := filter{f: &f, m: m}
	if f.BySpans() {
		c, err := spans.ParseCondition(f.InSpans)
		if err != nil {
			return filter{}, err
		}
		out.spans = &c
	}
	return out, nil
}

// spanKey names a profile's spans of one entry/return pair.
type spanKey struct {
	profileKey
	entry, ret string
}

// Spans pairs a stored profile's entry and return probe events into spans
// per thread (entry and ret: the events, "" to find them by perf's F /
// F__return naming), from its stored samples; cached. Probe events at the
// same time on one thread are taken returns first (the index keeps no
// file order across events; back-to-back calls then pair as they ran).
func (s *Service) Spans(ctx context.Context, tenant int64, id, entry, ret string) (*spans.Set, error) {
	info, err := s.Profile(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	return s.spanSets.Load(ctx, spanKey{profileKey{tenant, info.ID}, entry, ret}, func() (*spans.Set, error) {
		return s.matchSpans(ctx, tenant, info, entry, ret)
	})
}

// matchSpans pairs a profile's probe events into spans.
func (s *Service) matchSpans(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, entry, ret string) (*spans.Set, error) {
	names := make([]string, len(info.Events))
	for i, e := range info.Events {
		names[i] = e.Name
	}
	pair, err := spans.FindPair(names, entry, ret)
	if err != nil {
		return nil, err
	}
	var probes []fleetscope.Sample
	var dict *fleetscope.Dict
	for _, ev := range []fleetscope.EventID{pair.Return, pair.Entry} {
		if err := s.samples(ctx, tenant, info, int(ev), 0, -1, func(d *fleetscope.Dict, batch []fleetscope.Sample) {
			dict = d
			probes = append(probes, batch...)
		}); err != nil {
			return nil, err
		}
	}
	return spans.Match(probes, pair, dict), nil
}

// selector returns the span selector of a profile for the filter (nil
// when it has no span condition).
func (s *Service) selector(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, f filter) (*spans.Selector, error) {
	if f.spans == nil {
		return nil, nil
	}
	set, err := s.Spans(ctx, tenant, info.ID, f.f.SpanEntry, f.f.SpanReturn)
	if err != nil {
		return nil, err
	}
	return set.Select(*f.spans), nil
}

// key is the filter's cache key ("" for none).
func (f filter) key() string {
	if f.m == nil {
		return ""
	}
	return f.f.Key()
}

// keepStacks returns which of d's stacks the filter keeps (nil: all),
// cached; ctx.Err() when ctx is done before it knows (nothing is cached).
func (s *Service) keepStacks(ctx context.Context, d *fleetscope.Dict, f filter) ([]bool, error) {
	if f.m == nil || !f.f.ByFunction() {
		return nil, nil
	}
	return s.keeps.Load(ctx, keepKey{d, f.key()}, func() ([]bool, error) {
		x, err := s.inverted.Load(ctx, d, func() (*fleetscope.FrameIndex, error) {
			return fleetscope.NewFrameIndex(ctx, d)
		})
		if err != nil {
			return nil, err
		}
		return f.m.Stacks(ctx, d, x)
	})
}

// sampleFilter returns what keepSample needs of a profile to judge its
// decoded samples: the stacks the filter keeps and the span selector.
func (s *Service) sampleFilter(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, f filter) ([]bool, *spans.Selector, error) {
	sel, err := s.selector(ctx, tenant, info, f)
	if err != nil {
		return nil, nil, err
	}
	d, err := s.dict(ctx, tenant, info)
	if err != nil {
		return nil, nil, err
	}
	keep, err := s.keepStacks(ctx, d, f)
	if err != nil {
		return nil, nil, err
	}
	return keep, sel, nil
}

// keepThreads returns which of a profile's threads the filter keeps (nil:
// all).
func (s *Service) keepThreads(ctx context.Context, tenant int64, id string, f filter) ([]bool, error) {
	if f.m == nil || !f.f.ByThread() {
		return nil, nil
	}
	ts, err := s.profileThreads(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	return f.m.Threads(ts), nil
}

// profileThreads returns a profile's threads, cached.
func (s *Service) profileThreads(ctx context.Context, tenant int64, id string) ([]fleetscope.Thread, error) {
	return s.threads.Load(ctx, profileKey{tenant, id}, func() ([]fleetscope.Thread, error) {
		return s.src.Threads(ctx, tenant, id)
	})
}

// keepSample reports whether the filter keeps a decoded sample (keep is
// keepStacks' answer for the sample's dictionary, sel the profile's span
// selector).
func (f filter) keepSample(keep []bool, sel *spans.Selector, smp *fleetscope.Sample) bool {
	if keep != nil && !keep[smp.Stack] {
		return false
	}
	if sel != nil && !sel.Keep(smp) {
		return false
	}
	return f.m == nil || f.m.KeepThread(smp.Thread())
}
