package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/fleetscope/fleetscope/api"
)

// perfRecord is one sample of a perf script recording, as the recording
// says it: the fields the OpenTelemetry eBPF profiler reports too.
type perfRecord struct {
	comm         string
	tid, cpu     int64
	ns, period   int64
	event        string
	frames       []perfFrame // leaf first
	kernelFrames int
}

type perfFrame struct {
	addr     uint64
	sym, mod string // sym "" when perf had none ([unknown])
}

// readPerfRecords reads a perf script recording with timestamps, shifted
// by shift (a boot clock placed in wall-clock time).
func readPerfRecords(t testing.TB, path string, shift time.Duration) []perfRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []perfRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case line[0] != ' ' && line[0] != '\t':
			toks := strings.Fields(line)
			ti := -1
			for i, tok := range toks {
				if i > 0 && strings.HasSuffix(tok, ":") && strings.Contains(tok, ".") {
					if _, err := strconv.ParseFloat(strings.TrimSuffix(tok, ":"), 64); err == nil {
						ti = i
						break
					}
				}
			}
			if ti < 2 {
				t.Fatalf("not a timed perf header: %q", line)
			}
			r := perfRecord{cpu: -1, period: 1}
			k := ti - 1
			if c := toks[k]; strings.HasPrefix(c, "[") {
				r.cpu, _ = strconv.ParseInt(strings.Trim(c, "[]"), 10, 64)
				k--
			}
			r.tid, _ = strconv.ParseInt(toks[k], 10, 64)
			r.comm = strings.Join(toks[:k], " ")
			sec, frac, _ := strings.Cut(strings.TrimSuffix(toks[ti], ":"), ".")
			s, _ := strconv.ParseInt(sec, 10, 64)
			fr, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
			r.ns = s*1e9 + fr + int64(shift)
			rest := toks[ti+1:] // [period] event: [payload]
			if p, err := strconv.ParseInt(rest[0], 10, 64); err == nil && len(rest) > 1 {
				r.period, rest = p, rest[1:]
			}
			r.event = strings.TrimSuffix(rest[0], ":")
			out = append(out, r)
		default:
			l := strings.TrimSpace(line)
			addr, rest, _ := strings.Cut(l, " ")
			i := strings.LastIndex(rest, " (")
			sym, mod := rest[:i], strings.TrimSuffix(rest[i+2:], ")")
			if j := strings.LastIndex(sym, "+0x"); j > 0 {
				sym = sym[:j] // symbolizers give functions, not offsets
			}
			if sym == "[unknown]" {
				sym = ""
			}
			a, _ := strconv.ParseUint(addr, 16, 64)
			r := &out[len(out)-1]
			r.frames = append(r.frames, perfFrame{addr: a, sym: sym, mod: mod})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// otlpBuilder builds one ProfilesData: a dictionary shared by its
// profiles, each table starting with its zero entry as the protocol
// requires.
type otlpBuilder struct {
	pd       pprofile.Profiles
	dict     pprofile.ProfilesDictionary
	strs     map[string]int32
	attrs    map[string]int32
	funcs    map[string]int32
	maps     map[string]int32
	locs     map[perfFrame]int32
	stacks   map[string]int32
	scope    pprofile.ScopeProfiles
	profiles map[string]pprofile.Profile
	samples  map[string]pprofile.Sample
}

func newOTLPBuilder(service, host string) *otlpBuilder {
	b := &otlpBuilder{pd: pprofile.NewProfiles(), strs: map[string]int32{}, attrs: map[string]int32{}, funcs: map[string]int32{},
		maps: map[string]int32{}, locs: map[perfFrame]int32{}, stacks: map[string]int32{}, profiles: map[string]pprofile.Profile{}, samples: map[string]pprofile.Sample{}}
	b.dict = b.pd.Dictionary()
	b.str("")
	b.dict.MappingTable().AppendEmpty()
	b.dict.LocationTable().AppendEmpty()
	b.dict.FunctionTable().AppendEmpty()
	b.dict.LinkTable().AppendEmpty()
	b.dict.AttributeTable().AppendEmpty()
	b.dict.StackTable().AppendEmpty()
	rp := b.pd.ResourceProfiles().AppendEmpty()
	rp.Resource().Attributes().PutStr("service.name", service)
	if host != "" {
		rp.Resource().Attributes().PutStr("host.name", host)
	}
	b.scope = rp.ScopeProfiles().AppendEmpty()
	b.scope.Scope().SetName("go.opentelemetry.io/ebpf-profiler")
	return b
}

func (b *otlpBuilder) str(s string) int32 {
	if i, ok := b.strs[s]; ok {
		return i
	}
	i := int32(b.dict.StringTable().Len())
	b.dict.StringTable().Append(s)
	b.strs[s] = i
	return i
}

// attr returns the index of the attribute key=value (an int if v is one).
func (b *otlpBuilder) attr(k string, v any) int32 {
	id := fmt.Sprintf("%s=%T:%v", k, v, v)
	if i, ok := b.attrs[id]; ok {
		return i
	}
	a := b.dict.AttributeTable().AppendEmpty()
	a.SetKeyStrindex(b.str(k))
	switch x := v.(type) {
	case int64:
		a.Value().SetInt(x)
	case string:
		a.Value().SetStr(x)
	}
	i := int32(b.dict.AttributeTable().Len() - 1)
	b.attrs[id] = i
	return i
}

// location is a frame as the eBPF profiler reports it: a kernel frame
// with its function, a native one with its mapping and address (and a
// function if symbolized).
func (b *otlpBuilder) location(f perfFrame) int32 {
	if i, ok := b.locs[f]; ok {
		return i
	}
	loc := b.dict.LocationTable().AppendEmpty()
	loc.SetAddress(f.addr)
	kernel := strings.HasPrefix(f.mod, "[") && !strings.Contains(f.mod, "unknown")
	if kernel {
		loc.AttributeIndices().Append(b.attr("profile.frame.type", "kernel"))
	} else {
		loc.AttributeIndices().Append(b.attr("profile.frame.type", "native"))
	}
	mi, ok := b.maps[f.mod]
	if !ok && f.mod == "[unknown]" {
		mi, ok = 0, true // no mapping: the zero entry
	}
	if !ok {
		m := b.dict.MappingTable().AppendEmpty()
		m.SetFilenameStrindex(b.str(f.mod))
		mi = int32(b.dict.MappingTable().Len() - 1)
		b.maps[f.mod] = mi
	}
	loc.SetMappingIndex(mi)
	if f.sym != "" {
		fi, ok := b.funcs[f.sym]
		if !ok {
			fn := b.dict.FunctionTable().AppendEmpty()
			fn.SetNameStrindex(b.str(f.sym))
			fi = int32(b.dict.FunctionTable().Len() - 1)
			b.funcs[f.sym] = fi
		}
		loc.Lines().AppendEmpty().SetFunctionIndex(fi)
	}
	i := int32(b.dict.LocationTable().Len() - 1)
	b.locs[f] = i
	return i
}

func (b *otlpBuilder) stack(frames []perfFrame) int32 {
	idx := make([]int32, len(frames))
	for i, f := range frames {
		idx[i] = b.location(f)
	}
	key := fmt.Sprint(idx)
	if i, ok := b.stacks[key]; ok {
		return i
	}
	b.dict.StackTable().AppendEmpty().LocationIndices().FromRaw(idx)
	i := int32(b.dict.StackTable().Len() - 1)
	b.stacks[key] = i
	return i
}

// add adds r to the profile of its event, spanning [start, start+span):
// a sample per (stack, thread, CPU), its timestamps appended; with its
// period as the value unless the event counts (period 1).
func (b *otlpBuilder) add(r perfRecord, start int64, span time.Duration, counted bool) {
	p, ok := b.profiles[r.event]
	if !ok {
		p = b.scope.Profiles().AppendEmpty()
		p.SampleType().SetTypeStrindex(b.str(r.event))
		if counted {
			p.SampleType().SetUnitStrindex(b.str("count"))
			p.SetPeriod(1)
		} else {
			p.SampleType().SetUnitStrindex(b.str("nanoseconds"))
		}
		p.SetTime(pcommon.Timestamp(start))
		p.SetDurationNano(uint64(span))
		b.profiles[r.event] = p
	}
	stack := b.stack(r.frames)
	attrs := []int32{b.attr("thread.id", r.tid), b.attr("thread.name", r.comm)}
	if r.cpu >= 0 {
		attrs = append(attrs, b.attr("cpu.logical_number", r.cpu))
	}
	key := fmt.Sprint(r.event, stack, attrs)
	s, ok := b.samples[key]
	if !ok {
		s = p.Samples().AppendEmpty()
		s.SetStackIndex(stack)
		s.AttributeIndices().FromRaw(attrs)
		b.samples[key] = s
	}
	s.TimestampsUnixNano().Append(uint64(r.ns))
	if !counted {
		s.Values().Append(r.period)
	}
}

// perfToOTLP converts a recording into what the OpenTelemetry eBPF
// profiler would export of it, its clock shifted by shift: one ProfilesData per 5 s (aligned to the
// epoch), its dictionary shared by its profiles, a profile per event,
// each sample's own timestamps.
func perfToOTLP(t testing.TB, path string, shift time.Duration, service, host string) []pprofile.Profiles {
	return recordsToOTLP(readPerfRecords(t, path, shift), service, host)
}

// recordsToOTLP is perfToOTLP of records already read.
func recordsToOTLP(recs []perfRecord, service, host string) []pprofile.Profiles {
	counted := map[string]bool{}
	for _, r := range recs {
		if _, ok := counted[r.event]; !ok {
			counted[r.event] = true
		}
		counted[r.event] = counted[r.event] && r.period == 1
	}
	const span = 5 * time.Second
	byWindow := map[int64]*otlpBuilder{}
	for _, r := range recs {
		w := r.ns / int64(span) * int64(span)
		b, ok := byWindow[w]
		if !ok {
			b = newOTLPBuilder(service, host)
			byWindow[w] = b
		}
		b.add(r, w, span, counted[r.event])
	}
	windows := make([]int64, 0, len(byWindow))
	for w := range byWindow {
		windows = append(windows, w)
	}
	sort.Slice(windows, func(i, j int) bool { return windows[i] < windows[j] })
	var out []pprofile.Profiles
	for _, w := range windows {
		out = append(out, byWindow[w].pd)
	}
	return out
}

// otlpGRPC sends pd with the Collector's own gRPC client (pprofileotlp,
// what the otlp exporter uses), the key in the authorization header as
// the exporter's headers setting sends it.
func (s *service) otlpGRPC(t testing.TB, key, orgID string, pd pprofile.Profiles) (pprofileotlp.ExportResponse, error) {
	t.Helper()
	cc, err := grpc.NewClient(strings.TrimPrefix(s.url, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	md := metadata.MD{}
	if key != "" {
		md.Set("authorization", "Bearer "+key)
	}
	if orgID != "" {
		md.Set(api.OrgIDHeader, orgID)
	}
	ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(context.Background(), md), time.Minute)
	defer cancel()
	return pprofileotlp.NewGRPCClient(cc).Export(ctx, pprofileotlp.NewExportRequestFromProfiles(pd))
}

// otlpHTTP posts body as the otlphttp exporter does (protobuf, gzip) and
// returns the status, the answer and its headers.
func (s *service) otlpHTTP(t testing.TB, key string, header http.Header, body []byte) (int, []byte, http.Header) {
	t.Helper()
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(body)
	zw.Close()
	req, _ := http.NewRequest("POST", s.url+api.OTLPPath, &zb)
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("User-Agent", "OpenTelemetry Collector Contrib/0.140.0")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b, res.Header
}

// marshalOTLP is pd as an OTLP/HTTP body.
func marshalOTLP(t testing.TB, pd pprofile.Profiles) []byte {
	t.Helper()
	b, err := pprofileotlp.NewExportRequestFromProfiles(pd).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
