package main

import "testing"

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
