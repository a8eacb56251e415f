package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// TestFlamegraphExports: flamegraph --format svg|pprof|speedscope carry
// the folded flame graph's samples: google/pprof reads the pprof export
// and sums the same total, speedscope's weights sum to it, and the SVG is
// well-formed XML with a frame per stack's leaf.
func TestFlamegraphExports(t *testing.T) {
	path := plant(t, "--seed", "31", "--seconds", "5")
	for _, args := range [][]string{{}, {"--start", "1", "--end", "2.5"}, {"--function", "GC"}, {"--cpu", "2", "--period"}} {
		folded := local(t, append(append([]string{"flamegraph"}, args...), path)...)
		var total uint64
		leaves := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(folded), "\n") {
			i := strings.LastIndexByte(line, ' ')
			n, err := strconv.ParseUint(line[i+1:], 10, 64)
			if err != nil {
				t.Fatalf("%v: %q", args, line)
			}
			total += n
			frames := strings.Split(line[:i], ";")
			leaves[frames[len(frames)-1]] = true
		}
		if total == 0 {
			t.Fatalf("%v: empty flame graph; pick arguments that keep samples", args)
		}

		p, err := profile.Parse(strings.NewReader(local(t, append(append([]string{"flamegraph", "--format", "pprof"}, args...), path)...)))
		if err != nil {
			t.Fatalf("%v: google/pprof cannot read the pprof export: %v", args, err)
		}
		var sum int64
		for _, s := range p.Sample {
			sum += s.Value[0]
		}
		if uint64(sum) != total {
			t.Errorf("%v: pprof export sums %d, folded %d", args, sum, total)
		}

		var ss struct {
			Profiles []struct {
				Weights []float64 `json:"weights"`
			} `json:"profiles"`
		}
		if err := json.Unmarshal([]byte(local(t, append(append([]string{"flamegraph", "--format", "speedscope"}, args...), path)...)), &ss); err != nil || len(ss.Profiles) != 1 {
			t.Fatalf("%v: speedscope export: %v", args, err)
		}
		var w float64
		for _, x := range ss.Profiles[0].Weights {
			w += x
		}
		if uint64(w) != total {
			t.Errorf("%v: speedscope weights sum %v, folded %d", args, w, total)
		}

		svg := local(t, append(append([]string{"flamegraph", "--format", "svg"}, args...), path)...)
		d := xml.NewDecoder(strings.NewReader(svg))
		titles := map[string]bool{}
		inTitle := false
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%v: the SVG is not well-formed XML: %v", args, err)
			}
			switch tok := tok.(type) {
			case xml.StartElement:
				inTitle = tok.Name.Local == "title"
			case xml.CharData:
				if inTitle {
					title := string(bytes.TrimSpace(tok))
					titles[title[:max(strings.LastIndex(title, " ("), 0)]] = true
				}
			case xml.EndElement:
				inTitle = false
			}
		}
		for leaf := range leaves {
			// flamegraph.pl shows annotated frames without their _[k],
			// _[j], _[i] suffix (it colours by it).
			if i := strings.LastIndex(leaf, "_["); i > 0 && strings.HasSuffix(leaf, "]") {
				leaf = leaf[:i]
			}
			if !titles[leaf] {
				t.Errorf("%v: the SVG has no frame titled %q", args, leaf)
				break
			}
		}
	}
}
