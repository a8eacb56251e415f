package api

import (
	"slices"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
)

func TestParseSelector(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string // matchers as name op "value"
	}{
		{``, nil},
		{`{}`, nil},
		{`  { }  `, nil},
		{`{service_name="checkout"}`, []string{`service_name="checkout"`}},
		{`{service_name="checkout", env="prod",}`, []string{`service_name="checkout"`, `env="prod"`}},
		{"{env!=\"dev\",host=~\"web-.*\" , k8s.pod!~`db-\\d+`, x=~'a\\\\d'}", []string{`env!="dev"`, `host=~"web-.*"`, `k8s.pod!~"db-\\d+"`, `x=~"a\\d"`}},
		{"{a=`raw\\n\"`}", []string{`a="raw\\n\""`}},
		{`{a="tab\tquote\" unicode \u00e9 \x41"}`, []string{`a="tab\tquote\" unicode é A"`}},
		{`{a='single "quoted" \'x\''}`, []string{`a="single \"quoted\" 'x'"`}},
		{`{"service.name"="x"}`, []string{`service.name="x"`}},
		{`{a=""}`, []string{`a=""`}},
		{`process_cpu{service_name="x"}`, []string{`__name__="process_cpu"`, `service_name="x"`}},
		{`process_cpu:cpu:nanoseconds:cpu:nanoseconds{}`, []string{`__profile_type__="process_cpu:cpu:nanoseconds:cpu:nanoseconds"`}},
		{`memory`, []string{`__name__="memory"`}},
		{"{\n\ta = \"1\" ,\n\tb =~ \"2\"\n}", []string{`a="1"`, `b=~"2"`}},
	} {
		ms, err := parseSelector(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, err string }{
		{`{`, "expected '}'"},
		{`}`, "expected '{'"},
		{`{a}`, "expected =, !=, =~ or !~"},
		{`{a=b}`, "expected a quoted string"},
		{`{a="b"`, "expected ',' or '}'"},
		{`{a="b" c="d"}`, "expected ',' or '}'"},
		{`{a="b"}x`, "unexpected"},
		{`{a="unterminated}`, "unterminated string"},
		{"{a=\"line\nbreak\"}", "unterminated string"},
		{`{a="\q"}`, "bad escape"},
		{`{a=~"("}`, "missing closing )"},
		{`{=~"x"}`, "expected a label name"},
		{`{1a="x"}`, "expected a label name"},
		{`{a=="x"}`, "expected a quoted string"},
		{`{a=` + "\"\xff\"}", "invalid UTF-8"},
		{`{a="x"},{b="y"}`, "unexpected"},
		{"{" + strings.Repeat(`a="1",`, maxMatchers) + `b="2"}`, "more than 64 conditions"},
		{strings.Repeat(" ", maxSelectorBytes+1), "at most 16384"},
	} {
		_, err := parseSelector(c.in)
		if fleetscope.ErrorCode(err) != fleetscope.EINVALID || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: %v, want EINVALID %q", c.in, err, c.err)
		}
	}
}

// TestMatcherSemantics: Prometheus' rules, a missing label being "".
func TestMatcherSemantics(t *testing.T) {
	for _, c := range []struct {
		sel   string
		value string
		want  bool
	}{
		{`{a="x"}`, "x", true}, {`{a="x"}`, "xy", false}, {`{a="x"}`, "", false},
		{`{a!="x"}`, "", true}, {`{a!="x"}`, "x", false},
		{`{a=""}`, "", true}, {`{a=""}`, "x", false},
		{`{a=~"x|y"}`, "y", true}, {`{a=~"x|y"}`, "xy", false}, {`{a=~"x"}`, "ax", false},
		{`{a=~".*"}`, "", true}, {`{a=~".+"}`, "", false},
		{`{a!~"x|y"}`, "z", true}, {`{a!~"x|y"}`, "x", false}, {`{a!~"x"}`, "", true},
	} {
		ms, err := parseSelector(c.sel)
		if err != nil {
			t.Fatal(err)
		}
		if got := ms[0].matches(c.value); got != c.want {
			t.Errorf("%s on %q: %v, want %v", c.sel, c.value, got, c.want)
		}
		// The same rule as a fleet label condition (absent label = "").
		labels := map[string]string{}
		if c.value != "" {
			labels["a"] = c.value
		}
		if got := labelMatch(ms[0]).Matches(labels); got != c.want {
			t.Errorf("%s on %q as a fleet condition: %v, want %v", c.sel, c.value, got, c.want)
		}
	}
}

// FuzzParseSelector: any input parses or is EINVALID, never panics; what
// parses prints back (name op "value") to the same conditions.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{``, `{}`, `{a="b"}`, `{a!~"x|y", b=~'z'}`, "{a=`c`}", `p{a="\u00e9\x41"}`, `{"k.x"="v",}`, `{a=~"(("}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := parseSelector(s)
		if err != nil {
			if fleetscope.ErrorCode(err) != fleetscope.EINVALID {
				t.Fatalf("%q: %v, want EINVALID", s, err)
			}
			return
		}
		var parts []string
		for _, m := range ms {
			parts = append(parts, `"`+strings.ReplaceAll(strings.ReplaceAll(m.name, `\`, `\\`), `"`, `\"`)+`"`+m.String()[len(m.name):])
		}
		again, err := parseSelector("{" + strings.Join(parts, ",") + "}")
		if err != nil || len(again) != len(ms) {
			t.Fatalf("%q parsed to %v, which does not parse back: %v", s, ms, err)
		}
		for i := range ms {
			if again[i].name != ms[i].name || again[i].op != ms[i].op || again[i].value != ms[i].value {
				t.Fatalf("%q: %v, printed and parsed %v", s, ms[i], again[i])
			}
		}
	})
}
