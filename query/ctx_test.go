package query_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/ctxtest"
	"github.com/fleetscope/fleetscope/query/export"
)

var (
	wideOnce sync.Once
	wide     *parsed
)

// wideProfile is a stored profile of 200,000 stacks, each of four frames
// of its own, the first a long name: 800,002 flame graph nodes, over
// query.MaxExportNodes. Built once for the tests that share it.
func wideProfile(t *testing.T) *parsed {
	wideOnce.Do(func() {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("fleetscope-wide-%d.folded", os.Getpid()))
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(path)
		w := bufio.NewWriter(f)
		pad := strings.Repeat("abcdefgh_", 20)
		for i := range 200_000 {
			fmt.Fprintf(w, "proc;%s%d;g_%d;h_%d;k_%d 1\n", pad, i, i, i, i)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		wide = parseFile(t, path)
	})
	if wide == nil {
		t.Fatal("no wide profile")
	}
	return wide
}

// A flame graph with a function filter over a large dictionary answers its
// context's error, cancelled or past its deadline, instead of running the
// match to the end; a client leaving in the middle stops it at the next
// look; nothing of the stopped query is cached (the same query answers in
// full afterwards).
func TestFlameGraphHonoursContext(t *testing.T) {
	p := wideProfile(t)
	r := query.FlameRequest{ProfileID: p.id, Filter: fleetscope.Filter{Function: `[0-9]{3}7$`, ExcludeFunction: `^k_1`}}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.q.FlameGraph(cancelled, 0, r); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
	late, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := p.q.FlameGraph(late, 0, r); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("past its deadline: got %v, want context.DeadlineExceeded", err)
	}
	leaving := ctxtest.CancelAfter(5)
	if _, err := p.q.FlameGraph(leaving, 0, r); !errors.Is(err, context.Canceled) {
		t.Errorf("client leaving: got %v, want context.Canceled", err)
	}
	if leaving.Calls() != 5 {
		t.Errorf("the context was looked at %d times, want 5: the query went on after it saw it done", leaving.Calls())
	}
	g, err := p.q.FlameGraph(context.Background(), 0, r)
	if err != nil {
		t.Fatal(err)
	}
	var want uint64 // names ending in a 4-digit-or-longer number ending in 7, not those of stacks 1, 10-19, 100-199, ...
	for i := 1000; i < 200_000; i++ {
		if i%10 == 7 && !strings.HasPrefix(fmt.Sprint(i), "1") {
			want++
		}
	}
	if g.Total != want {
		t.Errorf("after the stopped queries: total %d, want %d", g.Total, want)
	}
}

// An export (SVG as pprof and speedscope) or folded text of a flame graph over query.MaxExportNodes is
// refused (ETOOLARGE, naming the limit and what to narrow) before it is
// built; a filtered one passes; an export asked for on a done context
// answers its error.
func TestExportOverBudgetRefused(t *testing.T) {
	p := wideProfile(t)
	ctx := context.Background()
	g, err := p.q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: p.id})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{export.FormatPprof, export.FormatSpeedscope} {
		var b bytes.Buffer
		err := g.Export(ctx, &b, format, "", false)
		if fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE || !strings.Contains(err.Error(), "750000") || !strings.Contains(err.Error(), "filter") {
			t.Errorf("%s: got %v, want too_large naming the limit", format, err)
		}
		if b.Len() != 0 {
			t.Errorf("%s: %d bytes written", format, b.Len())
		}
	}
	if err := g.CheckSize("folded text"); fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE {
		t.Errorf("folded: got %v, want too_large", err)
	}
	small, err := p.q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: p.id, Filter: fleetscope.Filter{Function: `^g_1[0-9]{4}$`}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := small.Export(ctx, &b, export.FormatPprof, "", false); err != nil || b.Len() == 0 {
		t.Errorf("filtered pprof: %v (%d bytes)", err, b.Len())
	}
	if err := small.CheckSize("folded text"); err != nil {
		t.Error(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := small.Export(cancelled, &b, export.FormatSpeedscope, "", false); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled export: got %v, want context.Canceled", err)
	}
}

// Comparing flame graphs of two dictionaries copies every stack of both
// into a new one: it stops at the first look that finds its context done.
func TestDiffHonoursContext(t *testing.T) {
	p := wideProfile(t)
	a, err := p.q.FlameGraph(context.Background(), 0, query.FlameRequest{ProfileID: p.id, Filter: fleetscope.Filter{Function: `^g_1`}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := query.LinesGraph(a.Event, a.Lines()) // the same stacks, another dictionary
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxtest.CancelAfter(3)
	if _, err := query.DiffOfContext(ctx, a, b); !errors.Is(err, context.Canceled) || ctx.Calls() != 3 {
		t.Errorf("got %v after %d looks, want context.Canceled after 3", err, ctx.Calls())
	}
	d, err := query.DiffOfContext(context.Background(), a, b)
	if err != nil || d.TotalA != d.TotalB || d.TotalA == 0 {
		t.Errorf("%v: totals %d, %d", err, d.TotalA, d.TotalB)
	}
}
