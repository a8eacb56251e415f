package export

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fleetscope/fleetscope"
)

// SVGOptions shape a flame graph SVG. The zero value is a flame graph of
// the default size and palette.
type SVGOptions struct {
	// Title is the heading; by default "Flame Graph" ("Icicle Graph",
	// "Differential Flame Graph", ...).
	Title string
	// Subtitle is an optional second heading, such as the time range.
	Subtitle string
	// Width is the image width in pixels; 0 means 1200.
	Width int
	// MinWidth is the width in pixels under which a frame is not drawn;
	// 0 means 0.1. An omitted frame's descendants are narrower still and
	// are omitted too, but nothing is lost from the totals: every drawn
	// frame keeps its full width and its title its exact count, omitted
	// descendants included. Zooming cannot reveal an omitted frame, and
	// search matches drawn frames only.
	MinWidth float64
	// Icicle draws the root at the top and stacks growing down, instead
	// of a flame graph's root at the bottom.
	Icicle bool
	// Palette colours the frames of a plain flame graph; "" means
	// PaletteHot. Differential graphs are coloured by change instead.
	Palette Palette
	// CountName names the values in frame titles; "" means "samples".
	// It may not hold parentheses.
	CountName string

	// Normalize scales A to B's total before comparing, as
	// `difffolded.pl -n` does (see Normalize). Differential graphs only.
	Normalize bool
	// Negate swaps the hues of a differential graph: red for shrinkage,
	// blue for growth. Use it with A and B swapped to draw A's shape
	// coloured by what will happen in B, as difffolded.pl suggests.
	Negate bool
}

// Layout constants, in pixels.
const (
	defaultWidth    = 1200
	defaultMinWidth = 0.1
	xPad            = 10  // left and right margin
	frameHeight     = 16  // one stack level, gap included
	fontSize        = 12  // frame labels and details
	titleSize       = 17  // the heading
	charWidth       = 7.1 // average Verdana 12px character width
	headerHeight    = 36  // above the frames: title, buttons
	subtitleHeight  = 24  // added for a subtitle
	footerHeight    = 34  // below the frames: details, matched
)

// matchFill colours the frames a search matches.
const matchFill = "rgb(214,38,196)"

//go:embed svg.js
var svgScript string

// WriteSVG writes the stacks as a self-contained interactive flame graph
// SVG in the manner of flamegraph.pl. Frames are merged from the root down
// and sorted by name at each level (x order has no meaning); each is a
// <g> holding a <title> "name (N samples, P%)", a <rect> and a <text>
// label cut to fit with ".." (names are shown without a trailing
// annotation such as _[k], as flamegraph.pl shows them). An embedded
// script, with no external resources, shows a frame's title on hover,
// zooms into a frame on click (its ancestors dimmed above or below it; a
// click on the root or on "Reset Zoom" undoes it), and searches frame
// names with a regular expression (the Search button, Ctrl-F or F3; Esc
// resets), highlighting matches and showing "Matched: X%", the share of
// all samples under a matching frame, nested matches counted once.
//
// A root frame "all" holds the total. Returns EINVALID for options out of
// range and for values that add up past a uint64.
func WriteSVG(w io.Writer, stacks []Stack, opts SVGOptions) error {
	o, err := opts.resolve(false)
	if err != nil {
		return err
	}
	if _, ok := checkedTotal(stacks, math.MaxUint64); !ok {
		return fleetscope.Errorf(fleetscope.EINVALID, "svg: the stacks' values add up to more than a uint64 holds")
	}
	g := newGraph()
	for _, s := range sortedStacks(stacks) {
		g.add(s.Frames, s.Value, 0)
	}
	return g.write(w, &o, false)
}

// WriteDiffSVG writes a differential flame graph, as flamegraph.pl draws
// difffolded.pl's output: the shape of B (frame widths are B's values; a
// frame absent from B is not drawn), each frame coloured by the change of
// its self samples (those where it is the leaf) from A to B: red where it
// grew, blue where it shrank, saturated in proportion to the change
// relative to the largest self change of any frame (drawn or not), white
// where nothing changed. Titles read
// "name (N samples, P%; self ±D%, total ±T%)": B's count and share, then
// the change of the frame's self and total samples as a share of B's
// total. With opts.Normalize, A is first scaled to B's total (see
// Normalize).
//
// Returns EINVALID for options out of range and for totals above what an
// int64 holds.
func WriteDiffSVG(w io.Writer, stacks []DiffStack, opts SVGOptions) error {
	o, err := opts.resolve(true)
	if err != nil {
		return err
	}
	if a, b, ok := checkedDiffTotals(stacks); !ok || a > math.MaxInt64 || b > math.MaxInt64 {
		return fleetscope.Errorf(fleetscope.EINVALID, "diff svg: the totals of A or B exceed an int64")
	}
	merged := mergeDiff(stacks)
	if opts.Normalize {
		normalizeMerged(merged)
	}
	g := newGraph()
	for _, s := range merged {
		g.add(s.Frames, s.B, s.A)
	}
	return g.write(w, &o, true)
}

// resolve returns the options with defaults filled in, or EINVALID.
func (o SVGOptions) resolve(diff bool) (SVGOptions, error) {
	if o.Width == 0 {
		o.Width = defaultWidth
	}
	if o.Width <= 2*xPad {
		return o, fleetscope.Errorf(fleetscope.EINVALID, "svg: width %d is too small (more than %d pixels)", o.Width, 2*xPad)
	}
	if o.MinWidth == 0 {
		o.MinWidth = defaultMinWidth
	}
	if o.MinWidth < 0 || math.IsNaN(o.MinWidth) || math.IsInf(o.MinWidth, 0) {
		return o, fleetscope.Errorf(fleetscope.EINVALID, "svg: minimum frame width %v is not a positive number of pixels", o.MinWidth)
	}
	if o.Palette == "" {
		o.Palette = PaletteHot
	}
	if !slices.Contains(Palettes, o.Palette) {
		return o, fleetscope.Errorf(fleetscope.EINVALID, "svg: palette %q is none of %q", o.Palette, Palettes)
	}
	if o.CountName == "" {
		o.CountName = "samples"
	}
	if strings.ContainsAny(o.CountName, "()") {
		return o, fleetscope.Errorf(fleetscope.EINVALID, "svg: count name %q holds a parenthesis", o.CountName)
	}
	if o.Title == "" {
		kind := "Flame Graph"
		if o.Icicle {
			kind = "Icicle Graph"
		}
		o.Title = kind
		if diff {
			o.Title = "Differential " + kind
		}
	}
	return o, nil
}

// frame is one merged frame of the graph: a node of the stack tree.
type frame struct {
	name  string
	depth int    // the root "all" is 0
	start uint64 // left edge, in values from the graph's left
	value uint64 // width: samples through this frame (B's for a diff)
	// Differential graphs only:
	valueA       uint64 // A's samples through this frame
	selfA, selfB uint64 // samples where the frame is the leaf
}

// graph merges stacks, added in sorted order, into frames in depth-first
// order: each frame follows its parent, siblings are sorted by name.
type graph struct {
	frames []frame
	path   []int    // indexes of the frames of the last stack, root first
	prev   []string // the last stack
}

func newGraph() *graph {
	return &graph{frames: []frame{{name: "all"}}, path: []int{0}}
}

// add adds a stack with its value b (the width) and, for a differential
// graph, its value a in the baseline. Stacks must come sorted by frames.
func (g *graph) add(frames []string, b, a uint64) {
	same := 0
	for same < len(frames) && same < len(g.prev) && frames[same] == g.prev[same] {
		same++
	}
	g.path = g.path[:same+1]
	offset := g.frames[0].value // the right edge so far
	for d := same; d < len(frames); d++ {
		g.path = append(g.path, len(g.frames))
		g.frames = append(g.frames, frame{name: frames[d], depth: d + 1, start: offset})
	}
	for _, i := range g.path {
		g.frames[i].value += b
		g.frames[i].valueA += a
	}
	leaf := &g.frames[g.path[len(g.path)-1]]
	leaf.selfB += b
	leaf.selfA += a
	g.prev = frames
}

// write draws the graph.
func (g *graph) write(w io.Writer, o *SVGOptions, diff bool) error {
	total := g.frames[0].value
	inner := float64(o.Width - 2*xPad)
	perValue := 0.0
	if total > 0 {
		perValue = inner / float64(total)
	}
	drawn := func(f *frame) bool {
		return f.value > 0 && float64(f.value)*perValue >= o.MinWidth
	}
	maxDepth := 0
	var maxDelta uint64 = 1
	for i := range g.frames {
		f := &g.frames[i]
		if drawn(f) {
			maxDepth = max(maxDepth, f.depth)
		}
		if diff {
			maxDelta = max(maxDelta, absDiff(f.selfB, f.selfA))
		}
	}
	top := headerHeight
	if o.Subtitle != "" {
		top += subtitleHeight
	}
	height := top + (maxDepth+1)*frameHeight + footerHeight

	bw := bufio.NewWriterSize(w, 64<<10)
	var b []byte
	b = svgHeader(b, o, height, top, total)
	bw.Write(b)

	colors := make(map[string]string)
	b = append(b[:0], "<g id=\"frames\">\n"...)
	for i := range g.frames {
		f := &g.frames[i]
		if !drawn(f) {
			continue
		}
		x := xPad + float64(f.start)*perValue
		wd := float64(f.value) * perValue
		y := top + (maxDepth-f.depth)*frameHeight
		if o.Icicle {
			y = top + f.depth*frameHeight
		}
		var fill string
		switch {
		case diff:
			fill = diffColor(o.sign()*signedDiff(f.selfB, f.selfA), maxDelta)
		case f.depth == 0:
			fill = rgb(200, 200, 200)
		default:
			if fill = colors[f.name]; fill == "" {
				fill = o.Palette.frameColor(f.name)
				colors[f.name] = fill
			}
		}

		b = append(b, `<g data-s="`...)
		b = strconv.AppendUint(b, f.start, 10)
		b = append(b, `" data-v="`...)
		b = strconv.AppendUint(b, f.value, 10)
		name := displayName(f.name)
		b = append(b, `"><title>`...)
		b = appendXML(b, name)
		b = append(b, " ("...)
		b = appendCount(b, f.value)
		b = append(b, ' ')
		b = appendXML(b, o.CountName)
		b = append(b, ", "...)
		if f.depth == 0 {
			b = append(b, "100%"...)
		} else {
			b = appendPercent(b, f.value, total)
		}
		if diff {
			b = append(b, "; self "...)
			b = appendSignedPercent(b, o.sign()*signedDiff(f.selfB, f.selfA), total)
			b = append(b, ", total "...)
			b = appendSignedPercent(b, o.sign()*signedDiff(f.value, f.valueA), total)
		}
		b = append(b, `)</title><rect x="`...)
		b = strconv.AppendFloat(b, x, 'f', 1, 64)
		b = append(b, `" y="`...)
		b = strconv.AppendInt(b, int64(y), 10)
		b = append(b, `" width="`...)
		b = strconv.AppendFloat(b, wd, 'f', 1, 64)
		b = append(b, `" height="`...)
		b = strconv.AppendInt(b, frameHeight-1, 10)
		b = append(b, `" fill="`...)
		b = append(b, fill...)
		b = append(b, `" rx="2"/><text x="`...)
		b = strconv.AppendFloat(b, x+3, 'f', 1, 64)
		b = append(b, `" y="`...)
		b = strconv.AppendInt(b, int64(y+11), 10)
		b = append(b, `">`...)
		b = appendXML(b, fitLabel(name, wd))
		b = append(b, "</text></g>\n"...)
		if len(b) > 32<<10 {
			bw.Write(b)
			b = b[:0]
		}
	}
	b = append(b, "</g>\n"...)
	b, err := svgScriptElement(b, o, total)
	if err != nil {
		return err
	}
	b = append(b, "</svg>\n"...)
	bw.Write(b)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write svg: %w", err)
	}
	return nil
}

// sign is -1 when the differential hues are negated, else 1.
func (o *SVGOptions) sign() int64 {
	if o.Negate {
		return -1
	}
	return 1
}

// svgHeader appends the document up to the frames: styles, background,
// headings, the buttons and the lines that the script fills.
func svgHeader(b []byte, o *SVGOptions, height, top int, total uint64) []byte {
	width := strconv.Itoa(o.Width)
	h := strconv.Itoa(height)
	b = append(b, `<?xml version="1.0" encoding="UTF-8" standalone="no"?>`+"\n"...)
	b = append(b, `<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="`+width+`" height="`+h+`" viewBox="0 0 `+width+` `+h+`">`+"\n"...)
	b = append(b, `<defs><linearGradient id="background" x1="0" y1="0" x2="0" y2="1">`+
		`<stop offset="5%" stop-color="#f6f6f2"/><stop offset="95%" stop-color="#efe8c4"/>`+
		"</linearGradient></defs>\n"...)
	b = append(b, "<style>\n"+
		"text { font-family: Verdana, sans-serif; font-size: "+strconv.Itoa(fontSize)+"px; fill: #000; }\n"+
		"#title { text-anchor: middle; font-size: "+strconv.Itoa(titleSize)+"px; }\n"+
		"#subtitle { text-anchor: middle; fill: #555; }\n"+
		"#search, #matched { text-anchor: end; }\n"+
		"#search, #unzoom { cursor: pointer; }\n"+
		"#search { opacity: 0.4; }\n"+
		"#search:hover, #search.on { opacity: 1; }\n"+
		"#frames > g { cursor: pointer; }\n"+
		"#frames > g:hover > rect { stroke: #000; stroke-width: 0.5; }\n"+
		"#frames text { pointer-events: none; }\n"+
		".off { display: none; }\n"+
		".ancestor { opacity: 0.45; }\n"+
		"</style>\n"...)
	b = append(b, `<rect x="0" y="0" width="`+width+`" height="`+h+`" fill="url(#background)"/>`+"\n"...)
	center := strconv.Itoa(o.Width / 2)
	b = append(b, `<text id="title" x="`+center+`" y="24">`...)
	b = appendXML(b, o.Title)
	b = append(b, "</text>\n"...)
	if o.Subtitle != "" {
		b = append(b, `<text id="subtitle" x="`+center+`" y="48">`...)
		b = appendXML(b, o.Subtitle)
		b = append(b, "</text>\n"...)
	}
	right := strconv.Itoa(o.Width - xPad)
	bottom := strconv.Itoa(height - footerHeight/2 + 4)
	b = append(b, `<text id="unzoom" class="off" x="`+strconv.Itoa(xPad)+`" y="24">Reset Zoom</text>`+"\n"...)
	b = append(b, `<text id="search" x="`+right+`" y="24">Search</text>`+"\n"...)
	b = append(b, `<text id="details" x="`+strconv.Itoa(xPad)+`" y="`+bottom+`"> </text>`+"\n"...)
	b = append(b, `<text id="matched" x="`+right+`" y="`+bottom+`"> </text>`+"\n"...)
	if total == 0 {
		b = append(b, `<text x="`+center+`" y="`+strconv.Itoa(top+12)+`" text-anchor="middle">No `...)
		b = appendXML(b, o.CountName)
		b = append(b, "</text>\n"...)
	}
	return b
}

// svgScriptElement appends the <script> element: the script's settings,
// then the script (svg.js).
func svgScriptElement(b []byte, o *SVGOptions, total uint64) ([]byte, error) {
	// json.Marshal escapes <, > and &, so nothing in it can end the CDATA
	// section.
	cfg, err := json.Marshal(map[string]any{
		"xpad":       xPad,
		"width":      o.Width - 2*xPad,
		"total":      total,
		"icicle":     o.Icicle,
		"charWidth":  charWidth,
		"matchFill":  matchFill,
		"minLabel":   3,
		"labelInset": 3,
	})
	if err != nil {
		return b, fmt.Errorf("svg settings: %w", err)
	}
	b = append(b, "<script type=\"text/ecmascript\"><![CDATA[\n"...)
	b = append(b, "var flameGraphSettings = "...)
	b = append(b, cfg...)
	b = append(b, ";\n"...)
	b = append(b, svgScript...)
	b = append(b, "]]></script>\n"...)
	return b, nil
}

// displayName returns a frame's name as titles and labels show it: without
// a trailing annotation _[k] (kernel), _[j] (JIT), _[i] (inlined) or _[w]
// (waker), as flamegraph.pl shows names. Colours still see the annotation.
func displayName(name string) string {
	if n := len(name); n >= 4 && name[n-4] == '_' && name[n-3] == '[' && name[n-1] == ']' && strings.IndexByte("kjiw", name[n-2]) >= 0 {
		return name[:n-4]
	}
	return name
}

// fitLabel returns name cut to fit a frame width wide: as many characters
// as fit with a 3-pixel inset on each side, the last two replaced by ".."
// when cut, or "" when fewer than three fit. svg.js fits labels the same
// way after a zoom.
func fitLabel(name string, width float64) string {
	fit := int(math.Floor((width - 6) / charWidth))
	if fit < 3 {
		return ""
	}
	if utf8.RuneCountInString(name) <= fit {
		return name
	}
	n := 0
	for i := range name {
		if n == fit-2 {
			return name[:i] + ".."
		}
		n++
	}
	return name
}

// appendXML appends s escaped for XML text and attribute values; bytes
// that are not UTF-8 and characters XML forbids become U+FFFD.
func appendXML(b []byte, s string) []byte {
	for _, r := range s {
		switch r {
		case '&':
			b = append(b, "&amp;"...)
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		case '"':
			b = append(b, "&quot;"...)
		default:
			if !isXMLChar(r) {
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, r)
		}
	}
	return b
}

// isXMLChar reports whether XML 1.0 allows r in a document.
func isXMLChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

// appendCount appends v with thousands separators: 1,234,567.
func appendCount(b []byte, v uint64) []byte {
	s := strconv.FormatUint(v, 10)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return b
}

// appendPercent appends 100·v/total with two decimals and "%".
func appendPercent(b []byte, v, total uint64) []byte {
	b = strconv.AppendFloat(b, 100*float64(v)/float64(total), 'f', 2, 64)
	return append(b, '%')
}

// appendSignedPercent appends 100·d/total with a sign and two decimals.
func appendSignedPercent(b []byte, d int64, total uint64) []byte {
	if total == 0 {
		total = 1
	}
	pct := 100 * float64(d) / float64(total)
	if d > 0 {
		b = append(b, '+')
	}
	b = strconv.AppendFloat(b, pct, 'f', 2, 64)
	return append(b, '%')
}

// signedDiff returns b − a; the caller has checked that both fit an int64.
func signedDiff(b, a uint64) int64 { return int64(b) - int64(a) }

func absDiff(b, a uint64) uint64 {
	if b > a {
		return b - a
	}
	return a - b
}
