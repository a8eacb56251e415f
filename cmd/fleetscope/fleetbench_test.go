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
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/api"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	nflxv1 "github.com/fleetscope/fleetscope/api/gen/nflxprofile/v1"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/ingest/nflx/nflxtest"
)

// The fleet benchmark (docs/benchmarks.md#fleet): 20 hosts × 10 min; every host replays
// the benchmark file's 60 s once a minute (sample time modulo 60 s from the
// first sample), host N shifted by (N·37 mod 500) ms: 11,398,000 samples.
// Each (host, minute) is one profile in nflxprofile (a compact format with
// per-sample times: the stacks once as a tree, a time delta per sample).
const (
	fleetHosts   = 20
	fleetMinutes = 10
	fleetBaseSec = 1795000000
)

// replay is the benchmark file as nflxprofile parts: the stack tree, and
// each sample's leaf node and offset from the first sample.
type replay struct {
	nodes   map[uint32]*nflxv1.Profile_Node
	leaf    []uint32 // per sample
	offsets []int64  // per sample, ns from the first sample, ascending
}

func loadReplay(b testing.TB) *replay {
	b.Helper()
	f, err := os.Open(corpus.Path(b, "bench/perf-mixed-60s.txt.gz"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var samples []fleetscope.Sample
	p, err := ingest.Parse(f, "", 0, func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
		samples = append(samples, batch...)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	r := &replay{}
	var leafOf []uint32
	r.nodes, leafOf = nflxtest.Tree(p.Dict)
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].TimeNanos < samples[j].TimeNanos })
	t0 := samples[0].TimeNanos
	for _, s := range samples {
		r.leaf = append(r.leaf, leafOf[s.Stack])
		r.offsets = append(r.offsets, s.TimeNanos-t0)
	}
	return r
}

// profile is host n's minute m, gzipped.
func (r *replay) profile(b testing.TB, n, m int) []byte {
	start := time.Duration(fleetBaseSec)*time.Second + time.Duration(m)*time.Minute + time.Duration(n*37%500)*time.Millisecond
	deltas := make([]float64, len(r.offsets))
	prev := int64(0)
	for i, off := range r.offsets {
		deltas[i] = float64(off-prev) / 1e9
		prev = off
	}
	msg := &nflxv1.Profile{StartTime: proto.Float64(start.Seconds()), EndTime: proto.Float64(start.Seconds() + 60),
		Samples: r.leaf, TimeDeltas: deltas, Nodes: r.nodes, Params: map[string]string{"has_parent": "true"}}
	raw, err := proto.Marshal(msg)
	if err != nil {
		b.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()
	return gz.Bytes()
}

// profiles makes the files of hosts × minutes host-minutes, on every
// core: the file of host n and minute m is at m·hosts+n. The benchmarks
// make them before they time the uploads, as the hosts' agents would have
// them: compressing them is the hosts' work, not the server's.
func (r *replay) profiles(b testing.TB, hosts, minutes int) [][]byte {
	out := make([][]byte, hosts*minutes)
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(out); i += workers {
				out[i] = r.profile(b, i%hosts, i/hosts)
			}
		}()
	}
	wg.Wait()
	return out
}

// BenchmarkFleet runs the fleet benchmark (docs/benchmarks.md#fleet): ingest with 8 concurrent
// uploaders, then each query's p50 of 20 warm calls, a new connection per
// request, Connect JSON (as Pyroscope was measured). Run with:
// go test -run '^$' -bench Fleet -benchtime 1x -timeout 60m ./cmd/fleetscope/
func BenchmarkFleet(b *testing.B) {
	// FLEETSCOPE_BENCH_PROFILES=DIR also saves the server's CPU profile
	// of each query, run for 5 s, as DIR/<query>.pprof.
	s, profDir, debugAddr := startProfiledService(b)
	ctx := context.Background()
	r := loadReplay(b)
	// The 200 files are made first (as agents would have them), so the
	// timed part is the uploads alone.
	type job struct {
		host, minute int
		data         []byte
	}
	all := make([]job, 0, fleetHosts*fleetMinutes)
	files := r.profiles(b, fleetHosts, fleetMinutes)
	for n := range fleetHosts {
		for m := range fleetMinutes {
			all = append(all, job{host: n, minute: m, data: files[m*fleetHosts+n]})
		}
	}
	var wg sync.WaitGroup
	jobs := make(chan job, len(all))
	var sentBytes int64
	for _, j := range all {
		jobs <- j
		sentBytes += int64(len(j.data))
	}
	close(jobs)
	ing, _ := s.clients()
	if profDir != "" { // the first 10 s of the uploads
		startProfile(b, debugAddr, filepath.Join(profDir, "ingest.pprof"), 10)
	}
	t0 := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				// The streaming Upload, as agents send: one-message uploads
				// are for browsers and have few slots.
				md := &fsv1.UploadMetadata{App: "fleet", Host: fmt.Sprintf("host-%02d", j.host), Filename: fmt.Sprintf("m%d.nflx", j.minute)}
				if _, err := api.Upload(ctx, ing, md, bytes.NewReader(j.data), nil); err != nil {
					b.Errorf("upload host %d minute %d: %v", j.host, j.minute, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(t0)
	all = nil
	samples := int64(len(r.leaf)) * fleetHosts * fleetMinutes
	fmt.Printf("%-52s %8.0f samples/s  (%d samples, %d profiles, %.0f MB sent, %.1f s; target >= 300k, Pyroscope 112-140k)\n",
		"fleet ingest, 8 concurrent uploaders", float64(samples)/took.Seconds(), samples, fleetHosts*fleetMinutes, float64(sentBytes)/1e6, took.Seconds())

	// Queries: a new connection per request, Connect JSON.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	opts := []connect.ClientOption{connect.WithInterceptors(api.Bearer(s.key)), connect.WithProtoJSON()}
	fleet := fleetscopev1connect.NewFleetServiceClient(hc, s.url, opts...)
	at := func(sec float64) *timestamppb.Timestamp {
		return timestamppb.New(time.Unix(0, int64(fleetBaseSec*1e9+sec*1e9)))
	}
	sel := func(from, to float64, hosts ...string) *fsv1.FleetSelection {
		return &fsv1.FleetSelection{App: "fleet", Hosts: hosts, From: at(from), To: at(to)}
	}
	p50 := func(what string, target string, call func() error) {
		warmP50(b, what, target, call)
		profileQuery(b, profDir, debugAddr, what, call)
	}
	post := func(procedure string, req proto.Message) func() error {
		return postJSON(b, s, "fleetscope.v1.FleetService/"+procedure, req)
	}
	flame := func(sel *fsv1.FleetSelection) func() error {
		return post("GetFleetFlameGraph", &fsv1.GetFleetFlameGraphRequest{Selection: sel, Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_TREE})
	}
	res, err := fleet.GetFleetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFleetFlameGraphRequest{Selection: sel(0, 600), Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_TREE}))
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("%-52s %d samples, %d nodes (the workload: 11,398,000 and 141,498 with idle; idle excluded here)\n", "merged tree, all hosts, 10 min",
		res.Msg.GetFlameGraph().GetTotal(), len(res.Msg.GetFlameGraph().GetTree().GetName()))
	p50("merged flame graph, all hosts, 10 min, untruncated", "target <= 300 ms; Pyroscope 1.8-2.9 s", flame(sel(0, 600)))
	p50("merged flame graph, all hosts, 1 min", "target <= 60 ms; Pyroscope 435-472 ms", flame(sel(120, 180)))
	p50("merged flame graph, all hosts, 10 s", "target <= 20 ms; Pyroscope 79-90 ms", flame(sel(120, 130)))
	p50("merged flame graph, all hosts, 1 s inside a 10-s push", "target <= 10 ms; Pyroscope cannot", flame(sel(123, 124)))
	p50("merged flame graph, one host, 10 min", "target <= 60 ms; Pyroscope 1.4-1.75 s", flame(sel(0, 600, "host-07")))
	p50("host strip, 10-s steps, 10 min", "target <= 30 ms; Pyroscope 27-54 ms (timeline, 10-s steps)",
		post("GetFleetHosts", &fsv1.GetFleetHostsRequest{Selection: sel(0, 600), MinSecondsPerColumn: 10}))
	p50("fleet heatmap, 10 min, 1-s columns", "target <= 100 ms; Pyroscope has none",
		post("GetFleetHeatmap", &fsv1.GetFleetHeatmapRequest{Selection: sel(0, 600)}))
	p50("timeline, a 24-h window (87-s columns)", "the fleet issue: <= 1 s",
		post("GetFleetTimeline", &fsv1.GetFleetTimelineRequest{Selection: sel(-12*3600, 12*3600)}))
	hosts, err := fleet.GetFleetHosts(ctx, connect.NewRequest(&fsv1.GetFleetHostsRequest{Selection: sel(0, 600), MinSecondsPerColumn: 10}))
	if err != nil || len(hosts.Msg.GetHosts()) != fleetHosts {
		b.Fatalf("host strip: %d hosts, %v", len(hosts.Msg.GetHosts()), err)
	}
	heat, err := fleet.GetFleetHeatmap(ctx, connect.NewRequest(&fsv1.GetFleetHeatmapRequest{Selection: sel(0, 600)}))
	if err != nil || uint64(heat.Msg.GetTotal()) != res.Msg.GetFlameGraph().GetTotal() {
		b.Fatalf("fleet heatmap total %d, merged flame graph %d: %v", heat.Msg.GetTotal(), res.Msg.GetFlameGraph().GetTotal(), err)
	}
	hostHours := float64(fleetHosts*fleetMinutes) / 60
	bytes, parts := rowBytes(ctx, s, hostHours)
	var lists int64
	s.sql(func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT coalesce(sum(octet_length(seqs)), 0) FROM profile_stacks`).Scan(&lists)
	})
	fmt.Printf("%-52s %8.1f MB per host-hour of continuous recording (rows, without the shared dictionary: %s; the stack lists %.2f MB uncompressed)\n",
		"Postgres bytes", float64(bytes)/1e6/hostHours, parts, float64(lists)/1e6/hostHours)
	printColumns(ctx, s, hostHours)
}

// startProfiledService starts the service for a fleet benchmark; with
// FLEETSCOPE_BENCH_PROFILES=DIR, with its profiler listening at debugAddr
// (profileQuery saves each query's CPU profile in DIR).
func startProfiledService(b *testing.B, more ...string) (s *service, profDir, debugAddr string) {
	profDir = os.Getenv("FLEETSCOPE_BENCH_PROFILES")
	extra := append([]string{"FLEETSCOPE_MAX_UPLOADS_PER_KEY=8"}, more...)
	if profDir != "" {
		extra = append(extra, "FLEETSCOPE_DEBUG_ADDR=127.0.0.1:0") // the port it took: in its log
	}
	s = startService(b, serviceOpts{extra: extra})
	if line, _, _ := s.log.find(0, msg("debug serving")); line != nil {
		debugAddr = fmt.Sprint(line["addr"])
	} else if profDir != "" {
		b.Fatal("FLEETSCOPE_BENCH_PROFILES: the server logged no debug listener")
	}
	return s, profDir, debugAddr
}

// profileQuery saves, when profDir is set, the server's CPU profile of
// call run for 5 s as profDir/<what>.pprof.
func profileQuery(b *testing.B, profDir, debugAddr, what string, call func() error) {
	if profDir == "" {
		return
	}
	saveProfile(b, debugAddr, filepath.Join(profDir, strings.Map(func(r rune) rune {
		if r == ' ' || r == ',' {
			return '-'
		}
		return r
	}, what)+".pprof"), call)
}

// saveProfile saves the server's CPU profile while call runs for 5 s.
func saveProfile(b *testing.B, debugAddr, path string, call func() error) {
	done := startProfile(b, debugAddr, path, 5)
	for {
		select {
		case <-done:
			return
		default:
			call()
		}
	}
}

// startProfile saves the server's CPU profile of the next seconds to path;
// the channel closes once it is saved.
func startProfile(b *testing.B, debugAddr, path string, seconds int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", debugAddr, seconds))
		if err != nil {
			b.Error(err)
			return
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Error(err)
		}
	}()
	return done
}

// BenchmarkParseFleetMinute parses one host-minute of the fleet benchmark
// (nflxprofile, 56,990 samples, 19,094 stacks), what each upload costs
// before it is indexed.
func BenchmarkParseFleetMinute(b *testing.B) {
	data := loadReplay(b).profile(b, 3, 1)
	b.ResetTimer()
	for range b.N {
		if _, err := ingest.Parse(bytes.NewReader(data), "", 1<<30, func(*fleetscope.Profile, []fleetscope.Sample) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*56990)/b.Elapsed().Seconds(), "samples/s")
}

// postJSON returns a call that posts req as Connect JSON to procedure
// ("package.Service/Method") on a new connection and reads the whole
// answer (gzip, as browsers ask): the service's time, not a client's JSON
// parser's (typed clients check what the answers hold).
func postJSON(b *testing.B, s *service, procedure string, req proto.Message) func() error {
	body, err := protojson.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	return func() error {
		hreq, _ := http.NewRequest(http.MethodPost, s.url+"/"+procedure, bytes.NewReader(body))
		hreq.Header.Set("Content-Type", "application/json")
		hreq.Header.Set("Authorization", "Bearer "+s.key)
		res, err := hc.Do(hreq)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		n, err := io.Copy(io.Discard, res.Body)
		if err == nil && (res.StatusCode != http.StatusOK || n == 0) {
			err = fmt.Errorf("%s: %s, %d bytes", procedure, res.Status, n)
		}
		return err
	}
}

// warmP50 prints the median of 20 calls after one that warms the caches.
func warmP50(b *testing.B, what, target string, call func() error) {
	p50n(b, what, target, 21, call)
}
