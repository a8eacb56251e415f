package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// TestQueryStopsWhenTheClientLeaves: a flame graph whose regular
// expression filter would scan 50,000 long names for many seconds stops
// when its client gives up: the server logs the request as failed with
// code canceled (the query returned the context's error instead of
// running to the end), and answers the next query.
func TestQueryStopsWhenTheClientLeaves(t *testing.T) {
	s := startService(t, serviceOpts{})
	path := filepath.Join(t.TempDir(), "wide.folded")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	pad := strings.Repeat("abcdefgh_", 33)
	for i := range 50_000 {
		fmt.Fprintf(w, "proc;%s%d 1\n", pad, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	id := s.upload(path)
	_, q := s.clients()
	_, from, _ := s.log.find(0, func(map[string]any) bool { return false })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := time.AfterFunc(time.Second, cancel) // the client gives up
	defer stop.Stop()
	_, err = q.GetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id,
		Filter: &fsv1.SampleFilter{Function: `[a-z_]{400}X`}}))
	if connect.CodeOf(err) != connect.CodeCanceled {
		t.Fatalf("a client that gave up: %v, want canceled", err)
	}
	line, _ := s.log.await(t, from, 30*time.Second, func(l map[string]any) bool {
		return l["msg"] == "request failed" && strings.HasSuffix(fmt.Sprint(l["procedure"]), "QueryService/GetFlameGraph")
	})
	if line["code"] != "canceled" {
		t.Errorf("the server logged %v, want code canceled", line)
	}
	res, err := q.GetFlameGraph(context.Background(), connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id,
		Filter: &fsv1.SampleFilter{Function: "_4999$"}, Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED}))
	if err != nil || res.Msg.GetTotal() != 1 {
		t.Fatalf("the next query: %v %v", res, err)
	}
}
