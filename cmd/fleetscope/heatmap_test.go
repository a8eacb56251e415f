package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope/query/heatmap"
)

// TestLegendMatchesShade: the legend says exactly which counts each
// character stands for.
func TestLegendMatchesShade(t *testing.T) {
	for m := int64(1); m < 200; m++ {
		for i := 1; i <= int(levels); i++ {
			lo, hi := shadeRange(i, m)
			for c := int64(1); c <= m; c++ {
				if in := c >= lo && c <= hi; in != (shade(c, m) == i) {
					t.Fatalf("max %d, level %d, count %d: legend says %d-%d, shade gives %d", m, i, c, lo, hi, shade(c, m))
				}
			}
		}
	}
}

// TestTerminalHeatmapLegend: the terminal heatmap ends with one legend
// line: the character ramp and the counts each character stands for, from
// 1 to the heatmap's maximum, and every character drawn is in it.
func TestTerminalHeatmapLegend(t *testing.T) {
	path := plant(t, "--seed", "47", "--seconds", "4")
	var h heatmap.Heatmap
	if err := json.Unmarshal([]byte(local(t, "heatmap", "--json", path)), &h); err != nil {
		t.Fatal(err)
	}
	out := strings.Split(strings.TrimRight(local(t, "heatmap", path), "\n"), "\n")
	legend := out[len(out)-1]
	if !strings.HasPrefix(legend, "samples per cell: ' ' 0  '.' 1") {
		t.Fatalf("last line %q: want the legend", legend)
	}
	covered := map[byte]bool{' ': true}
	next := int64(1)
	for _, part := range strings.Split(strings.TrimPrefix(legend, "samples per cell: ' ' 0  "), "  ") {
		var ch byte
		var lo, hi int64
		if n, _ := fmt.Sscanf(part, "'%c' %d-%d", &ch, &lo, &hi); n == 2 {
			hi = lo
		} else if n != 3 {
			t.Fatalf("legend entry %q", part)
		}
		if lo != next || hi < lo {
			t.Fatalf("legend %q: entry %q does not continue from %d", legend, part, next)
		}
		covered[ch], next = true, hi+1
	}
	if next != h.MaxCount+1 {
		t.Fatalf("legend %q ends at %d, the maximum is %d", legend, next-1, h.MaxCount)
	}
	for _, line := range out[1 : 1+h.Rows] {
		_, cells, _ := strings.Cut(line, "|")
		for i := range len(cells) {
			if !covered[cells[i]] {
				t.Fatalf("character %q drawn but not in the legend %q", cells[i], legend)
			}
		}
	}
}
