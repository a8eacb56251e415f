package spans_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/spans"
)

// fixture builds hand-made samples: a sampling event and a probe pair, with
// times in µs and entry stacks of a chosen depth.
type fixture struct {
	d       *fleetscope.Dict
	pair    spans.Pair
	cpu     fleetscope.EventID
	samples []fleetscope.Sample
}

func newFixture() *fixture {
	d := fleetscope.NewDict()
	f := &fixture{d: d, cpu: d.Event("cpu-clock")}
	f.pair = spans.Pair{Entry: d.Event("probe_x:f"), Return: d.Event("probe_x:f__return")}
	return f
}

// stack returns a stack of n frames: the process, main, then f, f, ...
func (f *fixture) stack(n int) fleetscope.StackID {
	ids := []fleetscope.FrameID{f.d.Frame(fleetscope.Frame{Name: "app"}), f.d.Frame(fleetscope.Frame{Name: "main"})}
	for len(ids) < n {
		ids = append(ids, f.d.Frame(fleetscope.Frame{Name: "f"}))
	}
	return f.d.Stack(ids[:n])
}

func (f *fixture) add(ev fleetscope.EventID, tid int32, us int64, stack fleetscope.StackID) {
	f.samples = append(f.samples, fleetscope.Sample{TimeNanos: us * 1000, Period: 1, Stack: stack, CPU: -1, PID: -1, TID: tid, Event: ev})
}

// entry adds an entry of f called from depth-1 frames (so its stack has
// depth frames); ret a return, whose stack is its caller's.
func (f *fixture) entry(tid int32, us int64, depth int) { f.add(f.pair.Entry, tid, us, f.stack(depth)) }
func (f *fixture) ret(tid int32, us int64, depth int)   { f.add(f.pair.Return, tid, us, f.stack(depth)) }
func (f *fixture) sample(tid int32, us int64)           { f.add(f.cpu, tid, us, f.stack(2)) }

// span is a Span in µs.
func span(tid int32, startUs, endUs int64, depth int) spans.Span {
	return spans.Span{TID: tid, StartNanos: startUs * 1000, EndNanos: endUs * 1000, Depth: depth}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		build                func(f *fixture)
		noStacks             bool // pair by time alone (nil Dict)
		want                 []spans.Span
		unmatchedE, unmatchR int
	}{
		{
			name: "sequential calls",
			build: func(f *fixture) {
				f.entry(1, 10, 3)
				f.sample(1, 12)
				f.ret(1, 20, 2)
				f.entry(1, 30, 3)
				f.ret(1, 45, 2)
			},
			want: []spans.Span{span(1, 10, 20, 0), span(1, 30, 45, 0)},
		},
		{
			name: "nested call",
			build: func(f *fixture) {
				f.entry(1, 0, 3)
				f.entry(1, 10, 5) // called from inside the first: deeper stack
				f.ret(1, 20, 4)
				f.ret(1, 50, 2)
			},
			want: []spans.Span{span(1, 0, 50, 0), span(1, 10, 20, 1)},
		},
		{
			name: "recursion three deep",
			build: func(f *fixture) {
				f.entry(1, 0, 3)
				f.entry(1, 1, 4)
				f.entry(1, 2, 5)
				f.ret(1, 3, 4)
				f.ret(1, 4, 3)
				f.ret(1, 5, 2)
			},
			want: []spans.Span{span(1, 0, 5, 0), span(1, 1, 4, 1), span(1, 2, 3, 2)},
		},
		{
			name: "return without entry",
			build: func(f *fixture) {
				f.ret(1, 5, 2)
				f.entry(1, 10, 3)
				f.ret(1, 20, 2)
				f.ret(1, 25, 2)
			},
			want:     []spans.Span{span(1, 10, 20, 0)},
			unmatchR: 2,
		},
		{
			name: "entry never returned",
			build: func(f *fixture) {
				f.entry(1, 10, 3)
				f.ret(1, 20, 2)
				f.entry(1, 30, 3)
			},
			want:       []spans.Span{span(1, 10, 20, 0)},
			unmatchedE: 1,
		},
		{
			// The return of the call at 0 was lost: the call at 10 has the
			// same stack depth, so it cannot be nested in it.
			name: "lost return seen by stack depth",
			build: func(f *fixture) {
				f.entry(1, 0, 3)
				f.entry(1, 10, 3)
				f.ret(1, 20, 2)
				f.ret(1, 30, 2)
			},
			want:       []spans.Span{span(1, 10, 20, 0)},
			unmatchedE: 1,
			unmatchR:   1,
		},
		{
			// The same events paired by time alone: nesting is assumed.
			name: "lost return without stacks",
			build: func(f *fixture) {
				f.entry(1, 0, 3)
				f.entry(1, 10, 3)
				f.ret(1, 20, 2)
				f.ret(1, 30, 2)
			},
			noStacks: true,
			want:     []spans.Span{span(1, 0, 30, 0), span(1, 10, 20, 1)},
		},
		{
			name: "threads interleaved in time",
			build: func(f *fixture) {
				f.entry(1, 0, 3)
				f.entry(2, 5, 3)
				f.ret(1, 10, 2) // closes thread 1's call, not thread 2's
				f.entry(1, 12, 3)
				f.ret(2, 15, 2)
				f.ret(1, 30, 2)
				f.ret(2, 31, 2) // thread 2 has nothing open
			},
			want:     []spans.Span{span(1, 0, 10, 0), span(1, 12, 30, 0), span(2, 5, 15, 0)},
			unmatchR: 1,
		},
		{
			// Two CPUs' buffers: the file is not in time order, the return
			// comes before its entry.
			name: "file order is not time order",
			build: func(f *fixture) {
				f.entry(1, 30, 3)
				f.ret(1, 20, 2)
				f.ret(1, 40, 2)
				f.entry(1, 10, 3)
			},
			want: []spans.Span{span(1, 10, 20, 0), span(1, 30, 40, 0)},
		},
		{
			name: "probes without a thread or a time",
			build: func(f *fixture) {
				f.entry(-1, 0, 3)
				f.ret(-1, 10, 2)
				f.entry(1, 20, 3)
				f.samples = append(f.samples, fleetscope.Sample{TimeNanos: fleetscope.NoTime, TID: 1, Event: f.pair.Return})
				f.ret(1, 30, 2)
			},
			want:       []spans.Span{span(1, 20, 30, 0)},
			unmatchedE: 1,
			unmatchR:   2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			tc.build(f)
			d := f.d
			if tc.noStacks {
				d = nil
			}
			set := spans.Match(f.samples, f.pair, d)
			if !reflect.DeepEqual(set.Spans, tc.want) {
				t.Errorf("spans\n got %v\nwant %v", set.Spans, tc.want)
			}
			if set.UnmatchedEntries != tc.unmatchedE || set.UnmatchedReturns != tc.unmatchR {
				t.Errorf("unmatched entries %d, returns %d; want %d, %d", set.UnmatchedEntries, set.UnmatchedReturns, tc.unmatchedE, tc.unmatchR)
			}
			if set.Unmatched() != tc.unmatchedE+tc.unmatchR {
				t.Errorf("Unmatched() = %d", set.Unmatched())
			}
		})
	}
}

func TestFindPair(t *testing.T) {
	perfEvents := []string{"probe_reqsim:handle_request", "probe_reqsim:handle_request__return", "cpu-clock"}
	for _, tc := range []struct {
		name         string
		events       []string
		entry, ret   string
		wantE, wantR string
		wantErr      string // a part of the error message
	}{
		{name: "perf uprobes", events: perfEvents, wantE: "probe_reqsim:handle_request", wantR: "probe_reqsim:handle_request__return"},
		{name: "modifiers", events: []string{"cpu-clock:pppH", "probe_x:f__return:u", "probe_x:f:u"}, wantE: "probe_x:f:u", wantR: "probe_x:f__return:u"},
		{name: "modifiers on the entry only", events: []string{"probe_x:f__return", "probe_x:f:u"}, entry: "probe_x:f:u", wantE: "probe_x:f:u", wantR: "probe_x:f__return"},
		{name: "function named like modifiers", events: []string{"probe_x:Hub", "probe_x:Hub__return"}, wantE: "probe_x:Hub", wantR: "probe_x:Hub__return"},
		{name: "no group", events: []string{"f", "cpu-clock", "f__return"}, wantE: "f", wantR: "f__return"},
		{name: "explicit names", events: []string{"a", "b", "cpu-clock"}, entry: "a", ret: "b", wantE: "a", wantR: "b"},
		{name: "explicit names without modifiers", events: []string{"probe_x:f:u", "probe_x:f__return:u"}, entry: "probe_x:f", ret: "probe_x:f__return", wantE: "probe_x:f:u", wantR: "probe_x:f__return:u"},
		{name: "entry only", events: perfEvents, entry: "probe_reqsim:handle_request", wantE: "probe_reqsim:handle_request", wantR: "probe_reqsim:handle_request__return"},
		{name: "return only", events: perfEvents, ret: "probe_reqsim:handle_request__return", wantE: "probe_reqsim:handle_request", wantR: "probe_reqsim:handle_request__return"},
		{name: "explicit wins over detection", events: []string{"f", "f__return", "g", "g__return"}, entry: "g", ret: "g__return", wantE: "g", wantR: "g__return"},
		{name: "two pairs", events: []string{"f", "f__return", "g", "g__return"}, wantErr: "several entry/return event pairs (f / f__return, g / g__return)"},
		{name: "no pair", events: []string{"cpu-clock", "probe_x:f"}, wantErr: `among the events "cpu-clock", "probe_x:f"`},
		{name: "return without its entry", events: []string{"cpu-clock", "probe_x:f__return"}, wantErr: "no entry/return event pair"},
		{name: "unknown explicit", events: perfEvents, entry: "nope", ret: "probe_reqsim:handle_request__return", wantErr: `no entry event "nope" among the events "probe_reqsim:handle_request"`},
		{name: "same event", events: perfEvents, entry: "cpu-clock", ret: "cpu-clock", wantErr: "same event"},
		{name: "return only, not __return", events: perfEvents, ret: "cpu-clock", wantErr: "does not end in __return"},
		{name: "no events", events: nil, wantErr: "(none)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := spans.FindPair(tc.events, tc.entry, tc.ret)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if code := fleetscope.ErrorCode(err); code != fleetscope.EINVALID {
					t.Errorf("error code %s, want %s", code, fleetscope.EINVALID)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.EntryName != tc.wantE || p.ReturnName != tc.wantR {
				t.Errorf("pair %q / %q, want %q / %q", p.EntryName, p.ReturnName, tc.wantE, tc.wantR)
			}
			if tc.events[p.Entry] != p.EntryName || tc.events[p.Return] != p.ReturnName {
				t.Errorf("ids %d, %d do not name %q, %q", p.Entry, p.Return, p.EntryName, p.ReturnName)
			}
		})
	}
}
