package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/fleetscope/fleetscope"
)

// SpeedscopeSchema is the $schema of speedscope's file format.
const SpeedscopeSchema = "https://www.speedscope.app/file-format-schema.json"

// SpeedscopeUnits are the value units speedscope's file format knows.
var SpeedscopeUnits = []string{"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}

// SpeedscopeOptions name a speedscope profile and its unit.
type SpeedscopeOptions struct {
	// Name names the file and its one profile; default "flame graph".
	Name string
	// Unit is one of SpeedscopeUnits; default "none", for sample counts.
	Unit string
}

// WriteSpeedscope writes the stacks in speedscope's file format
// (https://www.speedscope.app/file-format-schema.json): one "sampled"
// profile whose frames are shared and named once each, with one sample per
// nonzero stack (frame indexes root first) and its value as the sample's
// weight; startValue 0 and endValue the total. Samples are sorted by their
// frames (root first), so speedscope's time-order view shows a flame graph
// like flamegraph.pl's and the output does not depend on the input order.
// It is for stacks without times; WriteSpeedscopeTimeline writes samples
// in time order.
//
// Returns EINVALID for a unit speedscope does not know, and for values that
// add up to 2^53 or more, past which speedscope's (JavaScript) numbers are
// no longer exact.
func WriteSpeedscope(w io.Writer, stacks []Stack, opts SpeedscopeOptions) error {
	name, unit := opts.Name, opts.Unit
	if name == "" {
		name = "flame graph"
	}
	if unit == "" {
		unit = "none"
	}
	if !slices.Contains(SpeedscopeUnits, unit) {
		return fleetscope.Errorf(fleetscope.EINVALID, "speedscope: unit %q is none of %q", unit, SpeedscopeUnits)
	}
	total, ok := checkedTotal(stacks, maxExactFloat-1)
	if !ok {
		return fleetscope.Errorf(fleetscope.EINVALID, "speedscope: the stacks' values add up to 2^53 or more, which speedscope cannot hold exactly")
	}

	sorted := sortedStacks(stacks)
	prof := ssProfile{
		Type:     "sampled",
		Name:     name,
		Unit:     unit,
		EndValue: total,
		Samples:  make([][]int, len(sorted)),
		Weights:  make([]uint64, len(sorted)),
	}
	frames := []ssFrame{} // an array even when empty, as the schema wants
	index := make(map[string]int)
	for i, s := range sorted {
		sample := make([]int, len(s.Frames))
		for j, f := range s.Frames {
			k, ok := index[f]
			if !ok {
				k = len(frames)
				index[f] = k
				frames = append(frames, ssFrame{Name: f})
			}
			sample[j] = k
		}
		prof.Samples[i] = sample
		prof.Weights[i] = s.Value
	}
	file := ssFile{Schema: SpeedscopeSchema, Name: name, Exporter: "fleetscope", Profiles: []ssProfile{prof}}
	file.Shared.Frames = frames

	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&file); err != nil {
		return fmt.Errorf("write speedscope: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write speedscope: %w", err)
	}
	return nil
}

// ssFile is speedscope's FileFormat.File.
type ssFile struct {
	Schema string `json:"$schema"`
	Shared struct {
		Frames []ssFrame `json:"frames"`
	} `json:"shared"`
	Profiles           []ssProfile `json:"profiles"`
	Name               string      `json:"name"`
	ActiveProfileIndex int         `json:"activeProfileIndex"`
	Exporter           string      `json:"exporter"`
}

// ssFrame is speedscope's FileFormat.Frame.
type ssFrame struct {
	Name string `json:"name"`
}

// ssProfile is speedscope's FileFormat.SampledProfile.
type ssProfile struct {
	Type       string   `json:"type"`
	Name       string   `json:"name"`
	Unit       string   `json:"unit"`
	StartValue uint64   `json:"startValue"`
	EndValue   uint64   `json:"endValue"`
	Samples    [][]int  `json:"samples"`
	Weights    []uint64 `json:"weights"`
}

// MaxTimelineSamples bounds the samples of one speedscope timeline
// (WriteSpeedscopeTimeline's callers refuse more, ETOOLARGE): each sample
// is its own entry, its stack's frame indexes written out, so a million
// samples 30 frames deep make some 120 MB of JSON.
const MaxTimelineSamples = 1_000_000

// TimedSample is one sample of a timeline: its stack (an index into the
// stacks given to WriteSpeedscopeTimeline) and its weight.
type TimedSample struct {
	Stack  int32
	Weight uint64
}

// TimedProfile is one profile of a speedscope timeline: its samples in
// time order.
type TimedProfile struct {
	Name    string
	Unit    string // one of SpeedscopeUnits; default "none"
	Samples []TimedSample
}

// WriteSpeedscopeTimeline writes profiles in speedscope's file format, each
// a "sampled" profile whose samples are the given ones, one entry each, in
// the order given (time order), so that speedscope's Time Order view is
// their timeline and Left Heavy their flame graph. stacks[i] are the frames
// (root first) of stack i; frames are shared by name. Each profile's
// startValue is 0 and its endValue the total of its weights: speedscope
// takes endValue - startValue as the profile's total weight, the width of
// its Time Order view and the base of its percentages. Samples of zero
// weight (speedscope ignores them) are left out. The JSON is written as it
// goes: memory holds the frames of the stacks used, not the output.
//
// Returns EINVALID for a unit speedscope does not know, a stack index out
// of range, and for a profile whose weights add up to 2^53 or more.
func WriteSpeedscopeTimeline(w io.Writer, name string, stacks [][]string, profiles []TimedProfile) error {
	if name == "" {
		name = "timeline"
	}
	used := make([]bool, len(stacks))
	totals := make([]uint64, len(profiles))
	for i, p := range profiles {
		if p.Unit != "" && !slices.Contains(SpeedscopeUnits, p.Unit) {
			return fleetscope.Errorf(fleetscope.EINVALID, "speedscope: unit %q is none of %q", p.Unit, SpeedscopeUnits)
		}
		for _, s := range p.Samples {
			if s.Stack < 0 || int(s.Stack) >= len(stacks) {
				return fleetscope.Errorf(fleetscope.EINVALID, "speedscope: sample of stack %d, of %d stacks", s.Stack, len(stacks))
			}
			if s.Weight > maxExactFloat-1-totals[i] {
				return fleetscope.Errorf(fleetscope.EINVALID, "speedscope: profile %q's weights add up to 2^53 or more, which speedscope cannot hold exactly", p.Name)
			}
			totals[i] += s.Weight
			used[s.Stack] = used[s.Stack] || s.Weight != 0
		}
	}
	// Each used stack's frame indexes, as JSON, once.
	index := make(map[string]int)
	var names []string
	sample := make([][]byte, len(stacks))
	for i, fs := range stacks {
		if !used[i] {
			continue
		}
		b := []byte{'['}
		for j, f := range fs {
			k, ok := index[f]
			if !ok {
				k = len(names)
				index[f] = k
				names = append(names, f)
			}
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(k), 10)
		}
		sample[i] = append(b, ']')
	}

	bw := bufio.NewWriterSize(w, 64<<10)
	str := func(s string) {
		b, _ := json.Marshal(s) // a string always marshals
		bw.Write(b)
	}
	bw.WriteString(`{"$schema":`)
	str(SpeedscopeSchema)
	bw.WriteString(`,"shared":{"frames":[`)
	for i, n := range names {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString(`{"name":`)
		str(n)
		bw.WriteByte('}')
	}
	bw.WriteString(`]},"profiles":[`)
	for i, p := range profiles {
		unit := p.Unit
		if unit == "" {
			unit = "none"
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString(`{"type":"sampled","name":`)
		str(p.Name)
		bw.WriteString(`,"unit":`)
		str(unit)
		bw.WriteString(`,"startValue":0,"endValue":`)
		bw.WriteString(strconv.FormatUint(totals[i], 10))
		// each writes the samples of nonzero weight, comma-separated.
		each := func(write func(TimedSample)) {
			first := true
			for _, s := range p.Samples {
				if s.Weight == 0 {
					continue
				}
				if !first {
					bw.WriteByte(',')
				}
				first = false
				write(s)
			}
		}
		bw.WriteString(`,"samples":[`)
		each(func(s TimedSample) { bw.Write(sample[s.Stack]) })
		bw.WriteString(`],"weights":[`)
		each(func(s TimedSample) { bw.WriteString(strconv.FormatUint(s.Weight, 10)) })
		bw.WriteString(`]}`)
	}
	bw.WriteString(`],"name":`)
	str(name)
	bw.WriteString(`,"activeProfileIndex":0,"exporter":"fleetscope"}` + "\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write speedscope: %w", err)
	}
	return nil
}
