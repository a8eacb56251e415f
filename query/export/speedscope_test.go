package export_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/export"
)

func TestWriteSpeedscope(t *testing.T) {
	stacks := []export.Stack{
		st("java;main;work", 3),
		st("java;main", 2),
		st("java;main;work", 4), // a duplicate stays a sample of its own
		st("java;main;idle", 0), // zero: left out
		st("bash;main;read line", 5),
		{Frames: []string{"java", `say "<hi>" & \bye`, "é"}, Value: 1},
	}
	var out bytes.Buffer
	if err := export.WriteSpeedscope(&out, stacks, export.SpeedscopeOptions{Name: "cpu 10-20s"}); err != nil {
		t.Fatal(err)
	}
	f := checkSpeedscope(t, out.Bytes(), stacks)
	p := f.Profiles[0]
	if f.Name != "cpu 10-20s" || p.Name != "cpu 10-20s" || p.Unit != "none" {
		t.Errorf("name %q, profile name %q, unit %q; want the name given and unit none", f.Name, p.Name, p.Unit)
	}
	// Samples are sorted by frames, root first.
	var got []string
	for _, s := range p.Samples {
		var names []string
		for _, k := range s {
			names = append(names, f.Shared.Frames[k].Name)
		}
		got = append(got, strings.Join(names, ";"))
	}
	want := []string{"bash;main;read line", "java;main", "java;main;work", "java;main;work", `java;say "<hi>" & \bye;é`}
	if !slices.Equal(got, want) {
		t.Errorf("samples %q, want %q", got, want)
	}
	// Each frame name is shared once.
	if len(f.Shared.Frames) != 7 {
		t.Errorf("%d shared frames, want 7 distinct names: %v", len(f.Shared.Frames), f.Shared.Frames)
	}
}

func TestWriteSpeedscopeUnit(t *testing.T) {
	stacks := []export.Stack{st("app;f", 10_000_000)}
	var out bytes.Buffer
	if err := export.WriteSpeedscope(&out, stacks, export.SpeedscopeOptions{Unit: "nanoseconds"}); err != nil {
		t.Fatal(err)
	}
	if f := checkSpeedscope(t, out.Bytes(), stacks); f.Profiles[0].Unit != "nanoseconds" {
		t.Errorf("unit %q, want nanoseconds", f.Profiles[0].Unit)
	}
	err := export.WriteSpeedscope(&out, stacks, export.SpeedscopeOptions{Unit: "furlongs"})
	if code := fleetscope.ErrorCode(err); code != fleetscope.EINVALID {
		t.Errorf("unknown unit: error %v has code %s, want %s", err, code, fleetscope.EINVALID)
	}
	err = export.WriteSpeedscope(&out, []export.Stack{st("a;b", 1<<53)}, export.SpeedscopeOptions{})
	if code := fleetscope.ErrorCode(err); code != fleetscope.EINVALID {
		t.Errorf("total 2^53: error %v has code %s, want %s", err, code, fleetscope.EINVALID)
	}
}

func TestWriteSpeedscopeEmpty(t *testing.T) {
	var out bytes.Buffer
	if err := export.WriteSpeedscope(&out, nil, export.SpeedscopeOptions{}); err != nil {
		t.Fatal(err)
	}
	checkSpeedscope(t, out.Bytes(), nil)
}

// TestSpeedscopeSchema validates the output against speedscope's own JSON
// schema, file-format-schema.json, which the speedscope npm package ships
// (dist/release/). The test finds it through FLEETSCOPE_SPEEDSCOPE_SCHEMA,
// web/node_modules, or npm's global root (`npm install -g speedscope`), and
// is skipped when it is nowhere (failed when FLEETSCOPE_TEST_REQUIRE=1).
// The schema is not copied into this repository.
func TestSpeedscopeSchema(t *testing.T) {
	schema := compileSpeedscopeSchema(t)
	if schema == nil {
		requireOrSkip(t, "speedscope's file-format-schema.json not found: `npm install -g speedscope`, or set FLEETSCOPE_SPEEDSCOPE_SCHEMA to its path (it is in the npm package under dist/release/)")
	}
	for name, stacks := range map[string][]export.Stack{
		"plain": {st("java;main;work", 3), st("bash;main", 5), st("java;main", 1)},
		"empty": nil,
	} {
		var out bytes.Buffer
		if err := export.WriteSpeedscope(&out, stacks, export.SpeedscopeOptions{Unit: "nanoseconds"}); err != nil {
			t.Fatal(err)
		}
		if err := validateJSON(schema, out.Bytes()); err != nil {
			t.Errorf("%s: %v\n%s", name, err, out.String())
		}
	}
	// The schema bites: a unit it does not know is refused.
	bad := `{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[]},` +
		`"profiles":[{"type":"sampled","name":"x","unit":"furlongs","startValue":0,"endValue":0,"samples":[],"weights":[]}]}`
	if validateJSON(schema, []byte(bad)) == nil {
		t.Error("the schema accepted unit furlongs")
	}
}

// speedscopeFile is speedscope's file format as this test reads it back.
type speedscopeFile struct {
	Schema string `json:"$schema"`
	Shared struct {
		Frames []struct {
			Name string `json:"name"`
		} `json:"frames"`
	} `json:"shared"`
	Profiles []struct {
		Type       string    `json:"type"`
		Name       string    `json:"name"`
		Unit       string    `json:"unit"`
		StartValue float64   `json:"startValue"`
		EndValue   float64   `json:"endValue"`
		Samples    [][]int   `json:"samples"`
		Weights    []float64 `json:"weights"`
	} `json:"profiles"`
	Name               string `json:"name"`
	ActiveProfileIndex int    `json:"activeProfileIndex"`
	Exporter           string `json:"exporter"`
}

// checkSpeedscope checks data against speedscope's file format as
// src/lib/file-format-spec.ts specifies it (required fields and their
// types, one sampled profile, frame indexes in range, as many weights as
// samples, endValue ≥ startValue), then that the weights add up to the
// input's total and that the samples are the input's nonzero stacks.
func checkSpeedscope(t *testing.T, data []byte, stacks []export.Stack) *speedscopeFile {
	t.Helper()
	// Required fields and JSON types, on the generic decoding.
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	need := func(obj map[string]any, key string, kind string) {
		t.Helper()
		v, ok := obj[key]
		if !ok {
			t.Fatalf("missing required field %q", key)
		}
		var okType bool
		switch kind {
		case "string":
			_, okType = v.(string)
		case "number":
			_, okType = v.(float64)
		case "array":
			_, okType = v.([]any)
		case "object":
			_, okType = v.(map[string]any)
		}
		if !okType {
			t.Fatalf("field %q is %T, want a JSON %s", key, v, kind)
		}
	}
	need(raw, "$schema", "string")
	need(raw, "shared", "object")
	need(raw["shared"].(map[string]any), "frames", "array")
	for _, fr := range raw["shared"].(map[string]any)["frames"].([]any) {
		frame, ok := fr.(map[string]any)
		if !ok {
			t.Fatalf("frame %v is not an object", fr)
		}
		need(frame, "name", "string")
	}
	need(raw, "profiles", "array")
	for _, pr := range raw["profiles"].([]any) {
		prof, ok := pr.(map[string]any)
		if !ok {
			t.Fatalf("profile %v is not an object", pr)
		}
		for _, k := range []string{"type", "name", "unit"} {
			need(prof, k, "string")
		}
		for _, k := range []string{"startValue", "endValue"} {
			need(prof, k, "number")
		}
		for _, k := range []string{"samples", "weights"} {
			need(prof, k, "array")
		}
	}

	var f speedscopeFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("not speedscope's shape: %v", err)
	}
	if f.Schema != export.SpeedscopeSchema {
		t.Errorf("$schema %q, want %q", f.Schema, export.SpeedscopeSchema)
	}
	if len(f.Profiles) != 1 {
		t.Fatalf("%d profiles, want 1", len(f.Profiles))
	}
	if f.ActiveProfileIndex != 0 {
		t.Errorf("activeProfileIndex %d, want 0", f.ActiveProfileIndex)
	}
	p := f.Profiles[0]
	if p.Type != "sampled" {
		t.Errorf("profile type %q, want sampled", p.Type)
	}
	if !slices.Contains(export.SpeedscopeUnits, p.Unit) {
		t.Errorf("unit %q is not one of speedscope's", p.Unit)
	}
	if len(p.Weights) != len(p.Samples) {
		t.Fatalf("%d weights for %d samples", len(p.Weights), len(p.Samples))
	}
	var total float64
	var got []string
	for i, s := range p.Samples {
		names := make([]string, len(s))
		for j, k := range s {
			if k < 0 || k >= len(f.Shared.Frames) {
				t.Fatalf("sample %d frame index %d out of range [0, %d)", i, k, len(f.Shared.Frames))
			}
			names[j] = f.Shared.Frames[k].Name
		}
		w := p.Weights[i]
		if w != math.Trunc(w) || w <= 0 {
			t.Errorf("sample %d weight %v, want a positive integer", i, w)
		}
		total += w
		got = append(got, sampleKey(names, uint64(w)))
	}
	if p.StartValue != 0 || p.EndValue != float64(export.Total(stacks)) {
		t.Errorf("start %v end %v, want 0 and the total %d", p.StartValue, p.EndValue, export.Total(stacks))
	}
	if total != float64(export.Total(stacks)) {
		t.Errorf("weights add up to %v, want the total %d", total, export.Total(stacks))
	}
	var want []string
	for _, s := range stacks {
		if s.Value != 0 {
			want = append(want, sampleKey(s.Frames, s.Value))
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("samples differ:\ngot  %q\nwant %q", got, want)
	}
	return &f
}

// compileSpeedscopeSchema compiles speedscope's file-format-schema.json from
// the speedscope npm package, or returns nil when it is not installed.
func compileSpeedscopeSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	path := findSpeedscopeSchema()
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(export.SpeedscopeSchema, doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(export.SpeedscopeSchema)
	if err != nil {
		t.Fatalf("compile %s: %v", path, err)
	}
	t.Logf("validating against %s", path)
	return schema
}

func findSpeedscopeSchema() string {
	const rel = "speedscope/dist/release/file-format-schema.json"
	if p := os.Getenv("FLEETSCOPE_SPEEDSCOPE_SCHEMA"); p != "" {
		return p
	}
	candidates := []string{filepath.Join("../../web/node_modules", rel)}
	if _, err := exec.LookPath("node"); err == nil {
		if out, err := exec.Command("npm", "root", "-g").Output(); err == nil {
			candidates = append(candidates, filepath.Join(strings.TrimSpace(string(out)), rel))
		}
	}
	for _, p := range candidates {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func validateJSON(schema *jsonschema.Schema, data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return schema.Validate(inst)
}

// requireOrSkip skips the test for a missing prerequisite, or fails it when
// FLEETSCOPE_TEST_REQUIRE=1 asks for every test to run.
func requireOrSkip(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("FLEETSCOPE_TEST_REQUIRE") == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// TestWriteSpeedscopeTimeline: each sample is its own entry, in the order
// given (time order), with its stack's frames and its weight; zero weights
// are left out; frames are shared by name; several profiles share them.
func TestWriteSpeedscopeTimeline(t *testing.T) {
	stacks := [][]string{{"java", "main", "work"}, {"bash", "read"}, {"java", "main"}, {"unused", "x"}}
	profiles := []export.TimedProfile{
		{Name: "host a", Unit: "nanoseconds", Samples: []export.TimedSample{{2, 10}, {0, 5}, {0, 5}, {1, 0}, {2, 7}}},
		{Name: "host b", Samples: []export.TimedSample{{1, 1}}},
	}
	var out bytes.Buffer
	if err := export.WriteSpeedscopeTimeline(&out, "cpu-clock, fleet", stacks, profiles); err != nil {
		t.Fatal(err)
	}
	var f speedscopeFile
	if err := json.Unmarshal(out.Bytes(), &f); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if f.Schema != export.SpeedscopeSchema || f.Name != "cpu-clock, fleet" || len(f.Profiles) != 2 {
		t.Fatalf("file %q %q with %d profiles", f.Schema, f.Name, len(f.Profiles))
	}
	read := func(i int) (seq []string, weights []float64) {
		p := f.Profiles[i]
		for _, s := range p.Samples {
			var names []string
			for _, k := range s {
				names = append(names, f.Shared.Frames[k].Name)
			}
			seq = append(seq, strings.Join(names, ";"))
		}
		return seq, p.Weights
	}
	seq, w := read(0)
	if want := []string{"java;main", "java;main;work", "java;main;work", "java;main"}; !slices.Equal(seq, want) {
		t.Errorf("samples %q, want %q (the order given, the zero weight left out)", seq, want)
	}
	if want := []float64{10, 5, 5, 7}; !slices.Equal(w, want) {
		t.Errorf("weights %v, want %v", w, want)
	}
	p := f.Profiles[0]
	if p.Type != "sampled" || p.Name != "host a" || p.Unit != "nanoseconds" || p.StartValue != 0 || p.EndValue != 27 {
		t.Errorf("profile %q %q unit %q [%v, %v], want sampled host a nanoseconds [0, 27]", p.Type, p.Name, p.Unit, p.StartValue, p.EndValue)
	}
	if seq, _ := read(1); !slices.Equal(seq, []string{"bash;read"}) || f.Profiles[1].Unit != "none" {
		t.Errorf("second profile %q unit %q", seq, f.Profiles[1].Unit)
	}
	if len(f.Shared.Frames) != 5 { // java main work bash read: not the unused stack's
		t.Errorf("%d shared frames, want 5: %v", len(f.Shared.Frames), f.Shared.Frames)
	}
	for name, err := range map[string]error{
		"stack out of range": export.WriteSpeedscopeTimeline(&out, "", stacks, []export.TimedProfile{{Samples: []export.TimedSample{{4, 1}}}}),
		"unit":               export.WriteSpeedscopeTimeline(&out, "", stacks, []export.TimedProfile{{Unit: "furlongs"}}),
		"2^53":               export.WriteSpeedscopeTimeline(&out, "", stacks, []export.TimedProfile{{Samples: []export.TimedSample{{0, 1 << 52}, {0, 1 << 52}}}}),
	} {
		if code := fleetscope.ErrorCode(err); code != fleetscope.EINVALID {
			t.Errorf("%s: error %v has code %s, want %s", name, err, code, fleetscope.EINVALID)
		}
	}
	// speedscope's own schema, when installed.
	if schema := compileSpeedscopeSchema(t); schema != nil {
		out.Reset()
		if err := export.WriteSpeedscopeTimeline(&out, `a "quoted" <name>`, stacks, profiles); err != nil {
			t.Fatal(err)
		}
		if err := validateJSON(schema, out.Bytes()); err != nil {
			t.Errorf("schema: %v\n%s", err, out.String())
		}
	}
}
