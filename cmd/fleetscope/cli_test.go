package main

// Tests of how the command line talks to its user: help, exit statuses,
// messages.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
)

// TestHelp: the top level and upload show examples and the environment
// variables; no help shows pflag's "(default [])" or "(default )" for a
// repeatable flag, and every usage line fits in 80 columns.
func TestHelp(t *testing.T) {
	help := func(c *cobra.Command) string {
		var b bytes.Buffer
		c.SetOut(&b)
		c.SetErr(&b)
		if err := c.Help(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	root := newRoot()
	upload, _, err := root.Find([]string{"upload"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*cobra.Command{root, upload} {
		h := help(c)
		for _, want := range []string{"Examples:\n  ", "Environment:\n  FLEETSCOPE_URL ", "\n  FLEETSCOPE_API_KEY "} {
			if !strings.Contains(h, want) {
				t.Errorf("%s --help lacks %q:\n%s", c.CommandPath(), want, h)
			}
		}
	}
	if h := help(upload); !strings.Contains(h, "| fleetscope upload --app checkout -\n") {
		t.Errorf("upload --help shows no upload from standard input:\n%s", h)
	}
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		h := help(c)
		if strings.Contains(h, "(default [])") || strings.Contains(h, "(default )") {
			t.Errorf("%s --help shows an empty default:\n%s", c.CommandPath(), h)
		}
		if first, _, _ := strings.Cut(h, "\n"); len(first) > helpWidth {
			t.Errorf("%s --help: first line of %d characters: %q", c.CommandPath(), len(first), first)
		}
		usage := h[strings.Index(h, "Usage:\n"):]
		for _, line := range strings.Split(usage, "\n")[1:] {
			if line == "" {
				break
			}
			if len(line) > helpWidth {
				t.Errorf("%s --help: usage line of %d characters: %q", c.CommandPath(), len(line), line)
			}
		}
		if i := strings.Index(h, "\nCommands:\n"); i >= 0 {
			for _, line := range strings.Split(h[i+1:], "\n")[1:] {
				if line == "" {
					break
				}
				if len(line) > helpWidth {
					t.Errorf("%s --help: command line of %d characters: %q", c.CommandPath(), len(line), line)
				}
			}
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
}

// TestUnknownCommandIsUsageError: an unknown command (at the top level or
// in a group) is a usage error: exit 2, one line naming it.
func TestUnknownCommandIsUsageError(t *testing.T) {
	for _, args := range [][]string{{"bogus"}, {"admin", "bogus"}, {"key", "creat"}} {
		out, errOut, code := run1(nil, args...)
		if code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, `unknown command "`+args[len(args)-1]+`"`) {
			t.Errorf("fleetscope %v: exit %d, stdout %q, stderr %q; want exit 2 and one line naming the command", args, code, out, errOut)
		}
	}
	if out, errOut, code := run1(nil); code != 0 || !strings.Contains(out, "Commands:") {
		t.Errorf("fleetscope alone: exit %d, stderr %q; want the help", code, errOut)
	}
}

// runStdin runs a client command against s with stdin as standard input.
func (s *service) runStdin(stdin string, args ...string) (string, string, int) {
	cmd := exec.Command(fsBin, args...)
	cmd.Env = append(append(os.Environ(), s.env...), "FLEETSCOPE_URL="+s.url, "FLEETSCOPE_API_KEY="+s.key)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

// TestUploadFromStdin: upload - reads the profile from standard input (a
// pipe): the same profile as the file it came from.
func TestUploadFromStdin(t *testing.T) {
	s := startService(t, serviceOpts{})
	path := plant(t, "--seed", "48", "--seconds", "2", "--epoch")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := s.runStdin(string(b), "upload", "--app", "test", "-")
	f := strings.Fields(out)
	if code != 0 || len(f) != 2 {
		t.Fatalf("upload -: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if again := s.upload(path); again != f[0] {
		t.Fatalf("the file uploaded after its bytes came on stdin: profile %s, want the same profile %s", again, f[0])
	}
	if _, errOut, code := s.runStdin("", "upload", "--app", "test", "-", "-"); code != exitUsage {
		t.Fatalf("upload - -: exit %d (%s), want a usage error", code, errOut)
	}
}

// TestEmptyFleetAnswers: a fleet query that counts nothing is never
// silent: one line on stderr says what matched nothing in which window and
// when the app's (and each named host's) profiles lie, and the exit status
// is 3. With --json the JSON is printed all the same.
func TestEmptyFleetAnswers(t *testing.T) {
	s := startService(t, serviceOpts{})
	s.upload(plant(t, "--seed", "71", "--seconds", "3", "--epoch"), "--host", "h1")
	s.upload(plant(t, "--seed", "72", "--seconds", "5", "--epoch"), "--host", "h2")
	var ps []struct{ Host, StartTime, EndTime string }
	if err := json.Unmarshal([]byte(s.mustCLI("profiles", "--app", "test", "--json")), &ps); err != nil || len(ps) != 2 {
		t.Fatalf("profiles: %v %v", ps, err)
	}
	span := map[string][2]time.Time{} // host ("" the app) -> first start, last end
	for _, p := range ps {
		start, _ := time.Parse(time.RFC3339Nano, p.StartTime)
		end, _ := time.Parse(time.RFC3339Nano, p.EndTime)
		for _, k := range []string{"", p.Host} {
			sp, ok := span[k]
			if !ok || start.Before(sp[0]) {
				sp[0] = start
			}
			if !ok || end.After(sp[1]) {
				sp[1] = end
			}
			span[k] = sp
		}
	}
	spanOf := func(host string) string {
		sp := span[host]
		return sp[0].UTC().Truncate(time.Second).Format(time.RFC3339) + " to " + sp[1].UTC().Truncate(time.Second).Add(time.Second).Format(time.RFC3339)
	}
	const later = "--from=2026-11-23T10:00:00Z" // after the profiles (2026-11-18)
	for _, c := range []struct {
		args []string
		want []string // in the one line on stderr
	}{
		{[]string{"flamegraph", "--app", "test", "--host", "h1", later, "--to", "2026-11-23T10:05:00.5Z"},
			[]string{"0 profiles of app test, host h1 in [2026-11-23T10:00:00Z, 2026-11-23T10:05:00.5Z)", "the app's profiles span " + spanOf(""), "host h1's profiles span " + spanOf("h1")}},
		{[]string{"heatmap", "--app", "test", "--host", "h2", "--host", "h9", later, "--to", "2026-11-23T10:05:00Z"},
			[]string{"0 profiles of app test, hosts h2 or h9 in [", "the app's profiles span " + spanOf(""), "host h2's profiles span " + spanOf("h2"), "host h9 has none"}},
		{[]string{"flamegraph", "--app", "nope", "--from", "1795000000", "--to", "1795000010"},
			[]string{"0 profiles of app nope in [2026-11-18T", "app nope has no profiles at all"}},
		{[]string{"flamegraph", "--app", "test", "--label", "env=prod", "--from", "1795000000", "--to", "1795000010"},
			[]string{"0 profiles of app test, label env=prod in [", "the app's profiles span " + spanOf("")}},
		{[]string{"flamegraph", "--app", "test", "--function", "^no such function$", "--from", "1795000000", "--to", "1795000010"},
			[]string{"2 profiles of app test in [", "but none of their samples counted (event "}},
	} {
		out, errOut, code := s.cli(c.args...)
		if code != exitEmpty || out != "" || strings.Count(errOut, "\n") != 1 {
			t.Errorf("fleetscope %v: exit %d, stdout %q, stderr %q: want exit 3, one line on stderr only", c.args, code, out, errOut)
			continue
		}
		t.Logf("fleetscope %v: %s", c.args, errOut)
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("fleetscope %v: stderr %q lacks %q", c.args, errOut, w)
			}
		}
	}
	// --json: the (empty) JSON on stdout, the line on stderr, exit 3.
	out, errOut, code := s.cli("heatmap", "--json", "--app", "test", later)
	var h heatmapJSON
	if err := json.Unmarshal([]byte(out), &h); err != nil || code != exitEmpty || h.Total != 0 || h.Profiles != 0 || !strings.Contains(errOut, "0 profiles of app test in [2026-11-23T10:00:00Z, ") {
		t.Errorf("heatmap --json of an empty window: exit %d, stdout %q (%v), stderr %q", code, out, err, errOut)
	}
	out, _, code = s.cli("flamegraph", "--format", "json", "--app", "nope", "--from", "1795000000", "--to", "1795000010")
	if code != exitEmpty || !json.Valid([]byte(out)) {
		t.Errorf("flamegraph --format json of an unknown app: exit %d, stdout %q: want valid JSON and exit 3", code, out)
	}
	// A query that counts samples still succeeds.
	if _, errOut, code := s.cli("flamegraph", "--app", "test", "--host", "h1", "--from", "1795000000", "--to", "1795000010"); code != 0 {
		t.Errorf("flamegraph of h1: exit %d: %s", code, errOut)
	}
}

// fakeSearch answers SearchProfiles over a list, as the server does:
// newest first, profiles that start before until, pages of page_size.
type fakeSearch struct {
	fleetscopev1connect.QueryServiceClient
	profiles []*fsv1.Profile // newest first
	calls    int
}

func (f *fakeSearch) SearchProfiles(_ context.Context, req *connect.Request[fsv1.SearchProfilesRequest]) (*connect.Response[fsv1.SearchProfilesResponse], error) {
	f.calls++
	m := req.Msg
	var out []*fsv1.Profile
	for _, p := range f.profiles {
		if p.GetApp() == m.GetApp() && (m.GetHost() == "" || p.GetHost() == m.GetHost()) &&
			(m.GetUntil() == nil || p.GetStartTime().AsTime().Before(m.GetUntil().AsTime())) {
			out = append(out, p)
		}
	}
	res := &fsv1.SearchProfilesResponse{Profiles: out}
	if len(out) > int(m.GetPageSize()) {
		res.Profiles, res.NextPageToken = out[:m.GetPageSize()], "more"
	}
	return connect.NewResponse(res), nil
}

// TestSpanOfManyProfiles: the first profile of an app with more profiles
// than a page is found, to the second, in a few dozen searches.
func TestSpanOfManyProfiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 999, 1000, 1001, 5000} {
		f := &fakeSearch{}
		base := time.Unix(1795000000, 0)
		var first, last time.Time
		for i := range n {
			start := base.Add(time.Duration(r.Int64N(int64(30 * 24 * time.Hour))))
			end := start.Add(time.Duration(r.Int64N(int64(time.Minute))))
			if i == 0 || start.Before(first) {
				first = start
			}
			f.profiles = append(f.profiles, &fsv1.Profile{App: "a", StartTime: timestamppb.New(start), EndTime: timestamppb.New(end)})
		}
		slices.SortFunc(f.profiles, func(a, b *fsv1.Profile) int { return b.GetStartTime().AsTime().Compare(a.GetStartTime().AsTime()) })
		for _, p := range f.profiles[:min(n, 1000)] {
			if e := p.GetEndTime().AsTime(); e.After(last) {
				last = e
			}
		}
		gotFirst, gotLast, ok, err := (&client{query: f}).span(context.Background(), "a", "")
		if err != nil || !ok || gotFirst.Before(first) || gotFirst.Sub(first) > time.Second || !gotLast.Equal(last) || f.calls > 60 {
			t.Errorf("%d profiles: span %v to %v (%v, %v) in %d searches; want %v (to the second) to %v in at most 60", n, gotFirst, gotLast, ok, err, f.calls, first, last)
		}
	}
	if _, _, ok, err := (&client{query: &fakeSearch{}}).span(context.Background(), "a", ""); ok || err != nil {
		t.Errorf("no profiles: ok %v, err %v", ok, err)
	}
}

// gridLines returns the rows of a drawn heatmap (the lines with "ms |")
// and its other lines.
func gridLines(out string) (grid, other []string) {
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if len(l) > 7 && l[4:8] == "ms |" {
			grid = append(grid, l)
		} else {
			other = append(other, l)
		}
	}
	return grid, other
}

// TestTerminalHeatmapFits: a heatmap drawn as text fits the width
// (COLUMNS, else 100 when standard output is not a terminal): columns
// merged, every sample still drawn; a fleet heatmap whose window is
// mostly empty leaves the empty columns out and says so. --json keeps
// every column.
func TestTerminalHeatmapFits(t *testing.T) {
	path := plant(t, "--seed", "73", "--seconds", "300", "--cpus", "1")
	var h heatmapJSON
	if err := json.Unmarshal([]byte(local(t, "heatmap", "--json", path)), &h); err != nil {
		t.Fatal(err)
	}
	if len(h.Columns) < 300 {
		t.Fatalf("--json: %d columns, want one a second", len(h.Columns))
	}
	for _, c := range []struct {
		columns string
		width   int
	}{{"COLUMNS=60", 60}, {"COLUMNS=", 100}, {"COLUMNS=200", 200}} {
		out, errOut, code := run1([]string{c.columns}, "heatmap", path)
		if code != 0 {
			t.Fatalf("%s heatmap: exit %d: %s", c.columns, code, errOut)
		}
		grid, other := gridLines(out)
		if len(grid) != h.Rows {
			t.Fatalf("%s: %d rows drawn, want %d:\n%s", c.columns, len(grid), h.Rows, out)
		}
		for _, l := range grid {
			if len(l) > c.width || len(l) < gutter+(c.width-gutter)/2 { // merged by a whole factor: at least half the width
				t.Fatalf("%s: a row of %d characters, want at most %d (and at least half):\n%s", c.columns, len(l), c.width, out)
			}
		}
		if !strings.Contains(other[1], "merged ") || !strings.Contains(other[1], "COLUMNS") {
			t.Errorf("%s: the second line %q does not say the columns were merged", c.columns, other[1])
		}
	}

	// A fleet window of 1,010 s with samples in its last 5.
	s := startService(t, serviceOpts{})
	s.upload(plant(t, "--seed", "74", "--seconds", "5", "--epoch"), "--host", "h1")
	args := []string{"heatmap", "--app", "test", "--from", "1794999000", "--to", "1795000010"}
	var fleet heatmapJSON
	if err := json.Unmarshal([]byte(s.mustCLI(append(args, "--json")...)), &fleet); err != nil {
		t.Fatal(err)
	}
	if fleet.StartSecond != 1794999000 || int64(len(fleet.Columns))*fleet.SecondsPerColumn < 1010 {
		t.Fatalf("--json: start %d, %d columns of %d s: want the whole window", fleet.StartSecond, len(fleet.Columns), fleet.SecondsPerColumn)
	}
	out, errOut, code := run1(append(slices.Clone(s.env), "FLEETSCOPE_URL="+s.url, "FLEETSCOPE_API_KEY="+s.key, "COLUMNS="), args...)
	if code != 0 {
		t.Fatalf("fleet heatmap: exit %d: %s", code, errOut)
	}
	grid, other := gridLines(out)
	if len(grid) == 0 || len(grid[0]) > 8+6/int(fleet.SecondsPerColumn)+1 {
		t.Fatalf("fleet heatmap: want only the columns of the 5 s with samples:\n%s", out)
	}
	if !strings.Contains(other[0], "start second 1795000000,") || !strings.Contains(other[1], "left out ") || !strings.Contains(out, "from 2026-11-18T11:06:40Z") {
		t.Errorf("fleet heatmap: want it to start at the samples and say the empty columns were left out:\n%s", out)
	}
}

// TestAgentLiveFromFile: --live-source given a perf script file (not a
// command) replays it at its own pace (in several batches), says so, and
// stores the profile an upload of the file stores; given a command it says
// that instead.
func TestAgentLiveFromFile(t *testing.T) {
	s := startService(t, serviceOpts{})
	file, other := plant(t, "--seed", "93", "--seconds", "2", "--epoch"), plant(t, "--seed", "94", "--seconds", "1", "--epoch")
	for _, c := range []struct{ path, source, kind string }{
		{file, file, "file, replayed at the pace of its timestamps"},
		{other, "cat " + other, "shell command"},
	} {
		a := startAgent(t, s.agentEnv(s.url), "--app", "livefile", "--host", "h1", "--live", "--live-source", c.source, "--live-batch", "100ms")
		if code := a.wait(60 * time.Second); code != 0 {
			t.Fatalf("--live-source %s: agent exit %d:\n%s", c.source, code, a.log())
		}
		if got := a.field("live recording started", "source_kind"); got != c.kind {
			t.Errorf("--live-source %s: source_kind %q, want %q", c.source, got, c.kind)
		}
		id := a.field("live recording stored", "profile")
		if c.path == other { // cat writes it at once: one batch (a case of the live store's own, not checked here)
			continue
		}
		if n := a.count("live batch sent"); n < 3 {
			t.Errorf("--live-source %s: %d batches, want the file paced out over several", c.source, n)
		}
		if again := s.upload(c.path, "--app", "livefile", "--host", "h1"); again != id {
			t.Fatalf("--live-source %s: stored %q, an upload of the file %s", c.source, id, again)
		}
	}
}

// TestLocalFileErrorsSayWhatToDo: a truncated gzip file says "truncated
// gzip" (not "unexpected EOF"); a perf.data file says to run perf script
// on it (not to name an --input-format).
func TestLocalFileErrorsSayWhatToDo(t *testing.T) {
	gz, err := os.ReadFile(gzipFile(t, plant(t, "--seed", "75", "--seconds", "3")))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct{ name, content, want string }{
		{"cut.gz", string(gz[:len(gz)/2]), "truncated gzip"},
		{"tiny.gz", string(gz[:5]), "truncated gzip"},
		{"perf.data", "PERFILE2\x68\x00\x00\x00\x00\x00\x00\x00" + strings.Repeat("\x00", 200), "perf script --header -i perf.data"},
	} {
		p := dir + "/" + c.name
		if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"heatmap", "collapse", "flamegraph"} {
			out, errOut, code := run1(nil, cmd, p)
			if code != 1 || out != "" || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "unexpected EOF") || strings.Contains(errOut, "--input-format") {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", cmd, c.name, code, tail(out, 100), errOut, c.want)
			}
		}
	}
}

// rawHTTP1 answers every connection with one fixed HTTP/1.0 response, as
// python3 -m http.server answers a POST.
func rawHTTP1(t *testing.T, response string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for { // the request's head (or HTTP/2's preface)
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				fmt.Fprint(c, response)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestWrongServerNamesURL: a FLEETSCOPE_URL that names no server, or a
// server that is not fleetscope, gets one line naming FLEETSCOPE_URL and
// its value, for queries and uploads alike.
func TestWrongServerNamesURL(t *testing.T) {
	notAllowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "Method Not Allowed", 405) }))
	defer notAllowed.Close()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>a web site</html>") }))
	defer page.Close()
	python := rawHTTP1(t, "HTTP/1.0 501 Unsupported method ('POST')\r\nContent-Type: text/html;charset=utf-8\r\nConnection: close\r\n\r\n<html>Error code: 501</html>")
	file := plant(t, "--seed", "76", "--seconds", "1")
	for _, c := range []struct{ url, want string }{
		{notAllowed.URL, "is not a fleetscope server"},
		{page.URL, "is not a fleetscope server"},
		{python, "is not a fleetscope server"},
		{"http://127.0.0.1:1", "server unavailable: no server answers at http://127.0.0.1:1 (FLEETSCOPE_URL)"},
	} {
		env := []string{"FLEETSCOPE_URL=" + c.url, "FLEETSCOPE_API_KEY=fsk_test"}
		for _, args := range [][]string{{"profiles"}, {"heatmap", "--app", "a", "--from", "1h"}, {"upload", "--app", "a", file}} {
			out, errOut, code := run1(env, args...)
			if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, c.url+" (FLEETSCOPE_URL)") {
				t.Errorf("FLEETSCOPE_URL=%s fleetscope %v: exit %d, stdout %q, stderr %q; want exit 1 and one line with %q naming FLEETSCOPE_URL", c.url, args, code, out, errOut, c.want)
			}
		}
	}
}

// TestExpiredKeySaysExpired: the holder of an expired key (its whole
// secret) is told it expired, and when; a wrong secret with the same
// visible prefix still only learns "invalid API key".
func TestExpiredKeySaysExpired(t *testing.T) {
	s := startService(t, serviceOpts{})
	secret := strings.TrimSpace(s.admin("key", "create", "--tenant", "acme", "--scope", "read", "--expires-in", "1h"))
	if err := s.sql(func(c *pgx.Conn) error {
		_, err := c.Exec(context.Background(), `UPDATE api_keys SET expires_at = '2026-11-01T00:00:00Z' WHERE id = $1`, secret[:12])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	forged := secret[:12] + strings.Repeat("A", len(secret)-12)
	for key, want := range map[string]string{
		secret: "API key " + secret[:12] + " expired at 2026-11-01T00:00:00Z (FLEETSCOPE_API_KEY): keys come from",
		forged: "invalid API key (FLEETSCOPE_API_KEY): keys come from",
	} {
		out, errOut, code := run1([]string{"FLEETSCOPE_URL=" + s.url, "FLEETSCOPE_API_KEY=" + key}, "profiles")
		if code != 1 || out != "" || !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("key %s...: exit %d, stdout %q, stderr %q; want exit 1 and %q", key[:12], code, out, errOut, want)
		}
	}
}
