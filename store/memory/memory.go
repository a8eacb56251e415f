// Package memory holds parsed profiles in memory behind the same methods
// the Postgres index offers the query service (Profile, Search, Dict,
// Cells, Seconds), so that the command line answers for a local file
// through exactly the code the server answers with. It is for one process
// and one caller: no tenants (every tenant sees every profile), no
// persistence, and nothing is ever removed.
package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// Store is a set of profiles in memory.
type Store struct {
	mu       sync.RWMutex
	profiles map[string]*profile
	order    []string // ids in the order added
}

type profile struct {
	info    *fleetscope.ProfileInfo
	dict    *fleetscope.Dict
	byEvent [][]index.Second // per event, by second
}

// New returns an empty store.
func New() *Store { return &Store{profiles: map[string]*profile{}} }

// Add keeps a parsed profile: its metadata (info.ID names it; empty gets
// "local-N"), dictionary and index. It returns the id.
func (s *Store) Add(info *fleetscope.ProfileInfo, dict *fleetscope.Dict, ix *index.Index) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if info.ID == "" {
		info.ID = fmt.Sprintf("local-%d", len(s.order)+1)
	}
	p := &profile{info: info, dict: dict, byEvent: make([][]index.Second, len(info.Events))}
	for _, sec := range ix.Seconds {
		for int(sec.Event) >= len(p.byEvent) {
			p.byEvent = append(p.byEvent, nil)
		}
		p.byEvent[sec.Event] = append(p.byEvent[sec.Event], sec)
	}
	for _, secs := range p.byEvent {
		slices.SortFunc(secs, func(a, b index.Second) int { return cmp.Compare(a.Second, b.Second) })
	}
	s.profiles[info.ID] = p
	s.order = append(s.order, info.ID)
	return info.ID
}

func (s *Store) get(id string) (*profile, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.profiles[id]
	if !ok {
		return nil, fleetscope.Errorf(fleetscope.ENOTFOUND, "profile %q not found", id)
	}
	return p, nil
}

// Profile returns a profile's metadata; ENOTFOUND if there is none.
func (s *Store) Profile(_ context.Context, _ int64, id string) (*fleetscope.ProfileInfo, error) {
	p, err := s.get(id)
	if err != nil {
		return nil, err
	}
	return p.info, nil
}

// Search returns the profiles matching f (app, host, labels, time), newest
// first, in one page.
func (s *Store) Search(_ context.Context, _ int64, f fleetscope.ProfileFilter) ([]*fleetscope.ProfileInfo, string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*fleetscope.ProfileInfo
	for _, id := range s.order {
		p := s.profiles[id].info
		if f.App != "" && p.App != f.App || f.Host != "" && p.Host != f.Host ||
			!f.Since.IsZero() && p.EndTime.Before(f.Since) || !f.Until.IsZero() && !p.StartTime.Before(f.Until) {
			continue
		}
		match := true
		for k, v := range f.Labels {
			match = match && p.Labels[k] == v
		}
		if match {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartTime.After(out[j].StartTime) })
	return out, "", nil
}

// Dict returns a profile's dictionary.
func (s *Store) Dict(_ context.Context, _ int64, info *fleetscope.ProfileInfo) (*fleetscope.Dict, error) {
	p, err := s.get(info.ID)
	if err != nil {
		return nil, err
	}
	return p.dict, nil
}

// Cells returns an event's rows, by second (the caller reads their cells).
func (s *Store) Cells(ctx context.Context, tenant int64, id string, event int) ([]index.Second, error) {
	return s.Seconds(ctx, tenant, id, event, 0, -1)
}

// Seconds returns an event's rows for relative seconds [from, to], both
// included; from > to means all.
func (s *Store) Seconds(_ context.Context, _ int64, id string, event int, from, to int64) ([]index.Second, error) {
	p, err := s.get(id)
	if err != nil {
		return nil, err
	}
	if event < 0 || event >= len(p.byEvent) {
		return nil, nil
	}
	secs := p.byEvent[event]
	if from > to {
		return secs, nil
	}
	lo := sort.Search(len(secs), func(i int) bool { return secs[i].Second >= from })
	hi := sort.Search(len(secs), func(i int) bool { return secs[i].Second > to })
	return secs[lo:hi], nil
}
