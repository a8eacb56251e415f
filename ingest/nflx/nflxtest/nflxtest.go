// Package nflxtest writes nflxprofile node trees for tests and
// benchmarks: a dictionary's stacks as the tree of nodes with parent
// links that nflxprofile's converters write.
package nflxtest

import (
	"google.golang.org/protobuf/proto"

	"github.com/fleetscope/fleetscope"
	nflxv1 "github.com/fleetscope/fleetscope/api/gen/nflxprofile/v1"
)

// Tree returns d's stacks as nflxprofile nodes, numbered from 1 in the
// order their paths are first met (a node's parent is 0 at the root), and
// each stack's leaf node. Kernel and JIT frames get the libtypes that mark
// them.
func Tree(d *fleetscope.Dict) (nodes map[uint32]*nflxv1.Profile_Node, leafOf []uint32) {
	type edge struct {
		parent uint32
		frame  fleetscope.FrameID
	}
	children := map[edge]uint32{}
	nodes = map[uint32]*nflxv1.Profile_Node{}
	leafOf = make([]uint32, d.NumStacks())
	for st := range d.NumStacks() {
		parent := uint32(0)
		for _, fr := range d.StackFrames(fleetscope.StackID(st)) {
			e := edge{parent, fr}
			id, ok := children[e]
			if !ok {
				id = uint32(len(nodes) + 1)
				children[e] = id
				frame := d.FrameAt(fr)
				libtype := ""
				switch {
				case frame.Kind&fleetscope.KindKernel != 0:
					libtype = "kernel"
				case frame.Kind&fleetscope.KindJIT != 0:
					libtype = "jit"
				}
				n := &nflxv1.Profile_Node{FunctionName: proto.String(frame.Name), Libtype: proto.String(libtype)}
				if parent != 0 {
					n.Parent = proto.Uint32(parent)
				}
				nodes[id] = n
			}
			parent = id
		}
		leafOf[st] = parent
	}
	return nodes, leafOf
}
