package query

import (
	"cmp"
	"context"
	"encoding/binary"
	"io"
	"slices"
	"strings"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/export"
	"github.com/fleetscope/fleetscope/query/flame"
)

// A speedscope export of timed samples is their timeline: each sample its
// own entry, in time order (export.WriteSpeedscopeTimeline), so that
// speedscope's Time Order view is the range's flame chart. These collect
// the samples the flame graph counts, with their times.

// timedSample is a sample of a timeline: when (ns, on one clock), its
// stack in the timeline's stacks and its weight.
type timedSample struct {
	t      int64
	stack  int32
	weight uint64
}

// maxTimelineSamples is export.MaxTimelineSamples (tests lower it).
var maxTimelineSamples = export.MaxTimelineSamples

// timeline gathers samples and their stacks' frames, within
// maxTimelineSamples.
type timeline struct {
	stacks [][]string
	n      int
	err    error // ETOOLARGE past maxTimelineSamples
}

// weigh returns the weight of a sample the graph keeps: 1, or its period
// when weighted; 0 for none. It counts the samples of nonzero weight and
// sets err, and returns 0, past maxTimelineSamples.
func (tl *timeline) weigh(smp *fleetscope.Sample, weighted bool) uint64 {
	v := uint64(1)
	if weighted {
		v = smp.Period
	}
	if v == 0 {
		return 0
	}
	if tl.n++; tl.n > maxTimelineSamples {
		tl.err = fleetscope.Errorf(fleetscope.ETOOLARGE, "a speedscope export holds at most %d samples, one entry each in time order: choose a shorter range (the other formats have no such limit)", maxTimelineSamples)
		return 0
	}
	return v
}

// frames returns a stack's frames as the flame graph names them.
func frames(d *fleetscope.Dict, id fleetscope.StackID, a flame.Annotate) []string {
	fs := d.StackFrames(id)
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = a.Name(d.FrameAt(f))
	}
	return out
}

// profile sorts samples by time (stably: samples of one time keep their
// stored order) and makes them a speedscope profile.
func timedProfile(name, unit string, samples []timedSample) export.TimedProfile {
	slices.SortStableFunc(samples, func(x, y timedSample) int { return cmp.Compare(x.t, y.t) })
	p := export.TimedProfile{Name: name, Unit: unit, Samples: make([]export.TimedSample, len(samples))}
	for i, s := range samples {
		p.Samples[i] = export.TimedSample{Stack: s.stack, Weight: s.weight}
	}
	return p
}

// speedscopeUnit is the unit of a timeline's weights: nanoseconds for the
// periods of a clock event, else none (sample counts, or periods of
// another event).
func speedscopeUnit(event string, byPeriod bool) string {
	if base := fleetscope.EventBase(event); byPeriod && (base == "cpu-clock" || base == "task-clock") {
		return "nanoseconds"
	}
	return "none"
}

// profileTimeline writes, in speedscope's format, the samples of a
// profile's range that FlameGraph counts for r, in time order: one
// speedscope profile named name. ETOOLARGE past export.MaxTimelineSamples.
func (s *Service) profileTimeline(ctx context.Context, tenant int64, r FlameRequest, w io.Writer, name string) error {
	info, ev, f, err := s.profileRequest(ctx, tenant, r.ProfileID, r.Event, r.Filter, true)
	if err != nil {
		return err
	}
	rg, from, to := fleetscope.All, int64(0), int64(-1)
	if r.Range != nil {
		rg = *r.Range
		if err := checkRange(rg, info); err != nil {
			return err
		}
		if !r.Outside {
			from = max(fleetscope.FloorSecond(rg.Start), 0)
			to = min(fleetscope.FloorSecond(rg.End-1), info.DurationNanos/1e9)
			if from > to { // no seconds
				return export.WriteSpeedscopeTimeline(w, name, nil, []export.TimedProfile{{Name: name, Unit: speedscopeUnit(info.Events[ev].Name, r.ByPeriod)}})
			}
		}
	}
	keep, sel, err := s.sampleFilter(ctx, tenant, info, f)
	if err != nil {
		return err
	}
	weighted := r.ByPeriod || info.Events[ev].Weighted
	var (
		tl      timeline
		samples []timedSample
		at      = map[fleetscope.StackID]int32{}
		failed  error
	)
	err = s.samples(ctx, tenant, info, ev, from, to, func(d *fleetscope.Dict, batch []fleetscope.Sample) {
		for j := range batch {
			smp := &batch[j]
			if failed != nil || rg != fleetscope.All && rg.Contains(smp.TimeNanos-info.StartSecond*1e9) == r.Outside ||
				!r.IncludeIdle && d.Idle(smp.Stack) || !f.keepSample(keep, sel, smp) {
				continue
			}
			v := tl.weigh(smp, weighted)
			if failed = tl.err; failed != nil {
				return
			}
			if v == 0 {
				continue
			}
			k, ok := at[smp.Stack]
			if !ok {
				k = int32(len(tl.stacks))
				at[smp.Stack] = k
				tl.stacks = append(tl.stacks, frames(d, smp.Stack, r.Annotate))
			}
			samples = append(samples, timedSample{smp.TimeNanos, k, v})
		}
	})
	if err = cmp.Or(err, failed); err != nil {
		return err
	}
	p := timedProfile(name, speedscopeUnit(info.Events[ev].Name, r.ByPeriod), samples)
	return export.WriteSpeedscopeTimeline(w, name, tl.stacks, []export.TimedProfile{p})
}

// fleetTimeline writes, in speedscope's format, the samples of a fleet
// selection that FleetFlameGraph counts: one speedscope profile per stored
// profile (its host and id in its name, by host then start), each in
// time order; stacks are shared by their frames. Untimed profiles whose
// span lies inside the window keep their stored order.
func (s *Service) fleetTimeline(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, o FleetFlameOptions, w io.Writer, name string) error {
	f, err := s.resolve(ctx, tenant, sel)
	if err != nil {
		return err
	}
	var (
		tl      timeline
		failed  error
		at      = map[string]int32{}                        // stacks by their frames
		ats     = map[string]map[fleetscope.StackID]int32{} // by profile: its stacks'
		byID    = map[string][]timedSample{}
		infos   []*fleetscope.ProfileInfo
		key     []byte
		weights = o.ByPeriod
	)
	err = s.fleetSamples(ctx, tenant, f, sel.From, sel.To, true, func(p *fleetscope.ProfileInfo, d *fleetscope.Dict, _ []int64, batch []fleetscope.Sample, keep func(*fleetscope.Sample) bool) {
		if _, ok := byID[p.ID]; !ok {
			infos = append(infos, p)
			byID[p.ID] = nil
			ats[p.ID] = map[fleetscope.StackID]int32{}
		}
		mine := ats[p.ID]
		samples := byID[p.ID]
		for j := range batch {
			smp := &batch[j]
			if failed != nil || !keep(smp) || !sel.IncludeIdle && d.Idle(smp.Stack) {
				continue
			}
			v := tl.weigh(smp, weights || p.Events[smp.Event].Weighted)
			if failed = tl.err; failed != nil {
				return
			}
			if v == 0 {
				continue
			}
			k, ok := mine[smp.Stack]
			if !ok {
				fs := frames(d, smp.Stack, o.Annotate)
				key = key[:0]
				for _, fr := range fs {
					key = binary.AppendUvarint(key, uint64(len(fr)))
					key = append(key, fr...)
				}
				if k, ok = at[string(key)]; !ok {
					k = int32(len(tl.stacks))
					at[string(key)] = k
					tl.stacks = append(tl.stacks, fs)
				}
				mine[smp.Stack] = k
			}
			t := int64(len(samples)) // untimed: stored order
			if p.Timed {
				t = smp.TimeNanos + p.WallShiftNanos
			}
			samples = append(samples, timedSample{t, k, v})
		}
		byID[p.ID] = samples
	})
	if err = cmp.Or(err, failed); err != nil {
		return err
	}
	unit := speedscopeUnit(f.event, o.ByPeriod)
	slices.SortFunc(infos, func(x, y *fleetscope.ProfileInfo) int {
		return cmp.Or(strings.Compare(x.Host, y.Host), x.StartTime.Compare(y.StartTime), strings.Compare(x.ID, y.ID))
	})
	profiles := make([]export.TimedProfile, 0, len(infos))
	for _, p := range infos {
		if len(byID[p.ID]) > 0 {
			profiles = append(profiles, timedProfile("host "+p.Host+", profile "+p.ID, unit, byID[p.ID]))
		}
	}
	if len(profiles) == 0 { // speedscope opens no file without a profile
		profiles = append(profiles, export.TimedProfile{Name: name, Unit: unit})
	}
	return export.WriteSpeedscopeTimeline(w, name, tl.stacks, profiles)
}
