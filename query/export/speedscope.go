package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"

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
