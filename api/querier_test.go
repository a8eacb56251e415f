package api

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/flame"
)

// TestProfileTypes: every event has one id, the id gives the event back,
// Pyroscope's ids for Go's sample types, escapes keep five parts; event
// names are accepted as ids; ids fleetscope never makes are refused.
func TestProfileTypes(t *testing.T) {
	for _, c := range []struct{ event, id string }{
		{"cpu", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"},
		{"samples", "process_cpu:samples:count:cpu:nanoseconds"},
		{"alloc_space", "memory:alloc_space:bytes:space:bytes"},
		{"inuse_objects", "memory:inuse_objects:count:space:bytes"},
		{"goroutine", "goroutines:goroutine:count:goroutine:count"},
		{"delay", "mutex:delay:nanoseconds:contentions:count"},
		{"cpu-clock", "fleetscope:cpu-clock:count:cpu-clock:count"},
		{"sched:sched_switch", "fleetscope:sched%3Asched_switch:count:sched%3Asched_switch:count"},
		{"odd%3A:x", "fleetscope:odd%253A%3Ax:count:odd%253A%3Ax:count"},
	} {
		pt := typeOf(c.event)
		if pt.ID() != c.id || len(strings.Split(pt.ID(), ":")) != 5 {
			t.Errorf("%s: id %q, want %q", c.event, pt.ID(), c.id)
		}
		e, back, err := eventOf(c.id)
		if err != nil || e != c.event || back != pt {
			t.Errorf("%s: the id %q gives %q %+v %v", c.event, c.id, e, back, err)
		}
		p := pt.proto()
		if p.GetID() != c.id || p.GetName()+":"+p.GetSampleType()+":"+p.GetSampleUnit()+":"+p.GetPeriodType()+":"+p.GetPeriodUnit() != c.id {
			t.Errorf("%s: %+v", c.event, p)
		}
	}
	for id, event := range map[string]string{"cpu-clock": "cpu-clock", "cpu-clock:pppH": "cpu-clock", "cpu": "cpu", "sched:sched_switch": "sched:sched_switch"} {
		if e, _, err := eventOf(id); err != nil || e != event {
			t.Errorf("event name %q: %q %v, want %q", id, e, err, event)
		}
	}
	for _, id := range []string{"", "block:contentions:count:contentions:count", "fleetscope:cpu:count:cpu:count",
		"fleetscope:a:count:b:count", "fleetscope::count::count", "fleetscope:a:bytes:a:count", "fleetscope:a%3a:count:a%3a:count"} {
		if _, _, err := eventOf(id); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
			t.Errorf("id %q: %v, want EINVALID", id, err)
		}
	}
}

// decodeFlamebearer reads a Pyroscope flame graph back as Grafana's data
// source does (levels to tree: a node's parent is the node of the level
// above whose span holds it), as path -> [value, self]; it fails on a
// node outside every parent or on a self value that does not add up.
func decodeFlamebearer(t *testing.T, fg *querierv1.FlameGraph) map[string][2]int64 {
	t.Helper()
	type node struct {
		path        string
		start, end  int64
		value, self int64
	}
	out := map[string][2]int64{}
	var above []node
	for li, lv := range fg.GetLevels() {
		vs := lv.GetValues()
		if len(vs)%4 != 0 {
			t.Fatalf("level %d: %d numbers", li, len(vs))
		}
		var here []node
		end, p := int64(0), 0
		for i := 0; i < len(vs); i += 4 {
			n := node{start: end + vs[i], value: vs[i+1], self: vs[i+2]}
			n.end = n.start + n.value
			name := fg.GetNames()[vs[i+3]]
			if li == 0 {
				n.path = name
			} else {
				for p < len(above) && !(n.start >= above[p].start && n.end <= above[p].end) {
					p++
				}
				if p == len(above) {
					t.Fatalf("level %d: node %q [%d, %d) lies in no parent", li, name, n.start, n.end)
				}
				n.path = above[p].path + ";" + name
			}
			end = n.end
			here = append(here, n)
			if _, dup := out[n.path]; dup {
				t.Fatalf("node %q twice", n.path)
			}
			out[n.path] = [2]int64{n.value, n.self}
		}
		above = here
	}
	return out
}

// TestFlamebearer: random flame graphs, encoded in Pyroscope's format and
// read back as Grafana reads it, are the same tree, values and self values,
// "total" at the root.
func TestFlamebearer(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"main", "a", "b", "total", "c", "x;y"}
	for round := range 40 {
		d := fleetscope.NewDict()
		values := make([]uint64, 0)
		for range 1 + r.IntN(40) {
			fs := []fleetscope.FrameID{d.Frame(fleetscope.Frame{Name: "app"})}
			for range r.IntN(6) {
				fs = append(fs, d.Frame(fleetscope.Frame{Name: names[r.IntN(len(names))]}))
			}
			id := d.Stack(fs)
			for int(id) >= len(values) {
				values = append(values, 0)
			}
			values[id] += uint64(r.IntN(9))
		}
		f := flame.NewLayout(d, flame.Annotate{}).Flat(flame.CountsOf(values))
		if round%3 == 0 {
			f = f.Truncate(1 + r.IntN(6))
		}
		fg := flamebearer(f)
		want := map[string][2]int64{}
		var paths []string
		for i := range f.Name {
			name := f.Names[f.Name[i]]
			if i == 0 {
				name = "total"
			}
			paths = append(paths[:f.Depth[i]], name)
			self := int64(f.Value[i])
			for j := i + 1; j < len(f.Name) && f.Depth[j] > f.Depth[i]; j++ {
				if f.Depth[j] == f.Depth[i]+1 {
					self -= int64(f.Value[j])
				}
			}
			want[strings.Join(paths, ";")] = [2]int64{int64(f.Value[i]), self}
			if self > fg.GetMaxSelf() {
				t.Fatalf("round %d: max_self %d < %d", round, fg.GetMaxSelf(), self)
			}
		}
		got := decodeFlamebearer(t, fg)
		if !maps.Equal(got, want) || fg.GetTotal() != int64(f.Value[0]) || fg.GetNames()[0] != "total" {
			t.Fatalf("round %d: decoded %v (total %d), want %v", round, got, fg.GetTotal(), want)
		}
	}
	empty := flamebearer(flame.Merge())
	if fmt.Sprint(empty.GetNames(), empty.GetLevels()[0].GetValues(), empty.GetTotal()) != "[total] [0 0 0 0] 0" {
		t.Fatalf("empty flame graph: %v", empty)
	}
}

// TestSeriesPoints: answers up to MaxSeriesPoints points pass; beyond,
// ETOOLARGE names a limit and a step, and the step it names makes the
// series fit however the columns are laid out (from the window's first
// second, or for steps of a minute or more from a whole minute's).
func TestSeriesPoints(t *testing.T) {
	if err := checkSeriesPoints(100, 1000, 2); err != nil {
		t.Errorf("100 series of 1,000 points: %v", err)
	}
	for _, c := range []struct {
		n, columns int
		spc        int64
	}{{101, 1000, 2}, {3000, 1000, 2592}, {4000, 30, 86400}, {100_001, 1, 60}, {60_000, 2, 1}, {1001, 100, 1}} {
		err := checkSeriesPoints(c.n, c.columns, c.spc)
		if fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE || !strings.Contains(err.Error(), "narrow the selector") {
			t.Fatalf("%+v: %v", c, err)
		}
		var most int
		if i := strings.Index(err.Error(), "a limit of at most "); i >= 0 {
			fmt.Sscanf(err.Error()[i:], "a limit of at most %d series", &most)
			if most*c.columns > MaxSeriesPoints || (most+1)*c.columns <= MaxSeriesPoints {
				t.Errorf("%+v: a limit of %d", c, most)
			}
		} else if c.columns <= MaxSeriesPoints {
			t.Errorf("%+v: no limit named: %v", c, err)
		}
		var step int64
		if i := strings.Index(err.Error(), "widen the step to at least "); i >= 0 {
			fmt.Sscanf(err.Error()[i:], "widen the step to at least %d s", &step)
			window := int64(c.columns) * c.spc
			for first := int64(0); first < 120; first += 7 {
				spc, start := step, first
				if spc >= 60 {
					spc = (spc + 59) / 60 * 60
					start = first / spc * spc
				}
				if cols := (first + window - start + spc - 1) / spc; int64(c.n)*cols > MaxSeriesPoints {
					t.Errorf("%+v: a step of %d s makes %d columns of %d series", c, step, cols, c.n)
				}
			}
		} else if c.n <= MaxSeriesPoints/2 {
			t.Errorf("%+v: no step named: %v", c, err)
		}
	}
}
