package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"maps"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// foldedMap reads folded lines (stack count) into a map.
func foldedMap(t *testing.T, text string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseUint(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("folded line %q", line)
		}
		out[line[:i]] += n
	}
	return out
}

// diffColumns reads difffolded lines (stack a b) into A's and B's maps,
// leaving out zero counts as folded output does.
func diffColumns(t *testing.T, text string) (a, b map[string]uint64) {
	t.Helper()
	a, b = map[string]uint64{}, map[string]uint64{}
	prev := ""
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line[strings.LastIndexByte(line[:strings.LastIndexByte(line, ' ')], ' ')+1:])
		stack := line[:strings.LastIndexByte(line[:strings.LastIndexByte(line, ' ')], ' ')]
		if stack <= prev {
			t.Fatalf("difffolded lines not sorted bytewise: %q after %q", stack, prev)
		}
		prev = stack
		na, _ := strconv.ParseUint(f[0], 10, 64)
		nb, _ := strconv.ParseUint(f[1], 10, 64)
		if na == 0 && nb == 0 {
			t.Fatalf("line %q: a stack in neither side", line)
		}
		if na > 0 {
			a[stack] = na
		}
		if nb > 0 {
			b[stack] = nb
		}
	}
	return a, b
}

// TestDiff: diff's columns equal the two sides' folded flame graphs, for
// files, stored profiles and fleets, ranges and filters; --normalize
// scales A as difffolded.pl -n does (checked with exact rational maths);
// the API's answer is the CLI's; json and svg carry the same counts.
func TestDiff(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	p1 := plant(t, "--seed", "71", "--seconds", "8", "--epoch")
	p2 := plant(t, "--seed", "72", "--seconds", "6", "--epoch")
	id1 := s.upload(p1, "--host", "h1", "--label", "version=1")
	id2 := s.upload(p2, "--host", "h2", "--label", "version=2")

	check := func(name string, diffArgs, aArgs, bArgs []string, remote bool) string {
		t.Helper()
		run := func(args ...string) string {
			if remote {
				return s.mustCLI(args...)
			}
			return local(t, args...)
		}
		out := run(append([]string{"diff"}, diffArgs...)...)
		a, b := diffColumns(t, out)
		wantA, wantB := foldedMap(t, run(append([]string{"flamegraph"}, aArgs...)...)), foldedMap(t, run(append([]string{"flamegraph"}, bArgs...)...))
		if !maps.Equal(a, wantA) || !maps.Equal(b, wantB) || len(a) == 0 || len(b) == 0 {
			t.Fatalf("%s: diff columns differ from the sides' flame graphs (%d/%d stacks vs %d/%d)", name, len(a), len(b), len(wantA), len(wantB))
		}
		return out
	}
	// Files: two ranges of one file, two files, with a filter.
	check("file ranges", []string{"--a-start", "1", "--a-end", "2.5", "--b-start", "3", "--b-end", "4.02", p1, p1},
		[]string{"--start", "1", "--end", "2.5", p1}, []string{"--start", "3", "--end", "4.02", p1}, false)
	files := check("two files", []string{p1, p2}, []string{p1}, []string{p2}, false)
	check("filtered", []string{"--function", "GC|json", "--cpu", "1", p1, p2},
		[]string{"--function", "GC|json", "--cpu", "1", p1}, []string{"--function", "GC|json", "--cpu", "1", p2}, false)
	// Stored profiles: the same answer as the files they came from.
	stored := check("profiles", []string{"profile:" + id1, "profile:" + id2}, []string{"--profile", id1}, []string{"--profile", id2}, true)
	if stored != files {
		t.Fatalf("diff of stored profiles differs from diff of their files")
	}
	// A range against the rest of its profile, from the file and the server;
	// range + rest = the whole profile, stack by stack.
	rest := check("range vs rest", []string{"--a-start", "2", "--a-end", "3.5", "--a-outside", "--b-start", "2", "--b-end", "3.5", p1, p1},
		[]string{"--start", "2", "--end", "3.5", "--outside", p1}, []string{"--start", "2", "--end", "3.5", p1}, false)
	if got := check("range vs rest, stored", []string{"--a-start", "2", "--a-end", "3.5", "--a-outside", "--b-start", "2", "--b-end", "3.5", "profile:" + id1, "profile:" + id1},
		[]string{"--profile", id1, "--start", "2", "--end", "3.5", "--outside"}, []string{"--profile", id1, "--start", "2", "--end", "3.5"}, true); got != rest {
		t.Fatalf("range vs rest: the stored profile's diff differs from its file's")
	}
	restA, rangeB := diffColumns(t, rest)
	whole := foldedMap(t, local(t, "flamegraph", p1))
	for stack, n := range whole {
		if restA[stack]+rangeB[stack] != n {
			t.Fatalf("%q: rest %d + range %d != whole %d", stack, restA[stack], rangeB[stack], n)
		}
	}
	check("mixed", []string{"--b-start", "2", "--b-end", "3", p1, "profile:" + id2}, []string{p1}, []string{"--profile", id2, "--start", "2", "--end", "3"}, true)
	// Fleets: a label against another, a host against the fleet.
	win := "from=1795000000,to=1795000010"
	check("fleet labels", []string{"fleet:app=test,label=version=1," + win, "fleet:app=test,label=version=2," + win},
		[]string{"--app", "test", "--label", "version=1", "--from", "1795000000", "--to", "1795000010"},
		[]string{"--app", "test", "--label", "version=2", "--from", "1795000000", "--to", "1795000010"}, true)
	check("host vs fleet", []string{"fleet:app=test," + win, "fleet:app=test,host=h2," + win},
		[]string{"--app", "test", "--from", "1795000000", "--to", "1795000010"},
		[]string{"--app", "test", "--host", "h2", "--from", "1795000000", "--to", "1795000010"}, true)

	// --normalize: A' = floor(A * totalB / totalA) per stack, exactly.
	rawA, rawB := diffColumns(t, files)
	var ta, tb int64
	for _, n := range rawA {
		ta += int64(n)
	}
	for _, n := range rawB {
		tb += int64(n)
	}
	normA, normB := diffColumns(t, local(t, "diff", "--normalize", p1, p2))
	for stack, n := range rawA {
		want := new(big.Int).Div(new(big.Int).Mul(big.NewInt(int64(n)), big.NewInt(tb)), big.NewInt(ta)).Uint64()
		if normA[stack] != want {
			t.Fatalf("normalized A of %q: %d, want floor(%d*%d/%d) = %d", stack, normA[stack], n, tb, ta, want)
		}
	}
	if !maps.Equal(normB, rawB) {
		t.Fatalf("--normalize changed B")
	}

	// The API: the same folded lines; the tree's root holds both totals.
	compare := s.as(s.key).compare
	side := func(id string) *fsv1.DiffSide {
		return &fsv1.DiffSide{Side: &fsv1.DiffSide_Profile{Profile: &fsv1.GetFlameGraphRequest{ProfileId: id}}}
	}
	res, err := compare.GetDiffFlameGraph(ctx, connect.NewRequest(&fsv1.GetDiffFlameGraphRequest{A: side(id1), B: side(id2)}))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Msg
	if m.GetFolded() != files || m.GetTree().GetValueA()[0] != uint64(ta) || m.GetTree().GetValueB()[0] != uint64(tb) ||
		m.GetTotalA() != uint64(ta) || m.GetTotalB() != uint64(tb) || len(m.GetChangesBySelf()) == 0 {
		t.Fatalf("API diff: totals %d/%d, root %d/%d, %d changes; folded equal to the CLI's: %v", m.GetTotalA(), m.GetTotalB(),
			m.GetTree().GetValueA()[0], m.GetTree().GetValueB()[0], len(m.GetChangesBySelf()), m.GetFolded() == files)
	}
	fleetSide := &fsv1.DiffSide{Side: &fsv1.DiffSide_Fleet{Fleet: &fsv1.FleetSelection{App: "test",
		From: timestamppb.New(time.Unix(1795000000, 0)), To: timestamppb.New(time.Unix(1795000010, 0))}}}
	if _, err := compare.GetDiffFlameGraph(ctx, connect.NewRequest(&fsv1.GetDiffFlameGraphRequest{A: fleetSide, B: side(id2)})); err != nil {
		t.Fatalf("fleet against a profile: %v", err)
	}
	if _, err := compare.GetDiffFlameGraph(ctx, connect.NewRequest(&fsv1.GetDiffFlameGraphRequest{A: &fsv1.DiffSide{}, B: side(id2)})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("an empty side: %v, want InvalidArgument", err)
	}

	// JSON: the same stacks and totals; the SVG parses.
	var j diffJSON
	if err := json.Unmarshal([]byte(local(t, "diff", "--format", "json", p1, p2)), &j); err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, st := range j.Stacks {
		if st.A > 0 {
			got[st.Stack] = st.A
		}
	}
	if !maps.Equal(got, rawA) || j.TotalA != uint64(ta) || j.TotalB != uint64(tb) || len(j.ChangesByTotal) == 0 {
		t.Fatalf("diff --format json: %d stacks of A, totals %d/%d", len(got), j.TotalA, j.TotalB)
	}
	d := xml.NewDecoder(strings.NewReader(local(t, "diff", "--format", "svg", p1, p2)))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("diff --format svg: %v", err)
		}
	}
}

// TestImpossibleRanges: an empty or reversed range, or one wholly outside
// the profile, is refused with a message saying so (InvalidArgument from
// the API, exit 1 from the CLI), for a file and a stored profile alike;
// a range partly outside is answered.
func TestImpossibleRanges(t *testing.T) {
	s := startService(t, serviceOpts{})
	path := plant(t, "--seed", "81", "--seconds", "6")
	id := s.upload(path)
	for _, c := range []struct {
		start, end, says string
	}{
		{"5", "2", "is empty"},
		{"2", "2", "is empty"},
		{"100", "120", "lies outside the profile"},
		{"-10", "-1", "lies outside the profile"},
	} {
		for _, where := range [][]string{{path}, {"--profile", id}} {
			args := append([]string{"flamegraph", "--start", c.start, "--end", c.end}, where...)
			out, errOut, code := s.cli(args...)
			if code != 1 || out != "" || !strings.Contains(errOut, c.says) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 saying %q", args, code, out, errOut, c.says)
			}
		}
		st, en := mustSeconds(t, c.start), mustSeconds(t, c.end)
		_, err := s.as(s.key).query.GetFlameGraph(context.Background(), connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id, StartNanos: &st, EndNanos: &en}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("API [%s, %s): %v, want InvalidArgument", c.start, c.end, err)
		}
	}
	if out := local(t, "flamegraph", "--start", "5", "--end", "100", path); out == "" {
		t.Fatal("a range partly outside the profile answered nothing")
	}
}

func mustSeconds(t *testing.T, s string) int64 {
	t.Helper()
	ns, err := fleetscope.ParseSeconds(s)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}
