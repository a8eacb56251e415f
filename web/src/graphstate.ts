// The state of a page's flame graph section (panels/graphview.ts), shared
// by the profile view (viewstate.ts) and the fleet view (fleetstate.ts):
// the search, the orientation, the zoomed frame and a comparison's
// normalization, and the rules for changing them and for what is said of
// a comparison. Pure, unit-tested.

import { normMode, rawTotalsOf } from "./flame/diff";
import { exactSearch, findPath, pathOf, type Layout } from "./flame/model";
import type { Orientation } from "./flame/view";

/** GraphState is the part of a page's state its flame graph section reads
 * and changes: ViewState and FleetState both have it. */
export interface GraphState {
  search: string;
  orient: Orientation;
  /** The zoomed frame's path ("" for the root). */
  frame: string;
  /** A comparison's baseline scaled to the other side's total (true), raw
   * counts (false), or automatic (null: scaled when the totals differ
   * more than twofold). */
  norm: boolean | null;
}

/** zoomOf is the node of layout l that frame names (0, the root, for "")
 * and the frame to keep: "" when l has no such frame (a new range or
 * filter lost it), so that the URL stops naming it. */
export function zoomOf(l: Layout, frame: string): { zoom: number; frame: string } {
  if (!frame) return { zoom: 0, frame: "" };
  const zoom = findPath(l, frame);
  return zoom < 0 ? { zoom: 0, frame: "" } : { zoom, frame };
}

/** frameAt is the frame to record when node i of layout l is zoomed to. */
export function frameAt(l: Layout, i: number): string {
  return i > 0 ? pathOf(l, i) : "";
}

/** pickFunction is the search a function's name picked in the top
 * functions asks for: that function exactly. */
export function pickFunction(name: string): string {
  return exactSearch(name);
}

/** downloadBase is a download's file name without its extension, from
 * the name of its folded stacks (viewstate's or fleetstate's foldedFilename). */
export function downloadBase(folded: string): string {
  return folded.replace(/\.folded$/, "");
}

/** DiffMode is what is said of the mode a comparison was drawn in. */
export interface DiffMode {
  mode: string;
  text: string;
  normalized: boolean;
}

/** diffMode says which mode a comparison was drawn in (norm: the one
 * chosen, null for automatic) and whether it is normalized. */
export function diffMode(norm: boolean | null, d: { normalized: boolean; totalA: bigint | number; totalB: bigint | number }): DiffMode {
  return { ...normMode(norm, d.normalized, ...rawTotalsOf(d)), normalized: d.normalized };
}
