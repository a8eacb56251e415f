package main

// Agent benchmarks (printed, never asserted): its CPU use idle between
// recordings and while uploading, and the throughput of 8 agents uploading
// to one server on this machine at once.
//
//	FLEETSCOPE_TEST_REQUIRE=1 go test -run '^$' -bench Agent -benchtime 1x ./cmd/fleetscope/

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/fleetscope/fleetscope/cmd/fleetscope/agent"
	"github.com/fleetscope/fleetscope/ingest/corpus"
)

// cpuTime is a process's user+system CPU time so far, from /proc.
func cpuTime(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15 of stat
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// children returns the pids of a process's children.
func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			out = append(out, n)
		}
	}
	return out
}

// BenchmarkAgentIdle: the agent's CPU while perf records (the agent waits
// between recordings), and perf record's own (-F 49 -a -g) when real perf
// is permitted here.
func BenchmarkAgentIdle(b *testing.B) {
	s := startService(b, serviceOpts{})
	args := []string{"--app", "idle", "--spool", b.TempDir(), "--duration", "1m"}
	real := true
	probe := filepath.Join(b.TempDir(), "p.data")
	if out, err := exec.Command("perf", "record", "-q", "-a", "-g", "-o", probe, "--", "true").CombinedOutput(); err != nil {
		real = false
		b.Logf("real perf not permitted here (%v: %s): measuring with the stand-in perf", err, strings.TrimSpace(string(out)))
	}
	if !real {
		args = append(args, "--perf", fakePerf(b))
	}
	a := startAgent(b, s.agentEnv(s.url), args...)
	a.await("perf to start", 30*time.Second, func() bool { return a.count("perf works here") == 1 })
	time.Sleep(2 * time.Second) // past startup
	pid := a.cmd.Process.Pid
	perfPid := 0
	for _, c := range children(pid) {
		perfPid = c
	}
	const window = 20 * time.Second
	b.ResetTimer()
	c0, p0, t0 := cpuTime(b, pid), time.Duration(0), time.Now()
	if perfPid != 0 {
		p0 = cpuTime(b, perfPid)
	}
	time.Sleep(window)
	c1, t1 := cpuTime(b, pid), time.Now()
	el := t1.Sub(t0)
	b.StopTimer()
	b.ReportMetric(100*float64(c1-c0)/float64(el), "agent-cpu-%")
	line := fmt.Sprintf("agent idle between recordings: %.2f%% of a CPU (%s CPU in %s; /proc counts 10 ms ticks)", 100*float64(c1-c0)/float64(el), c1-c0, el.Round(time.Millisecond))
	if real && perfPid != 0 {
		p1 := cpuTime(b, perfPid)
		b.ReportMetric(100*float64(p1-p0)/float64(el), "perf-record-cpu-%")
		line += fmt.Sprintf("; perf record -F 49 -a -g itself: %.2f%% of a CPU (%s; the sampling interrupts are charged to the sampled tasks)", 100*float64(p1-p0)/float64(el), p1-p0)
	}
	fmt.Println(line)
	a.cmd.Process.Kill()
}

// BenchmarkAgentRecordCycle: one whole recording cycle with real perf
// (perf record -F 49 -a -g for 10 s, perf script, gzip, spool, upload): the
// CPU of the agent and its perf processes, as a share of one CPU over the
// recording, which is what continuous recording costs.
func BenchmarkAgentRecordCycle(b *testing.B) {
	probe := filepath.Join(b.TempDir(), "p.data")
	if out, err := exec.Command("perf", "record", "-q", "-a", "-g", "-o", probe, "--", "true").CombinedOutput(); err != nil {
		b.Skipf("real perf not permitted here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	s := startService(b, serviceOpts{})
	const d = 10 * time.Second
	b.ResetTimer()
	const n = 3
	a := startAgent(b, s.agentEnv(s.url), "--app", "cycle", "--spool", b.TempDir(), "--duration", d.String(), "--count", strconv.Itoa(n))
	if code := a.wait(2 * time.Minute); code != 0 {
		b.Fatalf("agent exit %d", code)
	}
	b.StopTimer()
	cpu := a.cmd.ProcessState.UserTime() + a.cmd.ProcessState.SystemTime() // with perf record and perf script (waited for)
	ps := s.search("cycle")
	if len(ps) != n {
		b.Fatalf("%d profiles", len(ps))
	}
	var raw string
	for _, l := range strings.Split(a.log(), "\n") {
		if strings.Contains(l, `"msg":"recording spooled"`) {
			raw = l[strings.Index(l, `"raw_bytes":`)+12:]
			raw = raw[:strings.IndexAny(raw, ",}")]
		}
	}
	pct := 100 * float64(cpu) / float64(n*d)
	b.ReportMetric(pct, "cpu-%-while-recording")
	fmt.Printf("%d back-to-back %s recordings (perf record -F 49 -a -g, perf script, gzip, spool, upload): %s CPU in all (agent, perf record, perf script; startup probe included) = %.1f%% of one CPU while recording; %d samples, %s bytes of perf script text per recording\n",
		n, d, cpu.Round(time.Millisecond), pct, ps[0].GetSamples(), raw)
}

// fillSpools writes n entries to each of the spools: the gzipped profile
// gz (rawLen bytes decompressed) behind a distinct gzipped comment line, so
// every entry is distinct bytes (a multi-member gzip stream) of the same
// profile. It returns the raw bytes per entry.
func fillSpools(tb testing.TB, spools []string, n int, gz []byte, rawLen int64) int64 {
	tb.Helper()
	var raw int64
	for si, dir := range spools {
		sp, err := agent.OpenSpool(dir, 0, nil, nil)
		if err != nil {
			tb.Fatal(err)
		}
		for i := range n {
			var head bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&head, 5)
			line := fmt.Sprintf("# bench spool %d entry %d\n", si, i)
			zw.Write([]byte(line))
			zw.Close()
			raw = int64(len(line)) + rawLen
			if _, err := sp.Add(agent.Meta{App: "bench", Host: fmt.Sprintf("host-%d", si), RecordedAt: time.Now(), RawBytes: raw}, func(w io.Writer, _ *agent.Meta) error {
				w.Write(head.Bytes())
				_, err := w.Write(gz)
				return err
			}); err != nil {
				tb.Fatal(err)
			}
		}
		sp.Close()
	}
	return raw
}

// uploadBench runs `agents` agents in --upload-only mode at once, each
// draining a spool of `per` entries of the benchmark profile (real perf
// script text with deep stacks, 74 MB raw, 5.7 MB gzipped), and reports the
// raw (uncompressed) throughput, the agents' CPU and the server's.
func uploadBench(b *testing.B, agents, per int) {
	s := startService(b, serviceOpts{})
	gz := corpus.Read(b, "bench/perf-mixed-60s.txt.gz")
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		b.Fatal(err)
	}
	rawLen, err := io.Copy(io.Discard, zr)
	if err != nil {
		b.Fatal(err)
	}
	var spools []string
	for range agents {
		spools = append(spools, b.TempDir())
	}
	raw := fillSpools(b, spools, per, gz, rawLen)
	var want []string
	var sent int64
	for _, sp := range spools {
		want = append(want, spooled(b, sp)...)
		files, _ := filepath.Glob(filepath.Join(sp, "queue", "*.fsp"))
		for _, f := range files {
			fi, _ := os.Stat(f)
			sent += fi.Size()
		}
	}
	slices.Sort(want)
	total := raw * int64(agents*per)

	srv0 := cpuTime(b, s.proc.Process.Pid)
	b.ResetTimer()
	start := time.Now()
	var procs []*agentProc
	for _, sp := range spools {
		procs = append(procs, startAgent(b, s.agentEnv(s.url), "--upload-only", "--spool", sp, "--retry-min", "100ms"))
	}
	var agentCPU time.Duration
	for _, a := range procs {
		if code := a.wait(10 * time.Minute); code != 0 {
			b.Fatalf("agent exit %d", code)
		}
		agentCPU += a.cmd.ProcessState.UserTime() + a.cmd.ProcessState.SystemTime()
	}
	el := time.Since(start)
	b.StopTimer()
	srvCPU := cpuTime(b, s.proc.Process.Pid) - srv0
	got := s.storedSHA256("bench")
	lost := len(want) - len(got)
	if !slices.Equal(got, want) {
		b.Errorf("stored %d profiles, spooled %d: not the same set", len(got), len(want))
	}
	retries := 0
	for _, a := range procs {
		retries += a.count("upload failed: will retry")
	}
	mbps := float64(total) / 1e6 / el.Seconds()
	b.ReportMetric(mbps, "raw-MB/s")
	b.ReportMetric(float64(agentCPU.Milliseconds())/(float64(total)/1e6), "agent-cpu-ms/raw-MB")
	b.ReportMetric(100*float64(agentCPU)/float64(el)/float64(agents), "agent-cpu-%")
	fmt.Printf("%d agents x %d uploads of %.1f MB raw (%.2f MB gzipped): %.0f MB raw in %s = %.0f MB/s raw (%.1f MB/s as sent); "+
		"agents' CPU %s (%.2f ms per raw MB, %.1f%% of a CPU each while uploading); server CPU %s; %d retries; stored %d of %d, lost %d\n",
		agents, per, float64(raw)/1e6, float64(sent)/float64(agents*per)/1e6, float64(total)/1e6, el.Round(time.Millisecond), mbps,
		float64(sent)/1e6/el.Seconds(), agentCPU.Round(time.Millisecond), float64(agentCPU.Milliseconds())/(float64(total)/1e6),
		100*float64(agentCPU)/float64(el)/float64(agents), srvCPU.Round(time.Millisecond), retries, len(got), len(want), lost)
}

// BenchmarkAgentUpload: one agent uploading its spool: its CPU per MB.
func BenchmarkAgentUpload(b *testing.B) { uploadBench(b, 1, 4) }

// BenchmarkAgentUpload8: 8 agents at once against one server, all on this
// machine (target >= 150 MB/s raw on 2 cores, nothing lost).
func BenchmarkAgentUpload8(b *testing.B) { uploadBench(b, 8, 3) }
