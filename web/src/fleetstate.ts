// The fleet view's state: a fleet selection (app, hosts, label conditions,
// the window [from, to), event, idle), the rows per second, the selected
// range and the flame graph's view (zoomed frame, search, orientation);
// read from and written to the URL's query (the permalink), the rules for
// changing it (presets, the zoom stack, narrowing to a host), the column
// geometry the server will answer with, and the requests it implies. Pure:
// no DOM, no network (unit-tested in fleetstate.test.ts).
//
//   /fleet?app=checkout&host=web-1&label=env=prod&label=region!=eu
//         &from=1795000000&to=1795000030&zoom=1794996400-1795003600&event=cpu-clock&idle=1&rows=100
//         &start=1795000002.4&end=1795000002.48&frame=java;start_thread&search=GC&orient=flame
//         &fn=GC&xfn=Idle&cmp=host&chost=web-2&norm=1   (or cmp=labels&la=version=1&lb=version=2,
//                                                        or cmp=shift&shift=1d)
//
// fn and xfn filter the samples by function (as on the profile page); cmp
// compares, as a differential flame graph of the range, a host (chost)
// with the rest of the fleet, the profiles matching label condition la
// with those matching lb, or the range with the same range a day (shift=1d)
// or a week (shift=1w) earlier (the CLI's `diff --a-shift`); norm scales
// the baseline to the other's total
// (norm=1; norm=0: raw counts; absent: when the totals differ more than
// twofold).
//
// Times are absolute: unix seconds as exact decimals (up to nanoseconds,
// like the CLI's --from/--to), held as bigint nanoseconds (unix
// nanoseconds do not fit a double exactly). from/to is the window, start/end
// the selected range inside it; both half-open. zoom (repeated, outermost
// first) is the zoom stack: the windows zoomed in from, each holding the
// next and the window, so that zooming back out returns to them. The heatmap's own
// arithmetic (heatmap/model.ts) counts in nanoseconds relative to its
// start second, which fit a number: relRange and absRange convert.

import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Orientation } from "./flame/view";
import { FlameGraphFormat } from "./enums";
import type { GetDiffFlameGraphRequestSchema } from "./gen/fleetscope/v1/compare_pb";
import type { FleetSelectionSchema, GetFleetFlameGraphRequestSchema, GetFleetHeatmapRequestSchema, GetFleetHostsRequestSchema, GetFleetTimelineRequestSchema } from "./gen/fleetscope/v1/fleet_pb";
import type { SearchProfilesRequestSchema } from "./gen/fleetscope/v1/query_pb";
import { cellsOfRange, gridOf, sumCells, type Heatmap, type Range } from "./heatmap/model";
import type { WireAccounting } from "./heatmap/wire";
import { formatCount, formatDuration, formatWallRange } from "./format";
import { DEFAULT_ROWS, defaultView, MAX_ROWS, writeView, type ViewState } from "./viewstate";

export const NS = 1_000_000_000n;

/** One label condition: name=value, or name!=value (not). */
export interface LabelCond {
  name: string;
  value: string;
  not: boolean;
}

/** A half-open range [start, end) of unix nanoseconds. */
export interface AbsRange {
  start: bigint;
  end: bigint;
}

/** A window [from, to) of unix nanoseconds. */
export interface Window {
  from: bigint;
  to: bigint;
}

export interface FleetState {
  app: string;
  /** Any of these hosts; none: every host. */
  hosts: string[];
  /** All must hold. */
  labels: LabelCond[];
  /** The window [from, to), unix nanoseconds. */
  from: bigint;
  to: bigint;
  /** The zoom stack: the windows zoomed in from, outermost first; each
   * holds the next, the last holds [from, to). */
  zooms: Window[];
  /** "": the event most samples of the selection have. */
  event: string;
  idle: boolean;
  rows: number;
  /** The selected range inside the window, or null for the whole window. */
  range: AbsRange | null;
  frame: string;
  search: string;
  orient: Orientation;
  /** Samples with a frame matching fn (RE2), without one matching xfn. */
  fn: string;
  xfn: string;
  /** The comparison: none, a host against the rest, label against label,
   * the same range earlier. */
  cmp: FleetCompare;
  /** With cmp "shift": how much earlier the baseline is (a SHIFTS id). */
  shift: string;
  chost: string;
  la: string;
  lb: string;
  norm: boolean | null;
  /** Follow now: the window slides to end at the present second. */
  live: boolean;
}

export type FleetCompare = "" | "host" | "labels" | "shift";

/** The time shifts a window can be compared with: the same window a day or
 * a week earlier (ids as the CLI's `diff --a-shift` writes them). */
export const SHIFTS: { id: string; label: string; seconds: number }[] = [
  { id: "1d", label: "a day earlier", seconds: 86400 },
  { id: "1w", label: "a week earlier", seconds: 7 * 86400 },
];

/** shiftOf is the SHIFTS entry of id (the first, a day, when it is none). */
export function shiftOf(id: string): { id: string; label: string; seconds: number } {
  return SHIFTS.find((x) => x.id === id) ?? SHIFTS[0];
}

/** The longest window the server accepts: 31 days. */
export const MAX_WINDOW_SECONDS = 31 * 24 * 3600;
/** A column count the server keeps to (fleetscope.MaxColumns). */
export const MAX_COLUMNS = 1000;
/** The window a view without one gets: the last hour. */
export const DEFAULT_WINDOW_SECONDS = 3600;
/** The window a live view without one gets: the last 3 minutes (at the
 * heatmap's narrowest columns, 4 px, they fit a laptop's panel unscrolled). */
export const LIVE_WINDOW_SECONDS = 180;

export const WINDOW_PRESETS: { id: string; label: string; seconds: number }[] = [
  { id: "5m", label: "5 min", seconds: 300 },
  { id: "15m", label: "15 min", seconds: 900 },
  { id: "1h", label: "1 h", seconds: 3600 },
  { id: "6h", label: "6 h", seconds: 6 * 3600 },
  { id: "24h", label: "24 h", seconds: 24 * 3600 },
  { id: "7d", label: "7 d", seconds: 7 * 24 * 3600 },
  { id: "30d", label: "30 d", seconds: 30 * 24 * 3600 },
];

// ---- exact times ----------------------------------------------------------------

/** parseUnix parses unix seconds written as an exact decimal ("1795000012",
 * "1795000012.34", up to nine decimals) into bigint nanoseconds; null when
 * it is not one. */
export function parseUnix(s: string | null | undefined): bigint | null {
  if (s == null) return null;
  const m = /^(\d{1,12})(?:\.(\d{1,9}))?$/.exec(s.trim());
  if (!m) return null;
  return BigInt(m[1]) * NS + BigInt((m[2] ?? "").padEnd(9, "0"));
}

/** formatUnix writes bigint unix nanoseconds as the shortest exact decimal
 * number of seconds. */
export function formatUnix(ns: bigint): string {
  if (ns < 0n) throw new RangeError(`not a unix time: ${ns}`);
  const whole = ns / NS;
  const frac = ns % NS;
  if (frac === 0n) return String(whole);
  return `${whole}.${String(frac).padStart(9, "0").replace(/0+$/, "")}`;
}

/** floorSecond and ceilSecond round unix nanoseconds to whole seconds. */
export function floorSecond(ns: bigint): bigint {
  return (ns / NS) * NS;
}

export function ceilSecond(ns: bigint): bigint {
  return ((ns + NS - 1n) / NS) * NS;
}

/** timestampNanos reads a protobuf Timestamp as unix nanoseconds. */
export function timestampNanos(t: { seconds: bigint; nanos: number }): bigint {
  return t.seconds * NS + BigInt(t.nanos);
}

/** timestampOf writes unix nanoseconds (not negative) as a Timestamp. */
export function timestampOf(ns: bigint): { seconds: bigint; nanos: number } {
  return { seconds: ns / NS, nanos: Number(ns % NS) };
}

/** dateNanos is a Date's time as unix nanoseconds. */
export function dateNanos(d: Date): bigint {
  return BigInt(d.getTime()) * 1_000_000n;
}

// ---- labels ---------------------------------------------------------------------

/** parseLabel reads "name=value" or "name!=value"; null without a name. */
export function parseLabel(s: string): LabelCond | null {
  const m = /^(.+?)(!=|=)(.*)$/.exec(s);
  if (!m || m[1].trim() === "") return null;
  return { name: m[1], value: m[3], not: m[2] === "!=" };
}

export function formatLabel(l: LabelCond): string {
  return `${l.name}${l.not ? "!=" : "="}${l.value}`;
}

/** parseLabels reads a selection bar's labels: conditions separated by
 * white space or commas. It reports the first word that is not one. */
export function parseLabels(text: string): { labels: LabelCond[]; error?: string } {
  const labels: LabelCond[] = [];
  for (const w of text.split(/[\s,]+/).filter(Boolean)) {
    const l = parseLabel(w);
    if (!l) return { labels, error: `"${w}" is not a label condition: write name=value or name!=value` };
    labels.push(l);
  }
  return { labels };
}

/** parseHosts reads a selection bar's hosts: names separated by white space
 * or commas, each once. */
export function parseHosts(text: string): string[] {
  return [...new Set(text.split(/[\s,]+/).filter(Boolean))];
}

// ---- URL ------------------------------------------------------------------------

/** readFleet reads a view from a URL's query at time now. A missing or
 * invalid window is the last hour (a live view's: the last 3 minutes), and then defaulted says so (the page
 * writes the window into the URL, so that the view is a permalink); a
 * range outside the window is dropped. */
export function readFleet(p: URLSearchParams, now: Date): { state: FleetState; defaulted: boolean } {
  const rows = Number(p.get("rows"));
  let from = parseUnix(p.get("from"));
  let to = parseUnix(p.get("to"));
  let defaulted = false;
  if (from === null || to === null || to <= from || to - from > BigInt(MAX_WINDOW_SECONDS) * NS) {
    // a live view follows the last minutes: in an hour a stream of a few
    // minutes was a sliver at the right edge
    ({ from, to } = presetWindow(p.get("live") === "1" ? LIVE_WINDOW_SECONDS : DEFAULT_WINDOW_SECONDS, now));
    defaulted = true;
  }
  const start = parseUnix(p.get("start"));
  const end = parseUnix(p.get("end"));
  const range = start !== null && end !== null && start < end && start >= from && end <= to ? { start, end } : null;
  const zooms: Window[] = [];
  for (const z of p.getAll("zoom")) {
    const w = parseWindow(z);
    if (w) zooms.push(w);
  }
  const labels: LabelCond[] = [];
  for (const l of p.getAll("label")) {
    const c = parseLabel(l);
    if (c) labels.push(c);
  }
  return {
    state: {
      app: p.get("app") ?? "",
      hosts: [...new Set(p.getAll("host").filter(Boolean))],
      labels,
      from,
      to,
      zooms: nested(zooms, { from, to }),
      event: p.get("event") ?? "",
      idle: p.get("idle") === "1",
      rows: Number.isInteger(rows) && rows >= 1 && rows <= MAX_ROWS ? rows : DEFAULT_ROWS,
      range,
      frame: p.get("frame") ?? "",
      search: p.get("search") ?? "",
      orient: p.get("orient") === "flame" ? "flame" : "icicle",
      fn: p.get("fn") ?? "",
      xfn: p.get("xfn") ?? "",
      cmp: ["host", "labels", "shift"].includes(p.get("cmp") ?? "") ? (p.get("cmp") as FleetCompare) : "",
      shift: p.get("cmp") === "shift" ? shiftOf(p.get("shift") ?? "").id : "",
      chost: p.get("chost") ?? "",
      la: p.get("la") ?? "",
      lb: p.get("lb") ?? "",
      norm: p.get("norm") === "1" ? true : p.get("norm") === "0" ? false : null,
      live: p.get("live") === "1",
    },
    defaulted,
  };
}

/** writeFleet writes a view as a URL's query, leaving out defaults. */
export function writeFleet(s: FleetState): URLSearchParams {
  const p = new URLSearchParams();
  p.set("app", s.app);
  for (const h of s.hosts) p.append("host", h);
  for (const l of s.labels) p.append("label", formatLabel(l));
  p.set("from", formatUnix(s.from));
  p.set("to", formatUnix(s.to));
  for (const z of s.zooms) p.append("zoom", formatWindow(z));
  if (s.event) p.set("event", s.event);
  if (s.idle) p.set("idle", "1");
  if (s.rows !== DEFAULT_ROWS) p.set("rows", String(s.rows));
  if (s.range) {
    p.set("start", formatUnix(s.range.start));
    p.set("end", formatUnix(s.range.end));
  }
  if (s.frame) p.set("frame", s.frame);
  if (s.search) p.set("search", s.search);
  if (s.orient !== "icicle") p.set("orient", s.orient);
  if (s.fn) p.set("fn", s.fn);
  if (s.xfn) p.set("xfn", s.xfn);
  if (s.cmp) p.set("cmp", s.cmp);
  if (s.chost) p.set("chost", s.chost);
  if (s.cmp === "shift") p.set("shift", shiftOf(s.shift).id);
  if (s.la) p.set("la", s.la);
  if (s.lb) p.set("lb", s.lb);
  if (s.norm !== null) p.set("norm", s.norm ? "1" : "0");
  if (s.live) p.set("live", "1");
  return p;
}

/** fleetPath is the path that opens view s (its permalink without the origin). */
export function fleetPath(s: FleetState): string {
  return `/fleet?${writeFleet(s).toString()}`;
}

/** newFleet is the view of app over [from, to) with everything else at its default. */
export function newFleet(app: string, from: bigint, to: bigint): FleetState {
  return {
    app,
    hosts: [],
    labels: [],
    from,
    to,
    zooms: [],
    event: "",
    idle: false,
    rows: DEFAULT_ROWS,
    range: null,
    frame: "",
    search: "",
    orient: "icicle",
    fn: "",
    xfn: "",
    cmp: "",
    chost: "",
    shift: "",
    la: "",
    lb: "",
    norm: null,
    live: false,
  };
}

// ---- windows ----------------------------------------------------------------------

/** presetWindow is the last `seconds` seconds before now, in whole seconds
 * (its end is now rounded up, so the current second is in it). */
export function presetWindow(seconds: number, now: Date): { from: bigint; to: bigint } {
  const to = ceilSecond(dateNanos(now));
  return { from: to - BigInt(seconds) * NS, to };
}

/** parseWindow reads a zoom stack's window, "FROM-TO" in exact unix
 * seconds; null when it is not a window the server would take. */
export function parseWindow(text: string): Window | null {
  const m = /^([\d.]+)-([\d.]+)$/.exec(text);
  const from = m && parseUnix(m[1]);
  const to = m && parseUnix(m[2]);
  if (from == null || to == null || to <= from || to - from > BigInt(MAX_WINDOW_SECONDS) * NS) return null;
  return { from, to };
}

export function formatWindow(w: Window): string {
  return `${formatUnix(w.from)}-${formatUnix(w.to)}`;
}

function holds(outer: Window, inner: Window): boolean {
  return outer.from <= inner.from && inner.to <= outer.to && (outer.from !== inner.from || outer.to !== inner.to);
}

/** nested is the zoom stack zooms for window w: the entries that hold w
 * and each other (outermost first), the others dropped. */
export function nested(zooms: Window[], w: Window): Window[] {
  const kept: Window[] = [];
  let inner = w;
  for (let i = zooms.length - 1; i >= 0; i--) {
    if (holds(zooms[i], inner)) {
      kept.unshift(zooms[i]);
      inner = zooms[i];
    }
  }
  return kept;
}

/** withWindow moves view s to the window [from, to), keeping its range
 * (and the flame graph's zoom) only when the range lies inside it, and the
 * zoom stack's windows that hold it. */
export function withWindow(s: FleetState, from: bigint, to: bigint): FleetState {
  const keep = s.range !== null && s.range.start >= from && s.range.end <= to;
  return { ...s, from, to, zooms: nested(s.zooms, { from, to }), range: keep ? s.range : null, frame: keep ? s.frame : "" };
}

/** follow slides view s's window to end at the second after now, keeping
 * its length (a live view); the zoom stack is left behind. */
export function follow(s: FleetState, now: Date): FleetState {
  const to = ceilSecond(dateNanos(now));
  const from = to - (s.to - s.from);
  return from === s.from ? s : withWindow({ ...s, zooms: [] }, from, to);
}

/** zoomTo zooms view s in to the window [from, to): the current window goes
 * on the zoom stack (when it holds the new one). */
export function zoomTo(s: FleetState, from: bigint, to: bigint): FleetState {
  return withWindow({ ...s, zooms: [...s.zooms, { from: s.from, to: s.to }] }, from, to);
}

/** zoomIn makes the window the whole seconds the range r touches (finer
 * columns when the window had several seconds per column), keeping r
 * selected. */
export function zoomIn(s: FleetState, r: AbsRange): FleetState {
  return { ...zoomTo(s, floorSecond(r.start), ceilSecond(r.end)), range: r };
}

/** zoomBack returns view s to the zoom stack's window i (default: the one
 * it last zoomed in from), popping it and those after it; the range stays
 * (it lies inside). */
export function zoomBack(s: FleetState, i = s.zooms.length - 1): FleetState {
  const w = s.zooms[i];
  if (!w) return s;
  return withWindow({ ...s, zooms: s.zooms.slice(0, i) }, w.from, w.to);
}

/** zoomOut doubles the window about its middle, in whole seconds, up to the
 * longest window (the zoom stack's windows that hold it stay). */
export function zoomOut(s: FleetState): FleetState {
  const from = floorSecond(s.from);
  const to = ceilSecond(s.to);
  const max = BigInt(MAX_WINDOW_SECONDS) * NS;
  let len = (to - from) * 2n;
  if (len > max) len = max;
  const mid = floorSecond(from + (to - from) / 2n);
  let start = mid - len / 2n;
  start = floorSecond(start < 0n ? 0n : start);
  return withWindow(s, start, start + ceilSecond(len));
}

/** windowSeconds is a window's length in seconds (a fraction for a window
 * that is not whole seconds). */
export function windowSeconds(s: Pick<FleetState, "from" | "to">): number {
  return Number(s.to - s.from) / 1e9;
}

/** wholeSeconds says whether the window starts and ends on whole seconds, so
 * that the heatmap (which covers the whole seconds the window touches)
 * counts exactly the window's samples. */
export function wholeSeconds(s: Pick<FleetState, "from" | "to">): boolean {
  return s.from % NS === 0n && s.to % NS === 0n;
}

/** Columns is the heatmap geometry the server answers a window with. */
export interface Columns {
  /** Unix second of column 0. */
  startSecond: number;
  secondsPerColumn: number;
  columns: number;
}

/** columnsOf is the server's rule (query/fleet_rollup.go's grid): the
 * whole seconds the window touches, [floor(from), floor(to − 1 ns) + 1);
 * one second a column up to 1,000 seconds, else the fewest whole seconds
 * that keep the columns at or under 1,000; at least minSecondsPerColumn;
 * a column of half a minute or more is whole minutes (rounded up), one of 5
 * to 29 s whole tens of seconds (rounded up), and then column 0 starts at a
 * multiple of its length (so columns are read from the stored minutes and
 * tens of seconds). */
export function columnsOf(from: bigint, to: bigint, minSecondsPerColumn = 1): Columns {
  const first = Number(from / NS);
  const end = Number((to - 1n) / NS + 1n);
  const n = end - first;
  let spc = Math.max(n <= MAX_COLUMNS ? 1 : Math.ceil(n / MAX_COLUMNS), minSecondsPerColumn, 1);
  let start = first;
  const width = spc >= 30 ? 60 : spc >= 5 ? 10 : 0;
  if (width > 0) {
    spc = Math.ceil(spc / width) * width;
    start = Math.floor(first / spc) * spc;
  }
  return { startSecond: start, secondsPerColumn: spc, columns: Math.ceil((end - start) / spc) };
}

/** columnTime is the unix second where column col starts. */
export function columnTime(c: Columns, col: number): number {
  return c.startSecond + col * c.secondsPerColumn;
}

/** columnAt is the column holding unix second sec (may lie outside the grid). */
export function columnAt(c: Columns, sec: number): number {
  return Math.floor((sec - c.startSecond) / c.secondsPerColumn);
}

/** columnsRange is the absolute range of columns first..last (inclusive). */
export function columnsRange(c: Columns, first: number, last: number): AbsRange {
  const lo = Math.min(first, last);
  const hi = Math.max(first, last);
  return { start: BigInt(columnTime(c, lo)) * NS, end: BigInt(columnTime(c, hi + 1)) * NS };
}

// ---- ranges: absolute and relative to a heatmap ---------------------------------

/** relRange is range r relative to the heatmap whose column 0 starts at unix
 * second startSecond (heatmap/model.ts's nanoseconds). */
export function relRange(r: AbsRange, startSecond: number): Range {
  const base = BigInt(startSecond) * NS;
  return { start: Number(r.start - base), end: Number(r.end - base) };
}

/** absRange is the absolute range of a range relative to startSecond. */
export function absRange(r: Range, startSecond: number): AbsRange {
  const base = BigInt(startSecond) * NS;
  return { start: base + BigInt(r.start), end: base + BigInt(r.end) };
}

// ---- requests ---------------------------------------------------------------------

/** selectionOf is view s's FleetSelection over [from, to) (default: the window). */
export function selectionOf(s: FleetState, from = s.from, to = s.to): MessageInitShape<typeof FleetSelectionSchema> {
  return {
    app: s.app,
    hosts: s.hosts,
    labels: s.labels.map((l) => ({ name: l.name, value: l.value, notEqual: l.not })),
    from: timestampOf(from),
    to: timestampOf(to),
    event: s.event,
    includeIdle: s.idle,
    filter: s.fn || s.xfn ? { function: s.fn, excludeFunction: s.xfn } : undefined,
  };
}

/** shiftedRange is the baseline's range of a time-shifted comparison: view
 * s's range (or window) moved the shift earlier, to the nanosecond; null
 * when that would start before 1970. */
export function shiftedRange(s: FleetState): AbsRange | null {
  const r = s.range ?? { start: s.from, end: s.to };
  const d = BigInt(shiftOf(s.shift).seconds) * NS;
  return r.start - d < 0n ? null : { start: r.start - d, end: r.end - d };
}

/** FleetDiffSides are a comparison's two fleet selections: a, the baseline, and b. */
export type FleetDiffSides = { a: MessageInitShape<typeof FleetSelectionSchema>; b: MessageInitShape<typeof FleetSelectionSchema> };

/** fleetDiffSides are the two fleet selections of view s's comparison
 * over its range (or window): A, the baseline (the rest of the fleet's
 * hosts, label condition la, or the same range a day or a week earlier),
 * and B (the host, lb, or the range itself). hosts are the selection's
 * hosts (the host strip's). null when there is nothing to compare. */
export function fleetDiffSides(s: FleetState, hosts: string[]): FleetDiffSides | null {
  const r = s.range ?? { start: s.from, end: s.to };
  if (s.cmp === "host") {
    const rest = hosts.filter((x) => x !== s.chost);
    if (!s.chost || rest.length === 0) return null;
    return { a: selectionOf({ ...s, hosts: rest }, r.start, r.end), b: selectionOf({ ...s, hosts: [s.chost] }, r.start, r.end) };
  }
  if (s.cmp === "shift") {
    const earlier = shiftedRange(s);
    if (!earlier) return null;
    return { a: selectionOf(s, earlier.start, earlier.end), b: selectionOf(s, r.start, r.end) };
  }
  if (s.cmp === "labels") {
    const a = parseLabel(s.la);
    const b = parseLabel(s.lb);
    if (!a || !b) return null;
    return { a: selectionOf({ ...s, labels: [...s.labels, a] }, r.start, r.end), b: selectionOf({ ...s, labels: [...s.labels, b] }, r.start, r.end) };
  }
  return null;
}

/** diffNeedsHosts says whether view s's comparison needs the selection's
 * hosts asked for first: a host against the rest of the fleet, when the
 * host strip (hosts) has not answered yet. */
export function diffNeedsHosts(s: FleetState, hosts: string[]): boolean {
  return s.cmp === "host" && hosts.length === 0;
}

/** fleetDiffRequest asks for the differential flame graph of sides
 * (fleetDiffSides), normalized or not, with its 20 largest changes. */
export function fleetDiffRequest(sides: FleetDiffSides, normalize: boolean): MessageInitShape<typeof GetDiffFlameGraphRequestSchema> {
  return { a: { side: { case: "fleet", value: sides.a } }, b: { side: { case: "fleet", value: sides.b } }, normalize, format: FlameGraphFormat.TREE, top: 20 };
}

export function heatmapRequest(s: FleetState): MessageInitShape<typeof GetFleetHeatmapRequestSchema> {
  return { selection: selectionOf(s), rows: s.rows };
}

export function hostsRequest(s: FleetState): MessageInitShape<typeof GetFleetHostsRequestSchema> {
  return { selection: selectionOf(s) };
}

export function timelineRequest(s: FleetState): MessageInitShape<typeof GetFleetTimelineRequestSchema> {
  return { selection: selectionOf(s) };
}

/** rangeTimelineRequest is range r's timeline in one column: its
 * accounting counts the profiles with per-sample times in r. */
export function rangeTimelineRequest(s: FleetState, r: AbsRange): MessageInitShape<typeof GetFleetTimelineRequestSchema> {
  return { selection: selectionOf(s, r.start, r.end), minSecondsPerColumn: BigInt(MAX_WINDOW_SECONDS) };
}

/** eventsSearch lists the app's profiles in view s's window (the events
 * they have are offered in the selection bar). */
export function eventsSearch(s: FleetState): MessageInitShape<typeof SearchProfilesRequestSchema> {
  return { app: s.app, since: timestampOf(s.from), until: timestampOf(s.to), pageSize: 200 };
}

/** hostProfilesSearch lists host's profiles overlapping r under view s's
 * label conditions k=v (the server cannot apply k!=v: hostProfile does). */
export function hostProfilesSearch(s: FleetState, host: string, r: AbsRange): MessageInitShape<typeof SearchProfilesRequestSchema> {
  const labels = Object.fromEntries(s.labels.filter((l) => !l.not).map((l) => [l.name, l.value]));
  return { app: s.app, host, labels, since: timestampOf(r.start), until: timestampOf(r.end), pageSize: 100 };
}

/** flameRequest is the merged flame graph of the selected range, or of the
 * whole window when there is none. */
export function flameRequest(s: FleetState, format: FlameGraphFormat): MessageInitShape<typeof GetFleetFlameGraphRequestSchema> {
  const r = s.range ?? { start: s.from, end: s.to };
  return { selection: selectionOf(s, r.start, r.end), format };
}

// ---- accounting ---------------------------------------------------------------------

/** countedWords says what an answer's profiles are: "3 profiles"; a live
 * stream (stored a profile a batch, its segments) is one stream: "1 live
 * stream (19 batches)", "2 profiles and 1 live stream (19 batches)". */
export function countedWords(a: { profiles: number; liveSegments: number; liveStreams: number }, count: (n: number) => string = String): string {
  const plural = (n: number, one: string, many: string) => `${count(n)} ${n === 1 ? one : many}`;
  const segments = a.liveStreams > 0 ? Math.min(a.liveSegments, a.profiles) : 0;
  const others = a.profiles - segments;
  if (!segments) return plural(a.profiles, "profile", "profiles");
  const live = `${plural(a.liveStreams, "live stream", "live streams")} (${plural(segments, "batch", "batches")})`;
  return others ? `${plural(others, "profile", "profiles")} and ${live}` : live;
}

// ---- changes with rules -------------------------------------------------------------

/** narrowToHost keeps only host in the selection (its range and zoom stay). */
export function narrowToHost(s: FleetState, host: string): FleetState {
  return { ...s, hosts: [host] };
}

/** foldedFilename names a download of view s's merged flame graph. */
export function foldedFilename(s: FleetState): string {
  const r = s.range ?? { start: s.from, end: s.to };
  return `${s.app || "fleet"}-fleet-${formatUnix(r.start)}-${formatUnix(r.end)}.folded`;
}

// ---- from search results to a window -------------------------------------------------

interface Spanned {
  timed: boolean;
  startTime?: { seconds: bigint; nanos: number };
  endTime?: { seconds: bigint; nanos: number };
}

/** windowOfProfiles is the window a fleet view opened from search results
 * starts with: the whole seconds the listed timed profiles span (the
 * latest 31 days of it at most); the last hour when none has a span. */
export function windowOfProfiles(ps: Spanned[], now: Date): { from: bigint; to: bigint } {
  let lo: bigint | null = null;
  let hi: bigint | null = null;
  for (const p of ps) {
    if (!p.timed || !p.startTime || !p.endTime) continue;
    const a = timestampNanos(p.startTime);
    const b = timestampNanos(p.endTime);
    if (lo === null || a < lo) lo = a;
    if (hi === null || b > hi) hi = b;
  }
  if (lo === null || hi === null) return presetWindow(DEFAULT_WINDOW_SECONDS, now);
  const to = floorSecond(hi) + NS; // the last sample's second is in the window
  let from = floorSecond(lo);
  const max = BigInt(MAX_WINDOW_SECONDS) * NS;
  if (to - from > max) from = to - max;
  return { from, to };
}

// ---- a host's profile at the same range ---------------------------------------------

/** A profile as SearchProfiles lists it (what these rules need). */
export interface ListedProfile extends Spanned {
  id: string;
  host: string;
  labels: Record<string, string>;
  defaultEvent: string;
  events: { name: string }[];
}

/** matchesLabels says whether a profile's labels satisfy every condition
 * (a profile without the label satisfies name!=value), as the server does. */
export function matchesLabels(labels: Record<string, string>, conds: LabelCond[]): boolean {
  return conds.every((c) => {
    const has = Object.prototype.hasOwnProperty.call(labels, c.name);
    return c.not ? !has || labels[c.name] !== c.value : has && labels[c.name] === c.value;
  });
}

/** overlap is how many nanoseconds profile p (timed) shares with range r. */
export function overlap(p: Spanned, r: AbsRange): bigint {
  if (!p.timed || !p.startTime || !p.endTime) return 0n;
  const a = timestampNanos(p.startTime);
  const b = timestampNanos(p.endTime) + 1n; // the last sample is in the profile
  const lo = a > r.start ? a : r.start;
  const hi = b < r.end ? b : r.end;
  return hi > lo ? hi - lo : 0n;
}

/** hostProfiles are the profiles of a host's search results that hold
 * samples of range r under the selection's label conditions: timed, sharing
 * some of r, the one sharing most first. */
export function hostProfiles<P extends ListedProfile>(ps: P[], host: string, labels: LabelCond[], r: AbsRange): P[] {
  return ps
    .filter((p) => p.host === host && matchesLabels(p.labels, labels) && overlap(p, r) > 0n)
    .map((p) => ({ p, o: overlap(p, r) }))
    .sort((a, b) => (a.o === b.o ? (a.p.id < b.p.id ? -1 : 1) : a.o > b.o ? -1 : 1))
    .map((x) => x.p);
}

/** hostProfile is the profile to open for a host at range r: of those
 * holding samples of r (hostProfiles), the one covering r's start (the one
 * sharing most of r when several do), else the earliest to start; null
 * when none holds any. */
export function hostProfile<P extends ListedProfile>(ps: P[], host: string, labels: LabelCond[], r: AbsRange): P | null {
  const held = hostProfiles(ps, host, labels, r);
  const startOf = (p: P) => timestampNanos(p.startTime!);
  const covering = held.find((p) => startOf(p) <= r.start && r.start <= timestampNanos(p.endTime!));
  if (covering) return covering;
  return held.reduce<P | null>((best, p) => (best === null || startOf(p) < startOf(best) ? p : best), null);
}

/** eventBase is an event's name without perf's modifiers ("cpu-clock" for
 * "cpu-clock:pppH"), the name fleet answers give events by. */
export function eventBase(name: string): string {
  const i = name.lastIndexOf(":");
  return i > 0 && /^[A-Za-z]+$/.test(name.slice(i + 1)) ? name.slice(0, i) : name;
}

/** eventNames are the events of listed profiles by their base names,
 * once each, sorted. */
export function eventNames(ps: { events: { name: string }[] }[]): string[] {
  return [...new Set(ps.flatMap((p) => p.events.map((e) => eventBase(e.name))))].sort();
}

/** profileRange is range r on profile p's own clock (relative to its start
 * second, whose absolute time is p.startTime), clamped to start at 0. */
export function profileRange(p: Spanned, r: AbsRange): Range | null {
  if (!p.startTime) return null;
  const base = timestampNanos(p.startTime);
  const start = r.start > base ? r.start - base : 0n;
  const end = r.end - base;
  return end > start ? { start: Number(start), end: Number(end) } : null;
}

/** profileLink is the path of profile p's page at view s's range (or
 * window), with the fleet's event (by p's own name for it), rows, idle and
 * the flame graph's search and orientation. */
export function profileLink(p: ListedProfile, s: FleetState, fleetEvent: string): string {
  const r = s.range ?? { start: s.from, end: s.to };
  const ev = p.events.find((e) => eventBase(e.name) === eventBase(fleetEvent || s.event));
  const v: ViewState = {
    ...defaultView(),
    event: ev && ev.name !== p.defaultEvent ? ev.name : "",
    rows: s.rows,
    idle: s.idle,
    range: profileRange(p, r),
    frame: "",
    search: s.search,
    orient: s.orient,
  };
  const q = writeView(v).toString();
  return `/p/${encodeURIComponent(p.id)}${q ? `?${q}` : ""}`;
}

// ---- the fleet view's changes and words ---------------------------------------------
// What pages/fleetview.ts does with a user's action, and what it says of the
// answers, as rules on the state.

/** rangeOrWindow is what view s shows: its range, or else its window. */
export function rangeOrWindow(s: FleetState): AbsRange {
  return s.range ?? { start: s.from, end: s.to };
}

/** withCountedEvent is view s with the event the heatmap counts named (when none
 * is chosen), so that a range's flame graph counts the same one. */
export function withCountedEvent(s: FleetState, heatEvent: string | undefined): FleetState {
  return s.event || !heatEvent ? s : { ...s, event: heatEvent };
}

/** timelineZoom is the view zoomed to the whole seconds of r (a drag
 * across the timeline), clamped to the window; null when that is the
 * window already. */
export function timelineZoom(s: FleetState, r: AbsRange): FleetState | null {
  const start = r.start > s.from ? r.start : s.from;
  const end = r.end < s.to ? r.end : s.to;
  const [from, to] = [floorSecond(start), ceilSecond(end)];
  return from !== s.from || to !== s.to ? zoomTo(s, from, to) : null;
}

/** compared is view s comparing as c says (the zoomed frame is dropped:
 * a comparison is another graph). */
export function compared(s: FleetState, c: Partial<Pick<FleetState, "cmp" | "chost" | "shift" | "la" | "lb" | "norm">>): FleetState {
  return { ...s, ...c, frame: "" };
}

/** compareHost compares host against the rest of the fleet. */
export function compareHost(s: FleetState, host: string): FleetState {
  return compared(s, { cmp: "host", chost: host, shift: "" });
}

/** compareShift compares with the same range earlier (a SHIFTS id; "" for
 * no comparison). */
export function compareShift(s: FleetState, id: string): FleetState {
  return compared(s, { cmp: id ? "shift" : "", shift: id });
}

/** diffNames names a comparison's sides: a (the baseline) and b. */
export function diffNames(s: FleetState): { a: string; b: string } {
  if (s.cmp === "host") return { a: "the rest of the fleet", b: s.chost };
  if (s.cmp === "shift") return { a: `${s.range ? "the same range" : "the same window"} ${shiftOf(s.shift).label}`, b: s.range ? "this range" : "this window" };
  return { a: s.la, b: s.lb };
}

/** filterFunctions keeps the samples with function fn (a top functions'
 * "Heatmap"), or as the filter bar says. */
export function filterFunctions(s: FleetState, fn: string, xfn = ""): FleetState {
  return { ...s, fn, xfn, frame: "" };
}

/** toggleLive starts or stops following now. */
export function toggleLive(s: FleetState): FleetState {
  return { ...s, live: !s.live };
}

/** liveStatus says whether view s follows now, is paused on a range (a
 * live view with a range selected), or is off; label is its button's. */
export function liveStatus(s: FleetState): { state: "off" | "paused" | "following"; label: string } {
  if (!s.live) return { state: "off", label: "Live" };
  return s.range ? { state: "paused", label: "Live · paused on the selection" } : { state: "following", label: "Live ●" };
}

/** What an answer counted (the Accounting message, as decoded). */
export type Accounting = Pick<WireAccounting, "event" | "profiles" | "leftOut" | "liveSegments" | "liveStreams"> & { rawFiles?: number };

/** accountingWords says what an answer counted (a live stream's batches
 * as one stream: countedWords): "3 profiles; 1 left out
 * (no per-sample times: no heatmap)", or with several reasons "3 left out
 * (2 for one reason, 1 for another)". */
export function accountingWords(a: Accounting | undefined): string {
  if (!a) return "";
  const left = Object.entries(a.leftOut)
    .filter(([, n]) => n > 0)
    .sort(([x], [y]) => (x < y ? -1 : 1));
  const n = left.reduce((s, [, c]) => s + c, 0);
  const why = left.length === 1 ? left[0][0] : left.map(([reason, c]) => `${formatCount(c)} ${reason}`).join("; ");
  const raw = a.rawFiles ? `; ${formatCount(a.rawFiles)} read from raw files (past the sample tier)` : "";
  return `${countedWords(a, formatCount)}${raw}${n ? `; ${formatCount(n)} left out (${why})` : ""}`;
}

/** profilesWithout says "1 profile without per-sample times" or "3 profiles without …". */
export function profilesWithout(n: number): string {
  return `${formatCount(n)} profile${n === 1 ? "" : "s"} without per-sample times`;
}

/** leftOutData is the accounting's left-out counts by reason, as JSON with
 * the reasons in order (the data-left-out attribute). */
export function leftOutData(a: Accounting | undefined): string {
  return JSON.stringify(a ? Object.fromEntries(Object.entries(a.leftOut).sort(([x], [y]) => (x < y ? -1 : 1))) : {});
}

/** matchesNothing says whether an answer counted no profile and left
 * none out: no profile of the selection lies in the window. */
export function matchesNothing(a: Accounting | undefined): boolean {
  return !a || (a.profiles === 0 && Object.values(a.leftOut).every((n) => !n));
}

/** selectionWords says what view s asks for: "app x, hosts a, b,
 * labels env=prod, with function f, in <window> (1 h)". */
export function selectionWords(s: FleetState): string {
  const parts = [`app ${s.app}`];
  if (s.hosts.length) parts.push(`host${s.hosts.length === 1 ? "" : "s"} ${s.hosts.join(", ")}`);
  if (s.labels.length) parts.push(`labels ${s.labels.map((l) => `${l.name}${l.not ? "!=" : "="}${l.value}`).join(" ")}`);
  if (s.fn) parts.push(`with function ${s.fn}`);
  if (s.xfn) parts.push(`without function ${s.xfn}`);
  if (s.event) parts.push(`event ${s.event}`);
  return `${parts.join(", ")}, in ${formatWallRange(s.from, s.to)} (${formatDuration(Number(s.to - s.from))})`;
}

/** windowCheck compares the whole window's merged flame graph with the
 * heatmap (view s without a range, a window of whole seconds): they agree,
 * or disagree (the graph's total), or the graph also counts profiles
 * without per-sample times (how many); null when there is nothing to
 * check (a range, no graph yet, 0 against 0). */
export function windowCheck(
  s: FleetState,
  heat: { total: number; profiles: number | undefined },
  flame: { total: number; profiles: number } | null,
): { kind: "agree" } | { kind: "disagree"; total: number } | { kind: "untimed"; profiles: number } | null {
  if (s.range || !flame || !wholeSeconds(s)) return null;
  if (flame.profiles !== heat.profiles) return { kind: "untimed", profiles: flame.profiles - (heat.profiles ?? 0) };
  if (heat.total === 0 && flame.total === 0) return null; // nothing was counted
  return flame.total === heat.total ? { kind: "agree" } : { kind: "disagree", total: flame.total };
}

/** profileSpan is a listed profile's [start, end), unix nanoseconds (end
 * not before start). */
export function profileSpan(p: Spanned): { start: bigint; end: bigint } {
  const start = p.startTime ? timestampNanos(p.startTime) : 0n;
  const end = p.endTime ? timestampNanos(p.endTime) : start;
  return { start, end: end > start ? end : start };
}

/** spanWindow is the window of whole seconds that shows span s (at least a second). */
export function spanWindow(s: { start: bigint; end: bigint }): Window {
  return { from: floorSecond(s.start), to: ceilSecond(s.end > s.start ? s.end : s.start + NS) };
}

/** nearestProfiles says where an app's profiles are: the latest to end,
 * of the newest page search lists (newest first), and the first to start,
 * of the last page read (none when a page is empty). */
export function nearestProfiles<P extends Spanned>(newest: P[], oldest: P[]): { last: P | undefined; first: P | undefined } {
  const last = newest.reduce<P | undefined>((m, p) => (!m || profileSpan(p).end > profileSpan(m).end ? p : m), undefined);
  const first = oldest.reduce<P | undefined>((m, p) => (!m || profileSpan(p).start < profileSpan(m).start ? p : m), undefined);
  return { last, first };
}

/** liveTick is what a second of a live view s does at now: nothing (not
 * live, or the window already ends at now), refresh (a range is selected:
 * its heatmap and flame graph count what arrived, the window kept), or
 * move to next (the window slid to end at now). */
export function liveTick(s: FleetState, now: Date): { kind: "none" } | { kind: "refresh" } | { kind: "move"; next: FleetState } {
  if (!s.live) return { kind: "none" };
  if (s.range) return { kind: "refresh" };
  const next = follow(s, now);
  return next === s ? { kind: "none" } : { kind: "move", next };
}

/** flameWaitsForHeatmap says whether view s's flame graph is asked for
 * after the heatmap has answered. With no event named, the server counts
 * the one most samples of the selection have: over the whole window, the
 * heatmap's. A range's flame graph, and a comparison's two sides (each
 * side's own most common event could be another), ask for the heatmap's
 * by name, so they wait. */
export function flameWaitsForHeatmap(s: FleetState): boolean {
  return !s.event && (s.range !== null || s.cmp !== "");
}

/** emptyHeatmapWords says why view s's heatmap has no samples, given how
 * many profiles it counted. */
export function emptyHeatmapWords(s: FleetState, profiles: number): string {
  if (!profiles) return "No profile of this selection with per-sample times has samples in the window.";
  return s.idle ? "No samples of this event in the window." : "No samples of this event in the window that are not idle. Tick “Include idle” to see idle ones.";
}

/** flameWords says what view s's merged flame graph covers (scope) and
 * what to say when it has no samples (empty). */
export function flameWords(s: FleetState): { scope: string; empty: string } {
  const r = s.range;
  return r
    ? { scope: formatWallRange(r.start, r.end), empty: `No host ran anything (that is not idle) in ${formatWallRange(r.start, r.end)}.` }
    : { scope: `whole window, ${formatWallRange(s.from, s.to)}`, empty: "No samples of this event in the window." };
}

/** heatmapHint says what the fleet heatmap's cells are, at spc seconds a
 * column. */
export function heatmapHint(spc: number): string {
  return spc === 1
    ? "each column is one second of wall-clock time, each cell a slice of it, summed over every host. Drag across cells for the merged flame graph of that range."
    : `each column is ${spc} seconds (a long window), each cell the same slice of each of them summed over every host, so a selection takes whole columns; “Zoom to selection” re-queries at finer columns.`;
}

/** diffWords says what view s's comparison shows: its sides' names (a,
 * the baseline, and b), what the graph covers (scope), what to say when
 * b has no samples (empty), and the two ranges of a time-shifted one
 * (sides; "" for the others, whose sides share the range). */
export function diffWords(s: FleetState): { a: string; b: string; scope: string; empty: string; sides: string } {
  const r = rangeOrWindow(s);
  const { a, b } = diffNames(s);
  const earlier = s.cmp === "shift" ? shiftedRange(s) : null;
  return {
    a,
    b,
    scope: `${b} against ${a}, ${formatWallRange(r.start, r.end)}`,
    empty: `${b} ran nothing (that is not idle) here.`,
    sides: earlier ? `A: ${formatWallRange(earlier.start, earlier.end)} · B: ${formatWallRange(r.start, r.end)}` : "",
  };
}

// ---- the fleet view's answers -------------------------------------------------------

/** shownRange is view s's range on a heatmap starting at startSecond (null: none). */
export function shownRange(s: FleetState, startSecond: number): Range | null {
  return s.range ? relRange(s.range, startSecond) : null;
}

/** startColumn is the column to scroll view s's heatmap to: where a long
 * window's samples start; null when there is none to scroll to (a range
 * is selected and shown, or the samples start in the first column, or
 * there are none). */
export function startColumn(s: FleetState, heat: Pick<Heatmap, "columns">): number | null {
  if (s.range) return null;
  const col = heat.columns.findIndex((c) => c.some((n) => n > 0));
  return col > 0 ? col : null;
}

/** rangeCellSum is the sum of the cells of heat that range r selects, when
 * r is exactly cells (null otherwise: no sum is claimed). */
export function rangeCellSum(heat: Heatmap, r: AbsRange): number | null {
  const span = cellsOfRange(relRange(r, heat.startSecond), gridOf(heat));
  return span && span.aligned ? sumCells(heat, span.first, span.last) : null;
}

/** flameDiffersFromCells says whether view s's range's merged flame graph,
 * totalling flameTotal, counts other than the heatmap's cells it selects
 * (false without a range, or when the range is not exactly cells). */
export function flameDiffersFromCells(s: FleetState, heat: Heatmap, flameTotal: number): boolean {
  if (!s.range) return false;
  const cells = rangeCellSum(heat, s.range);
  return cells !== null && cells !== flameTotal;
}

/** untimedWords explains a range's merged flame graph of flameProfiles
 * profiles totalling more than its cells: those of its profiles that have
 * no per-sample times (the range's timed profiles are timedProfiles) lie
 * wholly inside the range, and enter flame graphs but no heatmap.
 * undefined when there are none. */
export function untimedWords(flameProfiles: number, timedProfiles: number): string | undefined {
  const untimed = flameProfiles - timedProfiles;
  return untimed > 0 ? `it also counts ${profilesWithout(untimed)} lying wholly inside the range (they have no heatmap)` : undefined;
}
