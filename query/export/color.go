package export

import (
	"hash/fnv"
	"math"
	"strconv"
	"strings"
)

// Palette chooses the colours of a flame graph's frames. Every palette
// picks a frame's colour from a hash of its name, so a function has the
// same colour in every graph and in every run.
type Palette string

// The palettes.
const (
	// PaletteHot is the classic flame graph: reds, oranges and yellows.
	PaletteHot Palette = "hot"
	// PaletteMem is greens, for memory profiles.
	PaletteMem Palette = "mem"
	// PaletteIO is blues, for I/O and off-CPU profiles.
	PaletteIO Palette = "io"
	// PaletteJava tells code kinds apart by name and annotation: JIT
	// compiled (a "_[j]" suffix, or a Java-looking name) green, inlined
	// ("_[i]") aqua, kernel ("_[k]") orange, C++ ("::") yellow, anything
	// else red.
	PaletteJava Palette = "java"
)

// Palettes lists the palettes, for command lines and forms.
var Palettes = []Palette{PaletteHot, PaletteMem, PaletteIO, PaletteJava}

// hues are the colour families: a hue range in degrees, a saturation and a
// lightness range; the name's hash picks a point in the ranges.
type hues struct {
	h0, h1 float64
	s      float64
	l0, l1 float64
}

var (
	hotHues    = hues{h0: 0, h1: 48, s: 0.88, l0: 0.50, l1: 0.62}
	memHues    = hues{h0: 100, h1: 170, s: 0.60, l0: 0.42, l1: 0.58}
	ioHues     = hues{h0: 205, h1: 245, s: 0.65, l0: 0.55, l1: 0.70}
	jitHues    = hues{h0: 90, h1: 130, s: 0.60, l0: 0.45, l1: 0.58}
	inlineHues = hues{h0: 170, h1: 190, s: 0.55, l0: 0.48, l1: 0.60}
	kernelHues = hues{h0: 24, h1: 36, s: 0.95, l0: 0.50, l1: 0.60}
	cppHues    = hues{h0: 50, h1: 60, s: 0.70, l0: 0.45, l1: 0.58}
	systemHues = hues{h0: 0, h1: 10, s: 0.75, l0: 0.55, l1: 0.68}
)

// frameColor returns the colour of a frame named name as "rgb(r,g,b)".
func (p Palette) frameColor(name string) string {
	var hs hues
	switch p {
	case PaletteMem:
		hs = memHues
	case PaletteIO:
		hs = ioHues
	case PaletteJava:
		hs = javaHues(name)
	default:
		hs = hotHues
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	sum := h.Sum64()
	v1 := float64(sum&0xffff) / 0xffff
	v2 := float64(sum>>16&0xffff) / 0xffff
	r, g, b := hsl(hs.h0+v1*(hs.h1-hs.h0), hs.s, hs.l0+v2*(hs.l1-hs.l0))
	return rgb(r, g, b)
}

// javaPackages are the package prefixes of names that look like Java.
var javaPackages = []string{"java/", "javax/", "jdk/", "sun/", "org/", "com/", "io/", "net/"}

func javaHues(name string) hues {
	switch {
	case strings.HasSuffix(name, "_[j]"):
		return jitHues
	case strings.HasSuffix(name, "_[i]"):
		return inlineHues
	case strings.HasSuffix(name, "_[k]"):
		return kernelHues
	case strings.Contains(name, ":::"), // perf-map-agent's Java method separator
		hasAnyPrefix(strings.TrimPrefix(name, "L"), javaPackages):
		return jitHues
	case strings.Contains(name, "::"):
		return cppHues
	}
	return systemHues
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// hsl converts a colour from hue (degrees), saturation and lightness (0-1)
// to 8-bit red, green and blue.
func hsl(h, s, l float64) (r, g, b int) {
	c := (1 - math.Abs(2*l-1)) * s
	hp := math.Mod(h, 360) / 60
	x := c * (1 - math.Abs(math.Mod(hp, 2)-1))
	var r1, g1, b1 float64
	switch {
	case hp < 1:
		r1, g1 = c, x
	case hp < 2:
		r1, g1 = x, c
	case hp < 3:
		g1, b1 = c, x
	case hp < 4:
		g1, b1 = x, c
	case hp < 5:
		r1, b1 = x, c
	default:
		r1, b1 = c, x
	}
	m := l - c/2
	to8 := func(v float64) int { return int(math.Round((v + m) * 255)) }
	return to8(r1), to8(g1), to8(b1)
}

// diffColor returns the colour of a frame whose value changed by delta in
// a comparison whose largest change is maxDelta (> 0): red for growth, blue
// for shrinkage, more saturated the larger the change, white for none.
// Even the smallest change is tinted (channels at most 215), so a changed
// frame never looks unchanged.
func diffColor(delta int64, maxDelta uint64) string {
	if delta == 0 {
		return rgb(255, 255, 255)
	}
	mag := uint64(delta)
	if delta < 0 {
		mag = uint64(-delta)
	}
	c := int(215 * (1 - float64(mag)/float64(maxDelta)))
	if delta > 0 {
		return rgb(255, c, c)
	}
	return rgb(c, c, 255)
}

func rgb(r, g, b int) string {
	buf := make([]byte, 0, len("rgb(255,255,255)"))
	buf = append(buf, "rgb("...)
	buf = strconv.AppendInt(buf, int64(r), 10)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, int64(g), 10)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, int64(b), 10)
	return string(append(buf, ')'))
}
