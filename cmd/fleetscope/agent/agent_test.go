package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func add(t *testing.T, s *Spool, at time.Time, body string) string {
	t.Helper()
	name, err := s.Add(Meta{App: "a", RecordedAt: at}, func(w io.Writer, m *Meta) error {
		m.Anchor = &Anchor{ClockNanos: 42, Wall: time.Unix(1795000000, 0), Source: "agent"} // grows the header
		_, err := io.WriteString(w, body)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// TestAgentSpoolDurableAndBounded: entries survive a reopen (oldest first, with
// their metadata), crash leftovers are cleaned, the bound drops the oldest
// entries (never one in flight) and counts them, and a second agent cannot
// open the same spool.
func TestAgentSpoolDurableAndBounded(t *testing.T) {
	dir := t.TempDir()
	m := NewMetrics(nil)
	s, err := OpenSpool(dir, 0, nil, m)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1795000000, 0)
	var names []string
	for i := range 3 {
		names = append(names, add(t, s, t0.Add(time.Duration(i)*time.Second), strings.Repeat(fmt.Sprint(i), 1000)))
	}
	if _, err := OpenSpool(dir, 0, nil, nil); err == nil || !strings.Contains(err.Error(), "in use by another agent") {
		t.Fatalf("second open: %v", err)
	}
	s.Close()
	os.WriteFile(filepath.Join(dir, "queue", ".tmp-123"), []byte("half"), 0o600) // a crash mid-write

	entryBytes := fileSize(t, filepath.Join(dir, "queue", names[0]))
	s, err = OpenSpool(dir, 3*entryBytes+10, nil, m)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, _ := s.Len(); n != 3 {
		t.Fatalf("reopened: %d entries", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "queue", ".tmp-123")); !os.IsNotExist(err) {
		t.Fatal("temporary file left")
	}
	e, ok, _ := s.Next()
	if !ok || e.Name != names[0] {
		t.Fatalf("next: %v %v, want the oldest %s", e, ok, names[0])
	}
	meta, body, size, err := OpenEntry(e.Path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(body)
	body.Close()
	if meta.App != "a" || meta.Anchor == nil || meta.Anchor.ClockNanos != 42 || string(b) != strings.Repeat("0", 1000) || size != 1000 {
		t.Fatalf("entry: %+v %d %q", meta, size, b[:10])
	}
	// Over the bound: the oldest not in flight (names[1]) goes.
	n4 := add(t, s, t0.Add(4*time.Second), strings.Repeat("4", 1000))
	if s.Dropped() != 1 {
		t.Fatalf("dropped %d, want 1", s.Dropped())
	}
	var left []string
	des, _ := os.ReadDir(filepath.Join(dir, "queue"))
	for _, de := range des {
		left = append(left, de.Name())
	}
	if !slices.Equal(left, []string{names[0], names[2], n4}) {
		t.Fatalf("left %v", left)
	}
	s.Release(e)
	if err := s.Done(e); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Len(); n != 2 {
		t.Fatalf("%d entries after one upload", n)
	}
	// An entry larger than the whole spool is refused, not queued.
	if _, err := s.Add(Meta{App: "a"}, func(w io.Writer, _ *Meta) error {
		_, err := w.Write(make([]byte, 4*entryBytes))
		return err
	}); err == nil {
		t.Fatal("oversized entry accepted")
	}
}

func fileSize(t *testing.T, p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// fakeUploader fails the first failures calls, then stores by content.
type fakeUploader struct {
	mu       sync.Mutex
	failures int
	calls    int
	stored   map[string]int
	reject   string // bodies containing this are refused for good
}

func (u *fakeUploader) Upload(ctx context.Context, m Meta, body io.Reader, size int64) (Result, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return Result{}, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.calls++
	if u.calls <= u.failures {
		return Result{}, errors.New("connection refused")
	}
	if u.reject != "" && bytes.Contains(b, []byte(u.reject)) {
		return Result{}, Rejected(errors.New("not a profile"))
	}
	if u.stored == nil {
		u.stored = map[string]int{}
	}
	u.stored[string(b)]++
	return Result{ID: fmt.Sprint(len(u.stored)), Created: u.stored[string(b)] == 1}, nil
}

// TestAgentUploadOnlyRetriesAndDrains: a spool is drained through failures
// (retried with backoff) and a rejected entry (set aside), each entry
// stored once.
func TestAgentUploadOnlyRetriesAndDrains(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenSpool(dir, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		add(t, s, time.Now(), fmt.Sprintf("profile %d", i))
	}
	add(t, s, time.Now(), "junk")
	s.Close()
	u := &fakeUploader{failures: 4, reject: "junk"}
	a, err := New(Config{SpoolDir: dir, UploadOnly: true, Uploader: u, Retry: Backoff{Min: time.Millisecond, Max: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(u.stored) != 5 || u.calls != 4+6 {
		t.Fatalf("stored %d (%v) in %d calls", len(u.stored), u.stored, u.calls)
	}
	for b, n := range u.stored {
		if n != 1 {
			t.Fatalf("%q stored %d times", b, n)
		}
	}
	if failed, _ := os.ReadDir(filepath.Join(dir, "failed")); len(failed) != 1 {
		t.Fatalf("%d in failed/", len(failed))
	}
}

func TestAgentBackoff(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	for attempt, want := range []time.Duration{100, 200, 400, 800, 1000, 1000, 1000} {
		want *= time.Millisecond
		for range 50 {
			if d := b.Delay(attempt); d < want/2 || d > want {
				t.Fatalf("attempt %d: %s, want in [%s, %s]", attempt, d, want/2, want)
			}
		}
	}
	if d := b.Delay(1000); d > time.Second {
		t.Fatalf("attempt 1000: %s", d)
	}
}

func TestAgentHeaderScanner(t *testing.T) {
	in := "# ========\n# hostname : web-1\n# clockid: monotonic (1)\n" +
		"# reference time: 2026-11-23 13:50:08.253363 = 1795441808.253363 (TOD) = 4143.715827227 (monotonic)\n" +
		"# ========\n#\njava 1 [000] 4143.8: cpu-clock:\n\tffff f (m)\n\n# clockid: realtime (0)\n"
	var s headerScanner
	for i := 0; i < len(in); i += 7 { // in small pieces
		s.Write([]byte(in[i:min(i+7, len(in))]))
	}
	h := s.h
	want := Anchor{ClockNanos: 4143715827227, Wall: time.Unix(1795441808, 253363000), Source: "perf"}
	if h.clock != "monotonic" || h.hostname != "web-1" || h.reference == nil || *h.reference != want {
		t.Fatalf("header: %+v %+v", h, h.reference)
	}
	if a := anchorFor(h, &Anchor{Source: "agent"}); a == nil || a.Source != "perf" {
		t.Fatalf("anchor: %+v", a)
	}
	if a := anchorFor(perfHeader{clock: "realtime"}, &Anchor{Source: "agent"}); a != nil {
		t.Fatalf("realtime anchored: %+v", a)
	}
	if a := anchorFor(perfHeader{}, &Anchor{Source: "agent"}); a == nil || a.Source != "agent" {
		t.Fatalf("no header: %+v", a)
	}
}

// TestAgentReadClocks: the readings lie between readings of the same
// clocks taken just before and just after (an order, not a duration).
func TestAgentReadClocks(t *testing.T) {
	var m0, m1, w0, w1 unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME, &w0) != nil || unix.ClockGettime(unix.CLOCK_MONOTONIC, &m0) != nil {
		t.Skip("no clock_gettime here")
	}
	a := ReadClocks()
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &m1)
	unix.ClockGettime(unix.CLOCK_REALTIME, &w1)
	if a.ClockNanos < m0.Nano() || a.ClockNanos > m1.Nano() {
		t.Errorf("monotonic reading %d, not within the readings before and after it [%d, %d]", a.ClockNanos, m0.Nano(), m1.Nano())
	}
	if wall := a.Wall.UnixNano(); wall < w0.Nano() || wall > w1.Nano() {
		t.Errorf("wall reading %d, not within the readings before and after it [%d, %d]", wall, w0.Nano(), w1.Nano())
	}
	if a.Source != "agent" {
		t.Errorf("source %q", a.Source)
	}
}

func TestAgentRecordArgs(t *testing.T) {
	for _, c := range []struct {
		p     Perf
		clock string
		want  string
	}{
		{Perf{Frequency: 49}, "realtime", "record -q -F 49 -g -a -k CLOCK_REALTIME -o OUT"},
		{Perf{Frequency: 99, PID: "12,13", Events: []string{"cpu-clock"}}, "", "record -q -F 99 -g -p 12,13 -e cpu-clock -o OUT"},
		{Perf{CGroup: "system.slice/nginx.service", NoCallGraph: true}, "monotonic", "record -q -a -e cpu-clock -G system.slice/nginx.service -k CLOCK_MONOTONIC -o OUT"},
		{Perf{Frequency: 49, Extra: []string{"--call-graph", "dwarf"}}, "", "record -q -F 49 -g -a -o OUT --call-graph dwarf"},
	} {
		if got := strings.Join(c.p.recordArgs("OUT", c.clock), " "); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}
