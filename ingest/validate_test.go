package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
)

func perfSample(comm string, at string, frames ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s 1 [000] %s: 1 cpu-clock:\n", comm, at)
	for i := len(frames) - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "\t%x %s (/bin/app)\n", i+1, frames[i])
	}
	b.WriteString("\n")
	return b.String()
}

// TestTimestampsOutsideTheRangeAreRefused: a timestamp past 2100, one that
// would overflow int64 nanoseconds, a negative one and NaN are refused with
// EINVALID; none is wrapped or stored as "untimed".
func TestTimestampsOutsideTheRangeAreRefused(t *testing.T) {
	ok := perfSample("app", "1.000000", "main", "f0")
	for _, bad := range []string{"9300000000.000000", "9000000000.000000", "32503680000.000000", "-5.000000", "nan", "inf"} {
		in := ok + perfSample("app", bad, "main", "f1")
		_, err := ingest.ParseIndex(strings.NewReader(in), "", 0, ingest.Shape{})
		if fleetscope.ErrorCode(err) != fleetscope.EINVALID || !strings.Contains(err.Error(), "outside the accepted range") {
			t.Errorf("timestamp %s: %v, want EINVALID outside the accepted range", bad, err)
		}
	}
	// Folded text with a leading timestamp, too.
	_, err := ingest.ParseIndex(strings.NewReader("1.5 main;f 1\n9999999999.5 main;g 1\n"), "", 0, ingest.Shape{})
	if fleetscope.ErrorCode(err) != fleetscope.EINVALID {
		t.Errorf("folded timestamp 9999999999.5: %v, want EINVALID", err)
	}
	// The last accepted second still works.
	if _, err := ingest.ParseIndex(strings.NewReader(perfSample("app", "4102444800.000000", "main")), "", 0, ingest.Shape{}); err != nil {
		t.Errorf("timestamp 4102444800.000000: %v", err)
	}
}

// TestShapeLimits: distinct stacks, stack depth and events are bounded
// (ETOOLARGE, found while parsing), and event ids never wrap.
func TestShapeLimits(t *testing.T) {
	var many strings.Builder
	for i := range 50 {
		many.WriteString(perfSample("app", fmt.Sprintf("%d.000000", i+1), "main", fmt.Sprintf("f%d", i)))
	}
	if _, err := ingest.ParseIndex(strings.NewReader(many.String()), "", 0, ingest.Shape{MaxStacks: 40}); fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE {
		t.Errorf("50 stacks, limit 40: %v, want ETOOLARGE", err)
	}
	if _, err := ingest.ParseIndex(strings.NewReader(many.String()), "", 0, ingest.Shape{MaxStacks: 50}); err != nil {
		t.Errorf("50 stacks, limit 50: %v", err)
	}
	deep := make([]string, 300)
	for i := range deep {
		deep[i] = fmt.Sprintf("d%d", i)
	}
	in := perfSample("app", "1.000000", deep...)
	if _, err := ingest.ParseIndex(strings.NewReader(in), "", 0, ingest.Shape{MaxDepth: 256}); fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE {
		t.Errorf("a 301-frame stack, depth 256: %v, want ETOOLARGE", err)
	}
	if _, err := ingest.ParseIndex(strings.NewReader(in), "", 0, ingest.Shape{MaxFrames: 100}); fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE {
		t.Errorf("301 frames, total 100: %v, want ETOOLARGE", err)
	}
	// More event names than an EventID holds: refused, never wrapped.
	var evs strings.Builder
	for i := range fleetscope.MaxEvents + 2 {
		fmt.Fprintf(&evs, "app 1 [000] 1.%06d: 1 ev%d:\n\t1 main (/bin/app)\n\n", i%1000000, i)
	}
	_, err := ingest.ParseIndex(strings.NewReader(evs.String()), "", 0, ingest.Shape{})
	if fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE || !strings.Contains(err.Error(), "distinct events") {
		t.Errorf("%d events: %v, want ETOOLARGE", fleetscope.MaxEvents+2, err)
	}
}

// TestUnstorableTextIsInvalid: NUL bytes, control characters and invalid
// UTF-8 in the upload's names, labels or the profile's frame names are
// refused as invalid input before anything is stored: the service here has
// no index and no blob store, so reaching either would panic.
func TestUnstorableTextIsInvalid(t *testing.T) {
	s := &ingest.Service{TempDir: t.TempDir()}
	p := fleetscope.Principal{TenantID: 1, Scopes: []string{fleetscope.ScopeIngest}}
	good := perfSample("app", "100.000001", "main")
	for _, tc := range []struct {
		name string
		meta ingest.Meta
		body string
	}{
		{"NUL in app", ingest.Meta{App: "a\x00b"}, good},
		{"NUL in host", ingest.Meta{App: "a", Host: "h\x00"}, good},
		{"NUL in label key", ingest.Meta{App: "a", Labels: map[string]string{"k\x00": "v"}}, good},
		{"NUL in label value", ingest.Meta{App: "a", Labels: map[string]string{"k": "v\x00"}}, good},
		{"invalid UTF-8 label", ingest.Meta{App: "a", Labels: map[string]string{"k": "caf\xe9"}}, good},
		{"control character in file name", ingest.Meta{App: "a", Filename: "x\x1b[31m"}, good},
		{"invalid UTF-8 process name", ingest.Meta{App: "a"}, perfSample("caf\xe9", "100.000001", "main")},
		{"NUL in a frame", ingest.Meta{App: "a"}, perfSample("app", "100.000001", "ma\x00in")},
		{"escape sequence in a frame", ingest.Meta{App: "a"}, perfSample("app", "100.000001", "ma\x1b[2Jin")},
		{"DEL in a process name", ingest.Meta{App: "a"}, perfSample("a\x7fpp", "100.000001", "main")},
		{"carriage return in a folded frame", ingest.Meta{App: "a"}, "main;f\rg 1\n"},
		{"tab in a folded frame", ingest.Meta{App: "a"}, "main;f\tg 1\n"},
		{"anchor in the year 9999", ingest.Meta{App: "a", AnchorClockNanos: 1, AnchorWall: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}, good},
		{"span before 1970", ingest.Meta{App: "a", SpanStart: time.Date(1737, 1, 1, 0, 0, 0, 0, time.UTC)}, good},
		{"anchor placing the profile after 2100", ingest.Meta{App: "a", AnchorClockNanos: 0, AnchorWall: time.Date(2099, 12, 31, 23, 59, 59, 0, time.UTC)}, good},
	} {
		_, _, err := s.Ingest(context.Background(), p, tc.meta, strings.NewReader(tc.body))
		if fleetscope.ErrorCode(err) != fleetscope.EINVALID {
			t.Errorf("%s: %v, want EINVALID", tc.name, err)
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestNameBounds: a frame name longer than the server's MaxNameBytes
// (8 KiB by default) and more distinct frames than MaxDistinctFrames are
// refused with ETOOLARGE naming the limit, while parsing: the parse stops
// long before the end of a file with far too many frames.
func TestNameBounds(t *testing.T) {
	huge := "main;f 1\nmain;" + strings.Repeat("x", 1<<20) + " 1\n"
	s := &ingest.Service{TempDir: t.TempDir()} // no index, no blobs: reaching them would panic
	p := fleetscope.Principal{TenantID: 1, Scopes: []string{fleetscope.ScopeIngest}}
	_, _, err := s.Ingest(context.Background(), p, ingest.Meta{App: "a"}, strings.NewReader(huge))
	if fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE || !strings.Contains(err.Error(), "more than 8192 bytes") {
		t.Errorf("a 1 MiB frame name: %v, want ETOOLARGE naming the 8192-byte limit", err)
	}
	if len(err.Error()) > 500 {
		t.Errorf("the message quotes the whole name (%d bytes)", len(err.Error()))
	}
	atLimit := "main;" + strings.Repeat("y", ingest.DefaultShape.MaxNameBytes) + " 1\n"
	if _, err := ingest.ParseIndex(strings.NewReader(atLimit), "", 0, ingest.DefaultShape); err != nil {
		t.Errorf("a name of exactly %d bytes: %v", ingest.DefaultShape.MaxNameBytes, err)
	}
	// An event name, too.
	ev := perfSample("app", "1.000000", "main")
	ev = strings.Replace(ev, "cpu-clock", strings.Repeat("e", 9000), 1)
	if _, err := ingest.ParseIndex(strings.NewReader(ev), "", 0, ingest.DefaultShape); fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE {
		t.Errorf("a 9000-byte event name: %v, want ETOOLARGE", err)
	}

	var many strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&many, "main;f%d 1\n", i)
	}
	r := &countingReader{r: strings.NewReader(many.String())}
	_, err = ingest.ParseIndex(r, "", 0, ingest.Shape{MaxDistinctFrames: 1000})
	if fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE || !strings.Contains(err.Error(), "more than 1000 distinct") {
		t.Errorf("200001 distinct frames, limit 1000: %v, want ETOOLARGE", err)
	}
	if r.n > many.Len()/4 {
		t.Errorf("read %d of %d bytes before refusing: the limit must stop the parse early", r.n, many.Len())
	}
	small := "main;a 1\nmain;b 1\n"
	if _, err := ingest.ParseIndex(strings.NewReader(small), "", 0, ingest.Shape{MaxDistinctFrames: 3}); err != nil {
		t.Errorf("3 distinct frames, limit 3: %v", err)
	}
	if _, err := ingest.ParseIndex(strings.NewReader(small), "", 0, ingest.Shape{MaxDistinctFrames: 2}); fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE {
		t.Errorf("3 distinct frames, limit 2: %v, want ETOOLARGE", err)
	}
}

// TestValuesNeverWrap: values (periods) whose total for an event would pass
// math.MaxInt64 are refused as EINVALID, never wrapped: pprof records of
// MaxInt64 each on three stacks, and weighted folded lines. A total of
// exactly MaxInt64 is accepted.
func TestValuesNeverWrap(t *testing.T) {
	pp := func(values ...int64) []byte {
		p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}}}
		for i, v := range values {
			fn := &profile.Function{ID: uint64(i + 1), Name: fmt.Sprintf("f%d", i)}
			loc := &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fn}}}
			p.Function = append(p.Function, fn)
			p.Location = append(p.Location, loc)
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{v}})
		}
		var b bytes.Buffer
		if err := p.Write(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	over := pp(math.MaxInt64, math.MaxInt64, math.MaxInt64)
	_, err := ingest.ParseIndex(bytes.NewReader(over), "", 0, ingest.DefaultShape)
	if fleetscope.ErrorCode(err) != fleetscope.EINVALID || !strings.Contains(err.Error(), "add up to more than 9223372036854775807") {
		t.Errorf("three pprof values of MaxInt64: %v, want EINVALID", err)
	}
	if _, err := ingest.ParseIndex(bytes.NewReader(pp(math.MaxInt64-1, 1)), "", 0, ingest.DefaultShape); err != nil {
		t.Errorf("pprof values adding up to exactly MaxInt64: %v", err)
	}
	in := "main;a 9223372036854775807\nmain;b 1\n"
	if _, err := ingest.ParseIndex(strings.NewReader(in), "folded:weighted", 0, ingest.DefaultShape); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
		t.Errorf("weighted folded lines adding up past MaxInt64: %v, want EINVALID", err)
	}
	in = "main;a 18446744073709551615\n"
	if _, err := ingest.ParseIndex(strings.NewReader(in), "folded:weighted", 0, ingest.DefaultShape); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
		t.Errorf("a weighted folded line of MaxUint64: %v, want EINVALID", err)
	}
}
