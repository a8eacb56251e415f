// Package query is the query service: every read of stored profiles, for
// the API and for the command line alike. It owns:
//
//   - searches and profile metadata (query.go);
//   - one profile's heatmap (heatmap.go, cells.go), exact range flame
//     graph (flamegraph.go) and heatmap series per CPU, thread or process
//     (series.go);
//   - filters: function and thread conditions, and probe spans paired
//     into latency sets (filter.go, with query/spans);
//   - diffs of two flame graphs, of profiles, ranges or fleets, with the
//     functions that changed most (diff.go), the stack lists exports read
//     (stacks.go), and the timed samples of a speedscope timeline
//     (timeline.go);
//   - fleet queries over many profiles in wall-clock time: merged flame
//     graphs, heatmaps, host strips, timelines, series (fleetseries.go)
//     and label sets (fleet*.go; fleet.go names the stages);
//   - stack buckets (fleet_buckets.go): ten-minute counts per host that
//     merged flame graphs over hours read instead of every second, stored
//     through StackBuckets where the Source has them, used only for the
//     profiles they counted, and compacted ahead of queries
//     (CompactBuckets);
//   - the samples of profiles past their tenant's sample tier, whose
//     rows left the index: read from their raw files, parsed again
//     through Options.Reindex, and cached like rows (cold.go);
//   - the caches (tables of one byte budget and one recency order,
//     loaded once for the requests that meet a load in flight), and the
//     rules that turn a request into reads: event resolution, the seconds a range needs, the
//     heatmap's columns.
//
// It answers from a Source of stored profiles (store/postgres for the
// server, store/memory for local files), so that a local file and the server
// give the same answer by construction. It owns the interfaces of the stores
// it uses (Source, made of Profiles, Dictionaries, Cells, Seconds and Fleet;
// and StackBuckets). Its subpackages are pure: query/heatmap counts cells,
// query/flame builds flame graphs, query/spans pairs probe events,
// query/export writes answers out, query/cache is the byte-bounded LRU
// whose tables the caches are. It writes nothing but the stack buckets it
// counted, and speaks no transport.
package query

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/cache"
	"github.com/fleetscope/fleetscope/query/flame"
	"github.com/fleetscope/fleetscope/query/heatmap"
	"github.com/fleetscope/fleetscope/query/spans"
	"github.com/fleetscope/fleetscope/store/index"
)

// Profiles finds stored profiles.
type Profiles interface {
	// Profile returns one of the tenant's profiles; ENOTFOUND if the
	// tenant has none with that id.
	Profile(ctx context.Context, tenant int64, id string) (*fleetscope.ProfileInfo, error)
	// Search returns the tenant's profiles matching f, newest first, and
	// the token of the next page ("" on the last).
	Search(ctx context.Context, tenant int64, f fleetscope.ProfileFilter) ([]*fleetscope.ProfileInfo, string, error)
}

// Dictionaries rebuilds a profile's frame and stack dictionary: stack i of
// the result is the profile's stack i, as its stored samples refer to it.
type Dictionaries interface {
	Dict(ctx context.Context, tenant int64, p *fleetscope.ProfileInfo) (*fleetscope.Dict, error)
	// Threads returns a profile's distinct (process, thread, CPU), as its
	// stored samples index them (index.Index.Threads).
	Threads(ctx context.Context, tenant int64, id string) ([]fleetscope.Thread, error)
}

// Cells reads an event's per-second rows with their precomputed heatmap
// cells (index.Rows rows) but without their samples.
type Cells interface {
	Cells(ctx context.Context, tenant int64, id string, event int) ([]index.Second, error)
}

// Seconds reads an event's per-second rows with their samples, for the
// relative seconds [from, to] (both included; from > to: all).
type Seconds interface {
	Seconds(ctx context.Context, tenant int64, id string, event int, from, to int64) ([]index.Second, error)
}

// Fleet reads an app's profiles and their cells in absolute time.
type Fleet interface {
	// FleetProfiles returns the tenant's profiles of app overlapping the
	// window [from, to) (unix ns), on any of hosts (none: all), meeting
	// every label condition; ETOOLARGE past limit profiles. Their Meta
	// may be left out.
	FleetProfiles(ctx context.Context, tenant int64, app string, hosts []string, labels []fleetscope.LabelMatch, from, to int64, limit int) ([]*fleetscope.ProfileInfo, error)
	// FleetRows hands fn, one at a time, the stored rows of app's
	// profiles of one event (base name; "" for every event) of width
	// seconds (1: a profile's second; index.Tens, index.Minutes: its
	// rollups, each row's Second its slot's first) that start in the unix
	// seconds [from, to) (multiples of width), with their cells or only
	// their sample counts. fn may not keep a row's cells: they are reused.
	// Nothing is held but the row at hand, however many rows a window
	// holds.
	FleetRows(ctx context.Context, tenant int64, app, event string, width, from, to int64, withCells bool, fn func(*index.FleetRow) error) error
	// ProfileStacks returns a profile's stack list as tenant dictionary
	// keys (index.Keyer), in the order its samples refer to them.
	ProfileStacks(ctx context.Context, tenant int64, id string) ([]int64, error)
	// StackDict builds a dictionary whose stack i is the tenant's stack
	// ids[i].
	StackDict(ctx context.Context, tenant int64, ids []int64) (*fleetscope.Dict, error)
	// FleetStackTotals streams the stack totals (index.EncodeStackTotals)
	// of profiles ids (one round trip where it can); fn gets the index in
	// ids of each profile that has them (those stored before totals were
	// kept have none, and are left out).
	FleetStackTotals(ctx context.Context, tenant int64, ids []string, fn func(i int, totals []byte) error) error
	// FleetSeconds streams the rows, with samples, of many profiles'
	// second ranges (one round trip where it can); fn gets the index in
	// reqs of a row's range. Inner rows (index.SecondsRange.Inner) may come
	// without their offsets.
	FleetSeconds(ctx context.Context, tenant int64, reqs []index.SecondsRange, fn func(i int, s *index.Second) error) error
	// FleetLabelSets returns the distinct (app, host, labels) of the
	// tenant's profiles of app ("": every app) overlapping the window
	// [from, to) (unix ns, as FleetProfiles decides it), each with its
	// profiles' event base names; ETOOLARGE past limit.
	FleetLabelSets(ctx context.Context, tenant int64, app string, from, to int64, limit int) ([]fleetscope.LabelSet, error)
}

// Source is where the service reads stored profiles.
type Source interface {
	Profiles
	Dictionaries
	Cells
	Seconds
	Fleet
}

// Options tune a Service.
type Options struct {
	// CacheBytes bounds the memory of all caches together (default 256 MiB).
	CacheBytes int64
	// ProfileTTL is how long profile metadata is trusted (default 5 s), so
	// a deletion on another replica is seen within it. Profiles' samples
	// and dictionaries never change once stored and are cached until
	// evicted.
	ProfileTTL time.Duration
	// Warm loads a profile's dictionary and its whole flame graph layout
	// in the background when its heatmap is asked for, so that the flame
	// graph a viewer asks for next does not wait for them (the server; a
	// command reading a local file has no next request).
	Warm bool
	// NoStackBuckets counts every merged flame graph from the per-second
	// rows, never from stored stack buckets (fleet_buckets.go): the
	// reference the tests compare buckets with.
	NoStackBuckets bool
	// NoRollups reads every fleet heatmap, host strip, timeline and
	// series from the per-second rows, never from the 10-s and minute
	// rollups (fleet_rollup.go), on the same columns: the reference the
	// tests compare the rollups with.
	NoRollups bool
	// Reindex parses a stored profile's raw file again
	// (ingest.Service.Reindex): the samples of profiles the sample tier
	// moved out of the index (cold.go). Nil: none can be read.
	Reindex func(ctx context.Context, p *fleetscope.ProfileInfo) (*index.Index, error)
}

// Service answers queries from a Source. It is safe for concurrent use and
// holds no state another replica needs.
type Service struct {
	src       Source
	warm      bool
	noBuckets bool
	noRollups bool
	reindex   func(ctx context.Context, p *fleetscope.ProfileInfo) (*index.Index, error)
	// cache holds every table below in one byte budget and one recency
	// order: whichever kind of entry is in use gets the memory.
	cache    *cache.Cache
	profiles *cache.Table[profileKey, *fleetscope.ProfileInfo]
	dicts    *cache.Table[profileKey, *fleetscope.Dict]
	heatmaps *cache.Table[heatmapKey, *heatmap.Heatmap]
	layouts  *cache.Table[layoutKey, *flame.Layout]
	stacks   *cache.Table[profileKey, []int64]    // profiles' stack keys
	denseMu  sync.Mutex                           // a tenant's numbering is made and measured under it
	dense    *cache.Table[int64, *denseIDs]       // per tenant: its stack keys numbered densely
	trans    *cache.Table[transKey, []int32]      // profiles' stacks as dense ids
	merged   *cache.Table[mergedKey, *mergedDict] // fleet dictionaries
	// the stacks of sets of profiles (a fleet dictionary's, in order)
	stackSets *cache.Table[setKey, *stackSet]
	threads   *cache.Table[profileKey, []fleetscope.Thread]
	seconds   *cache.Table[secondsKey, []index.Second]   // rows of ranges asked for
	cold      *cache.Table[profileKey, [][]index.Second] // cold profiles' rows by event (cold.go)
	keeps     *cache.Table[keepKey, []bool]              // stacks a function filter keeps
	inverted  *cache.Table[*fleetscope.Dict, *fleetscope.FrameIndex]
	spanSets  *cache.Table[spanKey, *spans.Set]
	// what filtered heatmaps count, per profile event
	cellTables *cache.Table[cellsKey, *stackCells]
}

type profileKey struct {
	tenant int64
	id     string
}

// profile names the profile a key is about: every key type that embeds a
// profileKey has it, and Forget drops the entries whose keys name the
// profile forgotten.
func (k profileKey) profile() profileKey { return k }

type heatmapKey struct {
	profileKey
	event, rows int
	idle        bool
	filter      string // Filter.Key
}

type secondsKey struct {
	profileKey
	event    int
	from, to int64 // 0, -1: all
}

type layoutKey struct {
	profileKey
	ann flame.Annotate
}

// New returns a service reading from src.
func New(src Source, o Options) *Service {
	if o.CacheBytes <= 0 {
		o.CacheBytes = 256 << 20
	}
	if o.ProfileTTL <= 0 {
		o.ProfileTTL = 5 * time.Second
	}
	c := cache.New(o.CacheBytes)
	return &Service{
		src:       src,
		warm:      o.Warm,
		noBuckets: o.NoStackBuckets,
		noRollups: o.NoRollups,
		reindex:   o.Reindex,
		cache:     c,
		profiles: cache.NewTable(c, "profiles", func(_ profileKey, p *fleetscope.ProfileInfo) int64 {
			return 1024 + int64(len(p.Labels)+len(p.Meta)+len(p.Events))*64
		}).WithTTL(o.ProfileTTL),
		dicts:      cache.NewTable(c, "dicts", func(_ profileKey, d *fleetscope.Dict) int64 { return d.SizeBytes() }),
		heatmaps:   cache.NewTable(c, "heatmaps", func(_ heatmapKey, h *heatmap.Heatmap) int64 { return h.SizeBytes() }),
		layouts:    cache.NewTable(c, "layouts", func(_ layoutKey, l *flame.Layout) int64 { return l.SizeBytes() }),
		stacks:     cache.NewTable(c, "stacks", func(_ profileKey, ids []int64) int64 { return 64 + 8*int64(len(ids)) }),
		merged:     cache.NewTable(c, "merged", func(_ mergedKey, m *mergedDict) int64 { return m.sizeBytes() }),
		stackSets:  cache.NewTable(c, "stacksets", func(_ setKey, v *stackSet) int64 { return v.sizeBytes() }),
		trans:      cache.NewTable(c, "translations", func(_ transKey, ids []int32) int64 { return 64 + 4*int64(len(ids)) }),
		dense:      cache.NewTable(c, "numberings", func(_ int64, d *denseIDs) int64 { return d.sizeBytes() }),
		threads:    cache.NewTable(c, "threads", func(_ profileKey, t []fleetscope.Thread) int64 { return 64 + 12*int64(len(t)) }),
		seconds:    cache.NewTable(c, "seconds", func(_ secondsKey, rows []index.Second) int64 { return index.SecondsBytes(rows) }),
		cold:       cache.NewTable(c, "cold", coldBytes),
		keeps:      cache.NewTable(c, "keeps", func(k keepKey, v []bool) int64 { return 64 + int64(len(k.filter)+len(v)) }),
		inverted:   cache.NewTable(c, "inverted", func(_ *fleetscope.Dict, x *fleetscope.FrameIndex) int64 { return x.SizeBytes() }),
		spanSets:   cache.NewTable(c, "spans", func(_ spanKey, v *spans.Set) int64 { return 64 + 48*int64(len(v.Spans)) }),
		cellTables: cache.NewTable(c, "cells", func(_ cellsKey, t *stackCells) int64 { return t.sizeBytes() }),
	}
}

// Search returns the tenant's profiles matching f, newest first, and the
// token of the next page. A page holds at most 1000 profiles.
func (s *Service) Search(ctx context.Context, tenant int64, f fleetscope.ProfileFilter) ([]*fleetscope.ProfileInfo, string, error) {
	if f.PageSize < 0 || f.PageSize > 1000 {
		return nil, "", fleetscope.Errorf(fleetscope.EINVALID, "page size %d: between 1 and 1000 (0: 50)", f.PageSize)
	}
	if f.PageSize == 0 {
		f.PageSize = 50
	}
	return s.src.Search(ctx, tenant, f)
}

// Profile returns one of the tenant's profiles, from the cache when fresh.
// Returns ENOTFOUND if the tenant has none with that id.
func (s *Service) Profile(ctx context.Context, tenant int64, id string) (*fleetscope.ProfileInfo, error) {
	return s.profiles.Load(ctx, profileKey{tenant, id}, func() (*fleetscope.ProfileInfo, error) {
		return s.src.Profile(ctx, tenant, id)
	})
}

// Flush empties every cache.
func (s *Service) Flush() { s.cache.Clear() }

// Forget drops everything cached about a profile: the one way the caches
// learn that a profile was deleted (by a request, a live stream or
// retention) or its metadata changed. It drops every entry whose key
// names the profile, and those keyed by its cached dictionary (the
// stacks filters keep, its frames inverted).
func (s *Service) Forget(tenant int64, id string) {
	k := profileKey{tenant, id}
	d, _ := s.dicts.Get(k)
	s.cache.Drop(func(key any) bool {
		switch key := key.(type) {
		case interface{ profile() profileKey }:
			return key.profile() == k
		case keepKey:
			return d != nil && key.dict == d
		case *fleetscope.Dict:
			return d != nil && key == d
		}
		return false
	})
}

// CacheStats returns the accounting of each of the caches' tables: its
// entries, bytes, hits, misses and loads.
func (s *Service) CacheStats() []cache.Stats { return s.cache.Stats() }

// dict returns a profile's dictionary, cached.
func (s *Service) dict(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo) (*fleetscope.Dict, error) {
	// One load for every request that meets it in flight; it goes on if
	// the request that began it goes away (the others wait for it), for a
	// minute at most.
	return s.dicts.Load(ctx, profileKey{tenant, info.ID}, func() (*fleetscope.Dict, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		return s.src.Dict(ctx, tenant, info)
	})
}

// layout returns the flame graph layout of a profile's dictionary, cached
// (built once for the requests that meet it in flight).
func (s *Service) layout(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, d *fleetscope.Dict, ann flame.Annotate) (*flame.Layout, error) {
	return s.layouts.Load(ctx, layoutKey{profileKey{tenant, info.ID}, ann}, func() (*flame.Layout, error) {
		return flame.NewLayoutContext(ctx, d, ann) // a build ended by ctx is not kept, and others waiting build again
	})
}

// warmFlame loads, in the background, what a profile's flame graphs need
// and its heatmap does not: its dictionary and whole-graph layout (with
// Options.Warm; once: a request that needs them meanwhile waits for the
// same load). The dashboard asks for a profile's flame graph right after
// its heatmap; the first one of the benchmark profile took ~60 ms more
// than the next, mostly reading its dictionary. A load that fails is
// left to the flame graph's request to report.
func (s *Service) warmFlame(tenant int64, info *fleetscope.ProfileInfo) {
	if !s.warm {
		return
	}
	if _, ok := s.layouts.Get(layoutKey{profileKey{tenant, info.ID}, flame.Annotate{}}); ok {
		return
	}
	go func() {
		if d, err := s.dict(context.Background(), tenant, info); err == nil {
			s.layout(context.Background(), tenant, info, d, flame.Annotate{})
		}
	}()
}

// profileRequest resolves what every single-profile query starts from:
// the profile, its event and the compiled filter; timed requires
// per-sample times (heatmaps).
func (s *Service) profileRequest(ctx context.Context, tenant int64, id, eventName string, flt fleetscope.Filter, timed bool) (*fleetscope.ProfileInfo, int, filter, error) {
	info, err := s.Profile(ctx, tenant, id)
	if err != nil {
		return nil, 0, filter{}, err
	}
	if timed && !info.Timed {
		return nil, 0, filter{}, fleetscope.Errorf(fleetscope.EINVALID, "this profile has no per-sample timestamps: no heatmap (a whole-profile flame graph works)")
	}
	ev, err := event(info, eventName)
	if err != nil {
		return nil, 0, filter{}, err
	}
	f, err := compileFilter(flt)
	if err != nil {
		return nil, 0, filter{}, err
	}
	return info, ev, f, nil
}

// event resolves an event name against a stored profile ("": its default).
func event(info *fleetscope.ProfileInfo, name string) (int, error) {
	if name == "" {
		return info.DefaultEvent, nil
	}
	names := make([]string, len(info.Events))
	for i, e := range info.Events {
		names[i] = e.Name
	}
	id, err := fleetscope.ResolveEvent(names, name)
	return int(id), err
}

// weight is how many samples a stored sample counts for: 1, or its period
// for a weighted (pre-aggregated) event.
func weight(p *fleetscope.ProfileInfo, s *fleetscope.Sample) int64 {
	if p.Events[s.Event].Weighted {
		return int64(min(s.Period, math.MaxInt64))
	}
	return 1
}

// rangeSeconds reads the rows, with their samples, of event ev's seconds
// [from, to] of a profile (all if from > to), from the cache when the same
// range was asked for before: a range shown in the dashboard is asked for
// by its flame graph, its tables and its downloads, and a profile's rows
// never change once stored. The rows are shared: read them only.
func (s *Service) rangeSeconds(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, ev int, from, to int64) ([]index.Second, error) {
	if from > to {
		from, to = 0, -1
	}
	if info.Cold { // all its rows are cached already
		return s.storedSeconds(ctx, tenant, info, ev, from, to)
	}
	return s.seconds.Load(ctx, secondsKey{profileKey{tenant, info.ID}, ev, from, to}, func() ([]index.Second, error) {
		return s.src.Seconds(ctx, tenant, info.ID, ev, from, to)
	})
}

// secondsPerCheck is how many stored seconds (rows of samples) a loop
// reads or counts between two looks at its context.
const secondsPerCheck = 16

// samples decodes the stored samples of event in relative seconds
// [from, to] (all if from > to) and hands them to fn with the dictionary.
func (s *Service) samples(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, ev int, from, to int64, fn func(*fleetscope.Dict, []fleetscope.Sample)) error {
	d, err := s.dict(ctx, tenant, info)
	if err != nil {
		return err
	}
	secs, err := s.rangeSeconds(ctx, tenant, info, ev, from, to)
	if err != nil {
		return err
	}
	threads, err := s.profileThreads(ctx, tenant, info.ID)
	if err != nil {
		return err
	}
	var batch []fleetscope.Sample
	for i := range secs {
		if i%secondsPerCheck == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		batch, err = index.Decode(batch[:0], &secs[i], info.StartSecond, info.TimeUnitNanos, info.Timed, info.Events[ev].Period, threads, d.NumStacks())
		if err != nil {
			return fleetscope.Wrap(err, fleetscope.EINTERNAL, "profile "+info.ID+": corrupt index row")
		}
		fn(d, batch)
	}
	return nil
}
