// Differential flame graphs (Brendan Gregg's): the shape of B, each frame
// coloured by how its inclusive samples changed from the baseline A — red
// where it grew, blue where it shrank, near-white where it held, the shade
// by the change relative to the largest change in the graph (a diverging
// palette, ColorBrewer's RdBu ends; each frame's label is black or white,
// whichever contrasts more: labelColour). With normalize, A is first
// scaled to B's total (difffolded.pl -n); by default a comparison is
// normalized when the two totals differ more than twofold (autoNormalize),
// since raw counts of 31 samples against 5,392 only say "B is smaller".
// Free of the DOM; unit-tested in diff.test.ts.

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

/** The palette's ends and middle: grew, held, shrank. */
const GREW: [number, number, number] = [178, 24, 43];
const HELD: [number, number, number] = [247, 247, 247];
const SHRANK: [number, number, number] = [33, 102, 172];

/** diffColour is a change of delta samples against the largest change max:
 * from HELD towards GREW (delta > 0) or SHRANK (delta < 0) by |delta|/max. */
export function diffColour(delta: number, max: number): string {
  if (delta === 0 || max === 0) return `rgb(${HELD.join(",")})`;
  const t = Math.min(1, Math.abs(delta) / max);
  const end = delta > 0 ? GREW : SHRANK;
  const c = HELD.map((v, k) => Math.round(v + (end[k] - v) * t));
  return `rgb(${c.join(",")})`;
}

/** The factor of two totals beyond which a comparison is normalized by
 * default. */
export const AUTO_NORMALIZE_RATIO = 2;

/** autoNormalize says whether a comparison of totals a and b is
 * normalized when the user has not chosen: when one is more than
 * AUTO_NORMALIZE_RATIO times the other (and both have samples). */
export function autoNormalize(a: number, b: number): boolean {
  if (a <= 0 || b <= 0) return false;
  return Math.max(a, b) / Math.min(a, b) > AUTO_NORMALIZE_RATIO;
}

/** normMode says which mode a comparison is drawn in and why: norm is the
 * user's choice (null: automatic), normalized what the answer is, totalA
 * and totalB the raw totals (rawTotalsOf). */
export function normMode(norm: boolean | null, normalized: boolean, totalA: number, totalB: number): { mode: string; text: string } {
  if (norm === true) return { mode: "normalized", text: "Normalized (chosen): A scaled to B's total" };
  const ratio = totalA > 0 && totalB > 0 ? Math.max(totalA, totalB) / Math.min(totalA, totalB) : 0;
  const apart = ratio > 0 ? `totals ${ratio >= 10 ? Math.round(ratio) : ratio.toFixed(1)}× apart` : "a side has no samples";
  if (norm === null) {
    return normalized
      ? { mode: "auto-normalized", text: `Normalized (automatic: ${apart}): A scaled to B's total` }
      : { mode: "auto-raw", text: `Raw counts (automatic: ${apart}, within ${AUTO_NORMALIZE_RATIO}×)` };
  }
  return { mode: "raw", text: `Raw counts (chosen; ${apart})` };
}

/** luminance is WCAG's relative luminance of an sRGB colour. */
export function luminance(rgb: readonly number[]): number {
  const lin = rgb.map((v) => {
    const c = v / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
}

/** contrast is WCAG's contrast ratio of two colours. */
export function contrast(a: readonly number[], b: readonly number[]): number {
  const [x, y] = [luminance(a), luminance(b)];
  return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
}

/** parseRGB reads "rgb(r,g,b)" or "#rrggbb". */
export function parseRGB(s: string): [number, number, number] {
  const m = /rgba?\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)/.exec(s);
  if (m) return [Number(m[1]), Number(m[2]), Number(m[3])];
  const x = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(s);
  return x ? [parseInt(x[1], 16), parseInt(x[2], 16), parseInt(x[3], 16)] : [255, 255, 255];
}

/** labelColour is the label colour for a frame filled with fill: black or
 * white, whichever contrasts more (at least 4.58:1 with any fill, above
 * WCAG AA's 4.5:1). */
export function labelColour(fill: string): string {
  const c = parseRGB(fill);
  return contrast(c, [0, 0, 0]) >= contrast(c, [255, 255, 255]) ? "#000000" : "#ffffff";
}

/** The raw totals of answers askDiff normalized (a normalized answer's
 * A total is scaled to B's). */
const rawTotals = new WeakMap<object, [number, number]>();

/** askDiff asks for a comparison in mode norm (null: automatic): then in
 * raw counts first, and again normalized when the totals differ more than
 * AUTO_NORMALIZE_RATIO times (rawTotalsOf keeps the raw totals). */
export async function askDiff<T extends { totalA: bigint | number; totalB: bigint | number }>(norm: boolean | null, ask: (normalize: boolean) => Promise<T>): Promise<T> {
  if (norm !== null) return ask(norm);
  const raw = await ask(false);
  const [a, b] = [Number(raw.totalA), Number(raw.totalB)];
  if (!autoNormalize(a, b)) return raw;
  const d = await ask(true);
  rawTotals.set(d, [a, b]);
  return d;
}

/** rawTotalsOf is the raw totals of an answer askDiff normalized, else its own. */
export function rawTotalsOf(d: { totalA: bigint | number; totalB: bigint | number }): [number, number] {
  return rawTotals.get(d) ?? [Number(d.totalA), Number(d.totalB)];
}
