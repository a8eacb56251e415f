package export_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/export"
)

// svgFrame is one frame read back from an SVG.
type svgFrame struct {
	title       string
	start, val  uint64 // data-s, data-v
	x, y, width float64
	textX       float64
	fill, label string
	depth       int      // from y: the root is 0
	path        []string // names from the first frame under the root to this one
}

// svgDoc is an SVG read back with encoding/xml.
type svgDoc struct {
	width, height float64
	ids           map[string]string // element id -> its text
	script        string
	frames        []svgFrame
}

// parseSVG decodes the whole document as XML, strictly, and returns its
// frames in document order with their depth and path rebuilt from y.
func parseSVG(t *testing.T, data []byte, icicle bool) *svgDoc {
	t.Helper()
	doc := &svgDoc{ids: map[string]string{}}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	var stack []xml.StartElement
	var cur *svgFrame
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			tok = tok.Copy()
			attr := func(name string) string {
				for _, a := range tok.Attr {
					if a.Name.Local == name {
						return a.Value
					}
				}
				return ""
			}
			num := func(name string) float64 {
				v, err := strconv.ParseFloat(attr(name), 64)
				if err != nil {
					t.Fatalf("<%s %s=%q>: %v", tok.Name.Local, name, attr(name), err)
				}
				return v
			}
			parent := ""
			if len(stack) > 0 {
				for _, a := range stack[len(stack)-1].Attr {
					if a.Name.Local == "id" {
						parent = a.Value
					}
				}
			}
			switch {
			case tok.Name.Local == "svg" && len(stack) == 0:
				if tok.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root element in namespace %q", tok.Name.Space)
				}
				doc.width, doc.height = num("width"), num("height")
			case tok.Name.Local == "g" && parent == "frames":
				s, err1 := strconv.ParseUint(attr("data-s"), 10, 64)
				v, err2 := strconv.ParseUint(attr("data-v"), 10, 64)
				if err1 != nil || err2 != nil {
					t.Fatalf("frame data-s %q data-v %q", attr("data-s"), attr("data-v"))
				}
				doc.frames = append(doc.frames, svgFrame{start: s, val: v})
				cur = &doc.frames[len(doc.frames)-1]
			case tok.Name.Local == "rect" && cur != nil:
				cur.x, cur.y, cur.width, cur.fill = num("x"), num("y"), num("width"), attr("fill")
			case tok.Name.Local == "text" && cur != nil:
				cur.textX = num("x")
			}
			stack = append(stack, tok)
			text.Reset()
		case xml.CharData:
			text.Write(tok)
		case xml.EndElement:
			start := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, a := range start.Attr {
				if a.Name.Local == "id" {
					doc.ids[a.Value] = text.String()
				}
			}
			switch {
			case tok.Name.Local == "script":
				doc.script += text.String()
			case tok.Name.Local == "title" && cur != nil:
				cur.title = text.String()
			case tok.Name.Local == "text" && cur != nil:
				cur.label = text.String()
			case tok.Name.Local == "g" && cur != nil && len(stack) > 0:
				cur = nil
			}
		}
	}
	if len(doc.frames) == 0 {
		return doc
	}
	// Depth from y: the root is the lowest frame (flame) or the highest
	// (icicle), 16 pixels a level.
	root := doc.frames[0]
	var path []string
	for i := range doc.frames {
		f := &doc.frames[i]
		d := (root.y - f.y) / 16
		if icicle {
			d = -d
		}
		if d != math.Trunc(d) || d < 0 {
			t.Fatalf("frame %q at y %v is not on a level from the root at y %v", f.title, f.y, root.y)
		}
		f.depth = int(d)
		if f.depth > len(path)+1 {
			t.Fatalf("frame %q at depth %d follows a frame at depth %d: not depth-first", f.title, f.depth, len(path))
		}
		if f.depth > 0 {
			path = append(path[:f.depth-1], frameName(f.title))
		}
		f.path = slices.Clone(path[:f.depth])
	}
	return doc
}

// frameName returns the name part of a frame title "name (N samples, ...)".
func frameName(title string) string { return title[:strings.LastIndex(title, " (")] }

// shownName is a frame name as titles show it: without a trailing
// annotation _[k], _[j], _[i] or _[w], as flamegraph.pl shows it.
func shownName(name string) string {
	for _, a := range []string{"_[k]", "_[j]", "_[i]", "_[w]"} {
		if n, ok := strings.CutSuffix(name, a); ok {
			return n
		}
	}
	return name
}

// countText formats n as the titles do: 1,234,567.
func countText(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// pathTotals returns the samples through each path (frames joined by
// "\x00"), as the graph's frames should total them, by the names titles
// show.
func pathTotals(stacks []export.Stack) map[string]uint64 {
	totals := map[string]uint64{}
	for _, s := range stacks {
		var path []string
		for _, f := range s.Frames {
			path = append(path, shownName(f))
			totals[strings.Join(path, "\x00")] += s.Value
		}
	}
	for k, v := range totals {
		if v == 0 {
			delete(totals, k)
		}
	}
	return totals
}

var sampleStacks = []export.Stack{
	st("app;main;parse;lex", 40),
	st("app;main;parse", 10),
	st("app;main;eval;lex", 20), // lex again, elsewhere
	st("app;main;eval", 15),
	st("app;gc", 9),
	st("app;main;parse;lex", 6), // a duplicate: adds up
	st("other;main", 12345),
	st("app;main;idle", 0), // zero: left out
}

func TestWriteSVG(t *testing.T) {
	var out bytes.Buffer
	if err := export.WriteSVG(&out, sampleStacks, export.SVGOptions{Title: "CPU <all>", Subtitle: "10s-20s"}); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, out.Bytes(), false)
	total := export.Total(sampleStacks)

	if doc.ids["title"] != "CPU <all>" || doc.ids["subtitle"] != "10s-20s" {
		t.Errorf("title %q subtitle %q", doc.ids["title"], doc.ids["subtitle"])
	}
	if doc.width != 1200 {
		t.Errorf("width %v, want the default 1200", doc.width)
	}
	for _, id := range []string{"search", "unzoom", "details", "matched", "frames"} {
		if _, ok := doc.ids[id]; !ok {
			t.Errorf("no element with id %q", id)
		}
	}
	for _, want := range []string{"function zoom(", "function unzoom(", "function search(", "Matched: ", "new RegExp(", "keydown", "Reset Search"} {
		if !strings.Contains(doc.script, want) {
			t.Errorf("the script has no %q", want)
		}
	}

	root := doc.frames[0]
	if want := "all (" + countText(total) + " samples, 100%)"; root.title != want || root.depth != 0 {
		t.Errorf("root %q at depth %d, want %q at 0", root.title, root.depth, want)
	}
	// Every frame is a merged path with its exact count and share.
	want := pathTotals(sampleStacks)
	got := map[string]uint64{}
	for _, f := range doc.frames[1:] {
		key := strings.Join(f.path, "\x00")
		if _, dup := got[key]; dup {
			t.Errorf("path %q drawn twice", f.path)
		}
		got[key] = f.val
		title := fmt.Sprintf("%s (%s samples, %.2f%%)", f.path[len(f.path)-1], countText(f.val), 100*float64(f.val)/float64(total))
		if f.title != title {
			t.Errorf("title %q, want %q", f.title, title)
		}
	}
	if !mapsEqual(got, want) {
		t.Errorf("frames %v\nwant %v", got, want)
	}
	// Every input stack's leaf is there with its count.
	for _, s := range sampleStacks {
		if s.Value == 0 {
			continue
		}
		n := want[strings.Join(s.Frames, "\x00")]
		title := fmt.Sprintf("%s (%s samples, ", s.Frames[len(s.Frames)-1], countText(n))
		if !slices.ContainsFunc(doc.frames, func(f svgFrame) bool {
			return strings.HasPrefix(f.title, title) && slices.Equal(f.path, s.Frames)
		}) {
			t.Errorf("no frame titled %q... for stack %q", title, s.Frames)
		}
	}
	checkGeometry(t, doc, total, 1200)
}

// checkGeometry checks that the rectangles match the exact data: widths in
// proportion to values, children inside their parents, siblings in order.
func checkGeometry(t *testing.T, doc *svgDoc, total uint64, width float64) {
	t.Helper()
	inner := width - 20
	for i, f := range doc.frames {
		if wantX := 10 + float64(f.start)*inner/float64(total); math.Abs(f.x-wantX) > 0.051 {
			t.Errorf("frame %q x %v, want %.2f", f.title, f.x, wantX)
		}
		if wantW := float64(f.val) * inner / float64(total); math.Abs(f.width-wantW) > 0.051 {
			t.Errorf("frame %q width %v, want %.2f", f.title, f.width, wantW)
		}
		if math.Abs(f.textX-(f.x+3)) > 0.051 {
			t.Errorf("frame %q label at x %v, rect at %v", f.title, f.textX, f.x)
		}
		// Its parent is the last frame before it one level down.
		for j := i - 1; j >= 0 && f.depth > 0; j-- {
			p := doc.frames[j]
			if p.depth == f.depth-1 {
				if f.start < p.start || f.start+f.val > p.start+p.val {
					t.Errorf("frame %q [%d,+%d) is outside its parent %q [%d,+%d)", f.title, f.start, f.val, p.title, p.start, p.val)
				}
				break
			}
		}
	}
}

func mapsEqual(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestWriteSVGIcicle(t *testing.T) {
	for _, icicle := range []bool{false, true} {
		var out bytes.Buffer
		if err := export.WriteSVG(&out, sampleStacks, export.SVGOptions{Icicle: icicle}); err != nil {
			t.Fatal(err)
		}
		doc := parseSVG(t, out.Bytes(), icicle)
		root := doc.frames[0]
		i := slices.IndexFunc(doc.frames, func(f svgFrame) bool {
			return slices.Equal(f.path, []string{"app", "main", "eval", "lex"})
		})
		if i < 0 || doc.frames[i].depth != 4 {
			t.Fatalf("no frame app;main;eval;lex at depth 4")
		}
		leaf := doc.frames[i]
		if icicle != (root.y < leaf.y) {
			t.Errorf("icicle %v: root at y %v, a leaf at y %v", icicle, root.y, leaf.y)
		}
		wantTitle := map[bool]string{false: "Flame Graph", true: "Icicle Graph"}[icicle]
		if doc.ids["title"] != wantTitle {
			t.Errorf("icicle %v: title %q, want %q", icicle, doc.ids["title"], wantTitle)
		}
		if !strings.Contains(doc.script, `"icicle":`+strconv.FormatBool(icicle)) {
			t.Errorf("icicle %v: the script settings do not say so", icicle)
		}
	}
}

// TestWriteSVGMinWidth: frames narrower than the minimum width are not
// drawn, but every count stays exact.
func TestWriteSVGMinWidth(t *testing.T) {
	stacks := []export.Stack{st("app;big;work", 1_000_000)}
	for i := range 50 {
		stacks = append(stacks, st(fmt.Sprintf("app;big;tiny%02d;deeper", i), 1))
	}
	var out bytes.Buffer
	if err := export.WriteSVG(&out, stacks, export.SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, out.Bytes(), false)
	var titles []string
	for _, f := range doc.frames {
		titles = append(titles, f.title)
	}
	want := []string{
		"all (1,000,050 samples, 100%)",
		"app (1,000,050 samples, 100.00%)",
		"big (1,000,050 samples, 100.00%)",
		"work (1,000,000 samples, 100.00%)",
	}
	if !slices.Equal(titles, want) {
		t.Errorf("frames %q, want %q (1 sample is 0.001 px wide)", titles, want)
	}

	// A smaller minimum width draws them.
	out.Reset()
	if err := export.WriteSVG(&out, stacks, export.SVGOptions{MinWidth: 0.0001}); err != nil {
		t.Fatal(err)
	}
	if doc := parseSVG(t, out.Bytes(), false); len(doc.frames) != 4+100 {
		t.Errorf("%d frames with a 0.0001 px minimum width, want 104", len(doc.frames))
	}
}

func TestWriteSVGLabels(t *testing.T) {
	long := strings.Repeat("x", 300)
	stacks := []export.Stack{st("app;"+long, 50), st("app;short", 50), st("app;é", 1)}
	var out bytes.Buffer
	if err := export.WriteSVG(&out, stacks, export.SVGOptions{MinWidth: 0.01}); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, out.Bytes(), false)
	for _, f := range doc.frames {
		name := frameName(f.title)
		fit := int(math.Floor((f.width - 6) / 7.1))
		switch {
		case fit < 3:
			if f.label != "" {
				t.Errorf("%q in %.1f px: label %q, want none", name, f.width, f.label)
			}
		case len([]rune(name)) <= fit:
			if f.label != name {
				t.Errorf("%q in %.1f px: label %q, want the whole name", name, f.width, f.label)
			}
		default:
			if want := string([]rune(name)[:fit-2]) + ".."; f.label != want {
				t.Errorf("%q in %.1f px: label %q, want %q", name, f.width, f.label, want)
			}
		}
	}
}

// TestWriteSVGEscaping: names with markup, quotes, control characters and
// bytes that are not UTF-8 still make a well-formed document.
func TestWriteSVGEscaping(t *testing.T) {
	names := []string{`<script>alert("x")</script>`, "a & b", "tab\there", "bell\x07", "bad\xffutf8", "]]>", `it's`}
	var stacks []export.Stack
	for _, n := range names {
		stacks = append(stacks, export.Stack{Frames: []string{"app", n}, Value: 100})
	}
	var out bytes.Buffer
	if err := export.WriteSVG(&out, stacks, export.SVGOptions{Title: "]]> & <b>"}); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, out.Bytes(), false)
	var got []string
	for _, f := range doc.frames[2:] {
		got = append(got, frameName(f.title))
	}
	want := []string{"]]>", "a & b", "bad\ufffdutf8", "bell\ufffd", "it's", "tab\there", `<script>alert("x")</script>`}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
	if doc.ids["title"] != "]]> & <b>" {
		t.Errorf("title %q", doc.ids["title"])
	}
}

func TestWriteSVGPalette(t *testing.T) {
	colors := func(stacks []export.Stack, p export.Palette) map[string]string {
		var out bytes.Buffer
		if err := export.WriteSVG(&out, stacks, export.SVGOptions{Palette: p}); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, f := range parseSVG(t, out.Bytes(), false).frames[1:] {
			m[frameName(f.title)] = f.fill
		}
		return m
	}
	// A name has the same colour in every graph.
	a := colors(sampleStacks, export.PaletteHot)
	b := colors([]export.Stack{st("other;lex;parse", 3), st("zzz;main", 1)}, export.PaletteHot)
	for _, name := range []string{"lex", "parse", "main", "other"} {
		if a[name] != b[name] {
			t.Errorf("%s is %s in one graph and %s in another", name, a[name], b[name])
		}
	}
	// Hot is red to yellow: red dominant, little blue. Mem is green, IO blue.
	for name, fill := range a {
		r, g, b := parseRGB(t, fill)
		if r < g || r < b || b > 80 {
			t.Errorf("hot %s is %s", name, fill)
		}
	}
	for name, fill := range colors(sampleStacks, export.PaletteMem) {
		if r, g, b := parseRGB(t, fill); g < r || g < b {
			t.Errorf("mem %s is %s", name, fill)
		}
	}
	for name, fill := range colors(sampleStacks, export.PaletteIO) {
		if r, g, b := parseRGB(t, fill); b < r || b < g {
			t.Errorf("io %s is %s", name, fill)
		}
	}
	java := colors([]export.Stack{
		st("java;Interpreter;java/lang/Thread:::run;JavaCalls::call;write_[k]", 1),
		st("java;Lorg/x/Y;foo_[j];bar_[i]", 1),
	}, export.PaletteJava)
	for name, family := range map[string]string{
		"java/lang/Thread:::run": "green", "Lorg/x/Y": "green", "foo": "green", // foo_[j]
		"bar": "aqua", "write": "orange", // bar_[i], write_[k]
		"JavaCalls::call": "yellow", "Interpreter": "red",
	} {
		if got := colorFamily(parseRGB(t, java[name])); got != family {
			t.Errorf("java %s is %s (%s), want %s", name, java[name], got, family)
		}
	}
}

// colorFamily names the hue of an rgb colour coarsely.
func colorFamily(r, g, b int) string {
	mx, mn := max(r, g, b), min(r, g, b)
	if mx == mn {
		return "grey"
	}
	var h float64
	switch mx {
	case r:
		h = math.Mod(float64(g-b)/float64(mx-mn), 6) * 60
	case g:
		h = (float64(b-r)/float64(mx-mn) + 2) * 60
	default:
		h = (float64(r-g)/float64(mx-mn) + 4) * 60
	}
	if h < 0 {
		h += 360
	}
	switch {
	case h < 15 || h >= 345:
		return "red"
	case h < 45:
		return "orange"
	case h < 75:
		return "yellow"
	case h < 160:
		return "green"
	case h < 200:
		return "aqua"
	default:
		return "blue"
	}
}

var rgbRE = regexp.MustCompile(`^rgb\((\d+),(\d+),(\d+)\)$`)

func parseRGB(t *testing.T, fill string) (r, g, b int) {
	t.Helper()
	m := rgbRE.FindStringSubmatch(fill)
	if m == nil {
		t.Fatalf("fill %q is not rgb(r,g,b)", fill)
	}
	r, _ = strconv.Atoi(m[1])
	g, _ = strconv.Atoi(m[2])
	b, _ = strconv.Atoi(m[3])
	for _, c := range []int{r, g, b} {
		if c < 0 || c > 255 {
			t.Fatalf("fill %q is out of range", fill)
		}
	}
	return r, g, b
}

// TestWriteSVGAnnotations: titles and labels show names without their
// annotation, as flamegraph.pl does; search sees the same names.
func TestWriteSVGAnnotations(t *testing.T) {
	stacks := []export.Stack{st("app;read_[k]", 60), st("app;read", 20), st("app;f_[j];g_[x]", 20)}
	var out bytes.Buffer
	if err := export.WriteSVG(&out, stacks, export.SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	var titles, labels []string
	for _, f := range parseSVG(t, out.Bytes(), false).frames[2:] {
		titles = append(titles, f.title)
		labels = append(labels, f.label)
	}
	want := []string{
		"f (20 samples, 20.00%)",
		"g_[x] (20 samples, 20.00%)", // not an annotation
		"read (20 samples, 20.00%)",
		"read (60 samples, 60.00%)",
	}
	if !slices.Equal(titles, want) {
		t.Errorf("titles %q, want %q", titles, want)
	}
	if want := []string{"f", "g_[x]", "read", "read"}; !slices.Equal(labels, want) {
		t.Errorf("labels %q, want %q", labels, want)
	}
}

func TestWriteSVGEmpty(t *testing.T) {
	var out bytes.Buffer
	if err := export.WriteSVG(&out, []export.Stack{st("a;b", 0)}, export.SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	if doc := parseSVG(t, out.Bytes(), false); len(doc.frames) != 0 {
		t.Errorf("%d frames for no samples", len(doc.frames))
	}
	if !strings.Contains(out.String(), ">No samples<") {
		t.Error("an empty graph does not say so")
	}
}

func TestWriteSVGOptions(t *testing.T) {
	for name, o := range map[string]export.SVGOptions{
		"palette":    {Palette: "plaid"},
		"width":      {Width: 20},
		"minwidth":   {MinWidth: -1},
		"nan":        {MinWidth: math.NaN()},
		"count name": {CountName: "samples (x)"},
	} {
		err := export.WriteSVG(&bytes.Buffer{}, sampleStacks, o)
		if code := fleetscope.ErrorCode(err); code != fleetscope.EINVALID {
			t.Errorf("%s: error %v has code %s, want %s", name, err, code, fleetscope.EINVALID)
		}
	}
	var out bytes.Buffer
	if err := export.WriteSVG(&out, sampleStacks, export.SVGOptions{Width: 800, CountName: "bytes"}); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, out.Bytes(), false)
	if doc.width != 800 {
		t.Errorf("width %v, want 800", doc.width)
	}
	if !strings.HasSuffix(doc.frames[0].title, " bytes, 100%)") {
		t.Errorf("root title %q does not count bytes", doc.frames[0].title)
	}
	checkGeometry(t, doc, export.Total(sampleStacks), 800)
}

var diffStacks = []export.DiffStack{
	dst("app;main;grow", 10, 30),   // +20, the largest change
	dst("app;main;shrink", 30, 10), // -20
	dst("app;main;same", 20, 20),
	dst("app;main;small", 10, 15), // +5
	dst("app;main;gone", 5, 0),    // not in B: not drawn
	dst("app;main;new", 0, 5),     // +5
}

// diffFrames writes a differential SVG and returns its frames by path.
func diffFrames(t *testing.T, stacks []export.DiffStack, o export.SVGOptions) (*svgDoc, map[string]svgFrame) {
	t.Helper()
	var out bytes.Buffer
	if err := export.WriteDiffSVG(&out, stacks, o); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, out.Bytes(), o.Icicle)
	m := map[string]svgFrame{}
	for _, f := range doc.frames {
		m[strings.Join(f.path, ";")] = f
	}
	return doc, m
}

func TestWriteDiffSVG(t *testing.T) {
	doc, frames := diffFrames(t, diffStacks, export.SVGOptions{})
	if doc.ids["title"] != "Differential Flame Graph" {
		t.Errorf("title %q", doc.ids["title"])
	}
	// The shape is B's.
	var b []export.Stack
	for _, s := range diffStacks {
		b = append(b, export.Stack{Frames: s.Frames, Value: s.B})
	}
	got := map[string]uint64{}
	for _, f := range doc.frames[1:] {
		got[strings.Join(f.path, "\x00")] = f.val
	}
	if want := pathTotals(b); !mapsEqual(got, want) {
		t.Errorf("frames %v, want B's %v", got, want)
	}
	checkGeometry(t, doc, 80, 1200)
	if _, ok := frames["app;main;gone"]; ok {
		t.Error("a frame absent from B is drawn")
	}

	for path, want := range map[string]struct{ title, color string }{
		"":                {"all (80 samples, 100%; self 0.00%, total +6.25%)", "white"},
		"app;main":        {"main (80 samples, 100.00%; self 0.00%, total +6.25%)", "white"},
		"app;main;grow":   {"grow (30 samples, 37.50%; self +25.00%, total +25.00%)", "red"},
		"app;main;shrink": {"shrink (10 samples, 12.50%; self -25.00%, total -25.00%)", "blue"},
		"app;main;same":   {"same (20 samples, 25.00%; self 0.00%, total 0.00%)", "white"},
		"app;main;small":  {"small (15 samples, 18.75%; self +6.25%, total +6.25%)", "red"},
		"app;main;new":    {"new (5 samples, 6.25%; self +6.25%, total +6.25%)", "red"},
	} {
		f, ok := frames[path]
		if !ok {
			t.Errorf("no frame %q", path)
			continue
		}
		if f.title != want.title {
			t.Errorf("%q: title %q, want %q", path, f.title, want.title)
		}
		if got := diffHue(t, f.fill); got != want.color {
			t.Errorf("%q: fill %s is %s, want %s", path, f.fill, got, want.color)
		}
	}
	// Saturation grows with the change: +20 is deeper red than +5.
	_, gGrow, _ := parseRGB(t, frames["app;main;grow"].fill)
	_, gSmall, _ := parseRGB(t, frames["app;main;small"].fill)
	if gGrow >= gSmall {
		t.Errorf("grow %s is not deeper red than small %s", frames["app;main;grow"].fill, frames["app;main;small"].fill)
	}
	if frames["app;main;grow"].fill != "rgb(255,0,0)" || frames["app;main;shrink"].fill != "rgb(0,0,255)" {
		t.Errorf("the largest changes are %s and %s, want full red and full blue", frames["app;main;grow"].fill, frames["app;main;shrink"].fill)
	}
}

// diffHue names a differential fill: red (r dominant), blue (b dominant)
// or white.
func diffHue(t *testing.T, fill string) string {
	r, g, b := parseRGB(t, fill)
	switch {
	case r == 255 && g == 255 && b == 255:
		return "white"
	case r == 255 && g == b && g < 255:
		return "red"
	case b == 255 && r == g && r < 255:
		return "blue"
	}
	return fill
}

func TestWriteDiffSVGNegate(t *testing.T) {
	_, frames := diffFrames(t, diffStacks, export.SVGOptions{Negate: true})
	if got := diffHue(t, frames["app;main;grow"].fill); got != "blue" {
		t.Errorf("negated growth is %s, want blue", got)
	}
	if got := diffHue(t, frames["app;main;shrink"].fill); got != "red" {
		t.Errorf("negated shrinkage is %s, want red", got)
	}
	if want := "grow (30 samples, 37.50%; self -25.00%, total -25.00%)"; frames["app;main;grow"].title != want {
		t.Errorf("title %q, want %q", frames["app;main;grow"].title, want)
	}
}

// TestWriteDiffSVGNormalize: B is A recorded for twice as long. Raw, every
// frame grew; normalised, nothing changed.
func TestWriteDiffSVGNormalize(t *testing.T) {
	stacks := []export.DiffStack{dst("app;a", 10, 20), dst("app;b", 30, 60), dst("app;b;c", 7, 14)}
	_, raw := diffFrames(t, stacks, export.SVGOptions{})
	_, norm := diffFrames(t, stacks, export.SVGOptions{Normalize: true})
	for _, path := range []string{"app;a", "app;b", "app;b;c"} {
		if got := diffHue(t, raw[path].fill); got != "red" {
			t.Errorf("raw %s is %s, want red", path, got)
		}
		if got := diffHue(t, norm[path].fill); got != "white" {
			t.Errorf("normalised %s is %s (%s), want white", path, got, norm[path].title)
		}
	}
}

func TestWriteDiffSVGIcicle(t *testing.T) {
	doc, frames := diffFrames(t, diffStacks, export.SVGOptions{Icicle: true})
	if doc.ids["title"] != "Differential Icicle Graph" {
		t.Errorf("title %q", doc.ids["title"])
	}
	if frames[""].y >= frames["app;main;grow"].y {
		t.Errorf("icicle root at y %v below a leaf at y %v", frames[""].y, frames["app;main;grow"].y)
	}
}
