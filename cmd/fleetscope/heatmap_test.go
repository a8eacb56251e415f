package main

import "testing"

func TestLegendMatchesShade(t *testing.T) {
	for m := int64(1); m < 200; m++ {
		for i := int64(1); i <= levels; i++ {
			lo, hi := (i-1)*m/levels+1, min(i*m/levels, m)
			if (i-1)*m%levels != 0 {
				lo++
			}
			if i*m%levels != 0 {
				hi = min(hi+1, m)
			}
			for c := int64(1); c <= m; c++ {
				in := c >= lo && c <= hi
				if in != (int64(shade(c, m)) == i) {
					t.Fatalf("m=%d i=%d c=%d lo=%d hi=%d shade=%d", m, i, c, lo, hi, shade(c, m))
				}
			}
		}
	}
}
