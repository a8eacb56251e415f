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
	"encoding/json"
	"fmt"
	"maps"
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
	stacks   map[int64]stackRef
}

// stackRef finds a stack by its key: in which profile, which id.
type stackRef struct {
	p  *profile
	id fleetscope.StackID
}

type profile struct {
	info    *fleetscope.ProfileInfo
	dict    *fleetscope.Dict
	byEvent [][]index.Second // per event, by second
	threads []fleetscope.Thread
	ix      *index.Index
	// What fleet queries need, made on the first (a local file's command
	// never asks): stack keys (index.StackKeys) by stack id, and the
	// profile's cells in wall-clock time.
	fleetReady bool
	keys       []int64
	totals     []byte // index.EncodeStackTotals
	wall       []index.WallSecond
	rollups    map[int64][]index.WallSecond // wall summed by index.Tens and index.Minutes
}

// New returns an empty store.
func New() *Store { return &Store{profiles: map[string]*profile{}, stacks: map[int64]stackRef{}} }

// Add keeps a parsed profile: its metadata (info.ID names it; empty gets
// "local-N"), dictionary and index. It returns the id.
func (s *Store) Add(info *fleetscope.ProfileInfo, dict *fleetscope.Dict, ix *index.Index) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if info.ID == "" {
		info.ID = fmt.Sprintf("local-%d", len(s.order)+1)
	}
	p := &profile{info: info, dict: dict, byEvent: ix.ByEvent(len(info.Events)), threads: ix.Threads, ix: ix}
	for _, secs := range p.byEvent {
		slices.SortFunc(secs, func(a, b index.Second) int { return cmp.Compare(a.Second, b.Second) })
	}
	s.profiles[info.ID] = p
	s.order = append(s.order, info.ID)
	return info.ID, nil
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
	return index.SecondsIn(p.byEvent[event], from, to), nil
}

// FleetProfiles returns the profiles of app overlapping [from, to) (unix
// ns), on any of hosts, meeting the label conditions, oldest first.
func (s *Store) FleetProfiles(_ context.Context, _ int64, app string, hosts []string, labels []fleetscope.LabelMatch, from, to int64, limit int) ([]*fleetscope.ProfileInfo, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*fleetscope.ProfileInfo
	for _, id := range s.order {
		p := s.profiles[id].info
		if p.App != app || len(hosts) > 0 && !slices.Contains(hosts, p.Host) {
			continue
		}
		start, end := fleetscope.WallSpan(p)
		ok := start < to && end >= from
		for _, l := range labels {
			ok = ok && l.Matches(p.Labels)
		}
		if ok {
			out = append(out, p)
		}
	}
	if len(out) > limit {
		return nil, fleetscope.Errorf(fleetscope.ETOOLARGE, "more than %d profiles in this selection", limit)
	}
	slices.SortStableFunc(out, func(a, b *fleetscope.ProfileInfo) int { return a.StartTime.Compare(b.StartTime) })
	return out, nil
}

// FleetLabelSets returns the distinct (app, host, labels) of the profiles
// of app ("": every app) that overlap the window [from, to), each with the
// base names of its profiles' events, in (app, host, labels) order;
// ETOOLARGE past limit.
func (s *Store) FleetLabelSets(_ context.Context, _ int64, app string, from, to int64, limit int) ([]fleetscope.LabelSet, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	byKey := map[string]*fleetscope.LabelSet{}
	for _, id := range s.order {
		p := s.profiles[id].info
		if start, end := fleetscope.WallSpan(p); app != "" && p.App != app || start >= to || end < from {
			continue
		}
		labels := maps.Clone(p.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		js, _ := json.Marshal(labels) // keys sorted
		k := fmt.Sprintf("%s\x00%s\x00%s", p.App, p.Host, js)
		ls, ok := byKey[k]
		if !ok {
			ls = &fleetscope.LabelSet{App: p.App, Host: p.Host, Labels: labels}
			byKey[k] = ls
		}
		for _, e := range p.Events {
			ls.Events = append(ls.Events, fleetscope.EventBase(e.Name))
		}
	}
	if len(byKey) > limit {
		return nil, fleetscope.Errorf(fleetscope.ETOOLARGE, "more than %d distinct label sets in this window", limit)
	}
	var out []fleetscope.LabelSet
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		ls := byKey[k]
		slices.Sort(ls.Events)
		ls.Events = slices.Compact(ls.Events)
		out = append(out, *ls)
	}
	return out, nil
}

// fleet makes what fleet queries need of every profile that lacks it.
func (s *Store) fleet() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.order {
		p := s.profiles[id]
		if p.fleetReady {
			continue
		}
		wall, err := index.WallSeconds(p.ix, p.info.WallShiftNanos, p.dict.Idle)
		if err != nil {
			return err
		}
		if p.totals, err = index.EncodeStackTotals(p.ix); err != nil {
			return err
		}
		p.rollups = map[int64][]index.WallSecond{}
		for _, w := range []int64{index.Tens, index.Minutes} {
			p.rollups[w] = index.Rollup(wall, w)
		}
		p.wall, p.keys, p.fleetReady = wall, index.StackKeys(p.dict), true
		for i, k := range p.keys {
			if _, ok := s.stacks[k]; !ok {
				s.stacks[k] = stackRef{p, fleetscope.StackID(i)}
			}
		}
	}
	return nil
}

// FleetRows hands fn the wall seconds (width 1), or their rollups of width
// seconds (index.Tens, index.Minutes), of app's profiles of event (base
// name; "" for every event) starting in [from, to).
func (s *Store) FleetRows(_ context.Context, _ int64, app, event string, width, from, to int64, _ bool, fn func(*index.FleetRow) error) error {
	if width != 1 && width != index.Tens && width != index.Minutes {
		return fmt.Errorf("no rollup of %d seconds", width)
	}
	if err := s.fleet(); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, id := range s.order {
		p := s.profiles[id]
		if p.info.App != app {
			continue
		}
		rows := p.wall
		if width != 1 {
			rows = p.rollups[width]
		}
		for i := range rows {
			if w := &rows[i]; w.Second >= from && w.Second < to && (event == "" || w.Event == event) {
				if err := fn(&index.FleetRow{ProfileID: id, Host: p.info.Host, WallSecond: *w}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ProfileStacks returns a profile's stack keys by stack id.
func (s *Store) ProfileStacks(_ context.Context, _ int64, id string) ([]int64, error) {
	if err := s.fleet(); err != nil {
		return nil, err
	}
	p, err := s.get(id)
	if err != nil {
		return nil, err
	}
	return p.keys, nil
}

// Threads returns a profile's distinct (process, thread, CPU).
func (s *Store) Threads(_ context.Context, _ int64, id string) ([]fleetscope.Thread, error) {
	p, err := s.get(id)
	if err != nil {
		return nil, err
	}
	return p.threads, nil
}

// StackDict builds a dictionary whose stack i is the stack with key ids[i].
func (s *Store) StackDict(_ context.Context, _ int64, ids []int64) (*fleetscope.Dict, error) {
	if err := s.fleet(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := fleetscope.NewDict()
	var buf []fleetscope.FrameID
	for i, k := range ids {
		ref, ok := s.stacks[k]
		if !ok {
			return nil, fleetscope.Errorf(fleetscope.ENOTFOUND, "stack %d not found", k)
		}
		buf = buf[:0]
		for _, f := range ref.p.dict.StackFrames(ref.id) {
			buf = append(buf, d.Frame(ref.p.dict.FrameAt(f)))
		}
		if got := d.Stack(buf); int(got) != i {
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "stack list repeats stack %d", k)
		}
	}
	return d, nil
}

// FleetStackTotals hands fn the stack totals of each of ids in turn.
func (s *Store) FleetStackTotals(_ context.Context, _ int64, ids []string, fn func(i int, totals []byte) error) error {
	if err := s.fleet(); err != nil {
		return err
	}
	for i, id := range ids {
		p, err := s.get(id)
		if err != nil {
			return err
		}
		if err := fn(i, p.totals); err != nil {
			return err
		}
	}
	return nil
}

// FleetSeconds hands fn the rows of each range in turn, inner rows
// without their offsets (index.SecondsRange.Inner), as Postgres sends them.
func (s *Store) FleetSeconds(ctx context.Context, tenant int64, reqs []index.SecondsRange, fn func(i int, s *index.Second) error) error {
	for i, r := range reqs {
		secs, err := s.Seconds(ctx, tenant, r.ProfileID, r.Event, r.From, r.To)
		if err != nil {
			return err
		}
		for j := range secs {
			row := secs[j] // the stored row's copy: the store's keeps its offsets
			if r.Inner(row.Second) {
				row.Offsets = nil
			}
			if err := fn(i, &row); err != nil {
				return err
			}
		}
	}
	return nil
}
