// Package pprof reads pprof profiles (profile.proto, as Go's runtime/pprof,
// `go test -cpuprofile` and many other profilers write them) through
// github.com/google/pprof/profile. pprof records no per-sample times: the
// profile covers one time span, so its samples carry fleetscope.NoTime
// (flame graphs work, heatmaps do not). Each sample type (samples, cpu,
// alloc_space, ...) becomes an event, and a sample's value for that type
// its period: `flamegraph --period --event cpu` gives pprof's sums. It owns
// parsing only: no storage, no detection of other formats.
package pprof

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/internal/batch"
	"github.com/fleetscope/fleetscope/ingest/internal/wire"
)

// Parse reads one pprof profile (protobuf, gzipped or not) and streams its
// samples to sink: for each pprof sample and each sample type with a
// positive value, one sample of that type's event with the value as its
// period. Events are interned with pprof's default sample type first.
// Stacks are the process frame (the main binary's base name, else "pprof")
// then the locations from the root, inlined functions expanded (callers
// first); a location without symbols is named by its binary and file
// offset ("app+0x4f2c"), or its address if it has no mapping. Sample
// labels "pid" and "tid" (numeric) fill PID and TID.
//
// A protobuf message cannot be decoded before its end, so the file is read
// whole. Zero values add nothing to a sum and are left out;
// negative values (diff profiles) are left out with a warning. Returns
// EINVALID for bytes that are not a pprof profile and for a profile without
// samples.
func Parse(r io.Reader, sink func(*fleetscope.Profile, []fleetscope.Sample) error) (*fleetscope.Profile, error) {
	p := batch.NewProfile("pprof")
	data, err := io.ReadAll(r)
	if err != nil {
		return p, err
	}
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return p, fleetscope.Errorf(fleetscope.EINVALID, "pprof: gzip: %v", err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return p, fleetscope.Errorf(fleetscope.EINVALID, "pprof: gzip: %v", err)
		}
	}
	pp, err := parse(data)
	if err != nil {
		return p, fleetscope.Errorf(fleetscope.EINVALID, "pprof: not a valid profile: %v", err)
	}
	if len(pp.SampleType) == 0 || len(pp.Sample) == 0 {
		return p, fleetscope.Errorf(fleetscope.EEMPTY, "pprof: the profile has no samples (%d sample types, %d samples)", len(pp.SampleType), len(pp.Sample))
	}
	describe(p, pp)
	d := p.Dict

	// One event per sample type. First (the default event, all having as
	// many records) a type counted in samples ("samples/count" of a CPU
	// profile), so that a flame graph totals samples as for every other
	// format; else pprof's own default.
	names := eventNames(pp.SampleType)
	first := len(pp.SampleType) - 1 // pprof's default when none is named
	for i, st := range pp.SampleType {
		if pp.DefaultSampleType != "" && st.Type == pp.DefaultSampleType {
			first = i
			break
		}
	}
	for i, st := range pp.SampleType {
		if st.Unit == "count" {
			first = i
			break
		}
	}
	events := make([]fleetscope.EventID, len(names))
	events[first] = d.Event(names[first])
	for i, n := range names {
		if i != first {
			events[i] = d.Event(n)
		}
	}
	for _, ev := range events { // a record's value is so many samples, bytes, ns
		p.SetWeighted(ev)
	}

	proc := "pprof"
	if len(pp.Mapping) > 0 && pp.Mapping[0].File != "" {
		proc = path.Base(pp.Mapping[0].File)
	}
	root := d.Frame(fleetscope.Frame{Name: proc})
	locs := map[uint64][]fleetscope.FrameID{} // location id -> frames, callers first
	var frames []fleetscope.FrameID
	w := batch.New(p, sink)
	negative := 0
	for i, s := range pp.Sample {
		if len(s.Value) != len(pp.SampleType) {
			return p, fleetscope.Errorf(fleetscope.EINVALID, "pprof: sample %d has %d values for %d sample types", i, len(s.Value), len(pp.SampleType))
		}
		frames = append(frames[:0], root)
		for j := len(s.Location) - 1; j >= 0; j-- {
			l := s.Location[j]
			if l == nil {
				return p, fleetscope.Errorf(fleetscope.EINVALID, "pprof: sample %d refers to a location the profile does not have", i)
			}
			fs, ok := locs[l.ID]
			if !ok {
				fs = locationFrames(d, l)
				locs[l.ID] = fs
			}
			frames = append(frames, fs...)
		}
		st := d.Stack(frames)
		pid, tid := label(s, "pid"), label(s, "tid")
		for k, v := range s.Value {
			if v <= 0 {
				if v < 0 {
					negative++
				}
				continue
			}
			if err := w.Add(fleetscope.Sample{TimeNanos: fleetscope.NoTime, Period: uint64(v), Stack: st, CPU: -1, PID: pid, TID: tid, Event: events[k]}); err != nil {
				return p, err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return p, err
	}
	if negative > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%d negative sample values (a diff profile?) left out", negative))
	}
	if p.Samples == 0 {
		return p, fleetscope.Errorf(fleetscope.EINVALID, "pprof: every sample value is zero or negative: nothing to show")
	}
	return p, nil
}

// parse decodes protobuf only: pprof's legacy text formats are not taken
// (a text file must not pass for a profile).
func parse(data []byte) (p *profile.Profile, err error) {
	defer func() { // the decoder has panicked on hostile input before
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return profile.ParseUncompressed(data)
}

// eventNames names each sample type's event by its type ("cpu"), adding
// the unit ("cpu/nanoseconds") where types repeat.
func eventNames(types []*profile.ValueType) []string {
	seen := map[string]int{}
	for _, t := range types {
		seen[t.Type]++
	}
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = t.Type
		if seen[t.Type] > 1 || t.Type == "" {
			out[i] = t.Type + "/" + t.Unit
		}
		if out[i] == "/" {
			out[i] = "type" + strconv.Itoa(i)
		}
	}
	return out
}

func describe(p *fleetscope.Profile, pp *profile.Profile) {
	var types []string
	for _, t := range pp.SampleType {
		types = append(types, t.Type+"/"+t.Unit)
	}
	p.Meta["sample_types"] = strings.Join(types, ", ")
	if pp.DefaultSampleType != "" {
		p.Meta["default_sample_type"] = pp.DefaultSampleType
	}
	if pp.PeriodType != nil {
		p.Meta["period"] = fmt.Sprintf("%d %s/%s", pp.Period, pp.PeriodType.Type, pp.PeriodType.Unit)
	}
	if pp.TimeNanos != 0 {
		p.Meta["time_nanos"] = strconv.FormatInt(pp.TimeNanos, 10)
	}
	if pp.DurationNanos != 0 {
		p.Meta["duration_nanos"] = strconv.FormatInt(pp.DurationNanos, 10)
	}
	if len(pp.Comments) > 0 {
		p.Meta["comments"] = strings.Join(pp.Comments, "; ")
	}
	if len(pp.Mapping) > 0 && pp.Mapping[0].File != "" {
		p.Meta["main_binary"] = pp.Mapping[0].File
	}
}

// locationFrames names a location's functions, callers first (pprof lists
// a location's inlined lines innermost first).
func locationFrames(d *fleetscope.Dict, l *profile.Location) []fleetscope.FrameID {
	var k fleetscope.FrameKind
	if l.Mapping != nil && strings.HasPrefix(l.Mapping.File, "[kernel") {
		k = fleetscope.KindKernel
	}
	var out []fleetscope.FrameID
	for i := len(l.Line) - 1; i >= 0; i-- {
		name := ""
		if f := l.Line[i].Function; f != nil {
			name = f.Name
		}
		if name == "" {
			continue
		}
		out = append(out, d.Frame(fleetscope.Frame{Name: name, Kind: k}))
	}
	if len(out) == 0 {
		name := fmt.Sprintf("0x%x", l.Address)
		if l.Mapping != nil && l.Mapping.File != "" {
			name = path.Base(l.Mapping.File) + "+" + fmt.Sprintf("0x%x", l.Address-l.Mapping.Start+l.Mapping.Offset)
		}
		out = append(out, d.Frame(fleetscope.Frame{Name: name, Kind: k}))
	}
	return out
}

func label(s *profile.Sample, key string) int32 {
	if v := s.NumLabel[key]; len(v) == 1 && v[0] >= 0 && v[0] <= 1<<31-1 {
		return int32(v[0])
	}
	return -1
}

// Detect says how sure it is that head (decompressed) is a pprof profile:
// protobuf whose fields all fit profile.proto's Profile, with sample types
// or a string table among them.
func Detect(head []byte) int {
	sawType, sawStrings := false, false
	fields, whole, ok := wire.Scan(head, func(num protowire.Number, typ protowire.Type, val []byte, truncated bool) bool {
		switch num {
		case 1, 11: // sample_type, period_type: ValueType {1: type, 2: unit}
			sawType = sawType || num == 1
			if typ != protowire.BytesType {
				return false
			}
			_, _, ok := wire.Scan(val, func(n protowire.Number, t protowire.Type, _ []byte, _ bool) bool {
				return (n == 1 || n == 2) && t == protowire.VarintType
			})
			return ok
		case 2, 3, 4, 5: // sample, mapping, location, function
			return typ == protowire.BytesType
		case 6: // string_table
			sawStrings = true
			return typ == protowire.BytesType
		case 7, 8, 9, 10, 12, 14, 15: // drop/keep frames, time, duration, period, default type, doc url
			return typ == protowire.VarintType
		case 13: // comment
			return typ == protowire.VarintType || typ == protowire.BytesType && wire.Packed(val, protowire.VarintType, truncated)
		}
		return false
	})
	switch {
	case !ok || fields < 2 || !sawType && !sawStrings:
		return 0
	case sawType && (sawStrings || !whole):
		return 80
	}
	return 50
}
