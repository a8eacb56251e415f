package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// perfSample is a sample of perf script text: its time (ns, as printed)
// and its command, the root of its stack.
type perfSample struct {
	ns   int64
	comm string
}

// perfHeader is a sample's first line: comm pid[/tid] [cpu] secs.micros:
var perfHeader = regexp.MustCompile(`^(\S.*?)\s+\d+(?:/\d+)?\s+\[\d+\]\s+(\d+)\.(\d{6}):`)

// readPerfSamples reads the samples of a perf script file on its own
// terms (not through the parser under test).
func readPerfSamples(t *testing.T, path string) []perfSample {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []perfSample
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := perfHeader.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		sec, _ := strconv.ParseInt(m[2], 10, 64)
		us, _ := strconv.ParseInt(m[3], 10, 64)
		out = append(out, perfSample{sec*1e9 + us*1e3, m[1]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// speedscopeImport runs speedscope's own importer (web/scripts/
// speedscope-import.mjs, on the npm package in web/node_modules) on a file.
type importedSpeedscope struct {
	Name     string `json:"name"`
	Profiles []struct {
		Name        string  `json:"name"`
		Unit        string  `json:"unit"`
		TotalWeight float64 `json:"totalWeight"`
		Samples     [][2]any
	} `json:"profiles"`
}

func speedscopeImport(t *testing.T, path string) *importedSpeedscope {
	t.Helper()
	why := ""
	if _, err := exec.LookPath("node"); err != nil {
		why = "node is not installed"
	} else if _, err := os.Stat("../../web/node_modules/speedscope/package.json"); err != nil {
		why = "speedscope's npm package is not in web/node_modules: bash web/scripts/build.sh --deps"
	}
	if why != "" {
		if os.Getenv("FLEETSCOPE_TEST_REQUIRE") == "1" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	out, err := exec.Command("node", "../../web/scripts/speedscope-import.mjs", path).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("speedscope's importer: %v %s", err, msg)
	}
	var imp importedSpeedscope
	if err := json.Unmarshal(out, &imp); err != nil {
		t.Fatalf("speedscope's importer printed %q: %v", out, err)
	}
	return &imp
}

// TestSpeedscopeTimeOrder: `flamegraph --format speedscope` of a range is
// the range's timeline. speedscope's own importer reads the export, and
// its Time Order samples, each stack's root (the command) repeated by its
// weight, are the range's samples as the perf text lists them, by time;
// they total the range's sample count.
func TestSpeedscopeTimeOrder(t *testing.T) {
	path := plant(t, "--seed", "31", "--seconds", "5")
	perf := readPerfSamples(t, path)
	first := slices.MinFunc(perf, func(a, b perfSample) int { return int(a.ns - b.ns) }).ns
	start := first / 1e9 * 1e9 // the profile's start second
	for _, c := range []struct {
		args       []string
		start, end int64 // ns from the start second
	}{
		{[]string{"--start", "1", "--end", "2.5"}, 1e9, 2.5e9},
		{[]string{"--start", "0.25", "--end", "0.3"}, 0.25e9, 0.3e9},
		{nil, -1 << 62, 1 << 62},
	} {
		// The range's samples, from the perf text, by time (idle samples
		// included: which are idle is the parser's business).
		var want []perfSample
		for _, s := range perf {
			if rel := s.ns - start; rel >= c.start && rel < c.end {
				want = append(want, s)
			}
		}
		slices.SortStableFunc(want, func(a, b perfSample) int { return int(a.ns - b.ns) })
		if len(want) < 5 {
			t.Fatalf("%v: %d samples in the perf text: pick a busier range", c.args, len(want))
		}

		args := append(append([]string{"flamegraph", "--format", "speedscope", "--include-idle"}, c.args...), path)
		data := local(t, args...)
		file := filepath.Join(t.TempDir(), "range.speedscope.json")
		if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}

		// speedscope's importer reads the range's timeline.
		imp := speedscopeImport(t, file)
		if len(imp.Profiles) != 1 {
			t.Fatalf("%v: speedscope imported %d profiles", c.args, len(imp.Profiles))
		}
		if !strings.Contains(imp.Name, "host planted-host, file ") {
			t.Errorf("%v: name %q names neither the host nor the file", c.args, imp.Name)
		}
		ip := imp.Profiles[0]
		var seq []string
		var total float64
		for _, s := range ip.Samples {
			stack, _ := s[0].(string)
			w, _ := s[1].(float64)
			total += w
			for range int(w) {
				seq = append(seq, strings.SplitN(stack, ";", 2)[0])
			}
		}
		checkTimeOrder(t, "speedscope's import", c.args, seq, want)
		if total != float64(len(want)) || ip.TotalWeight != float64(len(want)) {
			t.Errorf("%v: speedscope imported weights %v, total weight %v; the range has %d samples", c.args, total, ip.TotalWeight, len(want))
		}
	}
}

// checkTimeOrder checks that roots are the commands of want in order;
// samples of one time may come in any order among themselves.
func checkTimeOrder(t *testing.T, what string, args []string, roots []string, want []perfSample) {
	t.Helper()
	if len(roots) != len(want) {
		t.Errorf("%v: %s has %d samples, the perf text %d in the range", args, what, len(roots), len(want))
		return
	}
	for i := 0; i < len(want); {
		j := i
		for j < len(want) && want[j].ns == want[i].ns {
			j++
		}
		got := slices.Sorted(slices.Values(roots[i:j]))
		var exp []string
		for _, s := range want[i:j] {
			exp = append(exp, s.comm)
		}
		slices.Sort(exp)
		if !slices.Equal(got, exp) {
			t.Errorf("%v: %s samples %d..%d are %q, the perf text's at %d ns %q: not in time order", args, what, i, j-1, got, want[i].ns, exp)
			return
		}
		i = j
	}
}
