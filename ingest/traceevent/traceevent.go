// Package traceevent reads the CPU samples of Chrome's Trace Event format
// (a JSON array of events, or an object with "traceEvents"): the V8 CPU
// profiles a trace carries as a "Profile" event and its "ProfileChunk"
// events (incremental node lists, samples and time deltas) per process and
// profile id, and the older single "CpuProfile" event. Every profile in the
// trace becomes part of one fleetscope profile, its stacks rooted at a frame
// naming its process and thread; Options pick one. Other trace events are
// read past. It owns parsing only: no storage, no detection of other
// formats.
package traceevent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/internal/batch"
	"github.com/fleetscope/fleetscope/ingest/internal/v8"
)

// Event is the name of the one event of a trace's CPU samples.
const Event = "cpu"

// Options choose which profiles of a trace to read. Zero values read all.
type Options struct {
	PID string // only profiles of this process id
	TID string // only profiles of this (sampled) thread id
}

// ParseOptions reads options given as "pid=N" and "tid=N" (in
// `--input-format traceevent:pid=N,tid=N`). Returns EINVALID for others.
func ParseOptions(kv map[string]string) (Options, error) {
	var o Options
	for k, v := range kv {
		if _, err := strconv.ParseInt(v, 10, 64); err != nil && (k == "pid" || k == "tid") {
			return o, fleetscope.Errorf(fleetscope.EINVALID, "traceevent option %s=%q: not a number", k, v)
		}
		switch k {
		case "pid":
			o.PID = v
		case "tid":
			o.TID = v
		default:
			return o, fleetscope.Errorf(fleetscope.EINVALID, "traceevent has no option %q (it takes pid=N and tid=N)", k)
		}
	}
	return o, nil
}

// Parse reads every CPU profile of a trace (see Options.Parse).
func Parse(r io.Reader, sink func(*fleetscope.Profile, []fleetscope.Sample) error) (*fleetscope.Profile, error) {
	return Options{}.Parse(r, sink)
}

// Parse reads a trace and streams the samples of the chosen profiles to
// sink: profile by profile, in the order their first events appear, each
// in sample order. The trace is read as a stream: a scanner cuts it into
// events and only those that may matter (profile events, process and
// thread names) are decoded; but process and thread names (metadata events)
// may come anywhere, even last, so each chosen profile's node table and its
// samples (16 bytes each) are held until the end of the trace. A sample's
// time is its profile's startTime plus the running sum of its time deltas
// (V8's monotonic clock, µs, held in ns). Meta["profiles"] lists the
// profiles found with their sample counts.
//
// A JSON array trace may lack its closing bracket, as the format allows.
// Samples of nodes the trace never defines (a ring buffer that dropped
// early chunks) are left out with a warning. Returns EINVALID, naming the
// byte offset, for input that is not a trace, and when the trace holds no
// CPU samples (or none of the chosen profile, listing those there are).
func (o Options) Parse(r io.Reader, sink func(*fleetscope.Profile, []fleetscope.Sample) error) (*fleetscope.Profile, error) {
	p := batch.NewProfile("traceevent")
	t := &trace{opts: o, byKey: map[string]*profile{}, procs: map[string]string{}, threads: map[[2]string]string{}}
	if err := t.read(r); err != nil {
		return p, err
	}
	return p, t.emit(p, sink)
}

// profile is one V8 CPU profile of the trace.
type profile struct {
	pid, tid  string // tid of the sampled thread
	tree      *v8.Tree
	samples   []sample
	now       int64 // time of the last sample, ns
	haveStart bool
	unknown   int // samples of undefined nodes
}

type sample struct {
	node int64
	t    int64
}

type trace struct {
	opts     Options
	profiles []*profile
	byKey    map[string]*profile // pid/id -> the latest profile with that id
	procs    map[string]string   // pid -> process name
	threads  map[[2]string]string
	events   int
	cutOff   bool // the input ended inside the last event
}

// event is the part of a trace event this reader looks at.
type event struct {
	Name string                          `json:"name"`
	Ph   string                          `json:"ph"`
	Pid  jsonID                          `json:"pid"`
	Tid  jsonID                          `json:"tid"`
	ID   jsonID                          `json:"id"`
	ID2  *struct{ Local, Global jsonID } `json:"id2"`
	Ts   *v8.Micros                      `json:"ts"`
	Args json.RawMessage                 `json:"args"`
}

// jsonID is a JSON number or string, kept as text.
type jsonID string

func (j *jsonID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*j = jsonID(s)
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	*j = jsonID(b)
	return nil
}

type profileArgs struct {
	Data struct {
		StartTime  *v8.Micros `json:"startTime"`
		CPUProfile struct {
			Nodes      []v8.Node   `json:"nodes"`
			Samples    []int64     `json:"samples"`
			StartTime  *v8.Micros  `json:"startTime"`
			TimeDeltas []v8.Micros `json:"timeDeltas"`
		} `json:"cpuProfile"`
		TimeDeltas []v8.Micros `json:"timeDeltas"`
	} `json:"data"`
}

type nameArgs struct {
	Name string `json:"name"`
}

// skip reads past one JSON value (for Detect).
func skip(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '[' || d == '{' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

func (t *trace) event(ev *event) error {
	switch {
	case ev.Ph == "M" && ev.Name == "process_name":
		var a nameArgs
		if json.Unmarshal(ev.Args, &a) == nil && a.Name != "" {
			t.procs[string(ev.Pid)] = a.Name
		}
	case ev.Ph == "M" && ev.Name == "thread_name":
		var a nameArgs
		if json.Unmarshal(ev.Args, &a) == nil && a.Name != "" {
			t.threads[[2]string{string(ev.Pid), string(ev.Tid)}] = a.Name
		}
	case ev.Name == "Profile", ev.Name == "ProfileChunk", ev.Name == "CpuProfile":
		var a profileArgs
		if err := json.Unmarshal(ev.Args, &a); err != nil {
			return fmt.Errorf("args: %v", err)
		}
		return t.profileEvent(ev, &a)
	}
	return nil
}

func (ev *event) id() string {
	switch {
	case ev.ID != "":
		return string(ev.ID)
	case ev.ID2 != nil && ev.ID2.Local != "":
		return string(ev.ID2.Local)
	case ev.ID2 != nil:
		return string(ev.ID2.Global)
	}
	return ""
}

func (t *trace) profileEvent(ev *event, a *profileArgs) error {
	key := string(ev.Pid) + "/" + ev.id()
	pr := t.byKey[key]
	switch ev.Name {
	case "Profile", "CpuProfile":
		// A new profile; a repeated id starts another one.
		pr = &profile{pid: string(ev.Pid), tid: string(ev.Tid), tree: v8.NewTree()}
		if ev.Name == "CpuProfile" {
			key += "/cpuprofile " + strconv.Itoa(t.events)
		}
		t.byKey[key] = pr
		t.profiles = append(t.profiles, pr)
		start := a.Data.StartTime
		if start == nil {
			start = a.Data.CPUProfile.StartTime
		}
		if start == nil {
			start = ev.Ts
		}
		if start != nil {
			pr.now, pr.haveStart = int64(*start), true
		}
	case "ProfileChunk":
		if pr == nil { // chunks without their Profile event
			pr = &profile{pid: string(ev.Pid), tree: v8.NewTree()}
			t.byKey[key] = pr
			t.profiles = append(t.profiles, pr)
		}
		if !pr.haveStart && ev.Ts != nil {
			pr.now, pr.haveStart = int64(*ev.Ts), true
		}
	}
	cp := &a.Data.CPUProfile
	deltas := a.Data.TimeDeltas
	if deltas == nil {
		deltas = cp.TimeDeltas
	}
	if len(deltas) != len(cp.Samples) {
		return fmt.Errorf("%d time deltas for %d samples: they must pair up", len(deltas), len(cp.Samples))
	}
	keep := t.chosen(pr)
	if keep {
		for i := range cp.Nodes {
			if err := pr.tree.Add(&cp.Nodes[i]); err != nil {
				return err
			}
		}
	}
	for i, id := range cp.Samples {
		var ok bool
		if pr.now, ok = v8.Add(pr.now, int64(deltas[i])); !ok {
			return fmt.Errorf("timeDeltas[%d]: the time overflows", i)
		}
		if keep {
			pr.samples = append(pr.samples, sample{node: id, t: pr.now})
		}
	}
	return nil
}

// chosen reports whether the options keep pr (a profile whose thread is
// not known yet is kept until the end, when it is dropped if a tid was
// asked for).
func (t *trace) chosen(pr *profile) bool {
	return (t.opts.PID == "" || t.opts.PID == pr.pid) && (t.opts.TID == "" || pr.tid == "" || t.opts.TID == pr.tid)
}

// root names a profile's process and thread: "Renderer[13392]/CrRendererMain"
// (the thread id follows the thread name when it differs from the pid).
func (t *trace) root(pr *profile) string {
	proc := t.procs[pr.pid]
	if proc == "" {
		proc = "process"
	}
	s := proc + "[" + pr.pid + "]"
	if pr.tid == "" {
		return s
	}
	thread := t.threads[[2]string{pr.pid, pr.tid}]
	switch {
	case thread == "":
		return s + "/thread[" + pr.tid + "]"
	case pr.tid != pr.pid:
		return s + "/" + thread + "[" + pr.tid + "]"
	}
	return s + "/" + thread
}

func (t *trace) emit(p *fleetscope.Profile, sink func(*fleetscope.Profile, []fleetscope.Sample) error) error {
	d := p.Dict
	ev := d.Event(Event)
	w := batch.New(p, sink)
	var summary, found []string
	for _, pr := range t.profiles {
		name := t.root(pr)
		found = append(found, fmt.Sprintf("pid=%s,tid=%s (%s)", pr.pid, pr.tid, name))
		if !t.chosen(pr) || t.opts.TID != "" && pr.tid == "" || len(pr.samples) == 0 {
			continue
		}
		if !pr.haveStart {
			p.Warnings = append(p.Warnings, fmt.Sprintf("profile %s has no start time: its times count from 0", name))
		}
		root := d.Frame(fleetscope.Frame{Name: name})
		pid, tid := id32(pr.pid), id32(pr.tid)
		n := 0
		for _, s := range pr.samples {
			if !pr.tree.Has(s.node) {
				pr.unknown++
				continue
			}
			st, err := pr.tree.Stack(d, root, s.node)
			if err != nil {
				return fleetscope.Errorf(fleetscope.EINVALID, "traceevent: profile %s: %s", name, err.Error())
			}
			if err := w.Add(fleetscope.Sample{TimeNanos: s.t, Period: 1, Stack: st, CPU: -1, PID: pid, TID: tid, Event: ev}); err != nil {
				return err
			}
			n++
		}
		summary = append(summary, fmt.Sprintf("%s: %d samples", name, n))
		if pr.unknown > 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("profile %s: %d samples of nodes the trace does not define: left out", name, pr.unknown))
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if t.cutOff {
		p.Warnings = append(p.Warnings, fmt.Sprintf("the input ends inside event %d: that event is left out", t.events))
	}
	p.Meta["profiles"] = strings.Join(summary, "; ")
	p.Meta["trace_events"] = strconv.Itoa(t.events)
	if p.Samples == 0 {
		if t.opts != (Options{}) && len(found) > 0 {
			sort.Strings(found)
			return fleetscope.Errorf(fleetscope.EINVALID, "traceevent: no CPU samples in the chosen profile (pid=%s tid=%s); the trace has: %s", t.opts.PID, t.opts.TID, strings.Join(found, "; "))
		}
		return fleetscope.Errorf(fleetscope.EINVALID, "traceevent: no CPU samples in this trace (%d events, no Profile/ProfileChunk samples: record with the disabled-by-default-v8.cpu_profiler category)", t.events)
	}
	return nil
}

func id32(s string) int32 {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return -1
	}
	return int32(v)
}

// Detect says how sure it is that head is a trace: an object whose first
// field is "traceEvents" is certain; an array whose first element is an
// object with trace event fields ("ph", "ts", "pid", ...) is likely.
func Detect(head []byte) int {
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(head) == 0 {
		return 0
	}
	dec := json.NewDecoder(bytes.NewReader(head))
	tok, err := dec.Token()
	if err != nil {
		return 0
	}
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return 0
			}
			switch key {
			case "traceEvents":
				if tok, err := dec.Token(); err == nil && tok == json.Delim('[') {
					return 90
				}
				return 0
			case "displayTimeUnit", "systemTraceEvents", "otherData", "metadata", "stackFrames", "samples", "controllerTraceDataKey", "powerTraceAsString":
			default:
				return 0
			}
			if skip(dec) != nil {
				return 0
			}
		}
	case json.Delim('['):
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return 0
		}
		fields := 0
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				break
			}
			switch key {
			case "ph":
				fields += 2
			case "name", "cat", "ts", "pid", "tid", "args", "dur", "id", "s", "tts":
				fields++
			default:
				return 0
			}
			if skip(dec) != nil {
				break
			}
		}
		if fields >= 3 {
			return 80
		}
	}
	return 0
}
