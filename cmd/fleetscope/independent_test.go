package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/google/pprof/profile"
)

// The tests here check answers against references the test computes from
// the input's own text (or with google/pprof), never through fleetscope's
// parsers or queries.

// textSample is a perf script sample as the test reads the text: the
// header's command, pid (-1 when the header has the tid alone), time in
// µs, event, period (0 when the header has none) and the stack's function
// names, leaf first.
type textSample struct {
	comm   string
	pid    int64
	micros int64
	event  string
	period int64
	frames []string
}

// textHeader is a sample's header: command, pid/tid (or the tid alone), an
// optional [cpu], seconds.micros, then the period and event or the event
// alone ("probe_x:f: (addr)", "sched:sched_switch: payload").
var textHeader = regexp.MustCompile(`^(\S.*?)\s+(\d+)(/\d+)?\s+(?:\[\d+\]\s+)?(\d+)\.(\d{6}):\s+(.*)$`)

// readTextSamples reads the samples of a perf script file.
func readTextSamples(t *testing.T, path string) []textSample {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []textSample
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if n := len(out); n > 0 {
				if f := strings.Fields(line); len(f) >= 2 {
					name, _, _ := strings.Cut(f[1], "+0x")
					out[n-1].frames = append(out[n-1].frames, name)
				}
			}
			continue
		}
		m := textHeader.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s: a line neither comment, stack nor header: %q", filepath.Base(path), line)
		}
		s := textSample{comm: m[1], pid: -1}
		if m[3] != "" {
			s.pid, _ = strconv.ParseInt(m[2], 10, 64)
		}
		sec, _ := strconv.ParseInt(m[4], 10, 64)
		us, _ := strconv.ParseInt(m[5], 10, 64)
		s.micros = sec*1e6 + us
		rest := strings.Fields(m[6])
		if p, err := strconv.ParseInt(rest[0], 10, 64); err == nil && len(rest) > 1 {
			s.period, rest = p, rest[1:]
		}
		s.event = strings.TrimSuffix(rest[0], ":")
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no samples", path)
	}
	return out
}

// pprofSum parses a pprof export and sums its one sample type.
func pprofSum(t *testing.T, data string) (string, int64) {
	t.Helper()
	p, err := profile.Parse(strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 1 {
		t.Fatalf("pprof export with %d sample types, want 1", len(p.SampleType))
	}
	var n int64
	for _, s := range p.Sample {
		n += s.Value[0]
	}
	return p.SampleType[0].Type, n
}

// TestServerPprofExportEveryEvent: for every event of multi-event
// profiles, the server's pprof export (google/pprof reads it) totals the
// event's samples, and with --period its periods, as counted in the perf
// text by the test; a pprof upload's events total what google/pprof sums
// over the original file. Idle samples are included (--include-idle):
// which are idle is the parser's business.
func TestServerPprofExportEveryEvent(t *testing.T) {
	s := startService(t, serviceOpts{})
	for _, name := range []string{"perf-cycles-instructions-01.txt", "recorded-perf-realtime-2events.txt", "recorded-perf-uprobe-reqsim.txt"} {
		t.Run(name, func(t *testing.T) {
			path := corpus.Path(t, "corpus/perf/"+name)
			type sums struct {
				samples, periods int64
				periodless       bool
			}
			want := map[string]*sums{}
			for _, smp := range readTextSamples(t, path) {
				w := want[smp.event]
				if w == nil {
					w = &sums{}
					want[smp.event] = w
				}
				w.samples++
				w.periods += smp.period
				w.periodless = w.periodless || smp.period == 0
			}
			if len(want) < 2 {
				t.Fatalf("%d events in the text, want several", len(want))
			}
			id := s.upload(path)
			for ev, w := range want {
				args := []string{"flamegraph", "--profile", id, "--event", ev, "--include-idle", "--format", "pprof"}
				if _, got := pprofSum(t, s.mustCLI(args...)); got != w.samples {
					t.Errorf("event %s: the pprof export totals %d samples, the text has %d", ev, got, w.samples)
				}
				if w.periodless { // no period in the text to compare with
					continue
				}
				if _, got := pprofSum(t, s.mustCLI(append(args, "--period")...)); got != w.periods {
					t.Errorf("event %s: the pprof export with --period totals %d, the text's periods sum to %d", ev, got, w.periods)
				}
			}
		})
	}
	t.Run("go-sha-sort.cpu.pprof", func(t *testing.T) {
		want := pprofTotals(t, "corpus/pprof/go-sha-sort.cpu.pprof")
		if len(want) < 2 {
			t.Fatalf("%d sample types, want several", len(want))
		}
		id := s.upload(corpus.Path(t, "corpus/pprof/go-sha-sort.cpu.pprof"))
		for ev, sum := range want {
			for _, extra := range [][]string{nil, {"--period"}} { // a record counts as its value either way
				args := append([]string{"flamegraph", "--profile", id, "--event", ev, "--include-idle", "--format", "pprof"}, extra...)
				if _, got := pprofSum(t, s.mustCLI(args...)); got != sum {
					t.Errorf("event %s %v: the pprof export totals %d, google/pprof sums the file's to %d", ev, extra, got, sum)
				}
			}
		}
	})
}

// byProcessText is a perf script text with processes of several threads
// (one thread's command has a space), the kernel's swapper both idle (an
// idle loop among its frames) and not, over 4 seconds; the first sample of
// each process is its main thread's.
func byProcessText(t *testing.T) string {
	t.Helper()
	type thread struct {
		comm     string
		pid, tid int
		frames   []string // leaf first
	}
	threads := []thread{
		{"java", 4242, 4242, []string{"Lcom/acme/Handler;::serve", "Interpreter", "JavaMain", "start_thread"}},
		{"GC Thread#0", 4242, 4250, []string{"G1ParScanThreadState::trim_queue", "GangWorker::loop", "start_thread"}},
		{"nginx", 880, 880, []string{"ngx_http_handler", "ngx_process_events_and_timers", "main", "__libc_start_main"}},
		{"postgres", 1201, 1201, []string{"heap_getnext", "ExecScan", "PostgresMain", "main"}},
		{"postgres", 1201, 1205, []string{"XLogFlush", "WalWriterMain", "main"}},
		{"swapper", 0, 0, []string{"native_safe_halt", "default_idle", "do_idle", "cpu_startup_entry"}},
		{"swapper", 0, 0, []string{"__do_softirq", "irq_exit_rcu", "common_interrupt"}},
	}
	rng := rand.New(rand.NewPCG(42, 1))
	var b strings.Builder
	b.WriteString("# ========\n# hostname : byprocess\n# ========\n#\n")
	us := int64(5000_123_456)
	for i := 0; us < 5004_000_000; i++ {
		th := threads[rng.IntN(len(threads))]
		if i < 4 { // each process's first sample: its main thread
			th = []thread{threads[0], threads[2], threads[3], threads[5]}[i]
		}
		fmt.Fprintf(&b, "%s %d/%d [%03d] %d.%06d: 1000000 cpu-clock: \n", th.comm, th.pid, th.tid, rng.IntN(4), us/1e6, us%1e6)
		for d, f := range th.frames {
			fmt.Fprintf(&b, "\t%16x %s+0x%x (/usr/bin/x)\n", 0x400000+d*0x100, f, d+1)
		}
		b.WriteString("\n")
		us += 1 + rng.Int64N(9_000)
	}
	path := filepath.Join(t.TempDir(), "byprocess.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHeatmapByProcess: `heatmap --by process`, of a file and of the
// uploaded profile, is per process (pid) the samples of each second, as
// the test counts them in the perf text: all of them with --include-idle,
// without the swapper's idle-loop samples (the documented rule) otherwise;
// each series named by the command of the process's first sample.
func TestHeatmapByProcess(t *testing.T) {
	s := startService(t, serviceOpts{})
	idleLoop := func(frames []string) bool {
		for _, f := range frames {
			if f == "cpu_idle" || f == "do_idle" || f == "native_safe_halt" || strings.HasPrefix(f, "default_idle") || strings.HasPrefix(f, "cpuidle_enter") ||
				strings.HasPrefix(f, "intel_idle") || strings.HasPrefix(f, "mwait_idle") || strings.HasPrefix(f, "acpi_idle") || f == "xen_hypercall_sched_op" {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		path     string
		idleLoop bool // has swapper samples in an idle loop
	}{{byProcessText(t), true}, {corpus.Path(t, "corpus/perf/recorded-perf-sched-switch-F.txt"), false}} {
		path := c.path
		t.Run(filepath.Base(path), func(t *testing.T) {
			samples := readTextSamples(t, path)
			first := slices.MinFunc(samples, func(a, b textSample) int { return int(a.micros - b.micros) })
			start := first.micros / 1e6
			id := s.upload(path)
			for _, idle := range []bool{true, false} {
				type series struct {
					name    string
					at      int64 // the first sample's time
					columns map[int64]int64
				}
				want := map[string]*series{}
				idleSeen := 0
				for _, smp := range samples {
					if smp.pid < 0 {
						t.Fatal("a header without pid/tid")
					}
					if smp.comm == "swapper" && idleLoop(smp.frames) {
						idleSeen++
						if !idle {
							continue
						}
					}
					key := strconv.FormatInt(smp.pid, 10)
					w := want[key]
					if w == nil {
						w = &series{name: smp.comm, at: smp.micros, columns: map[int64]int64{}}
						want[key] = w
					}
					if smp.micros < w.at {
						w.name, w.at = smp.comm, smp.micros
					}
					w.columns[smp.micros/1e6-start]++
				}
				if (idleSeen > 0) != c.idleLoop || len(want) < 3 {
					t.Fatalf("%d idle samples, %d processes: not the test intended", idleSeen, len(want))
				}
				args := []string{"heatmap", "--by", "process", "--json"}
				if idle {
					args = append(args, "--include-idle")
				}
				for where, out := range map[string]string{"file": local(t, append(args, path)...), "server": s.mustCLI(append(args, "--profile", id)...)} {
					var got struct {
						StartSecond      int64
						SecondsPerColumn int64
						Series           []struct {
							Key, Name string
							Total     int64
							Columns   []int64
						}
					}
					if err := json.Unmarshal([]byte(out), &got); err != nil {
						t.Fatalf("%s: %v: %s", where, err, out)
					}
					if got.StartSecond != start || got.SecondsPerColumn != 1 {
						t.Fatalf("%s, idle %v: start second %d, %d s a column; the text starts at %d s (1 s a column)", where, idle, got.StartSecond, got.SecondsPerColumn, start)
					}
					if len(got.Series) != len(want) {
						t.Errorf("%s, idle %v: %d series, the text has %d processes", where, idle, len(got.Series), len(want))
					}
					for _, sr := range got.Series {
						w := want[sr.Key]
						if w == nil {
							t.Errorf("%s, idle %v: series %q (%s), no such process in the text", where, idle, sr.Key, sr.Name)
							continue
						}
						var total int64
						for col, n := range sr.Columns {
							if n != w.columns[int64(col)] {
								t.Errorf("%s, idle %v: process %s, second %d: %d samples, the text has %d", where, idle, sr.Key, col, n, w.columns[int64(col)])
							}
							total += n
						}
						var wantTotal int64
						for col, n := range w.columns {
							wantTotal += n
							if col >= int64(len(sr.Columns)) {
								t.Errorf("%s, idle %v: process %s: %d samples in second %d, past the %d columns", where, idle, sr.Key, n, col, len(sr.Columns))
							}
						}
						if sr.Total != wantTotal || total != wantTotal {
							t.Errorf("%s, idle %v: process %s totals %d (columns %d), the text has %d", where, idle, sr.Key, sr.Total, total, wantTotal)
						}
						if sr.Name != w.name {
							t.Errorf("%s, idle %v: process %s named %q, its first sample's command is %q", where, idle, sr.Key, sr.Name, w.name)
						}
					}
				}
			}
		})
	}
}
