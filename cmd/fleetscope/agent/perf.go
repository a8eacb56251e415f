package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/gzip"
)

// Perf runs the perf tool: perf record for recordings, perf script to turn
// them into the text fleetscope reads.
type Perf struct {
	Bin         string   // the perf binary ("perf": from PATH)
	Frequency   int      // -F; 0: perf's default (or the events' own periods)
	Events      []string // -e, each
	PID         string   // -p: only these processes (comma-separated pids)
	CGroup      string   // -G: only this cgroup (with -a)
	Extra       []string // more perf record arguments, as given
	NoCallGraph bool     // leave out -g

	// clock is what the probe settled on: "realtime", "monotonic" or ""
	// (perf's default clock).
	clock string
}

// ErrPerfMissing and ErrPerfNotPermitted are the two setup problems the
// agent explains.
var (
	ErrPerfMissing      = errors.New("perf is not installed")
	ErrPerfNotPermitted = errors.New("perf_event_open is not permitted")
)

// Clock says which clock recordings use, once Probe has run.
func (p *Perf) Clock() string { return p.clock }

func (p *Perf) bin() string {
	if p.Bin == "" {
		return "perf"
	}
	return p.Bin
}

// LiveCommands are the two processes of a live recording: perf record on
// the wall clock (so batches stored apart line up), unbuffered, writing to
// a pipe, and perf script turning it into text as it comes (line-buffered
// through stdbuf where coreutils has it). Stop perf record alone (SIGINT):
// perf script then drains the pipe and ends.
func (p *Perf) LiveCommands() (record, script *exec.Cmd) {
	args := p.recordArgs("-", "realtime")
	args = append([]string{args[0], "--no-buffering"}, args[1:]...)
	record = exec.Command(p.bin(), args...)
	if sb, err := exec.LookPath("stdbuf"); err == nil {
		script = exec.Command(sb, "-oL", p.bin(), "script", "-i", "-")
	} else {
		script = exec.Command(p.bin(), "script", "-i", "-")
	}
	return record, script
}

// recordArgs builds the perf record command line writing to out, with the
// clock -k clock ("" for perf's default).
func (p *Perf) recordArgs(out, clock string) []string {
	args := []string{"record", "-q"}
	if p.Frequency > 0 {
		args = append(args, "-F", strconv.Itoa(p.Frequency))
	}
	if !p.NoCallGraph {
		args = append(args, "-g")
	}
	if p.PID != "" {
		args = append(args, "-p", p.PID)
	} else {
		args = append(args, "-a")
	}
	events := p.Events
	if p.CGroup != "" && len(events) == 0 {
		events = []string{"cpu-clock"} // perf wants the events before -G
	}
	for _, e := range events {
		args = append(args, "-e", e)
	}
	if p.CGroup != "" {
		args = append(args, "-G", p.CGroup)
	}
	if clock != "" {
		args = append(args, "-k", "CLOCK_"+strings.ToUpper(clock))
	}
	args = append(args, "-o", out)
	return append(args, p.Extra...)
}

// Probe checks that perf is installed and may record here, with a short
// recording (of `true`), and picks the clock: want is "auto" (realtime, else
// monotonic, else perf's default), or one of "realtime", "monotonic",
// "default". Returns ErrPerfMissing or ErrPerfNotPermitted (wrapped, with
// how to fix it) for the two usual setup problems.
func (p *Perf) Probe(ctx context.Context, dir, want string) error {
	bin, err := exec.LookPath(p.bin())
	if err != nil {
		return fmt.Errorf("%w (%s not found): install it (Debian: apt-get install linux-perf; Ubuntu: apt-get install linux-tools-$(uname -r); Fedora/RHEL: dnf install perf) or pass --perf PATH", ErrPerfMissing, p.bin())
	}
	p.Bin = bin
	out := filepath.Join(dir, "probe.data")
	defer os.Remove(out)
	defer os.Remove(out + ".old")
	var clocks []string
	switch want {
	case "", "auto":
		clocks = []string{"realtime", "monotonic", ""}
	case "default":
		clocks = []string{""}
	case "realtime", "monotonic":
		clocks = []string{want}
	default:
		return fmt.Errorf("--clock %q: want auto, realtime, monotonic or default", want)
	}
	return p.probe(ctx, out, clocks)
}

func (p *Perf) probe(ctx context.Context, out string, clocks []string) error {
	var first error
	for _, clock := range clocks {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		args := append(p.recordArgs(out, clock), "--", "true")
		cmd := exec.CommandContext(ctx, p.Bin, args...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &tailBuffer{buf: &stderr, max: 16 << 10}
		err := cmd.Run()
		cancel()
		if err == nil {
			p.clock = clock
			return nil
		}
		msg := stderr.String()
		if e := explain(p.Bin, args, msg, err); errors.Is(e, ErrPerfNotPermitted) || errors.Is(e, ErrPerfMissing) {
			return e
		} else if first == nil {
			first = e
		}
	}
	return first
}

// explain turns a failed perf run into one clear line.
func explain(bin string, args []string, stderr string, err error) error {
	low := strings.ToLower(stderr)
	switch {
	case strings.Contains(low, "perf_event_paranoid") || strings.Contains(low, "access to performance monitoring") ||
		strings.Contains(low, "permission denied") || strings.Contains(low, "not permitted") || strings.Contains(low, "no permission"):
		level := "unknown"
		if b, rerr := os.ReadFile("/proc/sys/kernel/perf_event_paranoid"); rerr == nil {
			level = strings.TrimSpace(string(b))
		}
		return fmt.Errorf("%w (kernel.perf_event_paranoid=%s, and this process lacks CAP_PERFMON): run the agent as root or grant it CAP_PERFMON (Linux >= 5.8; CAP_SYS_ADMIN before; systemd: AmbientCapabilities=CAP_PERFMON CAP_SYS_PTRACE CAP_SYSLOG), or lower the setting (sysctl kernel.perf_event_paranoid=-1 to record all CPUs and the kernel as any user; in a container, also allow perf_event_open in its seccomp profile)", ErrPerfNotPermitted, level)
	case strings.Contains(low, "perf not found for kernel") || strings.Contains(low, "you may need to install"):
		return fmt.Errorf("%w for this kernel (%s): install the perf package that matches `uname -r` (Debian: apt-get install linux-perf; Ubuntu: apt-get install linux-tools-$(uname -r))", ErrPerfMissing, firstLine(stderr))
	}
	line := lastLines(stderr, 3)
	if line == "" {
		line = err.Error()
	}
	return fmt.Errorf("%s %s: %s", filepath.Base(bin), strings.Join(args, " "), line)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

// lastLines joins the last n non-empty lines of s with "; ".
func lastLines(s string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return strings.Join(out, "; ")
}

// tailBuffer keeps the last max bytes written (perf can be chatty).
type tailBuffer struct {
	mu  sync.Mutex
	buf *bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if t.buf.Len() > 2*t.max {
		b := append([]byte(nil), t.buf.Bytes()[t.buf.Len()-t.max:]...)
		t.buf.Reset()
		t.buf.Write(b)
	}
	return len(p), nil
}

// Record runs perf record into out for d, or until ctx is done, whichever
// comes first; perf then gets SIGINT and writes a complete file. started,
// if not nil, learns perf's pid once it runs. perf runs in its own process group (a Ctrl-C on the
// terminal reaches the agent, which stops it) and gets SIGINT if the agent
// dies. An early exit of perf (an error, or the target process exiting)
// ends the recording.
func (p *Perf) Record(ctx context.Context, out string, d time.Duration, started func(pid int)) error {
	args := p.recordArgs(out, p.clock)
	cmd := exec.Command(p.Bin, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &tailBuffer{buf: &stderr, max: 16 << 10}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT}
	if err := cmd.Start(); err != nil {
		return explain(p.Bin, args, "", err)
	}
	if started != nil {
		started(cmd.Process.Pid)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	signalled, done := false, false
	var err error
	select {
	case err = <-exited:
		done = true
	case <-timer.C:
	case <-ctx.Done():
	}
	if !done {
		signalled = true
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case err = <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("perf record did not stop within 30 s of SIGINT: killed")
		}
	}
	fi, serr := os.Stat(out)
	if serr == nil && fi.Size() > 0 && (err == nil || signalled) {
		return nil
	}
	if err == nil {
		err = errors.New("perf record wrote no data")
	}
	return explain(p.Bin, args, stderr.String(), err)
}

// Script runs perf script --header on in and writes its output, gzipped, to
// w; the header lines pass through h. It returns the bytes perf printed.
func (p *Perf) Script(ctx context.Context, in string, w io.Writer, h *headerScanner) (int64, error) {
	args := []string{"script", "--header", "-i", in}
	cmd := exec.CommandContext(ctx, p.bin(), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &tailBuffer{buf: &stderr, max: 16 << 10}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("%w: converting perf.data needs perf (install linux-perf or pass --perf PATH)", ErrPerfMissing)
		}
		return 0, explain(p.bin(), args, "", err)
	}
	n, cerr := gzipTo(w, io.TeeReader(stdout, h))
	if cerr != nil {
		cmd.Process.Kill()
	}
	werr := cmd.Wait()
	if cerr != nil {
		return n, cerr
	}
	if werr != nil {
		return n, explain(p.bin(), args, stderr.String(), werr)
	}
	if n == 0 {
		return 0, fmt.Errorf("perf script printed nothing for %s: %s", in, lastLines(stderr.String(), 3))
	}
	return n, nil
}

// gzipLevel trades a little size for agent CPU: level 5 of klauspost's gzip
// compresses perf text about 9x at a few hundred MB/s.
const gzipLevel = 5

// gzipTo compresses r to w. The output depends only on the input (no name,
// no time in the gzip header), so the same file spooled twice uploads the
// same bytes, which the server stores once.
func gzipTo(w io.Writer, r io.Reader) (int64, error) {
	zw, err := gzip.NewWriterLevel(w, gzipLevel)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(zw, r)
	if err != nil {
		return n, err
	}
	return n, zw.Close()
}
