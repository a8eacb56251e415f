package query

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// Long windows: hour and day rollups. Ten-minute stack buckets
// (fleet_buckets.go) still need the window's profiles listed, to name the
// profiles each bucket counted: a week of ten hosts' one-minute profiles
// is 100,800 of them, more than a query may read (MaxFleetProfiles). A
// window that holds whole sealed hours is therefore answered in three
// parts:
//
//   - its whole days and whole hours, from stored rollups: one row per
//     host and day (or hour) holding that host's samples of the event
//     there, counted by stack key; a row serves only while the version it
//     counted is the host's current one (StackRollups: the versions grow
//     with every upload, deletion or change of app or host that touches
//     the hour, in the same transaction), so it is never stale. A row
//     missing or stale is counted again: an hour from its ten-minute
//     buckets, a day from its hours; and stored when no write raced the
//     count (the versions are read again after it);
//   - its edges, less than an hour on either side and anything not yet
//     sealed, exactly as any window: profiles listed, ten-minute buckets
//     and per-second rows;
//   - the untimed profiles whose span lies inside the window, whole.
//
// The timed profiles are counted in the store, not listed, so no bound on
// their number applies. Label conditions (which choose profiles, not
// hosts) and pid/tid/CPU filters (which rollups do not keep) take the
// listed path, as with ten-minute buckets.

// StackRollups stores hour and day rollups and the versions they count.
// The Postgres store has them; a source without them answers every window
// from listed profiles.
type StackRollups interface {
	// FleetVersions returns the versions of app's hosts' samples (on any
	// of hosts; none: all) by host and span of width seconds, over the
	// hours [from, to) (unix seconds, multiples of width).
	FleetVersions(ctx context.Context, tenant int64, app string, hosts []string, width, from, to int64) ([]index.Version, error)
	// FleetStackRollups returns the stored rollups of width seconds of
	// app's event (base name) starting at buckets, on any of hosts.
	FleetStackRollups(ctx context.Context, tenant int64, app, event string, hosts []string, width int64, buckets []int64) ([]index.StackBucket, error)
	// PutFleetStackRollups stores rollups, each replacing its host and
	// bucket's.
	PutFleetStackRollups(ctx context.Context, tenant int64, app, event string, width int64, bs []index.StackBucket) error
	// FleetUntimed returns the untimed profiles that FleetProfiles would
	// select, at most limit of them (more: ETOOLARGE).
	FleetUntimed(ctx context.Context, tenant int64, app string, hosts []string, from, to int64, limit int) ([]*fleetscope.ProfileInfo, error)
}

// rollupSpan returns the whole hours of the window sealed at now, [lo, hi)
// in unix seconds, and whether it holds one.
func rollupSpan(sel fleetscope.FleetSelection, now time.Time) (lo, hi int64, ok bool) {
	const h = index.HourSeconds * 1e9
	lo = -index.FloorTo(-sel.From, h) / 1e9
	hi = min(index.FloorTo(sel.To, h), index.FloorTo(now.Add(-bucketGrace).UnixNano(), h)) / 1e9
	return lo, hi, hi > lo
}

// longParts counts a selection's window that holds whole sealed hours
// from rollups, its edges and its untimed profiles (see above); ok is
// false when the window or the selection is not one for rollups.
func (s *Service) longParts(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, d *denseIDs, byPeriod bool, now time.Time) (parts []*part, f *fleet, ok bool, err error) {
	sr, ok1 := s.src.(StackRollups)
	ct, ok2 := s.src.(ColumnTotals)
	lo, hi, ok3 := rollupSpan(sel, now)
	if !ok1 || !ok2 || !ok3 || s.noBuckets || len(sel.Labels) > 0 {
		return nil, nil, false, nil
	}
	flt, err := compileFilter(sel.Filter)
	if err != nil || flt.spans != nil || flt.m != nil && flt.f.ByThread() {
		return nil, nil, false, nil // the listed path says what is wrong, or serves it
	}
	if f, err = s.countProfiles(ctx, tenant, sel, ct); err != nil {
		return nil, nil, false, err
	}
	f.filter = flt
	if f.event == "" {
		if err := s.chooseEvent(ctx, tenant, f, index.Minutes, f.first, f.end, false); err != nil {
			return nil, nil, false, err
		}
	}
	if f.counts.Untimed > 0 {
		if f.untimed, err = sr.FleetUntimed(ctx, tenant, sel.App, sel.Hosts, sel.From, sel.To, MaxFleetProfiles); err != nil {
			return nil, nil, false, err
		}
	}
	hits, err := s.rollups(ctx, tenant, f, sr, lo, hi, d, now, true)
	if err != nil {
		return nil, nil, false, err
	}
	// The edges, as any window.
	for _, w := range [][2]int64{{sel.From, lo * 1e9}, {hi * 1e9, sel.To}} {
		if w[0] >= w[1] {
			continue
		}
		sub := sel
		sub.From, sub.To, sub.Event = w[0], w[1], f.event
		fs, err := s.selectProfiles(ctx, tenant, sub)
		if err != nil {
			return nil, nil, false, err
		}
		fs.untimed = nil // counted once, against the whole window
		p, err := s.fineParts(ctx, tenant, fs, d, byPeriod, now)
		if err != nil {
			return nil, nil, false, err
		}
		parts = append(parts, p...)
		f.served.sum(fs.served)
		f.raw.merge(&fs.raw)
	}
	if len(f.untimed) > 0 {
		var ps partSet
		ps.untimed(f)
		if err := s.translateParts(ctx, tenant, f, ps.parts, d, true); err != nil {
			return nil, nil, false, err
		}
		if err := s.countParts(ctx, tenant, f, ps.parts, ps.reqs, ps.owner, byPeriod); err != nil {
			return nil, nil, false, err
		}
		parts = append(parts, ps.parts...)
	}
	parts = append(parts, s.bucketParts(tenant, hits, d, byPeriod, func(b *index.StackBucket) string {
		return fmt.Sprintf("\x00rollup %s %d %d", b.Host, b.Bucket, b.Version)
	})...)
	return parts, f, true, nil
}

// hostBucket is a host's span of unix time, by its start.
type hostBucket struct {
	host   string
	bucket int64
}

// rollups returns the host rollups that count the whole sealed hours
// [lo, hi) of f's event (its days whole inside as day rows, the rest as
// hour rows): stored ones whose version is current, the others counted
// (an hour from its ten-minute buckets, a day from its hours) and stored
// when no write raced the count. With serve false (compaction) nothing
// is returned.
func (s *Service) rollups(ctx context.Context, tenant int64, f *fleet, sr StackRollups, lo, hi int64, d *denseIDs, now time.Time, serve bool) ([]index.StackBucket, error) {
	const H, D = index.HourSeconds, index.DaySeconds
	dlo, dhi := -index.FloorTo(-lo, D), index.FloorTo(hi, D)
	if dlo >= dhi {
		dlo, dhi = lo, lo // no whole day
	}
	inDays := func(t int64) bool { return t >= dlo && t < dhi }
	app, hosts := f.sel.App, f.sel.Hosts
	vs, err := sr.FleetVersions(ctx, tenant, app, hosts, H, lo, hi)
	if err != nil {
		return nil, err
	}
	hourV, dayV := versionsOf(vs, inDays)

	var out []index.StackBucket
	// Days: stored and current, or missed (counted from their hours).
	missedDay := map[hostBucket]bool{}
	if len(dayV) > 0 {
		var days []int64
		for t := dlo; t < dhi; t += D {
			days = append(days, t)
		}
		stored, err := sr.FleetStackRollups(ctx, tenant, app, f.event, hosts, D, days)
		if err != nil {
			return nil, err
		}
		have := byHostBucket(stored)
		for k, v := range dayV {
			if b, ok := have[k]; ok && b.Version == v {
				f.served.Days++
				if serve {
					out = append(out, *b)
				}
				continue
			}
			missedDay[k] = true
		}
	}
	// Hours: those outside the days, and those of missed days.
	var hourKeys []hostBucket
	buckets := map[int64]bool{}
	for k := range hourV {
		if !inDays(k.bucket) || missedDay[hostBucket{k.host, index.FloorTo(k.bucket, D)}] {
			hourKeys = append(hourKeys, k)
			buckets[k.bucket] = true
		}
	}
	stored, err := sr.FleetStackRollups(ctx, tenant, app, f.event, hosts, H, slices.Sorted(maps.Keys(buckets)))
	if err != nil {
		return nil, err
	}
	have := byHostBucket(stored)
	hours := map[hostBucket]*index.StackBucket{}
	missed := map[int64][]string{} // hour -> hosts to count
	for _, k := range hourKeys {
		if b, ok := have[k]; ok && b.Version == hourV[k] {
			f.served.Hours++
			hours[k] = b
			continue
		}
		missed[k.bucket] = append(missed[k.bucket], k.host)
	}
	var counted []index.StackBucket
	for _, hour := range slices.Sorted(maps.Keys(missed)) {
		hs := missed[hour]
		slices.Sort(hs)
		for group := range slices.Chunk(hs, hourHosts) {
			got, err := s.countHour(ctx, tenant, f, hour, group, d, now)
			if err != nil {
				return nil, err
			}
			for i := range got {
				b := &got[i]
				b.Version = hourV[hostBucket{b.Host, hour}]
				hours[hostBucket{b.Host, hour}] = b
				counted = append(counted, *b)
			}
			f.served.RollupsCounted += len(got)
		}
	}
	// Missed days, from their hours.
	var countedDays []index.StackBucket
	for _, k := range slices.SortedFunc(maps.Keys(missedDay), cmpHostBucket) {
		day := index.StackBucket{Host: k.host, Bucket: k.bucket, Version: dayV[k]}
		for t := k.bucket; t < k.bucket+D; t += H {
			if b, ok := hours[hostBucket{k.host, t}]; ok {
				index.SumStacks(&day, b)
			}
		}
		countedDays = append(countedDays, day)
		f.served.RollupsCounted++
	}
	if serve {
		out = append(out, countedDays...)
		for k, b := range hours {
			if !inDays(k.bucket) {
				out = append(out, *b)
			}
		}
	}
	if len(counted) > 0 || len(countedDays) > 0 {
		if err := s.storeRollups(ctx, tenant, f, sr, lo, hi, inDays, hourV, dayV, counted, countedDays); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(x, y index.StackBucket) int { return cmpBucket(&x, &y) })
	return out, nil
}

// versionsOf sums hour versions by host and hour, and by host and day for
// the hours inDays.
func versionsOf(vs []index.Version, inDays func(int64) bool) (hourV, dayV map[hostBucket]int64) {
	hourV, dayV = map[hostBucket]int64{}, map[hostBucket]int64{}
	for _, v := range vs {
		hourV[hostBucket{v.Host, v.Bucket}] = v.Version
		if inDays(v.Bucket) {
			dayV[hostBucket{v.Host, index.FloorTo(v.Bucket, index.DaySeconds)}] += v.Version
		}
	}
	return hourV, dayV
}

func byHostBucket(bs []index.StackBucket) map[hostBucket]*index.StackBucket {
	out := make(map[hostBucket]*index.StackBucket, len(bs))
	for i := range bs {
		out[hostBucket{bs[i].Host, bs[i].Bucket}] = &bs[i]
	}
	return out
}

func cmpHostBucket(x, y hostBucket) int {
	return cmp.Or(cmp.Compare(x.bucket, y.bucket), cmp.Compare(x.host, y.host))
}

// hourHosts is how many hosts' hour is counted at once: their profiles of
// the hour are listed (at most MaxFleetProfiles), 150 hosts of one-minute
// profiles about 9,000 to 18,000 of them.
var hourHosts = 150

// countHour counts the hour of hosts from their ten-minute buckets (those
// stored for the profiles of the hour, and the rest counted and stored):
// a rollup per host, empty for a host with no sample of the event there.
func (s *Service) countHour(ctx context.Context, tenant int64, f *fleet, hour int64, hosts []string, d *denseIDs, now time.Time) ([]index.StackBucket, error) {
	sel := fleetscope.FleetSelection{App: f.sel.App, Hosts: hosts, From: hour * 1e9, To: (hour + index.HourSeconds) * 1e9, Event: f.event, IncludeIdle: true}
	fs, err := s.selectProfiles(ctx, tenant, sel)
	if err != nil {
		return nil, err
	}
	fs.event = f.event
	byHost := map[string]*index.StackBucket{}
	for _, h := range hosts {
		byHost[h] = &index.StackBucket{Host: h, Bucket: hour}
	}
	if b, err := s.planBuckets(ctx, tenant, fs); err != nil {
		return nil, err
	} else if b != nil {
		f.served.Buckets, f.served.BucketsCounted = f.served.Buckets+len(b.hits), f.served.BucketsCounted+len(b.misses)
		if err := s.countMisses(ctx, tenant, fs, b, d, now); err != nil { // adds the misses to the hits
			return nil, err
		}
		for i := range b.hits {
			if r, ok := byHost[b.hits[i].Host]; ok {
				index.SumStacks(r, &b.hits[i])
			}
		}
	}
	f.raw.merge(&fs.raw)
	out := make([]index.StackBucket, 0, len(hosts))
	for _, h := range hosts {
		out = append(out, *byHost[h])
	}
	return out, nil
}

// storeRollups stores the rollups counted, those of the spans whose
// versions are still the ones counted: a write that raced the count
// changed them, and its span is counted again next time.
func (s *Service) storeRollups(ctx context.Context, tenant int64, f *fleet, sr StackRollups, lo, hi int64, inDays func(int64) bool, hourV, dayV map[hostBucket]int64, hours, days []index.StackBucket) error {
	vs, err := sr.FleetVersions(ctx, tenant, f.sel.App, f.sel.Hosts, index.HourSeconds, lo, hi)
	if err != nil {
		return nil // an optimisation: counted again next time
	}
	hourNow, dayNow := versionsOf(vs, inDays)
	keep := func(bs []index.StackBucket, was, now map[hostBucket]int64) []index.StackBucket {
		var out []index.StackBucket
		for _, b := range bs {
			k := hostBucket{b.Host, b.Bucket}
			if was[k] == now[k] {
				out = append(out, b)
			}
		}
		return out
	}
	// Storing is an optimisation too: what cannot be stored now (a
	// read-only replica, a lost connection) is counted again next time.
	_ = sr.PutFleetStackRollups(ctx, tenant, f.sel.App, f.event, index.HourSeconds, keep(hours, hourV, hourNow))
	_ = sr.PutFleetStackRollups(ctx, tenant, f.sel.App, f.event, index.DaySeconds, keep(days, dayV, dayNow))
	return nil
}

// CompactRollups counts and stores the hour and day rollups of app's
// hosts that are missing or stale, for every event of the app's profiles
// there: the sealed whole hours that [from, to) (unix ns) touches, and the
// sealed days it touches, each from its hours. A week's merged flame graph
// then reads them. Like CompactBuckets, an optimisation that cannot make an
// answer wrong. It returns the rollups counted.
func (s *Service) CompactRollups(ctx context.Context, tenant int64, app string, from, to int64, now time.Time) (int, error) {
	sr, ok1 := s.src.(StackRollups)
	ct, ok2 := s.src.(ColumnTotals)
	if !ok1 || !ok2 || s.noBuckets {
		return 0, nil
	}
	const H, D = index.HourSeconds * 1e9, index.DaySeconds * 1e9
	d := s.denseIDs(tenant)
	n := 0
	// The hours, then the whole days around them: a round of the
	// compactor after each upload reads its hours' rows, and a day's only
	// once it is sealed.
	for i, w := range [][2]int64{{index.FloorTo(from, H), -index.FloorTo(-to, H)}, {index.FloorTo(from, D), -index.FloorTo(-to, D)}} {
		lo, hi, ok := rollupSpan(fleetscope.FleetSelection{From: w[0], To: w[1]}, now)
		if i == 1 {
			hi = index.FloorTo(hi, index.DaySeconds) // whole sealed days only
		}
		if !ok || lo >= hi {
			continue
		}
		sel := fleetscope.FleetSelection{App: app, From: lo * 1e9, To: hi * 1e9, IncludeIdle: true}
		f, err := s.countProfiles(ctx, tenant, sel, ct)
		if err != nil {
			return n, err
		}
		events := map[string]bool{}
		for _, e := range f.counts.Events {
			events[fleetscope.EventBase(e)] = true
		}
		for _, e := range slices.Sorted(maps.Keys(events)) {
			f.event, f.served = e, Served{}
			if _, err := s.rollups(ctx, tenant, f, sr, lo, hi, d, now, false); err != nil {
				return n, err
			}
			n += f.served.RollupsCounted
		}
	}
	return n, nil
}
