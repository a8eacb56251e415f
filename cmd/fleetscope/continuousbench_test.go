package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/api"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	nflxv1 "github.com/fleetscope/fleetscope/api/gen/nflxprofile/v1"
	"github.com/fleetscope/fleetscope/ingest"
)

// The continuous fleet benchmark (docs/benchmarks.md#continuous-fleet): 10
// hosts × 24 h of continuous recording, one profile per host-minute, each
// minute carrying every 20th sample of the benchmark file (sorted by time,
// sample time modulo 60 s from the first sample: 2,850 samples, ~47
// samples/s), host N shifted by (N·37 mod 500) ms: 14,400 profiles,
// 41,040,000 samples. FLEETSCOPE_BENCH_HOURS=N records N hours instead.
const (
	continuousHosts = 10
	continuousEvery = 20
)

// thin is the replay with every k-th sample, its time taken modulo 60 s
// and sorted again, and the stack tree's nodes those samples use.
func (r *replay) thin(k int) *replay {
	type sample struct {
		leaf uint32
		off  int64
	}
	var ss []sample
	for i := 0; i < len(r.leaf); i += k {
		ss = append(ss, sample{r.leaf[i], r.offsets[i] % int64(time.Minute)})
	}
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].off < ss[j].off })
	out := &replay{nodes: map[uint32]*nflxv1.Profile_Node{}}
	for _, s := range ss {
		out.leaf, out.offsets = append(out.leaf, s.leaf), append(out.offsets, s.off)
		for id := s.leaf; id != 0; id = r.nodes[id].GetParent() {
			if _, ok := out.nodes[id]; ok {
				break
			}
			out.nodes[id] = r.nodes[id]
		}
	}
	return out
}

// BenchmarkContinuousFleet runs the continuous fleet benchmark: ingest with
// 8 concurrent uploaders (nflxprofile, a compact format with per-sample
// times), then each query's p50 over new connections, Connect JSON, idle
// included, as the issue measured it; the server's peak RSS over the run
// and the database's bytes per host-hour. Run with:
// go test -run '^$' -bench '^BenchmarkContinuousFleet$' -benchtime 1x -timeout 90m ./cmd/fleetscope/
// (FLEETSCOPE_BENCH_PROFILES=DIR: each query's server CPU profile, as
// BenchmarkFleet saves them).
func BenchmarkContinuousFleet(b *testing.B) {
	hours := 24
	if v := os.Getenv("FLEETSCOPE_BENCH_HOURS"); v != "" {
		var err error
		if hours, err = strconv.Atoi(v); err != nil || hours < 2 {
			b.Fatalf("FLEETSCOPE_BENCH_HOURS=%q: want a number of hours, at least 2", v)
		}
	}
	minutes := hours * 60
	// The sweeper runs every second: the sample tier's phase at the end.
	s, profDir, debugAddr := startProfiledService(b, "FLEETSCOPE_SWEEP_INTERVAL=1s")
	pid := s.proc.Process.Pid
	ctx := context.Background()
	r := loadReplay(b).thin(continuousEvery)

	// The files are made first, as the hosts' agents would have them
	// (14,400 files of about 165 kB: 2.4 GB in this process, not the
	// server's), so the timed part is the uploads alone.
	files := r.profiles(b, continuousHosts, minutes)
	type job struct{ host, minute int }
	jobs := make(chan job, continuousHosts*minutes)
	for m := range minutes { // in time order, as hosts send them
		for n := range continuousHosts {
			jobs <- job{n, m}
		}
	}
	close(jobs)
	ing, _ := s.clients()
	t0 := time.Now()
	if profDir != "" {
		startProfile(b, debugAddr, filepath.Join(profDir, "ingest.pprof"), 10)
	}
	// The rate and each process's CPU by stretch of the day (a sixth of
	// its profiles each): what grows as the tables do.
	chunk := continuousHosts * minutes / 6
	var done sync.Mutex
	var uploaded int
	stretch := []string{}
	t, cpu := t0, cpuByProcess()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				md := &fsv1.UploadMetadata{App: "fleet", Host: fmt.Sprintf("host-%02d", j.host), Filename: fmt.Sprintf("m%d.nflx", j.minute)}
				if _, err := api.Upload(ctx, ing, md, bytes.NewReader(files[j.minute*continuousHosts+j.host]), nil); err != nil {
					b.Errorf("upload host %d minute %d: %v", j.host, j.minute, err)
					return
				}
				done.Lock()
				if uploaded++; uploaded%chunk == 0 {
					now, c := time.Now(), cpuByProcess()
					stretch = append(stretch, fmt.Sprintf("%.0f/s (CPU ms a profile: %s)", float64(chunk)/now.Sub(t).Seconds(), cpuPer(cpu, c, chunk)))
					t, cpu = now, c
					if profDir != "" && uploaded/chunk == 5 {
						startProfile(b, debugAddr, filepath.Join(profDir, "ingest-late.pprof"), 10)
					}
				}
				done.Unlock()
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	took := time.Since(t0)
	peak := newRSSPhases(b, pid)
	peak.phase("ingest")
	profiles := continuousHosts * minutes
	samples := int64(len(r.leaf)) * int64(profiles)
	fmt.Printf("%-52s %8.1f profiles/s, %.0f samples/s  (%d profiles, %d samples, %.0f s; target >= 100 profiles/s)\n",
		"continuous ingest, 8 concurrent uploaders", float64(profiles)/took.Seconds(), float64(samples)/took.Seconds(), profiles, samples, took.Seconds())
	fmt.Printf("%-52s %s\n", "ingest by sixth of the day", strings.Join(stretch, "; "))

	at := func(sec float64) *timestamppb.Timestamp {
		return timestamppb.New(time.Unix(0, int64(fleetBaseSec*1e9+sec*1e9)))
	}
	sel := func(from, to float64, hosts ...string) *fsv1.FleetSelection {
		return &fsv1.FleetSelection{App: "fleet", Hosts: hosts, From: at(from), To: at(to), IncludeIdle: true}
	}
	post := func(procedure string, req proto.Message) func() error {
		return postJSON(b, s, "fleetscope.v1.FleetService/"+procedure, req)
	}
	flame := func(sel *fsv1.FleetSelection) func() error {
		return post("GetFleetFlameGraph", &fsv1.GetFleetFlameGraphRequest{Selection: sel, Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_TREE})
	}
	measure := func(what, target string, n int, call func() error) {
		p50n(b, what, target, n, call)
		profileQuery(b, profDir, debugAddr, what, call)
		peak.phase(what)
	}
	day := float64(minutes * 60)
	mid := float64(hours/2) * 3600
	long := 5 // calls of the slowest queries (p50 of 4 after a warm one)
	measure(fmt.Sprintf("merged flame graph, all hosts, %d h", hours), "target <= 500 ms", long, flame(sel(0, day)))
	measure(fmt.Sprintf("merged flame graph, one host, %d h", hours), "target <= 200 ms", long, flame(sel(0, day, "host-03")))
	measure("merged flame graph, all hosts, 1 h", "target <= 50 ms", 21, flame(sel(mid, mid+3600)))
	measure("merged flame graph, all hosts, 1 min", "target <= 10 ms", 21, flame(sel(mid+1800, mid+1860)))
	measure("merged flame graph, all hosts, 10 s", "target <= 5 ms", 21, flame(sel(mid+1800, mid+1810)))
	measure("merged flame graph, all hosts, 1 s", "target <= 5 ms", 21, flame(sel(mid+1805, mid+1806)))
	measure("merged flame graph, all hosts, 20 ms", "target <= 5 ms", 21, flame(sel(mid+1805.5, mid+1805.52)))
	measure(fmt.Sprintf("fleet heatmap, %d h", hours), "target <= 100 ms", long, post("GetFleetHeatmap", &fsv1.GetFleetHeatmapRequest{Selection: sel(0, day)}))
	// The zoom steps between a day and a minute: the heatmap of each.
	for _, w := range []struct {
		name string
		secs float64
	}{{"6 h", 6 * 3600}, {"1 h", 3600}, {"10 min", 600}} {
		if w.secs < day {
			measure("fleet heatmap, "+w.name, "target <= 100 ms", 21, post("GetFleetHeatmap", &fsv1.GetFleetHeatmapRequest{Selection: sel(mid-w.secs/2, mid+w.secs/2)}))
		}
	}
	measure(fmt.Sprintf("host strip, %d h", hours), "target <= 100 ms", long, post("GetFleetHosts", &fsv1.GetFleetHostsRequest{Selection: sel(0, day)}))
	measure(fmt.Sprintf("timeline, %d h", hours), "target <= 100 ms", long, post("GetFleetTimeline", &fsv1.GetFleetTimelineRequest{Selection: sel(0, day)}))
	measure("timeline, 7 days", "target <= 200 ms", long, post("GetFleetTimeline", &fsv1.GetFleetTimelineRequest{Selection: sel(-3*86400, 4*86400)}))
	// The fleet view's widest window: its flame graph from day and hour
	// rollups and the edges, the profiles counted, not listed.
	measure("merged flame graph, all hosts, 30 days", "the fleet view's 30 d", long, flame(sel(-14*86400, 16*86400)))
	fmt.Printf("%-52s %8d MB peak RSS (target <= 512 MB; %s)\n", "server, over the run", peak.max/1024, peak.by())

	hostHours := float64(continuousHosts * hours)
	bytesPerHostHour := func(what string) {
		rows, parts := rowBytes(ctx, s, hostHours)
		var disk int64
		s.sql(func(c *pgx.Conn) error {
			return c.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&disk)
		})
		fmt.Printf("%-52s %8.2f MB per host-hour in rows (%s), %.2f MB on disk with indexes and the dictionary (target <= 2 MB)\n",
			what, float64(rows)/1e6/hostHours, parts, float64(disk)/1e6/hostHours)
	}
	bytesPerHostHour("Postgres bytes")
	printColumns(ctx, s, hostHours)

	// The sample tier: every profile past it (a tier of 1 day, the
	// profiles stored 2 days ago). The sweeper checks each raw file
	// against the stored rows and moves it, then, past the grace, deletes
	// the rows; the queries then read the samples they need from raw files.
	s.admin("tenant", "set-limits", "acme", "--sample-days", "1")
	_, from, _ := s.log.find(0, func(map[string]any) bool { return false })
	t1 := time.Now()
	s.sql(func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `UPDATE profiles SET created_at = created_at - interval '2 days'`)
		return err
	})
	line, _ := s.log.await(b, from, time.Hour, msg("sample tier"))
	moved := time.Since(t1)
	fmt.Printf("%-52s %8.1f profiles/s  (%v moved, %v kept, %.0f s, on the server's sweeper)\n",
		"sample tier: raw files checked and profiles moved", line["moved"].(float64)/moved.Seconds(), line["moved"], line["kept"], moved.Seconds())
	_, from, _ = s.log.find(0, func(map[string]any) bool { return false })
	s.sql(func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `UPDATE profiles SET samples_moved_at = samples_moved_at - interval '1 hour'`)
		return err
	})
	s.log.await(b, from, time.Hour, msg("sample tier"))
	s.sql(func(c *pgx.Conn) error { _, err := c.Exec(ctx, `VACUUM seconds`); return err })
	bytesPerHostHour("Postgres bytes past the sample tier")
	s.flushCaches()
	measure(fmt.Sprintf("past the tier: merged flame graph, all hosts, %d h", hours), "target <= 500 ms", long, flame(sel(0, day)))
	measure("past the tier: merged flame graph, all hosts, 1 h", "target <= 50 ms", 21, flame(sel(mid, mid+3600)))
	measure("past the tier: merged flame graph, all hosts, 1 min", "target <= 10 ms", 21, flame(sel(mid+1800, mid+1860)))
	measure("past the tier: merged flame graph, all hosts, 20 ms", "target <= 5 ms", 21, flame(sel(mid+1805.5, mid+1805.52)))
	fmt.Printf("%-52s %8d MB peak RSS (%s)\n", "server, past the tier", peak.max/1024, peak.by())
}

// rssPhases is a process's peak resident set by phase: phase reads the
// peak since the last one (VmHWM) and resets it (clear_refs 5).
type rssPhases struct {
	b      *testing.B
	pid    int
	max    int // kB, over every phase
	phases []string
}

func newRSSPhases(b *testing.B, pid int) *rssPhases { return &rssPhases{b: b, pid: pid} }

func (p *rssPhases) phase(name string) {
	kb := procStatusKB(p.b, p.pid, "VmHWM:")
	p.max = max(p.max, kb)
	p.phases = append(p.phases, fmt.Sprintf("%s %d", name, kb/1024))
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.pid), []byte("5"), 0); err != nil {
		p.b.Logf("peak RSS by phase: %v", err)
	}
}

// by names each phase's peak, in MB.
func (p *rssPhases) by() string { return "by phase: " + strings.Join(p.phases, ", ") }

// p50n prints the median of n-1 calls after one that warms the caches
// (and, for a merged flame graph, counts and stores the window's stack
// buckets), and that first call's time.
func p50n(b *testing.B, what, target string, n int, call func() error) {
	var ds []time.Duration
	var first time.Duration
	for i := range n {
		t := time.Now()
		if err := call(); err != nil {
			b.Fatalf("%s: %v", what, err)
		}
		if i > 0 {
			ds = append(ds, time.Since(t))
		} else {
			first = time.Since(t)
		}
	}
	slices.Sort(ds)
	fmt.Printf("%-52s p50 %8.1f ms  (%s; first call %.0f ms)\n", what, ds[len(ds)/2].Seconds()*1000, target, first.Seconds()*1000)
}

// BenchmarkParseContinuousMinute parses one host-minute of the continuous
// fleet benchmark (nflxprofile, 2,850 samples), what each of its uploads
// costs before it is indexed.
func BenchmarkParseContinuousMinute(b *testing.B) {
	r := loadReplay(b).thin(continuousEvery)
	data := r.profile(b, 3, 1)
	b.ResetTimer()
	for range b.N {
		if _, err := ingest.Parse(bytes.NewReader(data), "", 1<<30, func(*fleetscope.Profile, []fleetscope.Sample) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(data)), "gzipped-bytes")
	b.ReportMetric(float64(len(r.nodes)), "nodes")
}

// BenchmarkUploadContinuousMinute is the CPU an upload of one such
// host-minute costs the server before the database: the bytes spooled to
// a file and hashed (SHA-256) as they are read, as ingest.Service.Ingest
// does, then parsed and indexed (ingest.ParseIndex). Against
// BenchmarkParseContinuousMinute it shows what the index and the spool add.
func BenchmarkUploadContinuousMinute(b *testing.B) {
	r := loadReplay(b).thin(continuousEvery)
	data := r.profile(b, 3, 1)
	spool, err := os.CreateTemp(b.TempDir(), "spool-*")
	if err != nil {
		b.Fatal(err)
	}
	defer spool.Close()
	b.ResetTimer()
	for range b.N {
		if _, err := spool.Seek(0, io.SeekStart); err != nil {
			b.Fatal(err)
		}
		h := sha256.New()
		if _, err := ingest.ParseIndex(io.TeeReader(bytes.NewReader(data), io.MultiWriter(spool, h)), "", 1<<30, ingest.DefaultShape); err != nil {
			b.Fatal(err)
		}
		h.Sum(nil)
	}
}

// cpuByProcess sums the CPU seconds (user and system) of this machine's
// processes by command name, kernel threads left out.
func cpuByProcess() map[string]float64 {
	out := map[string]float64{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range dirs {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // gone
		}
		open, closing := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
		if open < 0 || closing < open {
			continue
		}
		name, f := string(data[open+1:closing]), strings.Fields(string(data[closing+2:]))
		if len(f) < 13 || strings.ContainsRune(name, '/') { // kernel threads (kworker/1:4) are named by their queue
			continue
		}
		utime, _ := strconv.ParseFloat(f[11], 64)
		stime, _ := strconv.ParseFloat(f[12], 64)
		out[name] += (utime + stime) / 100 // USER_HZ
	}
	return out
}

// cpuPer lists the processes that used at least 0.1 ms of CPU a profile
// between two cpuByProcess readings, the busiest first (the uploaders are
// fleetscope.test).
func cpuPer(before, after map[string]float64, profiles int) string {
	type use struct {
		name string
		ms   float64
	}
	var uses []use
	for name, t := range after {
		if ms := (t - before[name]) * 1e3 / float64(profiles); ms >= 0.1 {
			uses = append(uses, use{name, ms})
		}
	}
	slices.SortFunc(uses, func(a, b use) int { return cmp.Compare(b.ms, a.ms) })
	parts := make([]string, len(uses))
	for i, u := range uses {
		parts[i] = fmt.Sprintf("%s %.1f", u.name, u.ms)
	}
	return strings.Join(parts, ", ")
}

// rowTables are the tables whose rows grow with a host's recording: its
// samples, its cells in absolute time, its stack counts, its stack lists
// and its profiles (the tenant's dictionary is shared, and not counted).
var rowTables = []string{"seconds", "fleet_tens", "fleet_minutes", "fleet_stack_buckets", "fleet_stack_rollups", "fleet_versions", "profile_stacks", "profiles"}

// rowBytes sums the bytes of rowTables' rows (pg_column_size of each row,
// as stored, compressed or not), and says each table's share per host-hour.
func rowBytes(ctx context.Context, s *service, hostHours float64) (int64, string) {
	var rows int64
	var parts []string
	for _, table := range rowTables {
		var n int64
		s.sql(func(c *pgx.Conn) error {
			return c.QueryRow(ctx, `SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM `+table+` t`).Scan(&n)
		})
		rows += n
		parts = append(parts, fmt.Sprintf("%s %.2f", table, float64(n)/1e6/hostHours))
	}
	return rows, strings.Join(parts, ", ")
}

// printColumns prints, with FLEETSCOPE_BENCH_COLUMNS set, the bytes per
// host-hour of each column of the largest tables, from the catalog
// (whatever the migrations made), summed in one scan of each table; for
// bytes, also before Postgres compressed them.
func printColumns(ctx context.Context, s *service, hostHours float64) {
	if os.Getenv("FLEETSCOPE_BENCH_COLUMNS") == "" {
		return
	}
	for _, table := range []string{"seconds", "fleet_tens", "profile_stacks"} {
		type column struct{ Name, Kind string }
		var cols []column
		s.sql(func(c *pgx.Conn) error {
			rows, err := c.Query(ctx, `SELECT column_name, data_type FROM information_schema.columns
				WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, table)
			if err == nil {
				cols, err = pgx.CollectRows(rows, pgx.RowToStructByPos[column])
			}
			return err
		})
		sums, raw := make([]int64, len(cols)), make([]int64, len(cols))
		var rows int64
		dst := []any{&rows}
		q := `SELECT count(*)`
		for i, col := range cols {
			q += `, coalesce(sum(pg_column_size(` + col.Name + `)), 0)`
			dst = append(dst, &sums[i])
			if col.Kind == "bytea" {
				q += `, coalesce(sum(octet_length(` + col.Name + `)), 0)`
				dst = append(dst, &raw[i])
			}
		}
		s.sql(func(c *pgx.Conn) error { return c.QueryRow(ctx, q+` FROM `+table).Scan(dst...) })
		parts := make([]string, len(cols))
		for i, col := range cols {
			parts[i] = fmt.Sprintf("%s %.3f", col.Name, float64(sums[i])/1e6/hostHours)
			if raw[i] > sums[i]*11/10 {
				parts[i] += fmt.Sprintf(" (%.3f uncompressed)", float64(raw[i])/1e6/hostHours)
			}
		}
		fmt.Printf("columns of %s (%d rows): %s\n", table, rows, strings.Join(parts, ", "))
	}
	var ns, nst int64
	s.sql(func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT sum(samples), sum(length(stacks)) FROM seconds`).Scan(&ns, &nst)
	})
	fmt.Printf("samples %d, stack bytes per sample %.3f\n", ns, float64(nst)/float64(ns))
}
