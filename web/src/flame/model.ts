// The flame graph's arithmetic, free of the DOM. The server sends the tree
// flat, in depth-first pre-order with children sorted by name
// (FlameTree{names, name, value, depth}); layout() turns it into typed
// arrays from which drawing, hit testing, search and the top-functions
// table are each one linear pass at most, skipping whole subtrees that are
// too narrow to see. Nothing here allocates per node beyond those arrays,
// which is what keeps a 100k-node graph interactive.

/** FlatTree is the wire tree with numeric arrays. */
export interface FlatTree {
  names: string[];
  name: ArrayLike<number>;
  value: ArrayLike<number>;
  depth: ArrayLike<number>;
}

/** Layout is a tree ready to draw. Node i spans [x[i], x[i]+value[i]) in
 * samples from the left edge of the root; its subtree is the nodes
 * i..end[i]-1. */
export interface Layout {
  n: number;
  names: string[];
  name: Uint32Array;
  value: Float64Array;
  depth: Uint32Array;
  x: Float64Array;
  end: Int32Array;
  parent: Int32Array;
  self: Float64Array;
  maxDepth: number;
  total: number;
}

/** layout builds the arrays; it throws if the tree is not a valid pre-order
 * tree (a depth jumps by more than one, or node 0 is not the only root). */
export function layout(t: FlatTree): Layout {
  const n = t.value.length;
  if (t.name.length !== n || t.depth.length !== n) throw new Error("flame tree: arrays of different lengths");
  // Typed arrays (what the wire decoder makes) are taken as they are, not
  // copied; the layout never writes them.
  const name = t.name instanceof Uint32Array ? t.name : Uint32Array.from(t.name);
  const value = t.value instanceof Float64Array ? t.value : Float64Array.from(t.value);
  const depth = t.depth instanceof Uint32Array ? t.depth : Uint32Array.from(t.depth);
  const x = new Float64Array(n);
  const end = new Int32Array(n);
  const parent = new Int32Array(n);
  const self = new Float64Array(n);
  // The open nodes, root first (as deep as the tree, not as long). A
  // node's next child starts at x + value - self: self is its value less
  // the children seen so far.
  const stack: number[] = [];
  let sp = 0;
  let maxDepth = 0;
  for (let i = 0; i < n; i++) {
    const d = depth[i];
    if (name[i] >= t.names.length) throw new Error(`flame tree: node ${i} names ${name[i]} of ${t.names.length}`);
    self[i] = value[i];
    if (i === 0) {
      if (d !== 0) throw new Error("flame tree: node 0 is not at depth 0");
    } else if (d === 0) {
      throw new Error(`flame tree: a second root at node ${i}`);
    }
    while (sp > 0 && depth[stack[sp - 1]] >= d) end[stack[--sp]] = i;
    if (sp !== d) throw new Error(`flame tree: node ${i} at depth ${d} under depth ${sp - 1}`);
    const p = sp > 0 ? stack[sp - 1] : -1;
    parent[i] = p;
    if (p >= 0) {
      x[i] = x[p] + value[p] - self[p];
      self[p] -= value[i];
    }
    stack[sp++] = i;
    if (d > maxDepth) maxDepth = d;
  }
  while (sp > 0) end[stack[--sp]] = n;
  return { n, names: t.names, name, value, depth, x, end, parent, self, maxDepth, total: n > 0 ? value[0] : 0 };
}

/** ancestors lists the nodes from the root down to i, inclusive. */
export function ancestors(l: Layout, i: number): number[] {
  const out: number[] = [];
  for (let p = i; p >= 0; p = l.parent[p]) out.push(p);
  return out.reverse();
}

/** pathOf is node i's frames below the root joined by ";" (the folded
 * stack prefix): how a permalink names a zoomed frame. */
export function pathOf(l: Layout, i: number): string {
  return ancestors(l, i)
    .slice(1)
    .map((a) => l.names[l.name[a]])
    .join(";");
}

/** findPath is the node a path names, or -1. */
export function findPath(l: Layout, path: string): number {
  if (l.n === 0) return -1;
  if (path === "") return 0;
  let cur = 0;
  for (const frame of path.split(";")) {
    let found = -1;
    for (let c = cur + 1; c < l.end[cur]; c = l.end[c]) {
      if (l.names[l.name[c]] === frame) {
        found = c;
        break;
      }
    }
    if (found < 0) return -1;
    cur = found;
  }
  return cur;
}

/** Viewport maps a zoomed node to pixels: the zoomed node spans the width. */
export interface Viewport {
  zoom: number;
  width: number; // CSS pixels
}

/** visibleNodes writes into out the nodes to draw for a viewport: the
 * zoomed node's ancestors (full width) and the nodes of its subtree at
 * least minWidth pixels wide (a narrower node's subtree is skipped whole).
 * It returns the count and the deepest depth drawn. */
export function visibleNodes(l: Layout, v: Viewport, out: Int32Array, minWidth = 0.5): { count: number; maxDepth: number } {
  let count = 0;
  let maxDepth = 0;
  if (l.n === 0) return { count, maxDepth };
  for (let p = l.parent[v.zoom]; p >= 0; p = l.parent[p]) out[count++] = p;
  const zv = l.value[v.zoom];
  if (zv <= 0) return { count, maxDepth: l.depth[v.zoom] };
  const scale = v.width / zv;
  const end = l.end[v.zoom];
  for (let i = v.zoom; i < end; ) {
    if (l.value[i] * scale < minWidth) {
      i = l.end[i];
      continue;
    }
    out[count++] = i;
    if (l.depth[i] > maxDepth) maxDepth = l.depth[i];
    i++;
  }
  return { count, maxDepth: Math.max(maxDepth, l.depth[v.zoom]) };
}

/** nodeRect is where node i is drawn: left x and width in pixels, and its row. */
export function nodeRect(l: Layout, v: Viewport, i: number): { x: number; w: number; row: number } {
  const zv = l.value[v.zoom] || 1;
  const scale = v.width / zv;
  if (isAncestor(l, i, v.zoom) && i !== v.zoom) return { x: 0, w: v.width, row: l.depth[i] };
  return { x: (l.x[i] - l.x[v.zoom]) * scale, w: l.value[i] * scale, row: l.depth[i] };
}

/** isAncestor says whether a is b or one of b's ancestors. */
export function isAncestor(l: Layout, a: number, b: number): boolean {
  return a <= b && b < l.end[a];
}

/** hitTest is the node drawn at pixel px of row row, or -1. */
export function hitTest(l: Layout, v: Viewport, px: number, row: number): number {
  if (l.n === 0 || px < 0 || px >= v.width || row < 0) return -1;
  const zd = l.depth[v.zoom];
  if (row < zd) {
    let p = v.zoom;
    while (l.depth[p] > row) p = l.parent[p];
    return p;
  }
  const zv = l.value[v.zoom];
  if (zv <= 0) return -1;
  const scale = v.width / zv;
  const x0 = l.x[v.zoom];
  let cur = v.zoom;
  for (let d = zd + 1; d <= row; d++) {
    let found = -1;
    for (let c = cur + 1; c < l.end[cur]; c = l.end[c]) {
      const left = (l.x[c] - x0) * scale;
      if (px >= left && px < left + l.value[c] * scale) {
        found = c;
        break;
      }
    }
    if (found < 0) return -1;
    cur = found;
  }
  return cur;
}

// ---- search ---------------------------------------------------------------

/** compileSearch turns the search box's text into a name predicate: /re/
 * or /re/i is a regular expression, anything else a case-insensitive
 * substring. An empty query or a bad expression matches nothing. */
export function compileSearch(q: string): ((name: string) => boolean) | null {
  const s = q.trim();
  if (s === "") return null;
  const re = /^\/(.+)\/([imsu]*)$/.exec(s);
  if (re) {
    try {
      const r = new RegExp(re[1], re[2]);
      return (n) => r.test(n);
    } catch {
      return null;
    }
  }
  const low = s.toLowerCase();
  return (n) => n.toLowerCase().includes(low);
}

/** exactSearch is the search text (a /regex/) that matches name and no
 * other name. */
export function exactSearch(name: string): string {
  return `/^${name.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}$/`;
}

/** matchNames evaluates a predicate once per distinct name. */
export function matchNames(names: string[], pred: ((name: string) => boolean) | null): Uint8Array {
  const m = new Uint8Array(names.length);
  if (pred) for (let i = 0; i < names.length; i++) m[i] = pred(names[i]) ? 1 : 0;
  return m;
}

/** matchedTotal is the samples under root in matching frames, counting a
 * sample once however many matching frames its stack has (the topmost
 * match's subtree is taken whole), and the number of matching nodes. */
export function matchedTotal(l: Layout, matches: Uint8Array, root = 0): { samples: number; nodes: number } {
  let samples = 0;
  let nodes = 0;
  if (l.n === 0) return { samples, nodes };
  const end = l.end[root];
  for (let i = root; i < end; ) {
    if (matches[l.name[i]] && i !== 0) {
      samples += l.value[i];
      const e = l.end[i];
      for (let j = i; j < e; j++) if (matches[l.name[j]]) nodes++;
      i = e;
    } else i++;
  }
  return { samples, nodes };
}

// ---- top functions --------------------------------------------------------

/** FunctionStat is one function's samples: self (on top of the stack) and
 * total (anywhere in it, each sample counted once even under recursion). */
export interface FunctionStat {
  name: string;
  self: number;
  total: number;
}

/** topFunctions aggregates the subtree of root (default: the whole tree,
 * without the "all" root) by function name. */
export function topFunctions(l: Layout, root = 0): FunctionStat[] {
  const self = new Float64Array(l.names.length);
  const total = new Float64Array(l.names.length);
  const seen = new Uint8Array(l.names.length);
  const open = new Int32Array(l.names.length); // times a name is on the current path
  const stack: number[] = [];
  if (l.n === 0) return [];
  const end = l.end[root];
  for (let i = root; i < end; i++) {
    while (stack.length > 0 && l.depth[stack[stack.length - 1]] >= l.depth[i]) open[l.name[stack.pop()!]]--;
    const nm = l.name[i];
    if (i !== 0) {
      seen[nm] = 1;
      self[nm] += l.self[i];
      if (open[nm] === 0) total[nm] += l.value[i];
    }
    open[nm]++;
    stack.push(i);
  }
  const out: FunctionStat[] = [];
  for (let k = 0; k < l.names.length; k++) if (seen[k]) out.push({ name: l.names[k], self: self[k], total: total[k] });
  return out;
}

export type SortKey = "self" | "total" | "name";

/** sortFunctions orders stats by key, ties by name, descending for numbers. */
export function sortFunctions(stats: FunctionStat[], key: SortKey, asc: boolean): FunctionStat[] {
  const dir = asc ? 1 : -1;
  return stats.slice().sort((a, b) => {
    if (key !== "name" && a[key] !== b[key]) return (a[key] - b[key]) * dir;
    const byName = a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    return key === "name" ? byName * dir : byName;
  });
}

// ---- colour ---------------------------------------------------------------

/** hash32 is FNV-1a over a name's UTF-16 code units. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** frameColour is flamegraph.pl's "hot" palette, picked by a hash of the
 * name so a function keeps its colour across ranges and zooms. */
export function frameColour(name: string): string {
  const h = hash32(name);
  const v1 = (h & 0xff) / 255;
  const v2 = ((h >>> 8) & 0xff) / 255;
  const v3 = ((h >>> 16) & 0xff) / 255;
  const r = 205 + Math.round(50 * v3);
  const g = Math.round(230 * v1);
  const b = Math.round(55 * v2);
  return `rgb(${r},${g},${b})`;
}

/** dimColour is the muted colour of a frame that does not match a search. */
export function dimColour(name: string): string {
  const h = hash32(name);
  const v = 218 + ((h >>> 8) & 0x0f);
  return `rgb(${v},${v},${v - 4})`;
}

/** HIGHLIGHT is the colour of frames matching the search (flamegraph.pl's). */
export const HIGHLIGHT = "rgb(230,0,230)";
export const HIGHLIGHT_RGB: [number, number, number] = [230, 0, 230];

/** truncateLabel fits a label into maxChars characters with an ellipsis. */
export function truncateLabel(s: string, maxChars: number): string {
  if (maxChars <= 0) return "";
  if (s.length <= maxChars) return s;
  if (maxChars <= 2) return "";
  return s.slice(0, maxChars - 1) + "…";
}

// ---- synthetic trees (tests and the benchmark) -----------------------------

/** syntheticTree builds a pre-order tree of n nodes with a seeded random
 * shape: fan-out and depth like real CPU profiles (deep narrow chains with
 * bushy tops), names drawn from a vocabulary of vocab functions. */
export function syntheticTree(n: number, seed = 1, vocab = 5000): FlatTree & { value: Float64Array } {
  let s = seed >>> 0 || 1;
  const rnd = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
  const names = ["all"];
  for (let i = 1; i <= vocab; i++) names.push(`pkg${i % 97}.Func${i}(${"x".repeat(i % 13)})`);
  const name = new Uint32Array(n);
  const depth = new Uint32Array(n);
  const value = new Float64Array(n);
  const parent = new Int32Array(n).fill(-1);
  // Build the shape first: each new node attaches to the previous node
  // (going deeper) or to one of its ancestors (a sibling), which keeps
  // pre-order by construction.
  for (let i = 1; i < n; i++) {
    let p = i - 1;
    const r = rnd();
    if (depth[p] >= 120 || r < 0.35) {
      let up = 1 + Math.floor(rnd() * Math.min(depth[p], 6));
      while (up-- > 0 && parent[p] >= 0) p = parent[p];
      if (depth[p] >= 120) p = parent[p];
    }
    parent[i] = p;
    depth[i] = depth[p] + 1;
    name[i] = 1 + Math.floor(rnd() * vocab);
  }
  // Values: leaves get 1..20 samples; parents the sum of children plus self.
  for (let i = n - 1; i >= 0; i--) {
    if (value[i] === 0 || rnd() < 0.2) value[i] += 1 + Math.floor(rnd() * 20);
    if (i > 0) value[parent[i]] += value[i];
  }
  return { names, name, value, depth };
}

/** jsonTree is layout l as nested JSON, as `fleetscope flamegraph --format
 * json` writes it: {name, value, children}. */
export function jsonTree(l: Layout): unknown {
  type N = { name: string; value: number; children: N[] };
  const nodes: N[] = [];
  for (let i = 0; i < l.n; i++) {
    nodes.push({ name: l.names[l.name[i]], value: l.value[i], children: [] });
    if (l.parent[i] >= 0) nodes[l.parent[i]].children.push(nodes[i]);
  }
  return nodes[0] ?? { name: "all", value: 0, children: [] };
}
