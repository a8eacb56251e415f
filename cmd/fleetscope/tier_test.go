package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	nflxv1 "github.com/fleetscope/fleetscope/api/gen/nflxprofile/v1"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/store/index"
)

// TestSampleTier: profiles past their tenant's sample tier leave it (their
// per-sample rows are deleted from Postgres) only once their raw file is
// checked to give the rows back, and every answer stays what it was: each
// profile's heatmaps, range flame graphs, thread series and timeline, and
// fleet heatmaps and merged flame graphs over cold and warm profiles
// together, before the move, after it (rows still there, the server told
// to forget) and once the rows are deleted. A profile whose raw file does
// not give its rows back keeps them. The stack buckets of the moved
// profiles are stored before they move. One profile's rows are in ns, as
// they were stored before its unit (the grid of nflxprofile's doubles)
// was found: its raw file is read back in that unit.
func TestSampleTier(t *testing.T) {
	s := startService(t, serviceOpts{s3: true, extra: []string{"FLEETSCOPE_SWEEP_INTERVAL=100ms"}})
	ctx := context.Background()

	ids := map[string]string{}
	for i, h := range []string{"h1", "h2", "h3"} {
		ids[h] = s.upload(plant(t, "--seed", fmt.Sprint(81+i), "--seconds", fmt.Sprint(8-2*i), "--epoch"), "--host", h)
	}
	ing, _ := s.clients()
	boot, _ := os.ReadFile(plant(t, "--seed", "84", "--seconds", "5"))
	res, err := ing.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Data: boot, Metadata: &fsv1.UploadMetadata{App: "test", Host: "h4",
		Anchor: &fsv1.ClockAnchor{ClockNanos: 51234e9, WallTime: timestamppb.New(time.Unix(1795000001, 987654321))}}}))
	if err != nil {
		t.Fatal(err)
	}
	ids["h4"] = res.Msg.GetProfile().GetId()
	ids["bench"] = s.upload(gzipFile(t, firstSeconds(t, corpus.Path(t, "bench/perf-mixed-60s.txt.gz"), 3)), "--app", "misc")
	ids["2events"] = s.upload(corpus.Path(t, "corpus/perf/recorded-perf-realtime-2events.txt"), "--app", "misc")
	ids["nflx"] = s.upload(corpus.Path(t, "corpus/nflxprofile/node20-phases.nflxprofile"), "--app", "misc")
	ids["nflx-ns"] = s.upload(doublesProfile(t), "--app", "misc")
	inNanos(t, s, ids["nflx-ns"])
	ids["pprof"] = s.upload(corpus.Path(t, "corpus/pprof/go-sha-sort.cpu.pprof"), "--app", "misc")
	ids["cpuprofile"] = s.upload(corpus.Path(t, "corpus/cpuprofile/node20-phases.cpuprofile"), "--app", "misc")
	// A profile whose raw file no longer gives back its rows (here: other
	// bytes put in its place) must keep them.
	ids["tampered"] = s.upload(plant(t, "--seed", "85", "--seconds", "4", "--epoch"), "--host", "h5")
	other, _ := os.ReadFile(plant(t, "--seed", "86", "--seconds", "4", "--epoch"))
	replaceRawFile := func(id string) {
		t.Helper()
		var key string
		if err := s.sql(func(c *pgx.Conn) error {
			return c.QueryRow(ctx, `SELECT blob_key FROM profiles WHERE id = $1`, id).Scan(&key)
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.blobs.Put(ctx, key, bytes.NewReader(other), int64(len(other))); err != nil {
			t.Fatal(err)
		}
	}
	replaceRawFile(ids["tampered"])

	answers := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		ask := func(args ...string) { out[strings.Join(args, " ")] = s.mustCLI(args...) }
		// Some profiles have no timestamps: the error is an answer too.
		tell := func(args ...string) string { o, e, code := s.cli(args...); return fmt.Sprintf("%d %s%s", code, o, e) }
		for name, id := range ids {
			for _, args := range [][]string{
				{"heatmap", "--json"},
				{"heatmap", "--json", "--rows", "7"},
				{"heatmap", "--json", "--function", "a|java"},
				{"heatmap", "--by", "thread", "--json"},
				{"flamegraph"},
				{"flamegraph", "--start", "2.4", "--end", "2.48"},
				{"flamegraph", "--start", "1", "--end", "3", "--period", "--include-idle"},
				{"flamegraph", "--format", "speedscope"},
			} {
				out[name+": "+strings.Join(args, " ")] = tell(append(args, "--profile", id)...)
			}
		}
		window := []string{"--app", "test", "--from", "1795000000", "--to", "1795000010"}
		ask(append([]string{"heatmap", "--json"}, window...)...)
		ask(append([]string{"heatmap", "--json", "--rows", "7"}, window...)...)
		ask(append([]string{"heatmap", "--json", "--function", "a"}, window...)...)
		ask(append([]string{"flamegraph"}, window...)...)
		ask("flamegraph", "--app", "test", "--from", "1795000002.4", "--to", "1795000003.48")
		ask("flamegraph", "--app", "test", "--host", "h1", "--host", "h4", "--from", "1795000001.5", "--to", "1795000004", "--function", "a")
		return out
	}
	same := func(when string, got, want map[string]string) {
		t.Helper()
		for q, w := range want {
			if got[q] != w {
				t.Fatalf("%s: %s answers differently:\n got %.400q\nwant %.400q", when, q, got[q], w)
			}
		}
	}
	tiers := func() map[string]int {
		t.Helper()
		out := map[string]int{}
		for name, id := range ids {
			var tier int
			if err := s.sql(func(c *pgx.Conn) error {
				return c.QueryRow(ctx, `SELECT samples_tier FROM profiles WHERE id = $1`, id).Scan(&tier)
			}); err != nil {
				t.Fatal(err)
			}
			out[name] = tier
		}
		return out
	}
	rows := func(name string) int {
		t.Helper()
		var n int
		if err := s.sql(func(c *pgx.Conn) error {
			return c.QueryRow(ctx, `SELECT count(*) FROM seconds WHERE profile_id = $1`, ids[name]).Scan(&n)
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if err := s.sql(func(c *pgx.Conn) error { _, err := c.Exec(ctx, q, args...); return err }); err != nil {
			t.Fatal(err)
		}
	}

	// A fleet flame graph's accounting says how many profiles were read
	// from their raw files.
	rawFiles := func() int32 {
		t.Helper()
		g, err := s.as(s.key).fleet.GetFleetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFleetFlameGraphRequest{
			Selection: &fsv1.FleetSelection{App: "test", From: timestamppb.New(time.Unix(1795000001, 0)), To: timestamppb.New(time.Unix(1795000003, 0))},
			Format:    fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED}))
		if err != nil {
			t.Fatal(err)
		}
		return g.Msg.GetAccounting().GetRawFiles()
	}

	want := answers()
	if n := rawFiles(); n != 0 {
		t.Fatalf("%d profiles read from raw files before the move", n)
	}
	before := map[string]int{}
	for name := range ids {
		if before[name] = rows(name); before[name] == 0 {
			t.Fatalf("%s: no rows stored", name)
		}
	}

	if n := s.count("fleet_stack_buckets"); n != 0 {
		t.Fatalf("%d stack buckets stored before the sweep", n)
	}

	// The tier is 1 day; every profile but h2 was stored 2 days ago.
	s.admin("tenant", "set-limits", "acme", "--sample-days", "1")
	if out := s.admin("tenant", "list"); !strings.Contains(out, "SAMPLE_DAYS") {
		t.Fatalf("tenant list does not show the sample tier:\n%s", out)
	}
	adminKey := strings.TrimSpace(s.admin("key", "create", "--tenant", "acme", "--scope", "admin"))
	if out, errOut, code := run1(append(s.env, "FLEETSCOPE_URL="+s.url, "FLEETSCOPE_API_KEY="+adminKey), "admin", "tenant"); code != 0 || !strings.Contains(out, "per-sample rows 1 days") {
		t.Fatalf("admin tenant: exit %d: %s%s", code, out, errOut)
	}
	_, from, _ := s.log.find(0, func(map[string]any) bool { return false })
	exec(`UPDATE profiles SET created_at = now() - interval '2 days' WHERE id <> $1`, ids["h2"])
	line, _ := s.log.await(t, from, time.Minute, msg("sample tier"))
	if line["moved"] != float64(len(ids)-2) || line["kept"] != float64(1) {
		t.Fatalf("the sweep logged %v: want %d moved, 1 kept", line, len(ids)-2)
	}
	for name, tier := range tiers() {
		want := map[string]int{"h2": 0, "tampered": 3}[name]
		if name != "h2" && name != "tampered" {
			want = 1
		}
		if tier != want {
			t.Errorf("%s: samples_tier %d, want %d", name, tier, want)
		}
		if n := rows(name); n != before[name] {
			t.Errorf("%s: %d rows within the grace, want %d", name, n, before[name])
		}
	}
	// The buckets the moved profiles' samples fall in were stored first.
	if n := s.count("fleet_stack_buckets"); n == 0 {
		t.Error("no stack buckets stored before the move")
	}
	same("moved, read from the raw files", answers(), want)
	_, q := s.clients()
	for name, id := range ids {
		res, err := q.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id}))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := res.Msg.GetProfile().GetSamplesInRawFile(), name != "h2" && name != "tampered"; got != want {
			t.Errorf("%s: samples_in_raw_file %v, want %v", name, got, want)
		}
	}
	if n := rawFiles(); n != 3 { // h1, h3 and h4: h2 was stored later, h5's rows are kept
		t.Fatalf("%d profiles read from raw files after the move, want 3", n)
	}

	// Past the grace the moved profiles' rows go; the others' stay.
	_, from, _ = s.log.find(0, func(map[string]any) bool { return false })
	exec(`UPDATE profiles SET samples_moved_at = now() - interval '1 hour' WHERE samples_moved_at IS NOT NULL`)
	line, _ = s.log.await(t, from, time.Minute, msg("sample tier"))
	if line["rows_deleted"] != float64(len(ids)-2) {
		t.Fatalf("the sweep logged %v: want %d profiles' rows deleted", line, len(ids)-2)
	}
	for name, tier := range tiers() {
		n := rows(name)
		switch name {
		case "h2", "tampered":
			if n != before[name] || tier != map[string]int{"h2": 0, "tampered": 3}[name] {
				t.Errorf("%s: tier %d with %d rows, want them all (%d) kept", name, tier, n, before[name])
			}
		default:
			if n != 0 || tier != 2 {
				t.Errorf("%s: tier %d with %d rows, want 2 and none", name, tier, n)
			}
		}
	}
	s.flushCaches()
	same("rows deleted", answers(), want)
	if out, errOut, code := run1(s.env, "check"); code != 0 {
		t.Fatalf("check after the move: exit %d\n%s%s", code, out, errOut)
	}

	// A raw file that no longer gives back the moved rows (here: other
	// bytes in its place; in life, a parser that changed) is an error,
	// never another answer.
	replaceRawFile(ids["h3"])
	s.flushCaches()
	if out, errOut, code := s.cli("heatmap", "--json", "--profile", ids["h3"]); code == 0 || !strings.Contains(errOut, "no longer gives back") {
		t.Fatalf("a moved profile whose raw file changed: exit %d\n%s%s", code, out, errOut)
	}
}

// inNanos stores profile id's rows with their offsets in ns, as they were
// stored before the grid of a double's seconds was a time unit (and
// before rows were compressed).
func inNanos(t *testing.T, s *service, id string) {
	t.Helper()
	ctx := context.Background()
	var unit int64
	var rows []index.Second
	if err := s.sql(func(c *pgx.Conn) error {
		if err := c.QueryRow(ctx, `SELECT time_unit_nanos FROM profiles WHERE id = $1`, id).Scan(&unit); err != nil {
			return err
		}
		rs, err := c.Query(ctx, `SELECT event, second, samples, offsets, varint_offsets IS TRUE, stacks, periods, threads, zstd IS TRUE
			FROM seconds WHERE profile_id = $1`, id)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var r index.Second
			var zstd bool
			if err := rs.Scan(&r.Event, &r.Second, &r.Samples, &r.Offsets, &r.VarintOffsets, &r.Stacks, &r.Periods, &r.Threads, &zstd); err != nil {
				return err
			}
			if zstd {
				if err := r.Unzstd(); err != nil {
					return err
				}
			}
			rows = append(rows, r)
		}
		return rs.Err()
	}); err != nil {
		t.Fatal(err)
	}
	if unit >= 0 || len(rows) == 0 {
		t.Fatalf("profile %s: time unit %d, %d rows: want a grid unit", id, unit, len(rows))
	}
	ix := &index.Index{TimeUnitNanos: unit, Seconds: rows}
	if err := ix.Reunit(1); err != nil {
		t.Fatal(err)
	}
	if err := s.sql(func(c *pgx.Conn) error {
		for _, r := range ix.Seconds {
			if _, err := c.Exec(ctx, `UPDATE seconds SET offsets = $4, stacks = $5, varint_offsets = NULL, zstd = NULL
				WHERE profile_id = $1 AND event = $2 AND second = $3`, id, int16(r.Event), r.Second, r.Offsets, r.Stacks); err != nil {
				return err
			}
		}
		_, err := c.Exec(ctx, `UPDATE profiles SET time_unit_nanos = 1 WHERE id = $1`, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// doublesProfile writes an nflxprofile of 3,000 samples 1.052 ms apart
// from unix 1795000000.037, its times summed in doubles: points of the
// grid of 2^-22 s, not whole µs.
func doublesProfile(t *testing.T) string {
	t.Helper()
	m := &nflxv1.Profile{StartTime: proto.Float64(1795000000.037), EndTime: proto.Float64(1795000004),
		Nodes: map[uint32]*nflxv1.Profile_Node{
			0: {FunctionName: proto.String("root"), Children: []uint32{1}},
			1: {FunctionName: proto.String("main"), Children: []uint32{2, 3}},
			2: {FunctionName: proto.String("a")},
			3: {FunctionName: proto.String("java")},
		}}
	for i := range 3000 {
		m.Samples = append(m.Samples, uint32(1+i%3))
		m.TimeDeltas = append(m.TimeDeltas, 0.001052)
	}
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "doubles.nflxprofile")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
