// Differential flame graphs (Brendan Gregg's): the shape of B, each frame
// coloured by how its inclusive samples changed from the baseline A — red
// where it grew, blue where it shrank, white where it held, saturation by
// the change relative to the largest change in the graph. With normalize,
// A is first scaled to B's total (difffolded.pl -n). Free of the DOM;
// unit-tested in diff.test.ts.

import { layout, type Layout } from "./model";

/** DiffTree is the API's diff tree: B's shape, both sides' values. */
export interface DiffTree {
  names: string[];
  name: ArrayLike<number>;
  valueA: ArrayLike<number | bigint>;
  valueB: ArrayLike<number | bigint>;
  depth: ArrayLike<number>;
}

export interface DiffLayout {
  /** B's flame graph. */
  layout: Layout;
  /** A's value of each node, scaled when normalized. */
  a: Float64Array;
  /** Each node's colour. */
  colours: string[];
}

const EMPTY: DiffTree = { names: [], name: [], valueA: [], valueB: [], depth: [] };

/** diffLayout lays out B's shape and colours each node by B − A (no tree:
 * an empty graph). */
export function diffLayout(tree: DiffTree | undefined, normalize: boolean): DiffLayout {
  const t = tree ?? EMPTY;
  const n = t.valueB.length;
  const b = Float64Array.from({ length: n }, (_, i) => Number(t.valueB[i]));
  const a = Float64Array.from({ length: n }, (_, i) => Number(t.valueA[i]));
  if (normalize && n > 0 && a[0] > 0) {
    const scale = b[0] / a[0];
    for (let i = 0; i < n; i++) a[i] *= scale;
  }
  let max = 0;
  for (let i = 1; i < n; i++) max = Math.max(max, Math.abs(b[i] - a[i]));
  const colours = new Array<string>(n);
  for (let i = 0; i < n; i++) colours[i] = diffColour(b[i] - a[i], max);
  return { layout: layout({ names: t.names, name: t.name, value: b, depth: t.depth }), a, colours };
}

/** diffColour is flamegraph.pl's differential palette: a change of delta
 * samples against the largest change max. */
export function diffColour(delta: number, max: number): string {
  if (delta === 0 || max === 0) return "rgb(250,250,250)";
  const fade = Math.round(210 * (1 - Math.min(1, Math.abs(delta) / max)));
  return delta > 0 ? `rgb(255,${fade},${fade})` : `rgb(${fade},${fade},255)`;
}
