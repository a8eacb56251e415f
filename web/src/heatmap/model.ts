// The heatmap's arithmetic, free of the DOM: which time a cell covers, which
// cells a range covers, selections in time order, sums, the colour scale
// and the axis ticks. Times are integer nanoseconds relative to the
// profile's start second, exactly as the server counts them
// (query/heatmap: row = offset*rows/1e9; a row's offsets within a second
// are [ceil(r*1e9/rows), ceil((r+1)*1e9/rows))), so the flame graph of a
// selection totals exactly the selected cells.
//
// A column covers secondsPerColumn seconds (1 up to 1,000 s of profile;
// more for longer profiles, so there are at most 1,000 columns). A cell of
// a multi-second column sums the same slice of each of its seconds: it is
// not one time range. So in such a heatmap a selection is made of whole
// columns: selecting any cell of a column selects the column's seconds.
//
// A heatmap may also be a slice of the profile's: a share link's has only
// the columns its range touches, from column firstColumn on.

import { NS_PER_SEC } from "../format";
import type { GetFleetHeatmapResponse } from "../gen/fleetscope/v1/fleet_pb";

/** Heatmap holds counts[col][row] (row 0 at the bottom) as numbers; column
 * c covers the secondsPerColumn seconds from (firstColumn + c)·secondsPerColumn. */
export interface Heatmap {
  event: string;
  startSecond: number;
  secondsPerColumn: number;
  /** The column of the profile's whole heatmap that column 0 is (0 but
   * for a slice). */
  firstColumn: number;
  rows: number;
  columns: number[][];
  maxCount: number;
  total: number;
}

/** A half-open range [start, end) of relative nanoseconds. */
export interface Range {
  start: number;
  end: number;
}

/** HeatmapAnswer is a GetHeatmapResponse, from the generic decoder
 * (bigints) or heatmap/wire.ts (numbers). */
export interface HeatmapAnswer {
  event: string;
  startSecond: bigint | number;
  rows: number;
  columns: { counts: (bigint | number)[] }[];
  maxCount: bigint | number;
  total: bigint | number;
  secondsPerColumn: bigint | number;
}

/** heatmapOf reads a GetHeatmapResponse of a profile whose start second
 * is profileStartSecond (a slice starts later). A server older than
 * seconds_per_column sends 0: one second. */
export function heatmapOf(r: HeatmapAnswer, profileStartSecond: bigint | number): Heatmap {
  const spc = Math.max(Number(r.secondsPerColumn), 1);
  const offset = Number(r.startSecond) - Number(profileStartSecond);
  if (offset < 0 || offset % spc !== 0) throw new Error(`heatmap: starts at second ${r.startSecond}, ${offset} s into a profile of ${spc}-s columns`);
  return {
    event: r.event,
    startSecond: Number(r.startSecond),
    secondsPerColumn: spc,
    firstColumn: offset / spc,
    rows: r.rows,
    columns: r.columns.map(numbers),
    maxCount: Number(r.maxCount),
    total: Number(r.total),
  };
}

// numbers is a column's counts as numbers: heatmap/wire.ts's as they are
// (a page's first heatmap is drawn before its code warms up), the generic
// decoder's bigints converted.
function numbers(c: { counts: (bigint | number)[] }): number[] {
  return typeof c.counts[0] === "bigint" ? c.counts.map(Number) : (c.counts as number[]);
}

/** A GetFleetHeatmapResponse, as the generic decoder or heatmap/wire.ts's
 * decodeFleetHeatmap (numbers for int64s) reads it. */
type FleetHeatmapAnswer = Pick<GetFleetHeatmapResponse, "rows"> & {
  accounting?: { event: string };
  startSecond: bigint | number;
  secondsPerColumn: bigint | number;
  columns: { counts: (bigint | number)[] }[];
  maxCount: bigint | number;
  total: bigint | number;
};

/** fleetHeatmapOf reads a GetFleetHeatmapResponse: a heatmap in wall-clock
 * time whose start second is a unix second. */
export function fleetHeatmapOf(r: FleetHeatmapAnswer): Heatmap {
  return {
    event: r.accounting?.event ?? "",
    startSecond: Number(r.startSecond),
    secondsPerColumn: Math.max(Number(r.secondsPerColumn), 1),
    firstColumn: 0,
    rows: r.rows,
    columns: r.columns.map(numbers),
    maxCount: Number(r.maxCount),
    total: Number(r.total),
  };
}

/** Grid is the shape that maps cells to time. */
export interface Grid {
  rows: number;
  secondsPerColumn: number;
  firstColumn: number;
  cols: number;
}

export function gridOf(h: Pick<Heatmap, "rows" | "secondsPerColumn" | "firstColumn" | "columns">): Grid {
  return { rows: h.rows, secondsPerColumn: h.secondsPerColumn, firstColumn: h.firstColumn, cols: h.columns.length };
}

/** firstSecond is the relative second where column 0 starts. */
export function firstSecond(g: Pick<Grid, "secondsPerColumn" | "firstColumn">): number {
  return g.firstColumn * g.secondsPerColumn;
}

function ceilDiv(a: number, b: number): number {
  // a, b are non-negative integers below 2^53: exact.
  return Math.floor((a + b - 1) / b);
}

/** rowOf is the row of an offset within its second, as the server computes it. */
export function rowOf(offsetNs: number, rows: number): number {
  return Math.floor((offsetNs * rows) / NS_PER_SEC);
}

/** rowOffsets is the half-open range of offsets within a second that row covers. */
export function rowOffsets(row: number, rows: number): Range {
  return { start: ceilDiv(row * NS_PER_SEC, rows), end: ceilDiv((row + 1) * NS_PER_SEC, rows) };
}

/** cellRange is the half-open range of relative time that row covers in
 * second sec: the whole of a cell of a one-second column. */
export function cellRange(sec: number, row: number, rows: number): Range {
  const base = sec * NS_PER_SEC;
  const o = rowOffsets(row, rows);
  return { start: base + o.start, end: base + o.end };
}

/** columnRange is the seconds column col covers. */
export function columnRange(col: number, g: Pick<Grid, "secondsPerColumn" | "firstColumn">): Range {
  const start = (g.firstColumn + col) * g.secondsPerColumn;
  return { start: start * NS_PER_SEC, end: (start + g.secondsPerColumn) * NS_PER_SEC };
}

/** The time-order index of a cell: earlier cells have smaller indexes. (In
 * a multi-second column the order of rows is only the order of offsets.) */
export function cellIndex(col: number, row: number, rows: number): number {
  return col * rows + row;
}

export function cellOfIndex(idx: number, rows: number): { col: number; row: number } {
  return { col: Math.floor(idx / rows), row: idx % rows };
}

/** cellAt is the index of the cell holding relative time t (t within the
 * grid's seconds). */
export function cellAt(t: number, g: Omit<Grid, "cols">): number {
  const sec = Math.floor(t / NS_PER_SEC);
  return cellIndex(Math.floor(sec / g.secondsPerColumn) - g.firstColumn, rowOf(t - sec * NS_PER_SEC, g.rows), g.rows);
}

/** rangeOfCells is the range a selection from cell a to cell b (either
 * order) stands for. With one-second columns: from the start of the
 * earlier cell to the end of the later one (time order, as FlameScope
 * does). With multi-second columns: the whole seconds of the columns from
 * the earlier to the later, whatever the rows. */
export function rangeOfCells(a: number, b: number, g: Omit<Grid, "cols">): Range {
  const first = cellOfIndex(Math.min(a, b), g.rows);
  const last = cellOfIndex(Math.max(a, b), g.rows);
  if (g.secondsPerColumn > 1) return { start: columnRange(first.col, g).start, end: columnRange(last.col, g).end };
  return { start: cellRange(g.firstColumn + first.col, first.row, g.rows).start, end: cellRange(g.firstColumn + last.col, last.row, g.rows).end };
}

/** CellSpan is the cells a range touches, first and last inclusive, and
 * whether the range is exactly their union (so their sum is its total). In
 * a heatmap of multi-second columns the span is whole columns (first is a
 * column's bottom cell, last a column's top cell). */
export interface CellSpan {
  first: number;
  last: number;
  aligned: boolean;
}

/** cellsOfRange is the span of cells that intersect r; null if none (an
 * empty range or one outside the grid's seconds). */
export function cellsOfRange(r: Range, g: Grid): CellSpan | null {
  const start = Math.max(r.start, columnRange(0, g).start);
  const end = Math.min(r.end, columnRange(g.cols - 1, g).end);
  if (start >= end) return null;
  let first = cellAt(start, g);
  let last = cellAt(end - 1, g);
  if (g.secondsPerColumn > 1) {
    first = cellIndex(cellOfIndex(first, g.rows).col, 0, g.rows);
    last = cellIndex(cellOfIndex(last, g.rows).col, g.rows - 1, g.rows);
  }
  const cells = rangeOfCells(first, last, g);
  return { first, last, aligned: cells.start === r.start && cells.end === r.end };
}

/** sumCells adds the counts of cells first..last (time-order indexes). */
export function sumCells(h: Pick<Heatmap, "columns" | "rows">, first: number, last: number): number {
  let sum = 0;
  for (let i = first; i <= last; i++) {
    const { col, row } = cellOfIndex(i, h.rows);
    const c = h.columns[col];
    if (c) sum += c[row] ?? 0;
  }
  return sum;
}

/** extendSelection returns the span from the anchor cell to cell, whichever
 * comes first in time (shift-click). */
export function extendSelection(anchor: number, cell: number): { first: number; last: number } {
  return { first: Math.min(anchor, cell), last: Math.max(anchor, cell) };
}

/** moveCell moves a cursor cell by (dcol, drow), clamped to the grid. Rows
 * grow upwards (row 0 is the bottom of a column). */
export function moveCell(idx: number, dcol: number, drow: number, rows: number, cols: number): number {
  const { col, row } = cellOfIndex(idx, rows);
  const c = Math.min(Math.max(col + dcol, 0), cols - 1);
  const r = Math.min(Math.max(row + drow, 0), rows - 1);
  return cellIndex(c, r, rows);
}

// ---- colour ---------------------------------------------------------------

// Matplotlib's "inferno" (perceptually uniform, readable in grey), sampled
// at eleven points; the scale runs from its light end (few samples) to its
// dark end (many), so a heatmap on a light page reads like ink.
const INFERNO: [number, number, number][] = [
  [0x00, 0x00, 0x04],
  [0x16, 0x0b, 0x39],
  [0x42, 0x0a, 0x68],
  [0x6a, 0x17, 0x6e],
  [0x93, 0x26, 0x67],
  [0xbc, 0x37, 0x54],
  [0xdd, 0x51, 0x3a],
  [0xf3, 0x78, 0x19],
  [0xfc, 0xa5, 0x0a],
  [0xf6, 0xd7, 0x46],
  [0xfc, 0xff, 0xa4],
];

/** EMPTY is the colour of a cell with no samples. */
export const EMPTY: [number, number, number] = [0xff, 0xff, 0xff];

/** inferno samples the map at t in [0, 1]. */
export function inferno(t: number): [number, number, number] {
  const x = Math.min(Math.max(t, 0), 1) * (INFERNO.length - 1);
  const i = Math.min(Math.floor(x), INFERNO.length - 2);
  const f = x - i;
  const a = INFERNO[i];
  const b = INFERNO[i + 1];
  return [0, 1, 2].map((k) => Math.round(a[k] + (b[k] - a[k]) * f)) as [number, number, number];
}

// The part of the map used: from its pale end (t = 1) down to deep indigo
// (t = 0.1), leaving out the near-black end.
const LIGHT = 1.0;
const DARK = 0.1;

/** colourOf is the colour of a count on a linear scale from 1 to max; 0 is
 * EMPTY, so an empty cell never looks like a cell with a few samples. */
export function colourOf(count: number, max: number): [number, number, number] {
  if (count <= 0 || max <= 0) return EMPTY;
  const f = max <= 1 ? 1 : (count - 1) / (max - 1);
  return inferno(LIGHT - (LIGHT - DARK) * Math.min(f, 1));
}

/** colourLUT is colourOf for every count 0..max as packed RGBA bytes. */
export function colourLUT(max: number): Uint32Array {
  const lut = new Uint32Array(Math.max(max, 0) + 1);
  for (let c = 0; c <= max; c++) {
    const [r, g, b] = colourOf(c, max);
    lut[c] = (255 << 24) | (b << 16) | (g << 8) | r; // little-endian ImageData order
  }
  return lut;
}

/** legendGradient is a CSS gradient showing the scale from 1 (left) to max
 * (right). Its stops are the map's own sample points between LIGHT and
 * DARK, so the straight blends a browser draws between them are exactly
 * the colours colourOf gives: the bar at fraction f of its width is the
 * colour of count 1 + f·(max − 1). */
export function legendGradient(): string {
  const n = INFERNO.length - 1;
  const stops: string[] = [];
  for (let k = Math.round(LIGHT * n); k >= Math.round(DARK * n); k--) {
    const t = k / n;
    const [r, g, b] = inferno(t);
    const at = ((LIGHT - t) / (LIGHT - DARK)) * 100;
    stops.push(`rgb(${r},${g},${b}) ${Number(at.toFixed(4))}%`);
  }
  return `linear-gradient(to right, ${stops.join(", ")})`;
}

// ---- geometry ---------------------------------------------------------------

/** Columns are at least this wide: a longer profile scrolls sideways. */
export const MIN_CELL_WIDTH = 4;
/** Columns are at most this wide: enough for three columns (a 3-second
 * profile) to fill the widest plot, not so wide that one second is a bar
 * across the page. */
export const MAX_CELL_WIDTH = 480;

/** cellWidth is the width in whole pixels of each of cols columns sharing
 * a plot plotWidth pixels wide: they fill it, within the bounds above. */
export function cellWidth(plotWidth: number, cols: number): number {
  const fill = Math.floor(plotWidth / Math.max(cols, 1));
  return Math.min(Math.max(fill, MIN_CELL_WIDTH), MAX_CELL_WIDTH);
}

// ---- axes -----------------------------------------------------------------

/** secondTicks picks the seconds to label on the x axis of grid g: column
 * boundaries (multiples of secondsPerColumn) at a round step, at least
 * minGap pixels apart at cellWidth pixels per column. A tick at second s
 * sits (s − firstSecond(g)) / secondsPerColumn columns from the left. */
export function secondTicks(g: Omit<Grid, "rows">, cellWidth: number, minGap = 48): number[] {
  const spc = g.secondsPerColumn;
  const round = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];
  const wide = (s: number) => (s / spc) * cellWidth >= minGap;
  const step =
    round.find((s) => s % spc === 0 && wide(s)) ??
    spc * ([1, 2, 5, 10, 20, 50, 100, 200, 500, 1000].find((k) => wide(k * spc)) ?? 1000);
  const first = firstSecond(g);
  const out: number[] = [];
  for (let s = Math.ceil(first / step) * step; s <= first + g.cols * spc; s += step) out.push(s);
  return out;
}

/** msTicks picks the offsets within a second, in ms, to label on the y axis
 * for a plot height in pixels. */
export function msTicks(height: number, minGap = 28): number[] {
  const steps = [100, 200, 250, 500, 1000];
  const step = steps.find((s) => (s / 1000) * height >= minGap) ?? 1000;
  const out: number[] = [];
  for (let ms = 0; ms <= 1000; ms += step) out.push(ms);
  return out;
}

/** wallTicks picks the seconds to label on the x axis of grid g shown in
 * wall-clock time, column 0 of the whole heatmap starting at unix second
 * startSecond: round times in a zone offsetSeconds east of UTC (whole
 * minutes, hours, days), at least minGap pixels apart at cellWidth pixels
 * per column. They need not fall on column boundaries (a fleet window
 * starts at any second): a tick at relative second s sits
 * (s − firstSecond(g)) / secondsPerColumn columns from the left. */
export function wallTicks(g: Omit<Grid, "rows">, cellWidth: number, startSecond: number, offsetSeconds: number, minGap = 72): { seconds: number[]; step: number } {
  const spc = g.secondsPerColumn;
  const round = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];
  const step = round.find((s) => (s / spc) * cellWidth >= minGap) ?? 604800;
  const first = firstSecond(g);
  const last = first + g.cols * spc;
  const origin = startSecond + offsetSeconds; // local time of relative second 0
  const out: number[] = [];
  for (let s = Math.ceil((origin + first) / step) * step - origin; s <= last; s += step) out.push(s);
  return { seconds: out, step };
}
