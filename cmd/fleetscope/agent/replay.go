package agent

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"strings"
	"time"
)

// Replay reads a recorded perf script text (plain or gzipped) at its own
// pace, for a live recording from a file: each sample comes when as much
// time has passed since the first sample as its timestamp says. Samples
// out of order (perf script of several CPUs) come at once. When ctx ends,
// the replay ends as the file would: what was read is the recording.
type Replay struct {
	ctx     context.Context
	r       *bufio.Reader
	pending []byte
	first   int64 // the first sample's timestamp, ns; -1 before it
	started time.Time
	// now and sleep are the clock; tests replace them.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) bool
}

// ErrPerfData is the error of a replay of a perf.data file, which needs
// perf script first.
var ErrPerfData = errors.New("a perf.data file, not perf script text: give the command `perf script --header -i FILE` as the live source")

// NewReplay returns a replay of r, or ErrPerfData.
func NewReplay(ctx context.Context, r io.Reader) (*Replay, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	head, _ := br.Peek(8)
	switch {
	case bytes.HasPrefix(head, []byte("PERFILE2")) || bytes.HasPrefix(head, []byte("PERFFILE")):
		return nil, ErrPerfData
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		br = bufio.NewReaderSize(zr, 1<<20)
	}
	return &Replay{ctx: ctx, r: br, first: -1, now: time.Now, sleep: sleep}, nil
}

// Read returns the text, a line at a time, waiting before each sample
// until its time has come.
func (p *Replay) Read(b []byte) (int, error) {
	if len(p.pending) == 0 {
		if p.ctx.Err() != nil {
			return 0, io.EOF
		}
		line, err := p.r.ReadBytes('\n')
		if len(line) == 0 {
			return 0, err
		}
		if ts, ok := sampleTime(line); ok {
			if p.first < 0 {
				p.first, p.started = ts, p.now()
			} else if wait := p.started.Add(time.Duration(ts - p.first)).Sub(p.now()); wait > 0 && !p.sleep(p.ctx, wait) {
				return 0, io.EOF // stopped: the recording ends before this sample
			}
		}
		p.pending = line
	}
	n := copy(b, p.pending)
	p.pending = p.pending[n:]
	return n, nil
}

// sampleTime reads the timestamp of a sample's first line, "comm pid
// [cpu] 1795000000.123456: 1 cpu-clock:" (not indented, not a # comment).
func sampleTime(line []byte) (int64, bool) {
	if len(line) == 0 || line[0] == '\t' || line[0] == ' ' || line[0] == '#' || line[0] == '\n' {
		return 0, false
	}
	for _, f := range strings.Fields(string(line)) {
		if num, ok := strings.CutSuffix(f, ":"); ok && strings.Contains(num, ".") {
			if ns, ok := parseDecimalNanos(num); ok {
				return ns, true
			}
		}
	}
	return 0, false
}
