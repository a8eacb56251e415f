package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/fleetscope/fleetscope/api"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
)

// TestQueryStopsWhenTheClientLeaves: a flame graph whose regular
// expression filter would scan 50,000 long names for some 40 s (0.8 ms a
// name; a pattern longer than the names is ruled out at once) stops
// when its client gives up: the server logs the request as failed with
// code canceled (the query returned the context's error instead of
// running to the end), and answers the next query.
func TestQueryStopsWhenTheClientLeaves(t *testing.T) {
	s := startService(t, serviceOpts{})
	pad := strings.Repeat("abcdefgh_", 33)
	id := s.upload(writeStacks(t, 50_000, func(i int) string { return fmt.Sprintf("proc;%s%d", pad, i) }))
	_, q := s.clients()
	// The client gives up a second into the query (the server's matching
	// takes far longer); on a loaded machine the request may not have
	// reached the query by then, so it tries again, giving up later.
	var line map[string]any
	for i, after := range []time.Duration{time.Second, 4 * time.Second, 16 * time.Second} {
		_, from, _ := s.log.find(0, func(map[string]any) bool { return false })
		ctx, cancel := context.WithCancel(context.Background())
		stop := time.AfterFunc(after, cancel)
		_, err := q.GetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id,
			Filter: &fsv1.SampleFilter{Function: fmt.Sprintf(`([a-z_]|[a-h]){%d}X`, 100+i)}})) // not cached: another each time
		stop.Stop()
		cancel()
		if connect.CodeOf(err) != connect.CodeCanceled {
			t.Fatalf("a client that gave up: %v, want canceled", err)
		}
		deadline := time.After(30 * time.Second)
		for line == nil {
			l, next, added := s.log.find(from, func(l map[string]any) bool {
				return l["msg"] == "request failed" && strings.HasSuffix(fmt.Sprint(l["procedure"]), "QueryService/GetFlameGraph")
			})
			line, from = l, next
			if line != nil {
				break
			}
			select {
			case <-added:
				continue
			case <-deadline:
			}
			break
		}
		if line != nil {
			break
		}
	}
	if line == nil {
		t.Fatalf("the server never logged a flame graph whose client gave up as failed (the query ran on); log:\n%s", tail(s.log.String(), 4000))
	}
	if line["code"] != "canceled" {
		t.Errorf("the server logged %v, want code canceled", line)
	}
	res, err := q.GetFlameGraph(context.Background(), connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id,
		Filter: &fsv1.SampleFilter{Function: "_4999$"}, Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED}))
	if err != nil || res.Msg.GetTotal() != 1 {
		t.Fatalf("the next query: %v %v", res, err)
	}
}

// writeStacks writes a folded file of n stacks, stack(i) each once.
func writeStacks(t *testing.T, n int, stack func(i int) string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stacks.folded")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(w, "%s 1\n", stack(i))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOversizedQueriesRefused: a pattern whose program is too large is
// refused as InvalidArgument naming the limit; a pprof export (as every
// export format), folded text and a comparison of a flame graph over 750,000
// nodes are refused as too_large (ResourceExhausted) naming the limit,
// and pass once a filter narrows them.
func TestOversizedQueriesRefused(t *testing.T) {
	s := startService(t, serviceOpts{})
	id := s.upload(writeStacks(t, 200_000, func(i int) string { return fmt.Sprintf("proc;f_%d;g_%d;h_%d;k_%d", i, i, i, i) }))
	_, q := s.clients()
	compare := fleetscopev1connect.NewCompareServiceClient(http.DefaultClient, s.url, connect.WithInterceptors(api.Bearer(s.key)))
	ctx := context.Background()
	_, err := q.GetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id, Filter: &fsv1.SampleFilter{Function: `[a-z_:]{1000}X`}}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "at most 500") {
		t.Errorf("a pattern of 1003 instructions: %v, want InvalidArgument naming the limit", err)
	}
	tooLarge := func(what string, err error) {
		t.Helper()
		var ce *connect.Error
		if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted || ce.Meta().Get(api.CodeHeader) != "too_large" ||
			!strings.Contains(err.Error(), "750000") {
			t.Errorf("%s of 800,002 nodes: %v, want too_large naming the limit", what, err)
		}
	}
	for _, format := range []fsv1.FlameGraphFormat{fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_PPROF, fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED} {
		_, err := q.GetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id, Format: format}))
		tooLarge(format.String(), err)
	}
	side := &fsv1.DiffSide{Side: &fsv1.DiffSide_Profile{Profile: &fsv1.GetFlameGraphRequest{ProfileId: id}}}
	_, err = compare.GetDiffFlameGraph(ctx, connect.NewRequest(&fsv1.GetDiffFlameGraphRequest{A: side, B: side}))
	tooLarge("a comparison", err)
	narrow := &fsv1.SampleFilter{Function: `^g_1[0-9]{4}$`}
	res, err := q.GetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id, Filter: narrow, Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_PPROF}))
	if err != nil || res.Msg.GetTotal() != 10_000 || len(res.Msg.GetExport()) == 0 {
		t.Errorf("a filtered pprof export: %v %v", res, err)
	}
	side = &fsv1.DiffSide{Side: &fsv1.DiffSide_Profile{Profile: &fsv1.GetFlameGraphRequest{ProfileId: id, Filter: narrow}}}
	if _, err := compare.GetDiffFlameGraph(ctx, connect.NewRequest(&fsv1.GetDiffFlameGraphRequest{A: side, B: side})); err != nil {
		t.Errorf("a filtered comparison: %v", err)
	}
}
