package agent

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// TestReplayKeepsItsPace: a replayed file comes out byte for byte, plain
// or gzipped, each sample waiting until its timestamp's offset from the
// first has passed (on a fake clock), samples out of order at once; a
// perf.data file is refused, saying what to do.
func TestReplayKeepsItsPace(t *testing.T) {
	text := "# ========\n# captured on: x\n# ========\n#\n" +
		"app 1 [000] 100.000000: 1 cpu-clock:\n\t1 main (/bin/app)\n\n" +
		"app 1 [001] 100.500000: 1 cpu-clock:\n\t1 main (/bin/app)\n\n" +
		"app 1 [000] 100.400000: 1 cpu-clock:\n\t1 main (/bin/app)\n\n" +
		"app 1 [000] 102.000000: 1 cpu-clock:\n\t1 main (/bin/app)\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text))
	zw.Close()
	for _, in := range [][]byte{[]byte(text), gz.Bytes()} {
		r, err := NewReplay(context.Background(), bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		clock := time.Unix(0, 0)
		var waits []time.Duration
		r.now = func() time.Time { return clock }
		r.sleep = func(_ context.Context, d time.Duration) bool {
			waits = append(waits, d)
			clock = clock.Add(d)
			return true
		}
		out, err := io.ReadAll(r)
		if err != nil || string(out) != text {
			t.Fatalf("replay: %v, %q", err, out)
		}
		if want := []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond}; len(waits) != 2 || waits[0] != want[0] || waits[1] != want[1] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
	// Stopped while it waits: the replay ends there.
	ctx, cancel := context.WithCancel(context.Background())
	r, _ := NewReplay(ctx, bytes.NewReader([]byte(text)))
	r.sleep = func(ctx context.Context, d time.Duration) bool { cancel(); return false }
	out, _ := io.ReadAll(r)
	if !bytes.HasSuffix(out, []byte("100.000000: 1 cpu-clock:\n\t1 main (/bin/app)\n\n")) {
		t.Fatalf("stopped replay: %q, want up to the first sample", out)
	}
	if _, err := NewReplay(context.Background(), bytes.NewReader([]byte("PERFILE2\x68\x00\x00\x00"))); !errors.Is(err, ErrPerfData) {
		t.Fatalf("perf.data: %v", err)
	}
}
