package otlp

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	collpb "go.opentelemetry.io/proto/slim/otlp/collector/profiles/v1development"
	pb "go.opentelemetry.io/proto/slim/otlp/profiles/v1development"

	"github.com/fleetscope/fleetscope"
)

// Bounds of one request, beyond its size in bytes (the server's upload
// bounds): what the conversion holds in memory is bounded by them.
const (
	// MaxSamples bounds the perf samples one request becomes (a timestamp
	// is a sample; a count value of N at a timestamp is N samples).
	MaxSamples = 2_000_000
	// MaxAttributes bounds the attributes of one resource, profile or
	// sample.
	MaxAttributes = 64
	// MaxLabels bounds the labels of one sample (its attributes that are
	// not the process, thread or CPU).
	MaxLabels = 16
	// MaxBatches bounds the distinct (app, host, labels) of one request:
	// each is a stream, and a label of unbounded cardinality would make a
	// stream per value. A gateway Collector's batches hold many hosts.
	MaxBatches = 1024
	// MaxCount bounds a "count" value at one timestamp.
	MaxCount = 10_000
	// MaxText bounds the perf script text one request becomes (a few
	// timestamps of a deep stack are small on the wire and large as
	// text): what the conversion holds, and the stream stores.
	MaxText = 128 << 20
)

// Batch is the part of a request for one (app, host, labels): perf script
// text whose samples are in time order.
type Batch struct {
	App, Host string
	Labels    map[string]string
	Text      []byte
	Samples   int
	// MinNanos and MaxNanos are the first and last sample's time.
	MinNanos, MaxNanos int64
}

// Result is a request converted: its batches, in a fixed order (by app,
// host and labels), and the profiles refused, with why.
type Result struct {
	Batches  []*Batch
	Profiles int      // profiles in the request
	Rejected int      // of which refused
	Reasons  []string // why, the first few
}

// record is n perf samples at one time: their header up to the time
// ("COMM PID/TID [CPU]"), period, event and stack lines.
type record struct {
	t     int64
	n     int
	per   int64
	head  string
	event string
	stack []byte
}

type batchKey struct{ app, host, labels string }

// Convert turns an export request into batches of perf script text. A
// request that is malformed (an index out of range, a name that is not
// text, too many attributes, samples or distinct label sets) is EINVALID
// as a whole; a profile fleetscope cannot store (samples without
// timestamps, timestamps outside the profile's span, values that do not
// match the timestamps) is refused alone and counted in Rejected.
func Convert(req *collpb.ExportProfilesServiceRequest) (*Result, error) {
	d := dict{req.GetDictionary()}
	res := &Result{}
	for _, rp := range req.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			res.Profiles += len(sp.GetProfiles())
		}
	}
	if res.Profiles == 0 {
		return res, nil
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	c := &converter{d: d, stacks: map[int32][]byte{}, locs: map[int32][]byte{}, batches: map[batchKey][]record{}, labels: map[batchKey]map[string]string{}}
	for ri, rp := range req.GetResourceProfiles() {
		rattrs, err := d.resourceAttrs(rp.GetResource().GetAttributes())
		if err != nil {
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "resource_profiles[%d]: %s", ri, fleetscope.ErrorMessage(err))
		}
		for si, sp := range rp.GetScopeProfiles() {
			for pi, p := range sp.GetProfiles() {
				where := fmt.Sprintf("resource_profiles[%d].scope_profiles[%d].profiles[%d]", ri, si, pi)
				recs, refused, err := c.profile(where, rattrs, p)
				if err != nil {
					return nil, err
				}
				if refused != "" {
					res.Rejected++
					if len(res.Reasons) < 3 {
						res.Reasons = append(res.Reasons, where+": "+refused)
					}
					continue
				}
				for k, rs := range recs {
					c.batches[k] = append(c.batches[k], rs...)
				}
				if len(c.batches) > MaxBatches {
					return nil, fleetscope.Errorf(fleetscope.EINVALID, "more than %d distinct (service, host, labels) in one request: a sample attribute of unbounded cardinality? (see docs/opentelemetry.md)", MaxBatches)
				}
			}
		}
	}
	keys := slices.SortedFunc(maps.Keys(c.batches), func(a, b batchKey) int {
		return strings.Compare(a.app+"\x00"+a.host+"\x00"+a.labels, b.app+"\x00"+b.host+"\x00"+b.labels)
	})
	for _, k := range keys {
		rs := c.batches[k]
		slices.SortStableFunc(rs, func(a, b record) int { return cmpInt(a.t, b.t) })
		b := &Batch{App: k.app, Host: k.host, Labels: c.labels[k], MinNanos: rs[0].t, MaxNanos: rs[len(rs)-1].t}
		size := 0
		for _, r := range rs {
			size += r.n * (len(r.head) + len(r.event) + len(r.stack) + 48)
			b.Samples += r.n
		}
		b.Text = make([]byte, 0, size)
		for _, r := range rs {
			for range r.n {
				b.Text = r.append(b.Text)
			}
		}
		res.Batches = append(res.Batches, b)
	}
	return res, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// converter holds what one request's profiles share: the dictionary, the
// stacks rendered so far, and the samples so far by batch.
type converter struct {
	d       dict
	stacks  map[int32][]byte // stack_table index: its perf stack lines
	locs    map[int32][]byte // location_table index: its perf stack line
	batches map[batchKey][]record
	labels  map[batchKey]map[string]string
	samples int
	text    int // bytes of perf script text so far
}

// profile converts one profile: its samples' records by batch, or why it
// is refused, or an error refusing the whole request.
func (c *converter) profile(where string, rattrs map[string]string, p *pb.Profile) (map[batchKey][]record, string, error) {
	event, err := c.event(p.GetSampleType())
	if err != nil {
		return nil, "", fleetscope.Errorf(fleetscope.EINVALID, "%s: %s", where, fleetscope.ErrorMessage(err))
	}
	unit, err := c.d.str(p.GetSampleType().GetUnitStrindex())
	if err != nil {
		return nil, "", fleetscope.Errorf(fleetscope.EINVALID, "%s.sample_type: %s", where, fleetscope.ErrorMessage(err))
	}
	pattrs := maps.Clone(rattrs)
	if err := c.d.attrs(where, p.GetAttributeIndices(), pattrs); err != nil {
		return nil, "", err
	}
	start := int64(p.GetTimeUnixNano())
	end := start + int64(p.GetDurationNano())
	if p.GetTimeUnixNano() > fleetscope.MaxTimeNanos || p.GetDurationNano() > fleetscope.MaxTimeNanos || end > fleetscope.MaxTimeNanos {
		return nil, fmt.Sprintf("time_unix_nano %d and duration_nano %d lie outside 1970 to 2100", p.GetTimeUnixNano(), p.GetDurationNano()), nil
	}
	period := max(p.GetPeriod(), 1)
	out := map[batchKey][]record{}
	type keyed struct {
		key  batchKey
		head string
	}
	byAttrs := map[string]keyed{} // a sample's attribute indices: its batch and header
	var idx []byte
	for si, s := range p.GetSamples() {
		swhere := func() string { return fmt.Sprintf("%s.samples[%d]", where, si) }
		ts, vals := s.GetTimestampsUnixNano(), s.GetValues()
		switch {
		case len(ts) == 0:
			return nil, fmt.Sprintf("sample %d has no timestamps_unix_nano: fleetscope stores timed samples only (each sample's own time)", si), nil
		case len(vals) > 0 && len(vals) != len(ts):
			return nil, fmt.Sprintf("sample %d has %d values and %d timestamps: values must match timestamps one for one", si, len(vals), len(ts)), nil
		}
		idx = idx[:0]
		for _, i := range s.GetAttributeIndices() {
			idx = binary.AppendVarint(idx, int64(i))
		}
		kh, ok := byAttrs[string(idx)]
		if !ok {
			sattrs := maps.Clone(pattrs)
			if err := c.d.attrs(swhere(), s.GetAttributeIndices(), sattrs); err != nil {
				return nil, "", err
			}
			key, head, err := c.sampleKey(swhere(), sattrs)
			if err != nil {
				return nil, "", err
			}
			kh = keyed{key, head}
			byAttrs[string(idx)] = kh
		}
		stack, err := c.stack(s.GetStackIndex())
		if err != nil {
			return nil, "", fleetscope.Errorf(fleetscope.EINVALID, "%s: %s", swhere(), fleetscope.ErrorMessage(err))
		}
		for j, t := range ts {
			if t > fleetscope.MaxTimeNanos || (start != 0 || end != 0) && (int64(t) < start || int64(t) > end) {
				return nil, fmt.Sprintf("sample %d's timestamp %d (%s) lies outside the profile's span [%s, %s]", si, t,
					fleetscope.FormatTime(int64(t)), fleetscope.FormatTime(start), fleetscope.FormatTime(end)), nil
			}
			n, per := 1, period
			if len(vals) > 0 {
				v := vals[j]
				switch {
				case v < 0:
					return nil, fmt.Sprintf("sample %d has a negative value %d", si, v), nil
				case v == 0:
					continue
				case unit == "count" || unit == "":
					if v > MaxCount {
						return nil, fmt.Sprintf("sample %d counts %d at one timestamp: at most %d", si, v, MaxCount), nil
					}
					n = int(v)
				default: // nanoseconds, bytes, ...: a weight
					per = v
				}
			}
			if c.samples += n; c.samples > MaxSamples {
				return nil, "", fleetscope.Errorf(fleetscope.EINVALID, "the request holds more than %d samples: send smaller exports", MaxSamples)
			}
			if c.text += n * (len(kh.head) + len(event) + len(stack) + 48); c.text > MaxText {
				return nil, "", fleetscope.Errorf(fleetscope.ETOOLARGE, "the request's samples come to more than %d MiB of perf script text: send smaller exports (the Collector's batch size)", MaxText>>20)
			}
			out[kh.key] = append(out[kh.key], record{t: int64(t), n: n, per: per, head: kh.head, event: event, stack: stack})
		}
	}
	return out, "", nil
}

// append appends one perf sample of r:
// "COMM PID/TID [CPU] SECONDS.NANOSECONDS: PERIOD EVENT:", its stack
// lines and a blank line.
func (r *record) append(b []byte) []byte {
	b = append(b, r.head...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, r.t/1e9, 10)
	b = append(b, '.')
	frac := r.t % 1e9
	for d := int64(1e8); d > 1 && frac < d; d /= 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, frac, 10)
	b = append(b, ": "...)
	b = strconv.AppendInt(b, r.per, 10)
	b = append(b, ' ')
	b = append(b, r.event...)
	b = append(b, ":\n"...)
	b = append(b, r.stack...)
	return append(b, '\n')
}

// event is the perf event name of a sample type: its type, which must be
// a word perf script could print ("cpu", "samples", "cpu-clock",
// "probe_app:handle_request").
func (c *converter) event(st *pb.ValueType) (string, error) {
	name, err := c.d.str(st.GetTypeStrindex())
	if err != nil {
		return "", err
	}
	if name == "" {
		return "samples", nil
	}
	if len(name) > 100 || strings.ContainsFunc(name, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-' || r == '.' || r == ':')
	}) {
		return "", fleetscope.Errorf(fleetscope.EINVALID, "sample type %.100q: an event name is 1-100 of A-Z a-z 0-9 _ - . :", name)
	}
	return name, nil
}

// sampleKey returns a sample's batch (its app, host and labels) and its
// perf header up to the time: "COMM PID/TID [CPU]".
func (c *converter) sampleKey(where string, a map[string]string) (batchKey, string, error) {
	app := a[attrService]
	if app == "" {
		app = "unknown_service"
		if exe := a[attrExe]; exe != "" {
			app += ":" + exe
		}
	}
	host := a[attrHostName]
	if host == "" {
		host = a[attrHostID]
	}
	labels := map[string]string{}
	for k, v := range a {
		if k == attrService || k == attrHostName || k == attrHostID || k == attrCPU ||
			strings.HasPrefix(k, "process.") || strings.HasPrefix(k, "thread.") || strings.HasPrefix(k, "host.") || strings.HasPrefix(k, "service.") {
			continue
		}
		labels[k] = v
	}
	if len(labels) > MaxLabels {
		return batchKey{}, "", fleetscope.Errorf(fleetscope.EINVALID, "%s has %d labels: at most %d", where, len(labels), MaxLabels)
	}
	if err := fleetscope.CheckProfileMeta(app, host, labels); err != nil {
		return batchKey{}, "", fleetscope.Errorf(fleetscope.EINVALID, "%s: %s", where, fleetscope.ErrorMessage(err))
	}
	k := batchKey{app: app, host: host, labels: fleetscope.FormatLabels(labels)}
	if _, ok := c.labels[k]; !ok {
		c.labels[k] = labels
	}
	comm := a[attrThread]
	if comm == "" {
		comm = a[attrExe]
	}
	if comm == "" {
		comm = "[unknown]"
	}
	comm = strings.Map(func(r rune) rune { // as pname shows it: spaces as underscores
		if r == ' ' || r == '\t' {
			return '_'
		}
		return r
	}, comm)
	if comm[0] == '#' { // perf script's comment lines start so
		comm = "_" + comm[1:]
	}
	// "PID/TID" when both are known; else the thread alone, as perf script
	// prints it by default (a thread unknown reads as 0: perf's regular
	// expression takes no "-1").
	pid, tid := atoi32(a[attrPID]), atoi32(a[attrTID])
	ids := strconv.Itoa(int(max(tid, 0)))
	if pid >= 0 && tid >= 0 {
		ids = strconv.Itoa(int(pid)) + "/" + ids
	}
	head := comm + " " + ids
	if cpu, ok := a[attrCPU]; ok && atoi32(cpu) >= 0 {
		head += " [" + strconv.Itoa(int(atoi32(cpu))) + "]"
	}
	return k, head, nil
}

// stack renders stack_table[i] as perf script stack lines, leaf first,
// once per request.
func (c *converter) stack(i int32) ([]byte, error) {
	if s, ok := c.stacks[i]; ok {
		return s, nil
	}
	st, err := c.d.stack(i)
	if err != nil {
		return nil, err
	}
	lines := make([][]byte, len(st.GetLocationIndices()))
	size := 0
	for k, li := range st.GetLocationIndices() {
		line, ok := c.locs[li]
		if !ok {
			var buf bytes.Buffer
			if err := c.location(&buf, li); err != nil {
				return nil, err
			}
			line = buf.Bytes()
			c.locs[li] = line
		}
		lines[k] = line
		size += len(line)
	}
	out := make([]byte, 0, size)
	for _, line := range lines {
		out = append(out, line...)
	}
	c.stacks[i] = out
	return out, nil
}

// location writes one perf script stack line: "\tADDR FUNCTION (MODULE)".
// Inlined functions (several lines) are written as perf writes an inline
// chain, caller first ("printf->memcpy"). A location without a function
// name is "BINARY+0xADDR" (not symbolized). The module says what the perf
// path reads a frame's kind from: "[kernel.kallsyms]" for kernel frames,
// a JIT map for interpreted and JIT frames, else the mapping's file.
func (c *converter) location(buf *bytes.Buffer, li int32) error {
	loc, err := c.d.location(li)
	if err != nil {
		return err
	}
	m, err := c.d.mapping(loc.GetMappingIndex())
	if err != nil {
		return err
	}
	file, err := c.d.str(m.GetFilenameStrindex())
	if err != nil {
		return err
	}
	kind := map[string]string{}
	if err := c.d.attrs("a location", loc.GetAttributeIndices(), kind); err != nil {
		return err
	}
	var names []string
	lines := loc.GetLines()
	for k := len(lines) - 1; k >= 0; k-- { // the last line is the caller
		f, err := c.d.function(lines[k].GetFunctionIndex())
		if err != nil {
			return err
		}
		name, err := c.d.str(f.GetNameStrindex())
		if err != nil {
			return err
		}
		if name != "" {
			names = append(names, name)
		}
	}
	mod := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '(' || r == ')' {
			return '_'
		}
		return r
	}, file)
	switch frameType := kind["profile.frame.type"]; {
	case frameType == "kernel":
		mod = "[kernel.kallsyms]"
	case frameType != "" && frameType != "native":
		mod = "/tmp/perf-0.map" // interpreted or JIT: what perf marks as JIT frames
	case mod == "":
		mod = "[unknown]"
	}
	fn := strings.Join(names, "->")
	if fn == "" {
		if file == "" {
			fn = "[unknown]"
		} else {
			// "+0x0" is the offset perf script's tidying strips: the frame
			// keeps BINARY+0xADDR.
			fn = fmt.Sprintf("%s+0x%x+0x0", path.Base(file), loc.GetAddress())
		}
	}
	fmt.Fprintf(buf, "\t%x %s (%s)\n", loc.GetAddress(), fn, mod)
	return nil
}

// StreamName names the live stream of a (service, host, labels) and
// minute (Unix minutes): "otlp-" and a hash of the three, then the minute.
func StreamName(app, host string, labels map[string]string, minute int64) string {
	sum := sha256.Sum256([]byte(app + "\x00" + host + "\x00" + fleetscope.FormatLabels(labels)))
	return "otlp-" + hex.EncodeToString(sum[:10]) + "-" + strconv.FormatInt(minute, 10)
}
