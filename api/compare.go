package api

import (
	"bytes"
	"context"
	"strings"

	"connectrpc.com/connect"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/export"
)

type compareHandler struct{ q *query.Service }

// NewCompare serves CompareService (read scope).
func NewCompare(q *query.Service) fleetscopev1connect.CompareServiceHandler {
	return &compareHandler{q: q}
}

// diffSide reads one side of a comparison.
func diffSide(name string, m *fsv1.DiffSide) (query.DiffSide, error) {
	switch {
	case m.GetProfile() != nil:
		r := flameRequest(m.GetProfile())
		return query.DiffSide{Profile: &r}, nil
	case m.GetFleet() != nil:
		sel, err := selection(m.GetFleet())
		if err != nil {
			return query.DiffSide{}, err
		}
		return query.DiffSide{Fleet: &sel}, nil
	}
	return query.DiffSide{}, fleetscope.Errorf(fleetscope.EINVALID, "side %s: a profile or a fleet selection", name)
}

// GetDiffFlameGraph compares two selections stack by stack.
func (h *compareHandler) GetDiffFlameGraph(ctx context.Context, req *connect.Request[fsv1.GetDiffFlameGraphRequest]) (*connect.Response[fsv1.GetDiffFlameGraphResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	top := int(m.GetTop())
	if top == 0 {
		top = 20
	}
	if top < 0 || top > 1000 {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "top %d: between 1 and 1000 (0: 20)", m.GetTop())
	}
	a, err := diffSide("a", m.GetA())
	if err != nil {
		return nil, err
	}
	b, err := diffSide("b", m.GetB())
	if err != nil {
		return nil, err
	}
	d, err := h.q.Diff(ctx, p.TenantID, a, b)
	if err != nil {
		return nil, err
	}
	norm := m.GetNormalize()
	out := &fsv1.GetDiffFlameGraphResponse{TotalA: d.TotalA, TotalB: d.TotalB, Normalized: norm}
	format := m.GetFormat()
	// Every format is read off the merged tree: refuse it past the budget
	// before anything else is built.
	t := d.Tree(norm)
	if err := query.CheckSize("a comparison", len(t.Name)); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch format {
	case fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_UNSPECIFIED, fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED, fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_TREE:
	case fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_SVG:
		var buf bytes.Buffer
		if err := export.WriteDiffSVG(&buf, d.Stacks(), export.SVGOptions{Subtitle: "A " + d.EventA + ", B " + d.EventB, Normalize: norm}); err != nil {
			return nil, err
		}
		out.Export = buf.Bytes()
	default:
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "a differential flame graph is folded, tree or svg")
	}
	if format == fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_UNSPECIFIED || format == fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED {
		var b strings.Builder
		if err := export.WriteDiffFolded(&b, d.Stacks(), norm); err != nil {
			return nil, err
		}
		out.Folded = b.String()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if norm {
		out.TotalA = t.A[0]
	}
	if format == fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_UNSPECIFIED || format == fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_TREE {
		b := t.ShapeOfB() // what is drawn; the changes below are read off the whole tree
		out.Tree = &fsv1.DiffTree{Names: b.Names, Name: b.Name, ValueA: b.A, ValueB: b.B, Depth: b.Depth}
	}
	bySelf, byTotal := query.Changes(t, top)
	out.ChangesBySelf, out.ChangesByTotal = changesProto(bySelf), changesProto(byTotal)
	return connect.NewResponse(out), nil
}

func changesProto(fns []export.FunctionDiff) []*fsv1.FunctionChange {
	out := make([]*fsv1.FunctionChange, len(fns))
	for i, f := range fns {
		out[i] = &fsv1.FunctionChange{Name: f.Name, SelfA: f.SelfA, SelfB: f.SelfB, TotalA: f.TotalA, TotalB: f.TotalB}
	}
	return out
}
