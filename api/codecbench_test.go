package api

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/store/memory"
)

// The wire codecs measured against the generated code on the answers the
// benchmark profile (bench/perf-mixed-60s.txt.gz) gives, as the server
// computes them (docs/architecture.md, "Wire codecs"):
//
//	go test ./api -run '^$' -bench BenchmarkCodecs -count 5
//
// Each answer is written (Marshal) and read (Unmarshal) by the codec the
// server and the CLI register (protoCodec, jsonCodec) and by the generated
// code alone (proto.Marshal/Unmarshal, protojson), the same message each
// time.

// codecAnswer is one answer of the benchmark profile.
type codecAnswer struct {
	name string
	msg  proto.Message
}

var (
	codecAnswersOnce sync.Once
	codecAnswersList []codecAnswer
	codecAnswersErr  error
)

// codecAnswers are the benchmark profile's answers: its whole flame graph
// as a tree (what the dashboard and JSON clients ask for) and as folded
// lines (what the CLI asks for), the same tree as a fleet answer and as a
// diff (the profile against itself), its heatmap (60 columns of 50 rows),
// and that heatmap's columns repeated to ten minutes (600 columns, the
// size of a ten-minute page's heatmap), alone and as a fleet heatmap.
func codecAnswers(tb testing.TB) []codecAnswer {
	path := corpus.Path(tb, "bench/perf-mixed-60s.txt.gz")
	codecAnswersOnce.Do(func() { codecAnswersList, codecAnswersErr = loadCodecAnswers(path) })
	if codecAnswersErr != nil {
		tb.Fatal(codecAnswersErr)
	}
	return codecAnswersList
}

func loadCodecAnswers(path string) ([]codecAnswer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	parsed, err := ingest.ParseIndex(f, "", 0, ingest.Shape{})
	if err != nil {
		return nil, err
	}
	st := memory.New()
	id, err := st.Add(ingest.Describe(ingest.Meta{}, parsed, time.Now()), parsed.Profile.Dict, parsed.Index)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	q := query.New(st, query.Options{})
	g, err := q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: id})
	if err != nil {
		return nil, err
	}
	tree, err := renderFlame(ctx, g, fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_TREE, "", false)
	if err != nil {
		return nil, err
	}
	lines, err := renderFlame(ctx, g, fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED_LINES, "", false)
	if err != nil {
		return nil, err
	}
	hm, err := q.Heatmap(ctx, 0, query.HeatmapRequest{ProfileID: id})
	if err != nil {
		return nil, err
	}
	heat := heatmapProto(hm)
	long := proto.Clone(heat).(*fsv1.GetHeatmapResponse)
	for len(long.Columns) < 600 {
		long.Columns = append(long.Columns, heat.Columns...)
	}
	long.Columns = long.Columns[:600]
	acct := &fsv1.Accounting{Event: tree.Event, Profiles: 4, ServedSeconds: 240, LeftOut: map[string]int32{"no samples of the event": 1}}
	t := tree.Tree
	return []codecAnswer{
		{"flame-tree", tree},
		{"flame-lines", lines},
		{"fleet-flame", &fsv1.GetFleetFlameGraphResponse{FlameGraph: tree, Accounting: acct}},
		{"diff-flame", &fsv1.GetDiffFlameGraphResponse{TotalA: tree.Total, TotalB: tree.Total,
			Tree: &fsv1.DiffTree{Names: t.Names, Name: t.Name, ValueA: t.Value, ValueB: t.Value, Depth: t.Depth}}},
		{"heatmap-60s", heat},
		{"heatmap-10min", long},
		{"fleet-heatmap-10min", &fsv1.GetFleetHeatmapResponse{StartSecond: long.StartSecond, SecondsPerColumn: 1, Rows: long.Rows,
			Columns: long.Columns, MaxCount: long.MaxCount, Total: long.Total * 10, Accounting: acct}},
	}, nil
}

// codecPair is a codec: the hand-written one or the generated code it
// stands in for.
type codecPair struct {
	name      string
	marshal   func([]byte, proto.Message) ([]byte, error)
	unmarshal func([]byte, proto.Message) error
}

// codecFormats are the codecs of each format, the hand-written one first.
// jsonCodec reads with protojson (only its writing is by hand), so JSON is
// measured writing only.
func codecFormats() map[string][]codecPair {
	return map[string][]codecPair{
		"proto": {
			{"hand", func(b []byte, m proto.Message) ([]byte, error) { return protoCodec{}.MarshalAppend(b, m) },
				func(b []byte, m proto.Message) error { return protoCodec{}.Unmarshal(b, m) }},
			{"generated", proto.MarshalOptions{}.MarshalAppend, proto.Unmarshal},
		},
		"json": {
			{"hand", func(b []byte, m proto.Message) ([]byte, error) { return jsonCodec{}.MarshalAppend(b, m) },
				func(b []byte, m proto.Message) error { return jsonCodec{}.Unmarshal(b, m) }},
			{"generated", protojson.MarshalOptions{}.MarshalAppend,
				protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal},
		},
	}
}

// BenchmarkCodecs writes and reads each answer with each codec of a
// format, interleaved in one loop (on a shared machine the ratio between
// them is what holds still; each codec goes first in turn):
// answer/write|read/proto|json, reporting each
// codec's ms/op and the generated code's time over the hand-written one's
// (generated/hand). Connect hands MarshalAppend a buffer from its pool: a
// write reuses its codec's last buffer (a pool in steady state), a
// write-fresh starts from the pool's new 512 bytes; a read takes the
// generated code's bytes into a new message.
func BenchmarkCodecs(b *testing.B) {
	answers := codecAnswers(b)
	formats := codecFormats()
	for _, a := range answers {
		for _, format := range []string{"proto", "json"} {
			cs := formats[format]
			wire, err := cs[1].marshal(nil, a.msg)
			if err != nil {
				b.Fatal(err)
			}
			for _, op := range []string{"write", "write-fresh", "read"} {
				if op == "read" && format == "json" {
					continue
				}
				b.Run(a.name+"/"+op+"/"+format, func(b *testing.B) {
					spent := make([]time.Duration, len(cs))
					bufs := make([][]byte, len(cs))
					for k := 0; b.Loop(); k++ {
						for j := range cs {
							i := (j + k) % len(cs) // each codec first in turn
							c := cs[i]
							t := time.Now()
							switch op {
							case "write":
								bufs[i], err = c.marshal(bufs[i][:0], a.msg)
							case "write-fresh":
								_, err = c.marshal(make([]byte, 0, 512), a.msg)
							default:
								err = c.unmarshal(wire, a.msg.ProtoReflect().New().Interface())
							}
							spent[i] += time.Since(t)
							if err != nil {
								b.Fatal(err)
							}
						}
					}
					for i, c := range cs {
						b.ReportMetric(float64(spent[i])/1e6/float64(b.N), c.name+"-ms/op")
						if i > 0 {
							b.ReportMetric(float64(spent[i])/float64(spent[0]), c.name+"/hand")
						}
					}
					b.ReportMetric(0, "ns/op")
				})
			}
		}
	}
}

// TestCodecAnswers: every codec writes each benchmark answer so that the
// generated code reads back the same message, and reads the generated
// code's bytes as the generated code does. With FLEETSCOPE_CODEC_ANSWERS
// set to a directory, it also writes the answers there in protobuf binary
// (NAME.pb) for the dashboard's codec benchmark (web/scripts/codecbench.sh).
func TestCodecAnswers(t *testing.T) {
	if testing.Short() && os.Getenv("FLEETSCOPE_CODEC_ANSWERS") == "" {
		t.Skip("parses the benchmark profile")
	}
	dir := os.Getenv("FLEETSCOPE_CODEC_ANSWERS")
	for _, a := range codecAnswers(t) {
		want, err := proto.Marshal(a.msg)
		if err != nil {
			t.Fatal(err)
		}
		if dir != "" {
			if err := os.WriteFile(filepath.Join(dir, a.name+".pb"), want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range append(codecFormats()["proto"], codecFormats()["json"]...) {
			wire, err := c.marshal(nil, a.msg)
			if err != nil {
				t.Fatalf("%s %s: %v", a.name, c.name, err)
			}
			back := a.msg.ProtoReflect().New().Interface()
			if err := c.unmarshal(wire, back); err != nil {
				t.Fatalf("%s %s: %v", a.name, c.name, err)
			}
			if !proto.Equal(back, a.msg) {
				t.Fatalf("%s %s: read back differs", a.name, c.name)
			}
		}
	}
}
