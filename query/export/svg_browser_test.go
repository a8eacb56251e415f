package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope/query/export"
)

// browserHarness drives a flame graph in the browser the way a person
// would (clicks, the search prompt, Ctrl-F, hover) and writes what it saw
// as JSON into <text id="test-result">.
const browserHarness = `<script type="text/ecmascript"><![CDATA[
(function () {
	var out = {};
	try {
		var frames = document.getElementById("frames").children;
		var byTitle = function (prefix) {
			for (var i = 0; i < frames.length; i++) {
				if (frames[i].getElementsByTagName("title")[0].textContent.indexOf(prefix) === 0) return frames[i];
			}
			throw new Error("no frame " + prefix);
		};
		var state = function () {
			return Array.prototype.map.call(frames, function (g) {
				var r = g.getElementsByTagName("rect")[0];
				return {
					title: g.getElementsByTagName("title")[0].textContent,
					x: Number(r.getAttribute("x")), width: Number(r.getAttribute("width")),
					fill: r.getAttribute("fill"),
					hidden: g.classList.contains("off"), parent: g.classList.contains("ancestor"),
					label: g.getElementsByTagName("text")[0].textContent
				};
			});
		};
		var click = function (el) { el.dispatchEvent(new MouseEvent("click", {bubbles: true})); };
		var text = function (id) { return document.getElementById(id).textContent; };
		var visible = function (id) { return !document.getElementById(id).classList.contains("off"); };

		out.initial = state();
		out.unzoomShown = visible("unzoom");
		click(byTitle("b (").getElementsByTagName("rect")[0]);
		out.zoomed = state();
		out.unzoomShownZoomed = visible("unzoom");
		click(document.getElementById("unzoom"));
		out.unzoomed = state();
		click(byTitle("b (").getElementsByTagName("rect")[0]);
		click(byTitle("all (").getElementsByTagName("rect")[0]);
		out.rootClicked = state();

		window.prompt = function () { return "^c$"; };
		click(document.getElementById("search"));
		out.searched = state();
		out.matched = text("matched");
		out.searchButton = text("search");
		click(document.getElementById("search"));
		out.reset = state();
		out.matchedReset = text("matched");

		window.prompt = function () { return "^(a|b)$"; };
		window.dispatchEvent(new KeyboardEvent("keydown", {key: "f", ctrlKey: true, bubbles: true}));
		out.matchedNested = text("matched");
		window.dispatchEvent(new KeyboardEvent("keydown", {key: "Escape", bubbles: true}));
		out.matchedEscape = text("matched");

		byTitle("d (").getElementsByTagName("rect")[0].dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
		out.details = text("details");
	} catch (e) {
		out.error = String(e && e.stack || e);
	}
	var t = document.createElementNS("http://www.w3.org/2000/svg", "text");
	t.setAttribute("id", "test-result");
	t.textContent = JSON.stringify(out);
	document.documentElement.appendChild(t);
})();
]]></script>
`

type browserFrame struct {
	Title    string
	X, Width float64
	Fill     string
	Hidden   bool
	Parent   bool
	Label    string
}

type browserResult struct {
	Error                 string
	Initial, Zoomed       []browserFrame
	Unzoomed, RootClicked []browserFrame
	Searched, Reset       []browserFrame
	UnzoomShown           bool
	UnzoomShownZoomed     bool
	Matched, MatchedReset string
	MatchedNested         string
	MatchedEscape         string
	SearchButton          string
	Details               string
}

// TestSVGInBrowser opens a flame graph in headless Chromium and checks that
// its script zooms, unzooms, searches and shows details. Skipped without
// Chromium (failed when FLEETSCOPE_TEST_REQUIRE=1).
func TestSVGInBrowser(t *testing.T) {
	browser := findChromium()
	if browser == "" {
		requireOrSkip(t, "no chromium to run the SVG's script in")
	}
	t.Run("flame", func(t *testing.T) { testSVGInBrowser(t, browser, false) })
	t.Run("icicle", func(t *testing.T) { testSVGInBrowser(t, browser, true) })
}

func testSVGInBrowser(t *testing.T, browser string, icicle bool) {
	stacks := []export.Stack{
		st("app;a;b;c", 4), st("app;a;b;d", 2), st("app;a;e", 2), st("app;f", 2), st("other;c", 2),
	}
	var svg bytes.Buffer
	if err := export.WriteSVG(&svg, stacks, export.SVGOptions{Icicle: icicle}); err != nil {
		t.Fatal(err)
	}
	page := strings.Replace(svg.String(), "</svg>\n", browserHarness+"</svg>\n", 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "flame.svg")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", "file://"+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, stderr.String())
	}
	raw := elementText(t, dom, "test-result")
	var r browserResult
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("harness result %q: %v", raw, err)
	}
	if r.Error != "" {
		t.Fatalf("script error: %s", r.Error)
	}
	names := []string{"all", "app", "a", "b", "c", "d", "e", "f", "other", "c"}
	for _, s := range [][]browserFrame{r.Initial, r.Zoomed, r.Unzoomed, r.RootClicked, r.Searched, r.Reset} {
		if len(s) != len(names) {
			t.Fatalf("%d frames, want %d", len(s), len(names))
		}
	}

	// Zoomed into b (6 of 12 samples): ancestors full width and dimmed,
	// b's subtree stretched to the full width, everything else hidden.
	const inner, xpad = 1180.0, 10.0
	type want struct {
		x, width       float64
		hidden, parent bool
	}
	wantZoom := []want{
		{xpad, inner, false, true},                      // all
		{xpad, inner, false, true},                      // app
		{xpad, inner, false, true},                      // a
		{xpad, inner, false, false},                     // b
		{xpad, inner * 4 / 6, false, false},             // c
		{xpad + inner*4/6, inner * 2 / 6, false, false}, // d
		{0, 0, true, false},                             // e
		{0, 0, true, false},                             // f
		{0, 0, true, false},                             // other
		{0, 0, true, false},                             // other;c
	}
	for i, w := range wantZoom {
		f := r.Zoomed[i]
		if f.Hidden != w.hidden || f.Parent != w.parent {
			t.Errorf("zoomed %s: hidden %v parent %v, want %v %v", names[i], f.Hidden, f.Parent, w.hidden, w.parent)
		}
		if !w.hidden && (math.Abs(f.X-w.x) > 0.051 || math.Abs(f.Width-w.width) > 0.051) {
			t.Errorf("zoomed %s: x %v width %v, want %.1f %.1f", names[i], f.X, f.Width, w.x, w.width)
		}
	}
	if f := r.Zoomed[4]; f.Label != "c" {
		t.Errorf("zoomed c label %q", f.Label)
	}
	if r.UnzoomShown || !r.UnzoomShownZoomed {
		t.Errorf("Reset Zoom shown %v before zooming and %v after, want false, true", r.UnzoomShown, r.UnzoomShownZoomed)
	}
	// Reset Zoom and a click on the root restore the first drawing.
	for name, s := range map[string][]browserFrame{"Reset Zoom": r.Unzoomed, "root click": r.RootClicked} {
		for i := range s {
			if s[i] != r.Initial[i] {
				t.Errorf("after %s, %s is %+v, want %+v", name, names[i], s[i], r.Initial[i])
			}
		}
	}

	// Search ^c$: both c frames highlighted, 6 of 12 samples matched.
	for i, f := range r.Searched {
		if highlighted := f.Fill == "rgb(214,38,196)"; highlighted != (names[i] == "c") {
			t.Errorf("search ^c$: %s fill %s", names[i], f.Fill)
		}
	}
	if r.Matched != "Matched: 50.0%" || r.SearchButton != "Reset Search" {
		t.Errorf("search ^c$: %q, button %q", r.Matched, r.SearchButton)
	}
	for i := range r.Reset {
		if r.Reset[i].Fill != r.Initial[i].Fill {
			t.Errorf("after Reset Search, %s fill %s, want %s", names[i], r.Reset[i].Fill, r.Initial[i].Fill)
		}
	}
	if strings.TrimSpace(r.MatchedReset) != "" {
		t.Errorf("after Reset Search, matched %q", r.MatchedReset)
	}
	// Ctrl-F ^(a|b)$: b lies inside a, so 8 of 12 samples, not 14.
	if r.MatchedNested != "Matched: 66.7%" {
		t.Errorf("search ^(a|b)$: %q, want Matched: 66.7%%", r.MatchedNested)
	}
	if strings.TrimSpace(r.MatchedEscape) != "" {
		t.Errorf("after Esc, matched %q", r.MatchedEscape)
	}
	if r.Details != "d (2 samples, 16.67%)" {
		t.Errorf("hover details %q", r.Details)
	}
}

func findChromium() string {
	if p := os.Getenv("FLEETSCOPE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// elementText returns the text of the element with the given id in an XML
// document.
func elementText(t *testing.T, doc []byte, id string) string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	depth, in := 0, 0
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the browser's DOM is not XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			for _, a := range tok.Attr {
				if a.Name.Local == "id" && a.Value == id {
					in = depth
				}
			}
		case xml.CharData:
			if in > 0 {
				text.Write(tok)
			}
		case xml.EndElement:
			if depth == in {
				return text.String()
			}
			depth--
		}
	}
	t.Fatalf("no element %q in the browser's DOM:\n%s", id, doc)
	return ""
}
