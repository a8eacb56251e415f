package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	collpb "go.opentelemetry.io/proto/slim/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/slim/otlp/common/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope/api"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/ingest/corpus"
)

// BenchmarkOTLPFleet: the fleet workload (docs/benchmarks.md: fleetHosts
// hosts, each replaying perf-mixed-60s every minute) sent as the
// OpenTelemetry eBPF profiler sends it: a host's recording cut into one
// export per 5 s (perfToOTLP: a shared dictionary, per-sample
// timestamps), sent over gRPC by 8 concurrent senders (a Connect gRPC
// client of the generated messages; each sender shifts a window's export
// to its host and minute and encodes it as it sends, on the same
// machine, encoded before the clock starts). It prints exports/s and
// samples/s, and beside them the perf path's figure measured in the same
// run on the same samples (a perf script upload per host-minute). FLEETSCOPE_BENCH_OTLP_MINUTES sets
// the minutes (default 2; the streams do not end within the run).
func BenchmarkOTLPFleet(b *testing.B) {
	minutes := 2
	if v, err := strconv.Atoi(os.Getenv("FLEETSCOPE_BENCH_OTLP_MINUTES")); err == nil && v > 0 {
		minutes = v
	}
	// FLEETSCOPE_BENCH_PROFILES=DIR also saves the server's CPU profile of
	// the first 15 s of the exports as DIR/otlp-ingest.pprof.
	profDir := os.Getenv("FLEETSCOPE_BENCH_PROFILES")
	extra := []string{"FLEETSCOPE_MAX_UPLOADS_PER_KEY=8"}
	if profDir != "" {
		extra = append(extra, "FLEETSCOPE_DEBUG_ADDR=127.0.0.1:0")
	}
	s := startService(b, serviceOpts{extra: extra})
	f, err := os.Open(corpus.Path(b, "bench/perf-mixed-60s.txt.gz"))
	if err != nil {
		b.Fatal(err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	plain := filepath.Join(b.TempDir(), "bench.perf")
	out, _ := os.Create(plain)
	io.Copy(out, zr)
	out.Close()
	f.Close()
	recs := readPerfRecords(b, plain, 0)
	shift := fleetBaseSec*int64(time.Second) - recs[0].ns/int64(time.Minute)*int64(time.Minute)
	for i := range recs {
		recs[i].ns += shift
	}
	var windows []*collpb.ExportProfilesServiceRequest
	var windowSamples []int64
	for _, pd := range recordsToOTLP(recs, "fleet-otlp", "") {
		req := &collpb.ExportProfilesServiceRequest{}
		if err := proto.Unmarshal(marshalOTLP(b, pd), req); err != nil {
			b.Fatal(err)
		}
		n := int64(0)
		for _, p := range req.GetResourceProfiles()[0].GetScopeProfiles()[0].GetProfiles() {
			for _, smp := range p.GetSamples() {
				n += int64(len(smp.GetTimestampsUnixNano()))
			}
		}
		windows, windowSamples = append(windows, req), append(windowSamples, n)
	}
	// The exports are encoded first (as the senders would hold them), two
	// at a time, so the timed part is the sending alone: a window's export
	// moved to its host and minute.
	type job struct {
		host, minute, window int
		data                 []byte
	}
	var all []job
	for m := range minutes {
		for w := range windows {
			for h := range fleetHosts {
				all = append(all, job{host: h, minute: m, window: w})
			}
		}
	}
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(all); i += 2 {
				j := &all[i]
				req := proto.Clone(windows[j.window]).(*collpb.ExportProfilesServiceRequest)
				delta := uint64(time.Duration(j.minute)*time.Minute + time.Duration(j.host*37%500)*time.Millisecond)
				rp := req.GetResourceProfiles()[0]
				rp.Resource.Attributes = append(rp.Resource.Attributes, &commonpb.KeyValue{Key: "host.name",
					Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: fmt.Sprintf("host-%02d", j.host)}}})
				for _, p := range rp.GetScopeProfiles()[0].GetProfiles() {
					p.TimeUnixNano += delta
					for _, smp := range p.GetSamples() {
						for k := range smp.TimestampsUnixNano {
							smp.TimestampsUnixNano[k] += delta
						}
					}
				}
				var err error
				if j.data, err = proto.Marshal(req); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	jobs := make(chan job, len(all))
	var sent int64
	for _, j := range all {
		jobs <- j
		sent += int64(len(j.data))
	}
	close(jobs)
	all = nil
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	hc := &http.Client{Transport: &http.Transport{Protocols: h2c}}
	client := connect.NewClient[encodedExport, collpb.ExportProfilesServiceResponse](hc, s.url+api.OTLPProcedure,
		connect.WithGRPC(), connect.WithCodec(encodedCodec{}), connect.WithInterceptors(api.Bearer(s.key)))
	var exports, samples atomic.Int64
	var latMu sync.Mutex
	var lat []time.Duration // each export's answer: its samples are queryable from then on
	var profiled <-chan struct{}
	if profDir != "" {
		line, _, _ := s.log.find(0, msg("debug serving"))
		if line == nil {
			b.Fatal("FLEETSCOPE_BENCH_PROFILES: the server logged no debug listener")
		}
		profiled = startProfile(b, fmt.Sprint(line["addr"]), filepath.Join(profDir, "otlp-ingest.pprof"), 15)
	}
	t0 := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				start := time.Now()
				if _, err := client.CallUnary(context.Background(), connect.NewRequest(&encodedExport{j.data})); err != nil {
					b.Errorf("export host %d minute %d window %d: %v", j.host, j.minute, j.window, err)
					return
				}
				latMu.Lock()
				lat = append(lat, time.Since(start))
				latMu.Unlock()
				exports.Add(1)
				samples.Add(windowSamples[j.window])
			}
		}()
	}
	wg.Wait()
	took := time.Since(t0)
	if profiled != nil {
		<-profiled
	}
	fmt.Printf("%-52s %8.1f exports/s %8.0f samples/s  (%d exports of %d hosts x %d min, %d samples, %.0f MB sent, %.1f s)\n",
		"otlp fleet ingest, 8 concurrent senders (gRPC)", float64(exports.Load())/took.Seconds(), float64(samples.Load())/took.Seconds(),
		exports.Load(), fleetHosts, minutes, samples.Load(), float64(sent)/1e6, took.Seconds())
	slices.Sort(lat)
	if len(lat) > 0 {
		fmt.Printf("%-52s p50 %v, p99 %v, max %v (8 in flight)\n", "otlp export answered (segment stored, queryable)",
			lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	}
	// Every sample sent is stored once: in its stream's segments, or in
	// the profile of a host-minute whose stream has ended (an export two
	// minutes later ends it, in the background).
	if exports.Load() <= 900 {
		waitUntil(b, "the stored samples to be the samples sent", func() bool {
			n := int64(0)
			for _, p := range s.search("fleet-otlp") {
				n += p.GetSamples()
			}
			return n == samples.Load()
		})
	}

	// The perf path on the same machine in the same run: the same
	// recording of each host-minute uploaded as perf script (streamed, 8
	// concurrent uploaders), placed by a clock anchor; a comment line
	// makes each host-minute's bytes its own.
	raw, err := os.ReadFile(plain)
	if err != nil {
		b.Fatal(err)
	}
	type upload struct{ host, minute int }
	ups := make(chan upload, fleetHosts*minutes)
	for m := range minutes {
		for h := range fleetHosts {
			ups <- upload{h, m}
		}
	}
	close(ups)
	ing, _ := s.clients()
	t1 := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range ups {
				head := fmt.Sprintf("# fleet host-%02d minute %d\n", u.host, u.minute)
				wall := time.Unix(0, recs[0].ns/int64(time.Minute)*int64(time.Minute)).Add(time.Duration(u.minute)*time.Minute + time.Duration(u.host*37%500)*time.Millisecond)
				md := &fsv1.UploadMetadata{App: "fleet-perf", Host: fmt.Sprintf("host-%02d", u.host),
					Anchor: &fsv1.ClockAnchor{ClockNanos: (recs[0].ns - shift) / int64(time.Minute) * int64(time.Minute), WallTime: timestamppb.New(wall)}}
				if _, err := api.Upload(context.Background(), ing, md, io.MultiReader(strings.NewReader(head), bytes.NewReader(raw)), nil); err != nil {
					b.Errorf("perf upload host %d minute %d: %v", u.host, u.minute, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	tookPerf := time.Since(t1)
	perfSamples := int64(len(recs)) * fleetHosts * int64(minutes)
	fmt.Printf("%-52s %8.1f uploads/s %8.0f samples/s  (%d uploads of a host-minute, %d samples, %.0f MB sent, %.1f s)\n",
		"perf fleet ingest, 8 concurrent uploaders (same run)", float64(fleetHosts*minutes)/tookPerf.Seconds(), float64(perfSamples)/tookPerf.Seconds(),
		fleetHosts*minutes, perfSamples, float64(int64(len(raw))*fleetHosts*int64(minutes))/1e6, tookPerf.Seconds())
}

// encodedExport is an ExportProfilesServiceRequest already in protobuf,
// sent as it is (encodedCodec): the benchmark's senders spend no time
// encoding.
type encodedExport struct{ data []byte }

type encodedCodec struct{}

func (encodedCodec) Name() string { return "proto" }

func (encodedCodec) Marshal(m any) ([]byte, error) {
	if e, ok := m.(*encodedExport); ok {
		return e.data, nil
	}
	return proto.Marshal(m.(proto.Message))
}

func (encodedCodec) Unmarshal(b []byte, m any) error { return proto.Unmarshal(b, m.(proto.Message)) }
