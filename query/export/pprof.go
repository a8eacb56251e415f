package export

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"

	"github.com/google/pprof/profile"

	"github.com/fleetscope/fleetscope"
)

// PprofOptions names the one sample type of a pprof profile.
type PprofOptions struct {
	// SampleType and SampleUnit name the values: "samples"/"count" (the
	// default when both are empty) for sample counts, "cpu"/"nanoseconds"
	// for periods in nanoseconds, ...
	SampleType string
	SampleUnit string
}

// WritePprof writes the stacks as a gzipped pprof profile
// (profile.proto), as `go tool pprof` reads it: one sample type, one
// Function and one Location (with a single line) per distinct frame name,
// and one Sample per nonzero stack with its value and its locations leaf
// first. The root frame (the process name) stays a frame, so stacks read
// back exactly. There are no mappings or addresses: every location is
// already symbolised.
//
// Returns EINVALID if the values add up to more than pprof's int64 holds.
func WritePprof(w io.Writer, stacks []Stack, opts PprofOptions) error {
	return writePprof(context.Background(), w, stacks, opts)
}

// writePprof is WritePprof, stopping with ctx.Err() once ctx is done.
func writePprof(ctx context.Context, w io.Writer, stacks []Stack, opts PprofOptions) error {
	if _, ok := checkedTotal(stacks, math.MaxInt64); !ok {
		return fleetscope.Errorf(fleetscope.EINVALID, "pprof: the stacks' values add up to more than an int64 holds")
	}
	typ, unit := opts.SampleType, opts.SampleUnit
	if typ == "" && unit == "" {
		typ, unit = "samples", "count"
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: typ, Unit: unit}},
		Sample:     make([]*profile.Sample, 0, len(stacks)),
	}
	locs := make(map[string]*profile.Location)
	check := fleetscope.NewChecker(ctx)
	for _, s := range stacks {
		if err := check.Tick(len(s.Frames)); err != nil {
			return err
		}
		if s.Value == 0 {
			continue
		}
		sample := &profile.Sample{
			Value:    []int64{int64(s.Value)},
			Location: make([]*profile.Location, len(s.Frames)),
		}
		for i, name := range s.Frames {
			loc := locs[name]
			if loc == nil {
				id := uint64(len(p.Location) + 1)
				fn := &profile.Function{ID: id, Name: name, SystemName: name}
				loc = &profile.Location{ID: id, Line: []profile.Line{{Function: fn}}}
				p.Function = append(p.Function, fn)
				p.Location = append(p.Location, loc)
				locs[name] = loc
			}
			sample.Location[len(s.Frames)-1-i] = loc
		}
		p.Sample = append(p.Sample, sample)
	}
	if err := p.CheckValid(); err != nil {
		return fmt.Errorf("pprof: built an invalid profile: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// profile.Write drops the gzip writer's Close error; close it here.
	bw := bufio.NewWriter(w)
	zw := gzip.NewWriter(bw)
	if err := p.WriteUncompressed(zw); err != nil {
		return fmt.Errorf("write pprof: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("write pprof: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write pprof: %w", err)
	}
	return nil
}
