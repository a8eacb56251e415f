// Package fstest holds test helpers for the parsers under ingest/: read a
// corpus file, parse it while keeping every sample, and fold the result.
// Only tests import it.
package fstest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/corpus"
)

// Shared is the path of a file in the shared directory (see ingest/corpus),
// whether or not it exists (fuzz seeds).
func Shared(parts ...string) string {
	return filepath.Join(append([]string{corpus.Dir()}, parts...)...)
}

// Read returns a shared file's bytes with gzip undone, skipping the test
// (or failing it under FLEETSCOPE_TEST_REQUIRE=1) if it is missing.
func Read(t testing.TB, parts ...string) []byte {
	t.Helper()
	data := corpus.Read(t, filepath.Join(parts...))
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return data
}

// Parser is any of the ingest parsers.
type Parser func(io.Reader, func(*fleetscope.Profile, []fleetscope.Sample) error) (*fleetscope.Profile, error)

// Parse runs parse on data and returns the profile and all its samples.
func Parse(t testing.TB, parse Parser, data []byte) (*fleetscope.Profile, []fleetscope.Sample) {
	t.Helper()
	var all []fleetscope.Sample
	p, err := parse(bytes.NewReader(data), func(p *fleetscope.Profile, batch []fleetscope.Sample) error {
		all = append(all, batch...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	Check(t, p, all)
	return p, all
}

// Check verifies the profile's counts and time span against its samples,
// and that every id is in the dictionary.
func Check(t testing.TB, p *fleetscope.Profile, all []fleetscope.Sample) {
	t.Helper()
	if p.Samples != len(all) {
		t.Errorf("Profile.Samples = %d, sink got %d", p.Samples, len(all))
	}
	untimed, seen := 0, false
	var lo, hi int64
	for _, s := range all {
		if int(s.Stack) >= p.Dict.NumStacks() || int(s.Event) >= len(p.Dict.Events()) {
			t.Fatalf("sample %+v: id not in the dictionary", s)
		}
		if s.TimeNanos == fleetscope.NoTime {
			untimed++
			continue
		}
		if !seen || s.TimeNanos < lo {
			lo = s.TimeNanos
		}
		if !seen || s.TimeNanos > hi {
			hi = s.TimeNanos
		}
		seen = true
	}
	if p.Untimed != untimed {
		t.Errorf("Profile.Untimed = %d, counted %d", p.Untimed, untimed)
	}
	if seen && (p.MinNanos != lo || p.MaxNanos != hi) {
		t.Errorf("Profile time span [%d, %d], samples span [%d, %d]", p.MinNanos, p.MaxNanos, lo, hi)
	}
}

// Folded returns the folded stacks ("a;b;c value") of the samples, sorted;
// with idle false, idle samples are left out; with byPeriod, samples weigh
// their period. Only samples of event ev (by name, "" for all) count.
func Folded(p *fleetscope.Profile, all []fleetscope.Sample, ev string, idle, byPeriod bool) []string {
	sums := map[string]uint64{}
	for _, s := range all {
		if ev != "" && p.Dict.Events()[s.Event] != ev || !idle && p.Dict.Idle(s.Stack) {
			continue
		}
		v := uint64(1)
		if byPeriod {
			v = s.Period
		}
		sums[StackText(p.Dict, s.Stack)] += v
	}
	out := make([]string, 0, len(sums))
	for k, v := range sums {
		out = append(out, k+" "+strconv.FormatUint(v, 10))
	}
	slices.Sort(out)
	return out
}

// StackText is a stack's frames joined by ';'.
func StackText(d *fleetscope.Dict, id fleetscope.StackID) string {
	var names []string
	for _, f := range d.StackFrames(id) {
		names = append(names, d.FrameAt(f).Name)
	}
	return strings.Join(names, ";")
}

// errStop ends a fuzzed parse that produces too many samples to be worth
// checking further.
var errStop = errors.New("fstest: enough samples")

// FuzzOnce runs detect and parse on fuzzed data: neither may panic, a
// failure must be EINVALID, and a success must deliver consistent samples.
func FuzzOnce(t *testing.T, detect func([]byte) int, parse Parser, data []byte) {
	if c := detect(data); c < 0 || c > 100 {
		t.Fatalf("Detect = %d, outside 0-100", c)
	}
	var all []fleetscope.Sample
	p, err := parse(bytes.NewReader(data), func(p *fleetscope.Profile, batch []fleetscope.Sample) error {
		if len(all) > 1<<20 {
			return errStop
		}
		all = append(all, batch...)
		return nil
	})
	switch {
	case errors.Is(err, errStop):
		return
	case err != nil:
		if code := fleetscope.ErrorCode(err); code != fleetscope.EINVALID && code != fleetscope.EEMPTY {
			t.Fatalf("error without EINVALID or EEMPTY: %v", err)
		}
		return
	}
	if len(all) == 0 {
		t.Fatalf("success without samples")
	}
	Check(t, p, all)
}

// Seeds adds corpus files (decompressed) as fuzz seeds, skipping missing
// ones and those over 256 KiB.
func Seeds(f *testing.F, files ...[]string) {
	for _, parts := range files {
		data, err := os.ReadFile(Shared(parts...))
		if err != nil {
			continue
		}
		if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				continue
			}
			if data, err = io.ReadAll(zr); err != nil {
				continue
			}
		}
		if len(data) <= 256<<10 {
			f.Add(data)
		}
	}
}
