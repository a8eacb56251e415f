// The profile page's view state: everything a permalink holds (event, rows,
// idle, range, zoomed frame, search, orientation), read from and written to
// the URL's query; the rules for changing it; the requests it implies; and
// request sequencing, so that a slow answer to an older request never
// overwrites the answer to a newer one. Pure: no DOM, no network (unit-tested
// in viewstate.test.ts). The panels draw what it says; the page owns it.
//
//   /p/ID?event=E&rows=50&idle=1&start=2.4&end=2.48&frame=java;start_thread&search=GC&orient=flame
//        &fn=GC&xfn=Idle&tid=12,13&axis=thread&cmp=rest&norm=1&bstart=1&bend=2&sw=malloc
//
// start and end are seconds relative to the profile's start second, exact
// decimals (as the CLI's --start/--end); frame is the zoomed frame's path.
// fn and xfn filter the samples by function (RE2, as --function and
// --exclude-function), pid/tid/cpu by thread (as --pid, --tid, --cpu);
// axis is the heatmap's rows (offset within the second, or one row per
// CPU, thread or process); cmp compares the selection with the rest of the
// profile ("rest") or with a pinned baseline range bstart–bend ("base"),
// norm scaling the baseline to the selection's total (norm=1; norm=0: raw
// counts; absent: normalized when the totals differ more than twofold,
// flame/diff.ts's autoNormalize); sw is the function
// whose sandwich (callers and callees) is shown.
//
// A shared view (/s/TOKEN?rows=100&frame=...&search=...&orient=flame) holds
// the same state but for the event and range, which are the link's.

import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { Orientation } from "./flame/view";
import { SeriesKey, type FlameGraphFormat } from "./enums";
import { dateOf, formatSeconds, parseSeconds } from "./format";
import type { CreateShareLinkRequestSchema } from "./gen/fleetscope/v1/admin_pb";
import type { GetFlameGraphRequestSchema, GetHeatmapRequestSchema, GetHeatmapSeriesRequestSchema, SampleFilterSchema } from "./gen/fleetscope/v1/query_pb";
import type { GetSharedFlameGraphRequestSchema, GetSharedHeatmapRequestSchema } from "./gen/fleetscope/v1/share_pb";
import type { Range } from "./heatmap/model";

export const DEFAULT_ROWS = 50;
export const MAX_ROWS = 1000;

export interface ViewState {
  /** The event shown; "" is the profile's default event. */
  event: string;
  /** Heatmap rows per second. */
  rows: number;
  idle: boolean;
  /** The selected range, or null for the whole profile. */
  range: Range | null;
  /** The zoomed frame's path ("" for the root). */
  frame: string;
  search: string;
  orient: Orientation;
  /** Samples with a frame matching fn (RE2; "" keeps all), without one matching xfn. */
  fn: string;
  xfn: string;
  /** Samples of these processes, threads, CPUs (empty: all). */
  pids: number[];
  tids: number[];
  cpus: number[];
  /** The heatmap's rows: the offset within the second, or a row per key. */
  axis: Axis;
  /** The comparison shown: none, the selection against the rest of the
   * profile, or against the pinned baseline range. */
  cmp: Compare;
  /** The pinned baseline range (for cmp "base"). */
  base: Range | null;
  /** Scale the baseline to the selection's total: true, false (raw
   * counts), or null: when the totals differ more than twofold. */
  norm: boolean | null;
  /** The function whose sandwich is shown ("" for none). */
  sw: string;
  /** Samples inside the spans passing this condition ("slower:p95",
   * "slower:A,faster:B"; "" for all), as the CLI's --in-spans. */
  spans: string;
}

export type Axis = "offset" | "cpu" | "thread" | "process";
export type Compare = "" | "rest" | "base" | "spans";
const AXES: Axis[] = ["offset", "cpu", "thread", "process"];

function readInts(s: string | null): number[] {
  if (!s) return [];
  const out = s.split(",").map(Number);
  return out.every((n) => Number.isInteger(n) && n >= -1 && n <= 2 ** 31 - 1) ? out : [];
}

/** readView reads a view from a URL's query; what is missing or invalid
 * takes its default. */
export function readView(p: URLSearchParams): ViewState {
  const rows = Number(p.get("rows"));
  const start = parseSeconds(p.get("start"));
  const end = parseSeconds(p.get("end"));
  const bstart = parseSeconds(p.get("bstart"));
  const bend = parseSeconds(p.get("bend"));
  return {
    event: p.get("event") ?? "",
    rows: Number.isInteger(rows) && rows >= 1 && rows <= MAX_ROWS ? rows : DEFAULT_ROWS,
    idle: p.get("idle") === "1",
    range: start !== null && end !== null ? { start, end } : null,
    frame: p.get("frame") ?? "",
    search: p.get("search") ?? "",
    orient: p.get("orient") === "flame" ? "flame" : "icicle",
    fn: p.get("fn") ?? "",
    xfn: p.get("xfn") ?? "",
    pids: readInts(p.get("pid")),
    tids: readInts(p.get("tid")),
    cpus: readInts(p.get("cpu")),
    axis: AXES.includes(p.get("axis") as Axis) ? (p.get("axis") as Axis) : "offset",
    cmp: ["rest", "base", "spans"].includes(p.get("cmp") ?? "") ? (p.get("cmp") as Compare) : "",
    base: bstart !== null && bend !== null ? { start: bstart, end: bend } : null,
    norm: p.get("norm") === "1" ? true : p.get("norm") === "0" ? false : null,
    sw: p.get("sw") ?? "",
    spans: p.get("spans") ?? "",
  };
}

/** defaultView is the view of a URL without a query. */
export function defaultView(): ViewState {
  return readView(new URLSearchParams());
}

/** writeView writes a view as a URL's query, leaving out defaults. */
export function writeView(v: ViewState): URLSearchParams {
  const p = new URLSearchParams();
  if (v.event) p.set("event", v.event);
  if (v.rows !== DEFAULT_ROWS) p.set("rows", String(v.rows));
  if (v.idle) p.set("idle", "1");
  if (v.range) {
    p.set("start", formatSeconds(v.range.start));
    p.set("end", formatSeconds(v.range.end));
  }
  if (v.frame) p.set("frame", v.frame);
  if (v.search) p.set("search", v.search);
  if (v.orient !== "icicle") p.set("orient", v.orient);
  if (v.fn) p.set("fn", v.fn);
  if (v.xfn) p.set("xfn", v.xfn);
  if (v.pids.length) p.set("pid", v.pids.join(","));
  if (v.tids.length) p.set("tid", v.tids.join(","));
  if (v.cpus.length) p.set("cpu", v.cpus.join(","));
  if (v.axis !== "offset") p.set("axis", v.axis);
  if (v.cmp) p.set("cmp", v.cmp);
  if (v.base) {
    p.set("bstart", formatSeconds(v.base.start));
    p.set("bend", formatSeconds(v.base.end));
  }
  if (v.norm !== null) p.set("norm", v.norm ? "1" : "0");
  if (v.sw) p.set("sw", v.sw);
  if (v.spans) p.set("spans", v.spans);
  return p;
}

/** filterOf is view v's sample filter for the API (undefined: none). */
export function filterOf(v: ViewState): MessageInitShape<typeof SampleFilterSchema> | undefined {
  if (!v.fn && !v.xfn && !v.pids.length && !v.tids.length && !v.cpus.length && !v.spans) return undefined;
  return { function: v.fn, excludeFunction: v.xfn, pids: v.pids, tids: v.tids, cpus: v.cpus, inSpans: v.spans };
}

/** functionRegex is the RE2 expression (for fn, xfn) that matches frame
 * name exactly. */
export function functionRegex(name: string): string {
  return `^${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`;
}

/** filtered says whether view v filters its samples. */
export function filtered(v: ViewState): boolean {
  return filterOf(v) !== undefined;
}

/** permalink is the URL that opens profile id with view v. */
export function permalink(origin: string, id: string, v: ViewState): string {
  const q = writeView(v).toString();
  return `${origin}/p/${encodeURIComponent(id)}${q ? `?${q}` : ""}`;
}

// ---- shared views ---------------------------------------------------------------

/** writeSharedView writes what a shared view's URL holds: view v without
 * its event and range (the link's). */
export function writeSharedView(v: ViewState): URLSearchParams {
  const p = writeView(v);
  for (const k of ["event", "start", "end"]) p.delete(k);
  return p;
}

/** readSharedView reads a shared view's URL; the event and range are the
 * link's (range null: the whole profile). */
export function readSharedView(p: URLSearchParams, link: { event: string; range: Range | null }): ViewState {
  return { ...readView(p), event: link.event, range: link.range };
}

/** sharedPermalink is the URL that opens share link token with view v. */
export function sharedPermalink(origin: string, token: string, v: ViewState): string {
  return withQuery(`${origin}/s/${encodeURIComponent(token)}`, writeSharedView(v));
}

/** shareURL is the URL of a new share link (linkURL, as the server made
 * it) that opens with view v's rows, idle, zoom, search and orientation. */
export function shareURL(linkURL: string, v: ViewState): string {
  return withQuery(linkURL, writeSharedView(v));
}

function withQuery(url: string, p: URLSearchParams): string {
  const q = p.toString();
  return q ? `${url}?${q}` : url;
}

/** linkRange is a share link's range: null for a link to the whole
 * profile (either bound absent). */
export function linkRange(l: { startNanos?: bigint; endNanos?: bigint }): Range | null {
  return l.startNanos !== undefined && l.endNanos !== undefined ? { start: Number(l.startNanos), end: Number(l.endNanos) } : null;
}

/** linkState says whether a share link still works at time now (the
 * server sends revoked_at only for a revoked link). */
export function linkState(l: { expiresAt?: Timestamp; revokedAt?: Timestamp }, now: Date): "live" | "expired" | "revoked" {
  if (l.revokedAt) return "revoked";
  if (l.expiresAt && dateOf(l.expiresAt) <= now) return "expired";
  return "live";
}

// ---- changes with rules -----------------------------------------------------
// (Plain changes, such as a new range that keeps the zoomed frame if the new
// range has it, are spread into a copy by the page.)

/** chooseEvent switches to event (stored as "" when it is the profile's
 * default, so links stay short) and zooms out: the frame belongs to the
 * other event's graph. */
export function chooseEvent(v: ViewState, event: string, defaultEvent: string): ViewState {
  return { ...v, event: event === defaultEvent ? "" : event, frame: "" };
}

/** wholeProfile clears the range and the zoom. */
export function wholeProfile(v: ViewState): ViewState {
  return { ...v, range: null, frame: "" };
}

// ---- requests -----------------------------------------------------------------

/** heatmapRequest is the GetHeatmap request for profile id in view v. */
export function heatmapRequest(id: string, v: ViewState): MessageInitShape<typeof GetHeatmapRequestSchema> {
  return { profileId: id, event: v.event, rows: v.rows, includeIdle: v.idle, filter: filterOf(v) };
}

const SERIES_KEYS: Record<Exclude<Axis, "offset">, SeriesKey> = { cpu: SeriesKey.CPU, thread: SeriesKey.THREAD, process: SeriesKey.PROCESS };

/** seriesRequest is the GetHeatmapSeries request for profile id in view v
 * (whose axis is not the offset). */
export function seriesRequest(id: string, v: ViewState): MessageInitShape<typeof GetHeatmapSeriesRequestSchema> {
  return { profileId: id, event: v.event, includeIdle: v.idle, filter: filterOf(v), by: SERIES_KEYS[v.axis as Exclude<Axis, "offset">] ?? SeriesKey.THREAD, top: 50 };
}

/** flameRequest is the GetFlameGraph request for profile id in view v:
 * the selected range, or the whole profile when there is none. */
export function flameRequest(id: string, v: ViewState, format: FlameGraphFormat): MessageInitShape<typeof GetFlameGraphRequestSchema> {
  return {
    profileId: id,
    event: v.event,
    startNanos: v.range ? BigInt(v.range.start) : undefined,
    endNanos: v.range ? BigInt(v.range.end) : undefined,
    includeIdle: v.idle,
    format,
    filter: filterOf(v),
  };
}

/** diffSides are the two flame graph requests of view v's comparison: A,
 * the baseline (the rest of the profile, or the pinned range), and B, the
 * selection; null when there is nothing to compare (no comparison asked,
 * no selection, or no pinned range). */
export function diffSides(
  id: string,
  v: ViewState,
): { a: MessageInitShape<typeof GetFlameGraphRequestSchema>; b: MessageInitShape<typeof GetFlameGraphRequestSchema> } | null {
  if (v.cmp === "spans") {
    // The slow requests (slower than p95) against the rest, over the range or the whole profile.
    return { a: flameRequest(id, { ...v, spans: "faster:p95" }, 0 as FlameGraphFormat), b: flameRequest(id, { ...v, spans: "slower:p95" }, 0 as FlameGraphFormat) };
  }
  if (!v.cmp || !v.range || (v.cmp === "base" && !v.base)) return null;
  const b = flameRequest(id, v, 0 as FlameGraphFormat);
  const a = v.cmp === "rest" ? { ...b, outside: true } : flameRequest(id, { ...v, range: v.base }, 0 as FlameGraphFormat);
  return { a, b };
}

/** shareRequest is the CreateShareLink request for view v of profile id:
 * its range and event (the profile's default event named, so the link
 * keeps showing the same one), living ttlSeconds. */
export function shareRequest(id: string, v: ViewState, defaultEvent: string, ttlSeconds: number): MessageInitShape<typeof CreateShareLinkRequestSchema> {
  return {
    profileId: id,
    event: v.event || defaultEvent,
    startNanos: v.range ? BigInt(v.range.start) : undefined,
    endNanos: v.range ? BigInt(v.range.end) : undefined,
    ttlSeconds: BigInt(ttlSeconds),
  };
}

/** sharedHeatmapRequest is the GetSharedHeatmap request for view v (the
 * event and range are the link's). */
export function sharedHeatmapRequest(token: string, v: ViewState): MessageInitShape<typeof GetSharedHeatmapRequestSchema> {
  return { token, rows: v.rows, includeIdle: v.idle };
}

/** sharedFlameRequest is the GetSharedFlameGraph request for view v. */
export function sharedFlameRequest(token: string, v: ViewState, format: FlameGraphFormat): MessageInitShape<typeof GetSharedFlameGraphRequestSchema> {
  return { token, includeIdle: v.idle, format };
}

/** foldedFilename names a download of view v's flame graph as folded stacks. */
export function foldedFilename(app: string | undefined, v: ViewState): string {
  return `${app || "profile"}-${v.range ? `${formatSeconds(v.range.start)}-${formatSeconds(v.range.end)}` : "all"}.folded`;
}

// ---- sequencing ---------------------------------------------------------------

/** Latest orders one kind of request: begin() starts one and returns a
 * function that says whether it is still the latest begun. An answer is
 * shown only while that holds, so answers arriving out of order cannot
 * replace a newer view with an older one. */
export class Latest {
  private seq = 0;

  begin(): () => boolean {
    const mine = ++this.seq;
    return () => mine === this.seq;
  }
}
