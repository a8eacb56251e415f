package export_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/ctxtest"
	"github.com/fleetscope/fleetscope/query/export"
)

func TestWritePprof(t *testing.T) {
	stacks := []export.Stack{
		st("java;main;work", 3),
		st("java;main", 2),
		st("java;main;work", 4), // a duplicate stays a sample of its own
		st("java;main;idle", 0), // zero: left out
		st("bash;main;read line", 5),
		{Frames: []string{"java", "Ljava/lang/String;", "<init>"}, Value: 1},
		{Frames: []string{"java", "main", "main"}, Value: 6}, // recursion: one location, twice
	}
	var out bytes.Buffer
	if err := export.WritePprof(&out, stacks, export.PprofOptions{}); err != nil {
		t.Fatal(err)
	}
	p := checkPprof(t, out.Bytes(), stacks)
	if got := p.SampleType[0]; got.Type != "samples" || got.Unit != "count" {
		t.Errorf("sample type %s/%s, want samples/count", got.Type, got.Unit)
	}
	// java, main, work, bash, "read line", "Ljava/lang/String;", "<init>"
	if len(p.Function) != 7 || len(p.Location) != 7 {
		t.Errorf("%d functions and %d locations, want one of each per distinct frame name (7)", len(p.Function), len(p.Location))
	}
	if !bytes.HasPrefix(out.Bytes(), []byte{0x1f, 0x8b}) {
		t.Error("output is not gzipped")
	}
}

func TestWritePprofSampleType(t *testing.T) {
	var out bytes.Buffer
	stacks := []export.Stack{st("app;f", 10_000_000)}
	if err := export.WritePprof(&out, stacks, export.PprofOptions{SampleType: "cpu", SampleUnit: "nanoseconds"}); err != nil {
		t.Fatal(err)
	}
	p := checkPprof(t, out.Bytes(), stacks)
	if got := p.SampleType[0]; got.Type != "cpu" || got.Unit != "nanoseconds" {
		t.Errorf("sample type %s/%s, want cpu/nanoseconds", got.Type, got.Unit)
	}
}

func TestWritePprofEmpty(t *testing.T) {
	var out bytes.Buffer
	if err := export.WritePprof(&out, nil, export.PprofOptions{}); err != nil {
		t.Fatal(err)
	}
	checkPprof(t, out.Bytes(), nil)
}

func TestWritePprofOverflow(t *testing.T) {
	stacks := []export.Stack{st("a;b", math.MaxInt64), st("a;c", 1)}
	err := export.WritePprof(&bytes.Buffer{}, stacks, export.PprofOptions{})
	if code := fleetscope.ErrorCode(err); code != fleetscope.EINVALID {
		t.Fatalf("error %v has code %s, want %s", err, code, fleetscope.EINVALID)
	}
}

// checkPprof parses data as pprof reads it, checks that it is valid, that
// its sample total equals the input's, and that its samples are the
// input's nonzero stacks (root first once reversed), as a multiset.
func checkPprof(t *testing.T, data []byte, stacks []export.Stack) *profile.Profile {
	t.Helper()
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("profile.Parse: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	if len(p.SampleType) != 1 {
		t.Fatalf("%d sample types, want 1", len(p.SampleType))
	}
	var total int64
	var got []string
	for _, s := range p.Sample {
		total += s.Value[0]
		frames := make([]string, len(s.Location))
		for i, loc := range s.Location {
			if len(loc.Line) != 1 {
				t.Fatalf("location %d has %d lines, want 1", loc.ID, len(loc.Line))
			}
			frames[len(frames)-1-i] = loc.Line[0].Function.Name // leaf first in pprof
		}
		got = append(got, sampleKey(frames, uint64(s.Value[0])))
	}
	var want []string
	for _, s := range stacks {
		if s.Value != 0 {
			want = append(want, sampleKey(s.Frames, s.Value))
		}
	}
	if uint64(total) != export.Total(stacks) {
		t.Errorf("pprof total %d, want %d", total, export.Total(stacks))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("samples differ:\ngot  %q\nwant %q", got, want)
	}
	return p
}

// sampleKey is a stack and its value as one comparable string.
func sampleKey(frames []string, v uint64) string {
	return fmt.Sprintf("%q %d", frames, v)
}

// A pprof export stops with the context's error while it builds its
// profile, at the first look that finds the context done, and writes
// nothing.
func TestPprofHonoursContext(t *testing.T) {
	stacks := make([]export.Stack, 50_000)
	for i := range stacks {
		stacks[i] = export.Stack{Frames: []string{"proc", fmt.Sprintf("f%d", i), fmt.Sprintf("g%d", i)}, Value: 1}
	}
	ctx := ctxtest.CancelAfter(3)
	var b bytes.Buffer
	if err := export.WriteContext(ctx, &b, export.FormatPprof, stacks, export.Options{}); !errors.Is(err, context.Canceled) || b.Len() != 0 {
		t.Fatalf("got %v (%d bytes), want context.Canceled and nothing written", err, b.Len())
	}
	if ctx.Calls() != 3 {
		t.Errorf("the context was looked at %d times, want 3", ctx.Calls())
	}
	if err := export.WriteContext(context.Background(), &b, export.FormatPprof, stacks, export.Options{}); err != nil || b.Len() == 0 {
		t.Errorf("%v (%d bytes)", err, b.Len())
	}
}
