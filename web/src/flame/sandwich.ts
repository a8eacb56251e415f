// The sandwich view's arithmetic (speedscope's and Pyroscope's "sandwich"):
// for one function, the callers that lead to it, merged and inverted (the
// function at the root, each caller one level further out), and the callees
// it leads to, merged (the function at the root). Both are computed from a
// flame graph's layout over its outermost occurrences of the function on
// each stack, so a recursive function counts once per sample, and both
// trees total the function's total samples (as the top-functions table
// counts them). Free of the DOM; unit-tested in sandwich.test.ts.

import type { FlatTree, Layout } from "./model";

/** Trie is a tree under construction: children by name. */
interface Trie {
  value: number;
  kids: Map<string, Trie>;
}

const trie = (): Trie => ({ value: 0, kids: new Map() });

function child(t: Trie, name: string): Trie {
  let c = t.kids.get(name);
  if (!c) t.kids.set(name, (c = trie()));
  return c;
}

/** flatten writes a trie as the server's flat tree: pre-order, children
 * sorted by name (bytewise, as the server sorts), root named root. */
function flatten(t: Trie, root: string): FlatTree {
  const names: string[] = [];
  const index = new Map<string, number>();
  const name: number[] = [];
  const value: number[] = [];
  const depth: number[] = [];
  const visit = (n: Trie, nm: string, d: number) => {
    let k = index.get(nm);
    if (k === undefined) {
      k = names.length;
      names.push(nm);
      index.set(nm, k);
    }
    name.push(k);
    value.push(n.value);
    depth.push(d);
    for (const c of [...n.kids.keys()].sort(bytewise)) visit(n.kids.get(c)!, c, d + 1);
  };
  visit(t, root, 0);
  return { names, name, value, depth };
}

function bytewise(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** treeOf merges stacks (outermost frame first) into a flat tree rooted
 * at "all". */
export function treeOf(stacks: [string[], number][]): FlatTree {
  const root = trie();
  for (const [frames, v] of stacks) {
    root.value += v;
    let t = root;
    for (const f of frames) {
      t = child(t, f);
      t.value += v;
    }
  }
  return flatten(root, "all");
}

export interface Sandwich {
  /** The function at the root, its callers below it, innermost first. */
  callers: FlatTree;
  /** The function at the root, what it calls above it. */
  callees: FlatTree;
  /** The function's total samples (each tree's root value). */
  total: number;
}

/** sandwich computes fn's callers and callees in layout l (null if fn is
 * not in it). The process-name frame at depth 1 counts as a caller. */
export function sandwich(l: Layout, fn: string): Sandwich | null {
  const callers = trie();
  const callees = trie();
  const path: number[] = []; // the nodes from depth 1 down to the current one
  let found = false;
  let i = 1;
  while (i < l.n) {
    const d = l.depth[i];
    path.length = d - 1;
    path.push(i);
    if (l.names[l.name[i]] !== fn) {
      i++;
      continue;
    }
    // An outermost occurrence: the path above it gives its callers, its
    // subtree its callees; nested occurrences stay inside that subtree.
    found = true;
    const v = l.value[i];
    callers.value += v;
    let t = callers;
    for (let k = path.length - 2; k >= 0; k--) {
      t = child(t, l.names[l.name[path[k]]]);
      t.value += v;
    }
    callees.value += v;
    const sub: Trie[] = [callees]; // sub[j]: the trie node at depth d + j
    for (let j = i + 1; j < l.end[i]; j++) {
      const rel = l.depth[j] - d;
      sub.length = rel;
      const c = child(sub[rel - 1], l.names[l.name[j]]);
      c.value += l.value[j];
      sub.push(c);
    }
    i = l.end[i]; // skip the subtree: occurrences in it are not outermost
  }
  if (!found) return null;
  return { callers: flatten(callers, fn), callees: flatten(callees, fn), total: callers.value };
}
