package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/jackc/pgx/v5"
)

// TestFleetOverTheAPI: a fleet stored in Postgres and asked through the CLI
// and the API. The fleet heatmap equals the hosts' own heatmaps summed by
// wall clock, cell for cell; the merged folded flame graph equals the
// hosts' range flame graphs summed; cells equal their flame graphs; an
// untimed profile counts only in flame graphs whose window holds its span;
// deleting a host removes it from every fleet answer.
func TestFleetOverTheAPI(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	type host struct{ name, path, id string }
	hosts := []host{{name: "h1"}, {name: "h2"}, {name: "h3"}}
	for i := range hosts {
		hosts[i].path = plant(t, "--seed", fmt.Sprint(61+i), "--seconds", fmt.Sprint(8-2*i), "--epoch")
		hosts[i].id = s.upload(hosts[i].path, "--host", hosts[i].name, "--label", fmt.Sprintf("version=%d", 1+i%2))
	}
	// A boot-clock host placed by an anchor a fraction of a second off.
	ing, _ := s.clients()
	boot, _ := os.ReadFile(plant(t, "--seed", "64", "--seconds", "5"))
	_, err := ing.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Data: boot, Metadata: &fsv1.UploadMetadata{App: "test", Host: "h4",
		Anchor: &fsv1.ClockAnchor{ClockNanos: 51234e9, WallTime: timestamppb.New(time.Unix(1795000001, 987654321))}}}))
	if err != nil {
		t.Fatal(err)
	}

	fleet := func(args ...string) heatmapJSON {
		t.Helper()
		out := s.mustCLI(append([]string{"heatmap", "--json", "--app", "test", "--from", "1795000000", "--to", "1795000010"}, args...)...)
		var h heatmapJSON
		if err := json.Unmarshal([]byte(out), &h); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return h
	}
	// The epoch-clock hosts alone: the sum of their own heatmaps.
	epoch := fleet("--host", "h1", "--host", "h2", "--host", "h3")
	want := make([][]int64, 10)
	for i := range want {
		want[i] = make([]int64, 50)
	}
	for _, h := range hosts {
		var own heatmapJSON
		json.Unmarshal([]byte(local(t, "heatmap", "--json", h.path)), &own)
		for i, col := range own.Columns {
			for r, n := range col {
				want[own.StartSecond-1795000000+int64(i)][r] += n
			}
		}
	}
	if epoch.StartSecond != 1795000000 || epoch.SecondsPerColumn != 1 || fmt.Sprint(epoch.Columns) != fmt.Sprint(want) {
		t.Fatalf("the fleet heatmap of h1-h3 differs from their own heatmaps summed by wall clock")
	}
	var raw map[string]any
	json.Unmarshal([]byte(s.mustCLI("heatmap", "--json", "--app", "test", "--from", "1795000000", "--to", "1795000010")), &raw)
	for _, k := range []string{"startSecond", "secondsPerColumn", "rows", "columns", "maxCount", "total", "profiles"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("fleet heatmap JSON lacks %q", k)
		}
	}
	all := fleet()
	if all.Total <= epoch.Total {
		t.Fatalf("the anchored host adds nothing: %d vs %d", all.Total, epoch.Total)
	}

	// Merged flame graphs: the sum of the hosts' range flame graphs, and
	// every checked cell's flame graph totals the cell.
	// Also under sample filters, which travel with the selection.
	for _, filter := range [][]string{nil, {"--function", "GC|json"}, {"--cpu", "1", "--cpu", "2", "--exclude-function", "^java$"}} {
		merged := s.mustCLI(append([]string{"flamegraph", "--app", "test", "--host", "h1", "--host", "h2", "--from", "1795000002.4", "--to", "1795000003.48"}, filter...)...)
		sum := map[string]int64{}
		for _, h := range hosts {
			for _, line := range strings.Split(strings.TrimSpace(s.mustCLI(append([]string{"flamegraph", "--profile", h.id, "--start", "2.4", "--end", "3.48"}, filter...)...)), "\n") {
				if line == "" || h.name == "h3" {
					continue
				}
				i := strings.LastIndexByte(line, ' ')
				var n int64
				fmt.Sscan(line[i+1:], &n)
				sum[line[:i]] += n
			}
		}
		got := map[string]int64{}
		for _, line := range strings.Split(strings.TrimSpace(merged), "\n") {
			i := strings.LastIndexByte(line, ' ')
			var n int64
			fmt.Sscan(line[i+1:], &n)
			got[line[:i]] += n
		}
		if fmt.Sprint(got) != fmt.Sprint(sum) || len(got) == 0 {
			t.Fatalf("%v: merged flame graph of h1, h2 differs from their range flame graphs summed", filter)
		}
		if filter != nil { // and the filtered fleet heatmap totals the filtered window
			h := fleet(append([]string{"--host", "h1", "--host", "h2"}, filter...)...)
			whole := s.mustCLI(append([]string{"flamegraph", "--app", "test", "--host", "h1", "--host", "h2", "--from", "1795000000", "--to", "1795000010"}, filter...)...)
			var n int64
			for _, line := range strings.Split(strings.TrimSpace(whole), "\n") {
				var v int64
				fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
				n += v
			}
			if h.Total != n || n == 0 {
				t.Fatalf("%v: filtered fleet heatmap total %d, merged flame graph %d", filter, h.Total, n)
			}
		}
	}
	// The speedscope export of a window is its timeline: one profile per
	// host, each the host's samples in the window by time as speedscope's
	// importer reads them; the SVG's title names the fleet and the window,
	// a profile's its app, host, id and range.
	window := []string{"--app", "test", "--host", "h1", "--host", "h2", "--from", "1795000002.4", "--to", "1795000003.48"}
	file := filepath.Join(t.TempDir(), "fleet.speedscope.json")
	os.WriteFile(file, []byte(s.mustCLI(append([]string{"flamegraph", "--format", "speedscope", "--include-idle"}, window...)...)), 0o644)
	imp := speedscopeImport(t, file)
	if len(imp.Profiles) != 2 {
		t.Fatalf("speedscope imported %d profiles of h1, h2", len(imp.Profiles))
	}
	for i, h := range hosts[:2] {
		ip := imp.Profiles[i]
		if ip.Name != "host "+h.name+", profile "+h.id {
			t.Errorf("speedscope profile %d is named %q, want host %s's", i, ip.Name, h.name)
		}
		var want []perfSample
		for _, smp := range readPerfSamples(t, h.path) {
			if smp.ns >= 1795000002.4e9 && smp.ns < 1795000003.48e9 {
				want = append(want, smp)
			}
		}
		slices.SortStableFunc(want, func(a, b perfSample) int { return int(a.ns - b.ns) })
		var seq []string
		for _, smp := range ip.Samples {
			w, _ := smp[1].(float64)
			for range int(w) {
				seq = append(seq, strings.SplitN(smp[0].(string), ";", 2)[0])
			}
		}
		checkTimeOrder(t, "speedscope's import of the fleet", []string{h.name}, seq, want)
		if ip.TotalWeight != float64(len(want)) || len(want) == 0 {
			t.Errorf("host %s: speedscope's total weight %v, the window has %d samples", h.name, ip.TotalWeight, len(want))
		}
	}
	if svg := s.mustCLI(append([]string{"flamegraph", "--format", "svg"}, window...)...); !strings.Contains(svg, ", fleet, hosts h1 h2, app test [2026-11-18T11:06:42.4") {
		t.Errorf("the fleet SVG's title names neither the fleet nor its window: %.300s", svg[strings.Index(svg, `id="subtitle"`):])
	}
	if svg := s.mustCLI("flamegraph", "--format", "svg", "--profile", hosts[0].id, "--start", "2.4", "--end", "3.48"); !strings.Contains(svg, ", app test, host h1, profile "+hosts[0].id+", [2.4") {
		t.Errorf("the profile SVG's title names not its app, host, id and range: %.300s", svg[strings.Index(svg, `id="subtitle"`):])
	}

	cells := 0
	for i := 0; i < len(all.Columns); i++ {
		for r := 0; r < 50; r += 7 {
			n := all.Columns[i][r]
			from := time.Unix(all.StartSecond+int64(i), int64(r)*20_000_000)
			fg, err := s.as(s.key).fleet.GetFleetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFleetFlameGraphRequest{
				Selection: &fsv1.FleetSelection{App: "test", From: timestamppb.New(from), To: timestamppb.New(from.Add(20 * time.Millisecond))},
				Format:    fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED}))
			if err != nil {
				t.Fatal(err)
			}
			if fg.Msg.GetFlameGraph().GetTotal() != uint64(n) {
				t.Fatalf("cell (%d, %d): %d samples, its merged flame graph %d", i, r, n, fg.Msg.GetFlameGraph().GetTotal())
			}
			cells++
		}
	}

	// An untimed (pprof) profile of the app, spanning [1, 4) s of the window.
	req, _ := http.NewRequest("POST", s.url+"/ingest?name=test{host=pp}&from=1795000001&until=1795000004&format=pprof",
		strings.NewReader(string(corpus.Read(t, "corpus/pprof/go-sha-sort.cpu.pprof"))))
	req.Header.Set("Authorization", "Bearer "+s.key)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 200 {
		t.Fatalf("pprof upload: %v %v", res, err)
	}
	if h := fleet(); h.Profiles != 4 || h.Total != all.Total {
		t.Fatalf("an untimed profile entered the heatmap: %d profiles, total %d", h.Profiles, h.Total)
	}
	whole := s.mustCLI("flamegraph", "--app", "test", "--from", "1795000000", "--to", "1795000010", "--event", "cpu")
	part, _, code := s.cli("flamegraph", "--app", "test", "--from", "1795000002", "--to", "1795000010", "--event", "cpu")
	if !strings.Contains(whole, "main.main") || strings.Contains(part, "main.main") || code != exitEmpty { // nothing else has event cpu: empty
		t.Fatalf("the untimed profile should count when its span is inside the window, and only then")
	}

	// Deleting a host removes it everywhere.
	admin := s.as(s.newKey("acme", "admin"))
	if _, err := admin.admin.DeleteProfile(ctx, connect.NewRequest(&fsv1.DeleteProfileRequest{Id: hosts[1].id})); err != nil {
		t.Fatal(err)
	}
	var own heatmapJSON
	json.Unmarshal([]byte(local(t, "heatmap", "--json", hosts[1].path)), &own)
	if h := fleet(); h.Total != all.Total-own.Total || h.Profiles != 3 {
		t.Fatalf("after deleting h2: total %d (want %d), %d profiles", h.Total, all.Total-own.Total, h.Profiles)
	}
	var rows int
	s.sql(func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT count(*) FROM fleet_tens WHERE profile_id = $1`, hosts[1].id).Scan(&rows)
	})
	if rows != 0 {
		t.Fatalf("%d fleet rows of a deleted profile", rows)
	}
	t.Logf("fleet of 4 hosts: %d samples; %d cells checked against their merged flame graphs", all.Total, cells)
}

// TestFleetDefaultEvent: with no event named, every fleet answer counts the
// event with the most samples in the selection (the heatmap chooses it from
// the cells it reads, the host strip and the timeline from the totals):
// page-faults over both hosts, cpu-clock on the first host alone.
func TestFleetDefaultEvent(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	perfAt := func(lines ...string) string {
		var b strings.Builder
		for _, l := range lines {
			f := strings.Fields(l) // "<unix seconds> <event>"
			fmt.Fprintf(&b, "app 1 [000] %s: 1 %s:\n\t1 main (/bin/app)\n\n", f[0], f[1])
		}
		return b.String()
	}
	s.upload(writeFile(t, "a.perf", perfAt("1795000000.100000 cpu-clock", "1795000000.200000 cpu-clock",
		"1795000000.300000 cpu-clock", "1795000001.500000 page-faults")), "--host", "a")
	s.upload(writeFile(t, "b.perf", perfAt("1795000000.400000 page-faults", "1795000000.600000 page-faults",
		"1795000001.100000 page-faults")), "--host", "b")
	for _, c := range []struct {
		hosts []string
		want  int64 // the busiest event's samples
		event string
	}{{nil, 4, "page-faults"}, {[]string{"a"}, 3, "cpu-clock"}} {
		sel := &fsv1.FleetSelection{App: "test", Hosts: c.hosts, From: timestamppb.New(time.Unix(1795000000, 0)), To: timestamppb.New(time.Unix(1795000002, 0))}
		fl := s.as(s.key).fleet
		heat, err := fl.GetFleetHeatmap(ctx, connect.NewRequest(&fsv1.GetFleetHeatmapRequest{Selection: sel}))
		if err != nil {
			t.Fatal(err)
		}
		hosts, err := fl.GetFleetHosts(ctx, connect.NewRequest(&fsv1.GetFleetHostsRequest{Selection: sel}))
		if err != nil {
			t.Fatal(err)
		}
		line, err := fl.GetFleetTimeline(ctx, connect.NewRequest(&fsv1.GetFleetTimelineRequest{Selection: sel}))
		if err != nil {
			t.Fatal(err)
		}
		flame, err := fl.GetFleetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFleetFlameGraphRequest{Selection: sel, Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED}))
		if err != nil {
			t.Fatal(err)
		}
		var strip, timeline int64
		for _, h := range hosts.Msg.GetHosts() {
			strip += h.GetTotal()
		}
		for _, n := range line.Msg.GetTotals() {
			timeline += n
		}
		got := []any{heat.Msg.GetTotal(), heat.Msg.GetAccounting().GetEvent(), strip, hosts.Msg.GetAccounting().GetEvent(),
			timeline, int64(flame.Msg.GetFlameGraph().GetTotal()), flame.Msg.GetAccounting().GetEvent()}
		want := []any{c.want, c.event, c.want, c.event, c.want, c.want, c.event}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("hosts %v: heatmap, its event, host strip, its event, timeline, flame graph, its event: %v, want %v", c.hosts, got, want)
		}
	}
}
