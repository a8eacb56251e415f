package flame

import (
	"cmp"
	"slices"
	"strings"
)

// Other names the node that stands for the children Truncate dropped.
const Other = "other"

// Merge returns the flame graph of several flame graphs' samples together:
// nodes on the same path of names merge and their values add; children
// stay sorted by name, under a root "all". One graph is returned as is.
func Merge(fs ...*Flat) *Flat {
	switch len(fs) {
	case 0:
		return &Flat{Names: []string{"all"}, Name: []uint32{0}, Value: []uint64{0}, Depth: []uint32{0}}
	case 1:
		return fs[0]
	}
	root := fs[0].Tree()
	for _, f := range fs[1:] {
		root = mergeNodes(root, f.Tree())
	}
	return flatOf(root)
}

// mergeNodes adds b into a (both with children sorted by name).
func mergeNodes(a, b *Node) *Node {
	out := &Node{Name: a.Name, Value: a.Value + b.Value, Children: make([]*Node, 0, max(len(a.Children), len(b.Children)))}
	i, j := 0, 0
	for i < len(a.Children) || j < len(b.Children) {
		switch {
		case j == len(b.Children) || i < len(a.Children) && a.Children[i].Name < b.Children[j].Name:
			out.Children = append(out.Children, a.Children[i])
			i++
		case i == len(a.Children) || b.Children[j].Name < a.Children[i].Name:
			out.Children = append(out.Children, b.Children[j])
			j++
		default:
			out.Children = append(out.Children, mergeNodes(a.Children[i], b.Children[j]))
			i, j = i+1, j+1
		}
	}
	return out
}

// flatOf flattens a tree in pre-order.
func flatOf(root *Node) *Flat {
	out := &Flat{}
	ids := map[string]uint32{}
	var walk func(n *Node, depth uint32)
	walk = func(n *Node, depth uint32) {
		id, ok := ids[n.Name]
		if !ok {
			id = uint32(len(out.Names))
			ids[n.Name] = id
			out.Names = append(out.Names, n.Name)
		}
		out.Name, out.Value, out.Depth = append(out.Name, id), append(out.Value, n.Value), append(out.Depth, depth)
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	walk(root, 0)
	return out
}

// Truncate returns f with at most maxNodes of its nodes besides the root:
// those with the largest values (on a tie the shallower, then the earlier
// in pre-order), so that a kept node's parent is kept too. Under each kept
// node some of whose children were dropped, one node named Other (in its
// place by name among the children) holds their value, so every kept node
// keeps its value and the total is unchanged; a child of such a node that
// is itself named Other is dropped into it too, so names stay unique among
// siblings. With maxNodes ≤ 0, or no more nodes than that, f is returned
// as is.
func (f *Flat) Truncate(maxNodes int) *Flat {
	n := len(f.Name)
	if maxNodes <= 0 || n-1 <= maxNodes {
		return f
	}
	order := make([]int, n-1)
	for i := range order {
		order[i] = i + 1
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(f.Value[b], f.Value[a]), cmp.Compare(f.Depth[a], f.Depth[b]), cmp.Compare(a, b))
	})
	keep := make([]bool, n)
	keep[0] = true
	for _, i := range order[:maxNodes] {
		keep[i] = true
	}
	parent := make([]int, n)
	path := []int{0}
	for i := 1; i < n; i++ {
		path = append(path[:f.Depth[i]], i)
		parent[i] = path[f.Depth[i]-1]
	}
	dropped := make([]uint64, n) // by kept node: its dropped children's values
	lost := make([]bool, n)      // kept nodes with a dropped child
	for i := 1; i < n; i++ {
		if !keep[i] && keep[parent[i]] {
			lost[parent[i]] = true
		}
	}
	for i := 1; i < n; i++ {
		if keep[i] && lost[parent[i]] && f.Names[f.Name[i]] == Other {
			for j := i; j < n && (j == i || f.Depth[j] > f.Depth[i]); j++ {
				keep[j] = false
			}
		}
	}
	kids := make([][]int, n) // kept children, in order
	for i := 1; i < n; i++ {
		switch p := parent[i]; {
		case keep[i]:
			kids[p] = append(kids[p], i)
		case keep[p]:
			dropped[p] += f.Value[i]
		}
	}
	out := &Flat{Names: f.Names}
	oi := slices.Index(f.Names, Other)
	if oi < 0 {
		oi = len(f.Names)
		out.Names = append(slices.Clip(f.Names), Other)
	}
	other := uint32(oi)
	var walk func(i int)
	walk = func(i int) {
		out.Name, out.Value, out.Depth = append(out.Name, f.Name[i]), append(out.Value, f.Value[i]), append(out.Depth, f.Depth[i])
		placed := dropped[i] == 0
		for _, c := range kids[i] {
			if !placed && strings.Compare(Other, f.Names[f.Name[c]]) < 0 {
				out.Name, out.Value, out.Depth = append(out.Name, other), append(out.Value, dropped[i]), append(out.Depth, f.Depth[i]+1)
				placed = true
			}
			walk(c)
		}
		if !placed {
			out.Name, out.Value, out.Depth = append(out.Name, other), append(out.Value, dropped[i]), append(out.Depth, f.Depth[i]+1)
		}
	}
	walk(0)
	return out
}
