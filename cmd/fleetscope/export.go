package main

import (
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/query/export"
)

// flameFormats are flamegraph's --format values.
var flameFormats = []string{"folded", "json", export.FormatSVG, export.FormatPprof, export.FormatSpeedscope}

// formatProto is what to ask the server for a --format.
func formatProto(format string) fsv1.FlameGraphFormat {
	return map[string]fsv1.FlameGraphFormat{
		"folded":                fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED_LINES, // the text without its repetition
		"json":                  fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_TREE,
		export.FormatSVG:        fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_SVG,
		export.FormatPprof:      fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_PPROF,
		export.FormatSpeedscope: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_SPEEDSCOPE,
	}[format]
}
