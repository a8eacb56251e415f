package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// BenchmarkShapes measures the server's memory by profile shape (the
// hardening issue's resource figures): peak RSS storing and querying a
// profile of the most distinct stacks a profile may have, of the deepest
// stacks, and of many samples; and the open files with hundreds of clients
// that connect and send nothing. Run with:
// go test -run '^$' -bench Shapes -benchtime 1x ./cmd/fleetscope/
func BenchmarkShapes(b *testing.B) {
	for _, c := range []struct {
		name string
		gen  func(w *bufio.Writer)
	}{
		// 250,000 distinct stacks (the default FLEETSCOPE_MAX_STACKS),
		// one sample each, 8 frames deep.
		{"250k distinct stacks", func(w *bufio.Writer) {
			for i := range 250_000 {
				fmt.Fprintf(w, "app 1 [%03d] %d.%06d: 1 cpu-clock:\n", i%8, 1000+i/5000, (i%5000)*200)
				for d := 7; d >= 1; d-- {
					fmt.Fprintf(w, "\t%x f%d_%d (/bin/app)\n", 0x400000+d, d, i>>(3*(7-d)))
				}
				fmt.Fprintf(w, "\t%x main (/bin/app)\n\n", 0x400000)
			}
		}},
		// 20 stacks of 4,096 frames (the default FLEETSCOPE_MAX_DEPTH,
		// the process name included), 50 samples each.
		{"20 stacks of 4,096 frames", func(w *bufio.Writer) {
			for i := range 1000 {
				fmt.Fprintf(w, "app 1 [000] %d.%06d: 1 cpu-clock:\n", 1000+i/100, (i%100)*10000)
				for d := 4094; d >= 0; d-- {
					fmt.Fprintf(w, "\t%x fn%d_%d (/bin/app)\n", 0x400000+d, i%20, d)
				}
				w.WriteString("\n")
			}
		}},
	} {
		s := startService(b, serviceOpts{})
		path := filepath.Join(b.TempDir(), "shape.txt")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		c.gen(w)
		w.Flush()
		f.Close()
		st, _ := os.Stat(path)
		t := time.Now()
		id := s.upload(path)
		took := time.Since(t)
		_, q := s.clients()
		if _, err := q.GetFlameGraph(context.Background(), connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id, Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_TREE})); err != nil {
			b.Fatal(err)
		}
		if _, err := q.GetHeatmap(context.Background(), connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id, Rows: 1000})); err != nil {
			b.Fatal(err)
		}
		fmt.Printf("%-44s %8d MB peak server RSS (upload %.1f s, then its whole flame graph and a 1000-row heatmap; %d MB text; target <= 512 MB)\n",
			c.name, procStatusKB(b, s.proc.Process.Pid, "VmHWM:")/1024, took.Seconds(), st.Size()/1e6)
	}

	// Open files with 400 clients connected and silent (slowloris).
	s := startService(b, serviceOpts{})
	before := openFiles(s)
	var conns []net.Conn
	for range 400 {
		c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
		if err != nil {
			break
		}
		c.Write([]byte("POST /fleetscope.v1.IngestService/Upload HTTP/1.1\r\nHost: x\r\n")) // and nothing more
		conns = append(conns, c)
	}
	time.Sleep(time.Second) // for the server to accept them: a measurement, not a test
	during := openFiles(s)
	fmt.Printf("%-44s %8d open files with %d silent clients (%d idle); each costs one, up to FLEETSCOPE_MAX_CONNS\n", "slow clients", during, len(conns), before)
	for _, c := range conns {
		c.Close()
	}
}

// openFiles counts the server's open file descriptors.
func openFiles(s *service) int {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.proc.Process.Pid))
	return len(fds)
}
