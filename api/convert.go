package api

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/query/flame"
	"github.com/fleetscope/fleetscope/query/heatmap"
)

// ts converts a time, zero to nil.
func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func profileProto(p *fleetscope.ProfileInfo) *fsv1.Profile {
	out := &fsv1.Profile{
		Id: p.ID, App: p.App, Host: p.Host, Labels: p.Labels, Format: p.Format,
		Samples: p.Samples, Timed: p.Timed, StartSecond: p.StartSecond, DurationNanos: p.DurationNanos,
		StartTime: timestamppb.New(p.StartTime), EndTime: timestamppb.New(p.EndTime), TimeSource: p.TimeSource,
		SizeBytes: p.SizeBytes, Sha256: p.SHA256, CreatedAt: timestamppb.New(p.CreatedAt), Meta: p.Meta,
		SamplesInRawFile: p.Cold,
	}
	for _, e := range p.Events {
		out.Events = append(out.Events, &fsv1.Event{Name: e.Name, Samples: e.Samples})
	}
	if p.DefaultEvent < len(p.Events) {
		out.DefaultEvent = p.Events[p.DefaultEvent].Name
	}
	return out
}

func heatmapProto(h *heatmap.Heatmap) *fsv1.GetHeatmapResponse {
	out := &fsv1.GetHeatmapResponse{Event: h.Event, StartSecond: h.StartSecond, Rows: int32(h.Rows), MaxCount: h.MaxCount,
		Total: h.Total, SecondsPerColumn: h.SecondsPerColumn, Columns: make([]*fsv1.Column, len(h.Columns))}
	for i, col := range h.Columns {
		out.Columns[i] = &fsv1.Column{Counts: col}
	}
	return out
}

// LinesProto and Lines convert folded lines to and from the wire (the
// columns are shared, not copied).
func LinesProto(ls *flame.Lines) *fsv1.FoldedLines {
	return &fsv1.FoldedLines{Names: ls.Names, Shared: ls.Shared, Added: ls.Added, Frame: ls.Frame, Value: ls.Value}
}

func Lines(l *fsv1.FoldedLines) *flame.Lines {
	return &flame.Lines{Names: l.GetNames(), Shared: l.GetShared(), Added: l.GetAdded(), Frame: l.GetFrame(), Value: l.GetValue()}
}
