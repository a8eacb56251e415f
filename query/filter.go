package query

import (
	"context"

	"github.com/fleetscope/fleetscope"
)

// keepKey names the stacks of a dictionary a function filter keeps.
type keepKey struct {
	dict   *fleetscope.Dict
	filter string // Filter.Key
}

// filter is a compiled request filter with what it needs of one profile.
type filter struct {
	f *fleetscope.Filter
	m *fleetscope.Matcher // nil: keeps every sample
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
	return filter{&f, m}, nil
}

// key is the filter's cache key ("" for none).
func (f filter) key() string {
	if f.m == nil {
		return ""
	}
	return f.f.Key()
}

// stacks returns which of d's stacks the filter keeps (nil: all), cached.
func (s *Service) keepStacks(d *fleetscope.Dict, f filter) []bool {
	if f.m == nil || !f.f.ByFunction() {
		return nil
	}
	k := keepKey{d, f.key()}
	if v, ok := s.keeps.Get(k); ok {
		return v
	}
	v := f.m.Stacks(d)
	s.keeps.Put(k, v)
	return v
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
	k := profileKey{tenant, id}
	if t, ok := s.threads.Get(k); ok {
		return t, nil
	}
	t, err := s.src.Threads(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	s.threads.Put(k, t)
	return t, nil
}

// keepSample reports whether the filter keeps a decoded sample (keep is
// keepStacks' answer for the sample's dictionary).
func (f filter) keepSample(keep []bool, smp *fleetscope.Sample) bool {
	if keep != nil && !keep[smp.Stack] {
		return false
	}
	return f.m == nil || f.m.KeepThread(smp.Thread())
}
