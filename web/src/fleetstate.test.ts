import { create } from "@bufbuild/protobuf";
import { describe, expect, test } from "vitest";
import {
  diffNeedsHosts,
  diffWords,
  eventNames,
  eventsSearch,
  flameDiffersFromCells,
  fleetDiffRequest,
  heatmapHint,
  hostProfilesSearch,
  rangeCellSum,
  rangeTimelineRequest,
  shownRange,
  startColumn,
  untimedWords,
  accountingWords,
  compared,
  compareHost,
  compareShift,
  diffNames,
  filterFunctions,
  leftOutData,
  liveStatus,
  matchesNothing,
  liveTick,
  flameWaitsForHeatmap,
  emptyHeatmapWords,
  flameWords,
  nearestProfiles,
  profileSpan,
  profilesWithout,
  rangeOrWindow,
  selectionWords,
  spanWindow,
  timelineZoom,
  toggleLive,
  windowCheck,
  withCountedEvent,
  follow,
  fleetDiffSides,
  absRange,
  ceilSecond,
  columnAt,
  columnsOf,
  columnsRange,
  columnTime,
  countedWords,
  eventBase,
  flameRequest,
  fleetPath,
  floorSecond,
  formatUnix,
  heatmapRequest,
  hostProfile,
  hostProfiles,
  matchesLabels,
  narrowToHost,
  newFleet,
  NS,
  parseLabel,
  parseLabels,
  parseHosts,
  parseUnix,
  presetWindow,
  profileLink,
  profileRange,
  readFleet,
  relRange,
  selectionOf,
  timestampNanos,
  timestampOf,
  nested,
  parseWindow,
  WINDOW_PRESETS,
  SHIFTS,
  shiftedRange,
  wholeSeconds,
  windowOfProfiles,
  withWindow,
  writeFleet,
  zoomBack,
  zoomIn,
  zoomOut,
  zoomTo,
  type FleetState,
  type ListedProfile,
} from "./fleetstate";
import { FleetSelectionSchema } from "./gen/fleetscope/v1/fleet_pb";
import { FlameGraphFormat } from "./gen/fleetscope/v1/query_pb";
import { formatWallRange } from "./format";
import { cellsOfRange, rangeOfCells, type Grid } from "./heatmap/model";
import { readView } from "./viewstate";

const NOW = new Date("2026-11-23T10:00:00.250Z"); // unix 1795428000.25
const S = (sec: number | bigint) => BigInt(sec) * NS;

test("unix times are exact decimals of seconds, to the nanosecond", () => {
  expect(parseUnix("1795000012")).toBe(1795000012n * NS);
  expect(parseUnix("1795000012.34")).toBe(1795000012_340_000_000n);
  expect(parseUnix("1795000012.000000001")).toBe(1795000012_000_000_001n);
  expect(parseUnix(" 0.5 ")).toBe(500_000_000n);
  for (const bad of [null, undefined, "", "-1", "1e9", "1.", "1.0000000001", "12:00", "NaN", "0x10", "1795000012.3.4"]) expect(parseUnix(bad)).toBeNull();
  for (const ns of [0n, 1n, 1795000012_340_000_000n, 1795000012_000_000_001n, 4102444800n * NS]) expect(parseUnix(formatUnix(ns))).toBe(ns);
  expect(formatUnix(1795000012_340_000_000n)).toBe("1795000012.34");
  expect(formatUnix(S(1795000012))).toBe("1795000012");
  expect(() => formatUnix(-1n)).toThrow();
  // beyond what a double holds exactly
  expect(Number(1795000012_000_000_001n) === Number(1795000012_000_000_000n)).toBe(true);
  expect(formatUnix(1795000012_000_000_001n)).toBe("1795000012.000000001");
  expect(floorSecond(1795000012_340_000_000n)).toBe(S(1795000012));
  expect(ceilSecond(1795000012_340_000_000n)).toBe(S(1795000013));
  expect(ceilSecond(S(1795000012))).toBe(S(1795000012));
  expect(timestampOf(1795000012_340_000_000n)).toEqual({ seconds: 1795000012n, nanos: 340_000_000 });
  expect(timestampNanos({ seconds: 1795000012n, nanos: 5 })).toBe(1795000012_000_000_005n);
});

test("label conditions: k=v and k!=v", () => {
  expect(parseLabel("env=prod")).toEqual({ name: "env", value: "prod", not: false });
  expect(parseLabel("env!=prod")).toEqual({ name: "env", value: "prod", not: true });
  expect(parseLabel("a=b=c")).toEqual({ name: "a", value: "b=c", not: false });
  expect(parseLabel("a!b=c")).toEqual({ name: "a!b", value: "c", not: false });
  expect(parseLabel("env=")).toEqual({ name: "env", value: "", not: false });
  expect(parseLabel("=x")).toBeNull();
  expect(parseLabel("env")).toBeNull();
  expect(parseLabels("env=prod, region!=eu  tier=web")).toEqual({
    labels: [
      { name: "env", value: "prod", not: false },
      { name: "region", value: "eu", not: true },
      { name: "tier", value: "web", not: false },
    ],
  });
  expect(parseLabels("env=prod oops").error).toMatch(/"oops" is not a label condition/);
  expect(parseHosts(" web-1, web-2 web-1 ")).toEqual(["web-1", "web-2"]);
  const labels = { env: "prod", region: "us" };
  expect(matchesLabels(labels, [{ name: "env", value: "prod", not: false }])).toBe(true);
  expect(matchesLabels(labels, [{ name: "region", value: "eu", not: true }])).toBe(true);
  expect(matchesLabels(labels, [{ name: "region", value: "us", not: true }])).toBe(false);
  expect(matchesLabels(labels, [{ name: "tier", value: "web", not: true }])).toBe(true); // no label: matches !=
  expect(matchesLabels(labels, [{ name: "tier", value: "web", not: false }])).toBe(false);
  expect(matchesLabels({ constructor: "x" }, [{ name: "constructor", value: "x", not: false }])).toBe(true);
  expect(matchesLabels({}, [{ name: "constructor", value: "x", not: true }])).toBe(true);
});

function full(): FleetState {
  return {
    app: "check out",
    hosts: ["web-1", "web 2"],
    labels: [
      { name: "env", value: "prod", not: false },
      { name: "region", value: "e&u", not: true },
    ],
    from: S(1795000000),
    to: 1795000030_500_000_000n,
    zooms: [
      { from: S(1794996400), to: S(1795003600) },
      { from: 1794999999_000_000_001n, to: S(1795000060) },
    ],
    event: "cpu-clock",
    idle: true,
    rows: 100,
    range: { start: 1795000002_400_000_000n, end: 1795000002_480_000_001n },
    frame: "java;start_thread;GCTaskThread::run",
    search: "/GC|drain/",
    orient: "flame",
    fn: "GC",
    xfn: "Idle",
    cmp: "labels",
    chost: "",
    shift: "",
    la: "version=1",
    lb: "version!=1",
    norm: true,
    live: true,
  };
}

test("a comparison's sides: a host against the rest, label against label", () => {
  const s = { ...full(), cmp: "host" as const, chost: "web-1" };
  const host = fleetDiffSides(s, ["web-1", "web 2", "web-3"])!;
  expect(host.b.hosts).toEqual(["web-1"]);
  expect(host.a.hosts).toEqual(["web 2", "web-3"]);
  expect(host.a.from).toEqual(host.b.from); // the range, on both sides
  expect(host.a.filter).toEqual({ function: "GC", excludeFunction: "Idle" });
  expect(fleetDiffSides(s, ["web-1"])).toBeNull(); // no rest
  const labels = fleetDiffSides(full(), [])!;
  expect(labels.a.labels?.at(-1)).toEqual({ name: "version", value: "1", notEqual: false });
  expect(labels.b.labels?.at(-1)).toEqual({ name: "version", value: "1", notEqual: true });
  expect(fleetDiffSides({ ...full(), lb: "" }, [])).toBeNull();
  expect(fleetDiffSides({ ...full(), cmp: "" }, [])).toBeNull();
});

test("the same window a day or a week earlier: a time-shifted comparison, in the URL, its sides exact", () => {
  expect(SHIFTS.map((x) => [x.id, x.seconds])).toEqual([
    ["1d", 86400],
    ["1w", 7 * 86400],
  ]);
  // a 7-day window against the same 7 days a day earlier
  const w = presetWindow(7 * 86400, NOW);
  const s = { ...newFleet("checkout", w.from, w.to), cmp: "shift" as const, shift: "1d" };
  expect(writeFleet(s).toString()).toBe(`app=checkout&from=${1795428001 - 7 * 86400}&to=1795428001&cmp=shift&shift=1d`);
  expect(readFleet(writeFleet(s), NOW).state).toEqual(s);
  const sides = fleetDiffSides(s, [])!;
  expect(sides.b.from).toEqual(timestampOf(w.from));
  expect(sides.b.to).toEqual(timestampOf(w.to));
  expect(sides.a.from).toEqual(timestampOf(w.from - 86400n * NS));
  expect(sides.a.to).toEqual(timestampOf(w.to - 86400n * NS));
  expect(sides.a.app).toBe("checkout");
  // a range: the range's nanoseconds, shifted a week, with the selection's hosts, labels, event and filter on both sides
  const f = { ...full(), cmp: "shift" as const, shift: "1w" };
  expect(shiftedRange(f)).toEqual({ start: 1795000002_400_000_000n - 7n * 86400n * NS, end: 1795000002_480_000_001n - 7n * 86400n * NS });
  const r = fleetDiffSides(f, ["web-9"])!;
  expect(r.a.from).toEqual({ seconds: 1795000002n - 7n * 86400n, nanos: 400_000_000 });
  expect(r.a.to).toEqual({ seconds: 1795000002n - 7n * 86400n, nanos: 480_000_001 });
  expect(r.b.from).toEqual({ seconds: 1795000002n, nanos: 400_000_000 });
  for (const x of [r.a, r.b]) {
    expect([x.hosts, x.event, x.includeIdle, x.filter]).toEqual([["web-1", "web 2"], "cpu-clock", true, { function: "GC", excludeFunction: "Idle" }]);
    expect(x.labels).toHaveLength(2); // no label condition added
  }
  expect(readFleet(writeFleet(f), NOW).state).toEqual(f);
  // an unknown shift is a day; shift without cmp=shift is dropped; before 1970 there is nothing to compare
  expect(readFleet(new URLSearchParams("app=a&from=1795000000&to=1795000030&cmp=shift&shift=2h"), NOW).state.shift).toBe("1d");
  expect(readFleet(new URLSearchParams("app=a&from=1795000000&to=1795000030&shift=1w"), NOW).state).toMatchObject({ cmp: "", shift: "" });
  expect(fleetDiffSides({ ...newFleet("a", S(100), S(200)), cmp: "shift", shift: "1d" }, [])).toBeNull();
});

test("URL round trip: every part of the view, exactly", () => {
  const s = full();
  const q = writeFleet(s);
  expect(q.get("from")).toBe("1795000000");
  expect(q.get("to")).toBe("1795000030.5");
  expect(q.get("start")).toBe("1795000002.4");
  expect(q.get("end")).toBe("1795000002.480000001");
  expect(q.getAll("label")).toEqual(["env=prod", "region!=e&u"]);
  expect(q.getAll("host")).toEqual(["web-1", "web 2"]);
  expect(q.getAll("zoom")).toEqual(["1794996400-1795003600", "1794999999.000000001-1795000060"]);
  const back = readFleet(new URLSearchParams(q.toString()), NOW);
  expect(back.defaulted).toBe(false);
  expect(back.state).toEqual(s);
  const path = fleetPath(s);
  expect(path.startsWith("/fleet?app=check+out&")).toBe(true);
  expect(readFleet(new URL(path, "http://x").searchParams, NOW).state).toEqual(s);
});

test("defaults are left out of the URL and read back", () => {
  const s = newFleet("checkout", S(1795000000), S(1795000030));
  expect(writeFleet(s).toString()).toBe("app=checkout&from=1795000000&to=1795000030");
  expect(readFleet(writeFleet(s), NOW)).toEqual({ state: s, defaulted: false });
});

test("a missing or bad window is the last hour, said so; a range outside the window is dropped", () => {
  for (const q of ["app=a", "app=a&from=1795000000", "app=a&from=x&to=1795000030", "app=a&from=1795000030&to=1795000000", `app=a&from=1700000000&to=${1700000000 + 32 * 86400}`]) {
    const r = readFleet(new URLSearchParams(q), NOW);
    expect(r.defaulted).toBe(true);
    expect(r.state.to).toBe(S(1795428001)); // now, rounded up to a whole second
    expect(r.state.from).toBe(S(1795428001 - 3600));
  }
  // a live view's: the last 3 minutes
  const live = readFleet(new URLSearchParams("app=a&live=1"), NOW).state;
  expect([live.from, live.to]).toEqual([S(1795428001 - 180), S(1795428001)]);
  const out = readFleet(new URLSearchParams("app=a&from=1795000000&to=1795000030&start=1795000029&end=1795000031"), NOW);
  expect(out.state.range).toBeNull();
  const empty = readFleet(new URLSearchParams("app=a&from=1795000000&to=1795000030&start=1795000002&end=1795000002"), NOW);
  expect(empty.state.range).toBeNull();
  const bad = readFleet(new URLSearchParams("app=a&from=1795000000&to=1795000030&rows=0&orient=sideways&label=oops&host="), NOW).state;
  expect([bad.rows, bad.orient, bad.labels, bad.hosts]).toEqual([50, "icicle", [], []]);
});

test("a zoom stack from a URL keeps only windows that hold the next and the window", () => {
  const q = (zooms: string[]) => new URLSearchParams([["app", "a"], ["from", "1795000000"], ["to", "1795000030"], ...zooms.map((z) => ["zoom", z])]);
  const stack = (zooms: string[]) => readFleet(q(zooms), NOW).state.zooms.map((w) => [w.from, w.to]);
  expect(stack(["1794992800-1795007200", "1795000000-1795000060"])).toEqual([
    [S(1794992800), S(1795007200)],
    [S(1795000000), S(1795000060)],
  ]);
  // not nested in that order, the window itself, not holding the window, not windows at all
  expect(stack(["1795000000-1795000060", "1794992800-1795007200"])).toEqual([[S(1794992800), S(1795007200)]]);
  expect(stack(["1795000000-1795000030"])).toEqual([]);
  expect(stack(["1795000010-1795000060", "1795000060-1795000000", "x-1", "1795000000", `1790000000-${1790000000 + 32 * 86400}`])).toEqual([]);
  expect(parseWindow("1795000000.25-1795000001")).toEqual({ from: 1795000000_250_000_000n, to: S(1795000001) });
  expect(nested([{ from: S(0), to: S(10) }], { from: S(0), to: S(10) })).toEqual([]);
});

test("presets end now (the current second included), in whole seconds", () => {
  expect(WINDOW_PRESETS.map((p) => [p.id, p.seconds])).toEqual([
    ["5m", 300],
    ["15m", 900],
    ["1h", 3600],
    ["6h", 6 * 3600],
    ["24h", 86400],
    ["7d", 7 * 86400],
    ["30d", 30 * 86400],
  ]);
  // 30 days is a window the server takes (at most 31), in at most 1,000 columns
  const month = presetWindow(30 * 86400, NOW);
  expect(readFleet(new URLSearchParams(`app=a&from=${formatUnix(month.from)}&to=${formatUnix(month.to)}`), NOW).defaulted).toBe(false);
  // (columns of whole minutes, 2,592 s rounded up to 44 min, the first at a multiple of it)
  expect(columnsOf(month.from, month.to)).toEqual({ startSecond: Math.floor((1795428001 - 30 * 86400) / 2640) * 2640, secondsPerColumn: 2640, columns: 983 });
  for (const p of WINDOW_PRESETS) expect(presetWindow(p.seconds, NOW)).toEqual({ from: S(1795428001 - p.seconds), to: S(1795428001) });
  expect(presetWindow(300, NOW)).toEqual({ from: S(1795428001 - 300), to: S(1795428001) });
  expect(presetWindow(7 * 86400, new Date("2026-11-23T10:00:00Z"))).toEqual({ from: S(1795428000 - 7 * 86400), to: S(1795428000) });
});

test("columns: the server's rule, and column times", () => {
  // whole seconds the window touches: [floor(from), floor(to - 1ns) + 1)
  expect(columnsOf(S(1795000000), S(1795000030))).toEqual({ startSecond: 1795000000, secondsPerColumn: 1, columns: 30 });
  expect(columnsOf(1795000000_500_000_000n, 1795000030_000_000_001n)).toEqual({ startSecond: 1795000000, secondsPerColumn: 1, columns: 31 });
  expect(columnsOf(S(0), S(1000)).secondsPerColumn).toBe(1);
  expect(columnsOf(S(0), S(1001))).toEqual({ startSecond: 0, secondsPerColumn: 2, columns: 501 });
  expect(columnsOf(S(0), S(3600))).toEqual({ startSecond: 0, secondsPerColumn: 4, columns: 900 });
  expect(columnsOf(S(0), S(86400))).toEqual({ startSecond: 0, secondsPerColumn: 120, columns: 720 }); // 87 s, rounded up to whole minutes
  expect(columnsOf(S(0), S(7 * 86400))).toEqual({ startSecond: 0, secondsPerColumn: 660, columns: 917 });
  // a column of a minute or more: whole minutes, column 0 at a multiple of its length
  expect(columnsOf(S(1795000001), S(1795000001 + 7 * 86400))).toEqual({ startSecond: 1794999360, secondsPerColumn: 660, columns: 918 });
  expect(columnsOf(S(0), S(60), 60)).toEqual({ startSecond: 0, secondsPerColumn: 60, columns: 1 });
  expect(columnsOf(S(0), S(60), 10)).toEqual({ startSecond: 0, secondsPerColumn: 10, columns: 6 });
  // half a minute or more: widened to whole minutes (9 h: 33 s, then 60 s);
  // 5 to 29 s: to whole tens of seconds (6 h: 22 s, then 30 s; 2 h: 8 s, then 10 s)
  expect(columnsOf(S(0), S(9 * 3600))).toEqual({ startSecond: 0, secondsPerColumn: 60, columns: 540 });
  expect(columnsOf(S(0), S(6 * 3600))).toEqual({ startSecond: 0, secondsPerColumn: 30, columns: 720 });
  expect(columnsOf(S(0), S(2 * 3600))).toEqual({ startSecond: 0, secondsPerColumn: 10, columns: 720 });
  expect(columnsOf(S(0), S(600), 30)).toEqual({ startSecond: 0, secondsPerColumn: 60, columns: 10 });
  expect(columnsOf(S(0), S(600), 29)).toEqual({ startSecond: 0, secondsPerColumn: 30, columns: 20 });
  expect(columnsOf(S(0), S(600), 5)).toEqual({ startSecond: 0, secondsPerColumn: 10, columns: 60 });
  expect(columnsOf(S(0), S(600), 4)).toEqual({ startSecond: 0, secondsPerColumn: 4, columns: 150 });
  expect(columnsOf(S(1795000007), S(1795000007 + 6 * 3600))).toEqual({ startSecond: 1794999990, secondsPerColumn: 30, columns: 721 });
  for (const n of [1, 999, 1000, 1001, 1999, 2000, 2001, 3600, 4001, 7200, 6 * 3600, 29001, 86400, 31 * 86400]) {
    const c = columnsOf(S(1795000000), S(1795000000 + n));
    expect(c.columns).toBeLessThanOrEqual(1000);
    const lead = 1795000000 - c.startSecond; // before the window, when columns are aligned
    expect(lead).toBeGreaterThanOrEqual(0);
    expect(lead).toBeLessThan(c.secondsPerColumn);
    expect(c.columns * c.secondsPerColumn).toBeGreaterThanOrEqual(n + lead);
    expect((c.columns - 1) * c.secondsPerColumn).toBeLessThan(n + lead);
  }
  const c = columnsOf(S(1795000000), S(1795003600));
  expect(columnTime(c, 0)).toBe(1795000000);
  expect(columnTime(c, 3)).toBe(1795000012);
  expect(columnAt(c, 1795000013)).toBe(3);
  expect(columnAt(c, 1795000015)).toBe(3);
  expect(columnAt(c, 1795000016)).toBe(4);
  expect(columnAt(c, 1794999999)).toBe(-1);
  expect(columnsRange(c, 5, 3)).toEqual({ start: S(1795000012), end: S(1795000024) });
});

test("ranges: absolute ↔ relative to the heatmap, and the cells they are", () => {
  const r = { start: 1795000002_400_000_000n, end: 1795000002_480_000_000n };
  const rel = relRange(r, 1795000000);
  expect(rel).toEqual({ start: 2_400_000_000, end: 2_480_000_000 });
  expect(absRange(rel, 1795000000)).toEqual(r);
  // the heatmap model's cells, in a fleet heatmap (firstColumn 0)
  const g: Grid = { rows: 50, secondsPerColumn: 1, firstColumn: 0, cols: 30 };
  expect(cellsOfRange(rel, g)).toEqual({ first: 2 * 50 + 20, last: 2 * 50 + 23, aligned: true });
  // a drag over columns 3..5 of 4-second columns is their whole seconds, in unix time
  const g4: Grid = { rows: 50, secondsPerColumn: 4, firstColumn: 0, cols: 900 };
  expect(absRange(rangeOfCells(5 * 50 + 10, 3 * 50 + 40, g4), 1795000000)).toEqual(columnsRange(columnsOf(S(1795000000), S(1795003600)), 3, 5));
});

test("zoom in: the selection's whole seconds become the window (finer columns), the range stays", () => {
  const s = { ...newFleet("a", S(1795000000), S(1795003600)), frame: "java", range: { start: S(1795000012), end: S(1795000024) } };
  expect(columnsOf(s.from, s.to).secondsPerColumn).toBe(4);
  const z = zoomIn(s, s.range);
  expect([z.from, z.to, z.range, z.frame]).toEqual([S(1795000012), S(1795000024), s.range, "java"]);
  expect(columnsOf(z.from, z.to)).toEqual({ startSecond: 1795000012, secondsPerColumn: 1, columns: 12 });
  // a sub-second range: the seconds it touches
  const sub = { start: 1795000002_400_000_000n, end: 1795000003_100_000_000n };
  const z2 = zoomIn(s, sub);
  expect([z2.from, z2.to, z2.range]).toEqual([S(1795000002), S(1795000004), sub]);
  expect(wholeSeconds(z2)).toBe(true);
  expect(wholeSeconds({ from: sub.start, to: sub.end })).toBe(false);
});

test("zoom out doubles the window about its middle, up to 31 days; ranges outside are dropped", () => {
  const s = { ...newFleet("a", S(1795000010), S(1795000040)), range: { start: S(1795000012), end: S(1795000013) }, frame: "x" };
  const z = zoomOut(s);
  expect([z.from, z.to]).toEqual([S(1795000025 - 30), S(1795000025 + 30)]);
  expect(z.range).toEqual(s.range);
  const long = zoomOut(newFleet("a", S(1795000000), S(1795000000 + 20 * 86400)));
  expect(long.to - long.from).toBe(S(31 * 86400));
  expect(zoomOut(newFleet("a", S(10), S(20)))).toMatchObject({ from: S(5), to: S(25) });
  expect(zoomOut(newFleet("a", S(2), S(12)))).toMatchObject({ from: 0n, to: S(20) }); // not before 1970
  const moved = withWindow(s, S(1795000020), S(1795000030));
  expect([moved.range, moved.frame]).toEqual([null, ""]);
});

test("the zoom stack: zooming in pushes the window, backing out pops it; other windows keep the entries that hold them", () => {
  // a 2-hour window: 8-s columns, widened to 10 s
  const outer = { from: S(1794996400), to: S(1795003600) };
  const s = newFleet("a", outer.from, outer.to);
  expect(columnsOf(s.from, s.to).secondsPerColumn).toBe(10);
  // select columns 360..362 (30 s from 1795000000) and zoom: 1-s columns, the stack holds the 2 hours
  const cols = columnsRange(columnsOf(s.from, s.to), 360, 362);
  expect(cols).toEqual({ start: S(1795000000), end: S(1795000030) });
  const z1 = zoomIn({ ...s, range: cols }, cols);
  expect([z1.from, z1.to, z1.zooms, z1.range]).toEqual([S(1795000000), S(1795000030), [outer], cols]);
  expect(columnsOf(z1.from, z1.to).secondsPerColumn).toBe(1);
  expect(readFleet(writeFleet(z1), NOW).state).toEqual(z1); // in the permalink
  // a second zoom, on a GC stripe
  const gc = { start: 1795000002_400_000_000n, end: 1795000002_480_000_000n };
  const z2 = zoomIn({ ...z1, range: gc }, gc);
  expect([z2.from, z2.to, z2.zooms]).toEqual([S(1795000002), S(1795000003), [outer, { from: S(1795000000), to: S(1795000030) }]]);
  // back out one step, then to the outermost: the range stays selected
  const b1 = zoomBack(z2);
  expect([b1.from, b1.to, b1.zooms, b1.range]).toEqual([S(1795000000), S(1795000030), [outer], gc]);
  const b0 = zoomBack(z2, 0);
  expect([b0.from, b0.to, b0.zooms, b0.range]).toEqual([outer.from, outer.to, [], gc]);
  expect(zoomBack(b0)).toBe(b0); // nothing to back out to
  // zooming to the same window pushes nothing
  expect(zoomTo(z1, z1.from, z1.to).zooms).toEqual([outer]);
  // a window elsewhere (a preset, typed times) drops the entries that do not hold it
  expect(withWindow(z2, S(1795000001), S(1795000020)).zooms).toEqual(z2.zooms);
  expect(withWindow(z2, S(1795000010), S(1795000040)).zooms).toEqual([outer]);
  expect(withWindow(z2, S(1795428001 - 900), S(1795428001)).zooms).toEqual([]);
  // zoom out ×2 keeps those that still hold the wider window
  const o = zoomOut(z1);
  expect([o.from, o.to, o.zooms]).toEqual([S(1794999985), S(1795000045), [outer]]);
});

test("requests: the selection, and the flame graph of the range or the window", () => {
  const s = full();
  const sel = create(FleetSelectionSchema, selectionOf(s));
  expect(sel.app).toBe("check out");
  expect(sel.hosts).toEqual(["web-1", "web 2"]);
  expect(sel.labels.map((l) => [l.name, l.value, l.notEqual])).toEqual([
    ["env", "prod", false],
    ["region", "e&u", true],
  ]);
  expect([sel.from?.seconds, sel.from?.nanos, sel.to?.seconds, sel.to?.nanos]).toEqual([1795000000n, 0, 1795000030n, 500_000_000]);
  expect([sel.event, sel.includeIdle]).toEqual(["cpu-clock", true]);
  expect(heatmapRequest(s).rows).toBe(100);
  const f = flameRequest(s, FlameGraphFormat.TREE);
  expect(f.selection?.from).toEqual({ seconds: 1795000002n, nanos: 400_000_000 });
  expect(f.selection?.to).toEqual({ seconds: 1795000002n, nanos: 480_000_001 });
  const w = flameRequest({ ...s, range: null }, FlameGraphFormat.TREE);
  expect([w.selection?.from, w.selection?.to]).toEqual([timestampOf(s.from), timestampOf(s.to)]);
  expect(narrowToHost(s, "web-9")).toMatchObject({ hosts: ["web-9"], range: s.range, frame: s.frame });
});

const ts = (ns: bigint) => timestampOf(ns);
function prof(id: string, host: string, start: bigint, end: bigint, extra: Partial<ListedProfile> = {}): ListedProfile {
  return { id, host, labels: {}, timed: true, startTime: ts(start), endTime: ts(end), defaultEvent: "cpu-clock:pppH", events: [{ name: "cpu-clock:pppH" }, { name: "context-switches" }], ...extra };
}

test("a window from search results: the span of the timed profiles listed", () => {
  const ps = [prof("a", "h", 1795000000_250_000_000n, 1795000029_900_000_000n), prof("b", "h", S(1795000010), 1795000045_000_000_001n), prof("u", "h", S(1), S(2), { timed: false })];
  expect(windowOfProfiles(ps, NOW)).toEqual({ from: S(1795000000), to: S(1795000046) });
  expect(windowOfProfiles([prof("u", "h", S(1), S(2), { timed: false })], NOW)).toEqual(presetWindow(3600, NOW));
  const long = windowOfProfiles([prof("a", "h", S(1700000000), S(1700000000 + 40 * 86400))], NOW);
  expect(long).toEqual({ from: S(1700000000 + 40 * 86400 + 1 - 31 * 86400), to: S(1700000000 + 40 * 86400 + 1) });
});

test("a host's profile at the same range: the one holding most of it, on its own clock", () => {
  const r = { start: S(1795000010), end: S(1795000020) };
  const ps = [
    prof("early", "web-1", S(1795000000), S(1795000012)), // 2 s of the range
    prof("late", "web-1", S(1795000012), S(1795000030)), // 8 s
    prof("other", "web-2", S(1795000000), S(1795000030)),
    prof("before", "web-1", S(1794999000), S(1794999100)),
    prof("untimed", "web-1", S(1795000000), S(1795000030), { timed: false }),
    prof("canary", "web-1", S(1795000000), S(1795000030), { labels: { env: "canary" } }),
  ];
  expect(hostProfiles(ps, "web-1", [{ name: "env", value: "canary", not: true }], r).map((p) => p.id)).toEqual(["late", "early"]);
  expect(hostProfiles(ps, "web-1", [{ name: "env", value: "canary", not: false }], r).map((p) => p.id)).toEqual(["canary"]);
  // the profile's clock: relative to its start second's absolute time, which may have a fraction
  const anchored = prof("b", "web-1", 1795000009_750_000_000n, S(1795000030));
  expect(profileRange(anchored, r)).toEqual({ start: 250_000_000, end: 10_250_000_000 });
  expect(profileRange(prof("x", "h", S(1795000015), S(1795000030)), r)).toEqual({ start: 0, end: 5_000_000_000 }); // starts inside: from 0
  expect(profileRange(prof("x", "h", S(1795000020), S(1795000030)), r)).toBeNull();
  const s = { ...newFleet("a", S(1795000000), S(1795000030)), range: r, rows: 100, idle: true, search: "GC", orient: "flame" as const };
  const link = profileLink(anchored, s, "context-switches");
  expect(link.startsWith("/p/b?")).toBe(true);
  const v = readView(new URL(link, "http://x").searchParams);
  expect(v).toMatchObject({ event: "context-switches", rows: 100, idle: true, range: { start: 250_000_000, end: 10_250_000_000 }, search: "GC", orient: "flame" });
  // the profile's default event is left out of the link; the base name finds "cpu-clock:pppH"
  expect(readView(new URL(profileLink(anchored, s, "cpu-clock"), "http://x").searchParams).event).toBe("");
  expect(readView(new URL(profileLink(anchored, { ...s, range: null }, ""), "http://x").searchParams).range).toEqual({ start: 0, end: 20_250_000_000 });
});

test("the host's profile to open: the one covering the range's start, else the earliest", () => {
  const r = { start: S(1795000010), end: S(1795000020) };
  const pick = (ps: ListedProfile[], range = r) => hostProfile(ps, "web-1", [], range)?.id ?? null;
  const early = prof("early", "web-1", S(1795000000), S(1795000012)); // covers the start, 2 s of the range
  const late = prof("late", "web-1", S(1795000012), S(1795000030)); // 8 s, after the start
  expect(pick([late, early])).toBe("early");
  // several cover the start: the one sharing most of the range
  const long = prof("long", "web-1", S(1795000005), S(1795000025));
  expect(pick([early, long, late])).toBe("long");
  // none covers the start: the earliest to start
  const later = prof("later", "web-1", S(1795000015), S(1795000040));
  expect(pick([later, late])).toBe("late");
  // the last sample at the range's start covers it
  expect(pick([late, prof("edge", "web-1", S(1795000000), S(1795000010))])).toBe("edge");
  expect(pick([prof("before", "web-1", S(1795000000), S(1795000009))])).toBeNull();
  expect(pick([prof("other", "web-2", S(1795000000), S(1795000030))])).toBeNull();
});

test("event base names, as the server strips perf's modifiers", () => {
  expect(eventBase("cpu-clock:pppH")).toBe("cpu-clock");
  expect(eventBase("cpu-clock")).toBe("cpu-clock");
  expect(eventBase("sched:sched_switch")).toBe("sched:sched_switch");
  expect(eventBase("probe_libc:malloc:u")).toBe("probe_libc:malloc");
  expect(eventBase(":u")).toBe(":u");
});

test("a live view follows now, keeping its window's length", () => {
  const s = { ...full(), range: null, zooms: [] };
  const len = s.to - s.from;
  const next = follow(s, new Date(1795000100_250));
  expect(next.to).toBe(S(1795000101));
  expect(next.to - next.from).toBe(len);
  expect(follow(next, new Date(1795000100_900))).toBe(next); // the same second: no change
});

test("what an answer counted: a live stream's batches are one stream", () => {
  expect(countedWords({ profiles: 3, liveSegments: 0, liveStreams: 0 })).toBe("3 profiles");
  expect(countedWords({ profiles: 1, liveSegments: 0, liveStreams: 0 })).toBe("1 profile");
  expect(countedWords({ profiles: 19, liveSegments: 19, liveStreams: 1 })).toBe("1 live stream (19 batches)");
  expect(countedWords({ profiles: 1, liveSegments: 1, liveStreams: 1 })).toBe("1 live stream (1 batch)");
  expect(countedWords({ profiles: 21, liveSegments: 19, liveStreams: 2 })).toBe("2 profiles and 2 live streams (19 batches)");
  expect(countedWords({ profiles: 1200, liveSegments: 0, liveStreams: 0 }, (n) => n.toLocaleString("en-US"))).toBe("1,200 profiles");
  // an answer from an older server (no live fields) counts profiles
  expect(countedWords({ profiles: 4, liveSegments: 0, liveStreams: 0 })).toBe("4 profiles");
});

// ---- the fleet view's changes and words ---------------------------------------------

describe("the fleet view's changes", () => {
  const s = newFleet("api", 100n * NS, 160n * NS);
  const r = { start: 110n * NS + 5n, end: 120n * NS };

  test("rangeOrWindow: the range, else the window", () => {
    expect(rangeOrWindow(s)).toEqual({ start: 100n * NS, end: 160n * NS });
    expect(rangeOrWindow({ ...s, range: r })).toBe(r);
  });

  test("withCountedEvent names the heatmap's event only when none is chosen", () => {
    expect(withCountedEvent(s, "cycles").event).toBe("cycles");
    expect(withCountedEvent(s, undefined)).toBe(s);
    expect(withCountedEvent(s, "")).toBe(s);
    const chosen = { ...s, event: "cpu-clock" };
    expect(withCountedEvent(chosen, "cycles")).toBe(chosen);
  });

  test("a drag on the timeline zooms to its whole seconds, inside the window", () => {
    const z = timelineZoom(s, r)!;
    expect([z.from, z.to]).toEqual([110n * NS, 120n * NS]);
    expect(z.zooms).toEqual([{ from: 100n * NS, to: 160n * NS }]);
    const wide = timelineZoom(s, { start: 50n * NS, end: 130n * NS + 1n })!;
    expect([wide.from, wide.to]).toEqual([100n * NS, 131n * NS]);
    expect(timelineZoom(s, { start: 0n, end: 999n * NS })).toBeNull(); // the window already
  });

  test("a comparison drops the zoomed frame", () => {
    const z = { ...s, frame: "main;f", shift: "1d", cmp: "shift" as const };
    expect(compareHost(z, "h1")).toMatchObject({ cmp: "host", chost: "h1", shift: "", frame: "" });
    expect(compareShift(z, "1w")).toMatchObject({ cmp: "shift", shift: "1w", frame: "" });
    expect(compareShift(z, "")).toMatchObject({ cmp: "", shift: "", frame: "" });
    expect(compared(z, { cmp: "labels", la: "env=a", lb: "env=b" })).toMatchObject({ cmp: "labels", la: "env=a", lb: "env=b", frame: "" });
  });

  test("a comparison's sides are named", () => {
    expect(diffNames({ ...s, cmp: "host", chost: "h1" })).toEqual({ a: "the rest of the fleet", b: "h1" });
    expect(diffNames({ ...s, cmp: "shift", shift: "1d" })).toEqual({ a: "the same window a day earlier", b: "this window" });
    expect(diffNames({ ...s, cmp: "shift", shift: "1w", range: r })).toEqual({ a: "the same range a week earlier", b: "this range" });
    expect(diffNames({ ...s, cmp: "labels", la: "env=a", lb: "env=b" })).toEqual({ a: "env=a", b: "env=b" });
  });

  test("a function filter counts everything again from the root", () => {
    expect(filterFunctions({ ...s, frame: "a;b", xfn: "x" }, "f")).toMatchObject({ fn: "f", xfn: "", frame: "" });
    expect(filterFunctions(s, "", "g")).toMatchObject({ fn: "", xfn: "g" });
  });

  test("live: off, following now, or paused on a range", () => {
    expect(liveStatus(s)).toEqual({ state: "off", label: "Live" });
    const live = toggleLive(s);
    expect(live.live).toBe(true);
    expect(liveStatus(live).state).toBe("following");
    expect(liveStatus({ ...live, range: r }).state).toBe("paused");
    expect(toggleLive(live).live).toBe(false);
  });
});

describe("the fleet view's words", () => {
  const acc = (profiles: number, leftOut: Record<string, number> = {}) => ({ event: "cycles", profiles, leftOut, liveSegments: 0, liveStreams: 0 });

  test("accounting: what was counted and what was left out, by reason", () => {
    expect(accountingWords(undefined)).toBe("");
    expect(accountingWords(acc(3))).toBe("3 profiles");
    expect(accountingWords(acc(1, { "no per-sample times": 1 }))).toBe("1 profile; 1 left out (no per-sample times)");
    expect(accountingWords(acc(1200, { b: 2, a: 1, c: 0 }))).toBe("1,200 profiles; 3 left out (1 a; 2 b)");
    expect(accountingWords({ ...acc(1440, { a: 1 }), rawFiles: 12 })).toBe("1,440 profiles; 12 read from raw files (past the sample tier); 1 left out (a)");
    expect(profilesWithout(1)).toBe("1 profile without per-sample times");
    expect(profilesWithout(2)).toBe("2 profiles without per-sample times");
  });

  test("left out as data, reasons in order", () => {
    expect(leftOutData(undefined)).toBe("{}");
    expect(leftOutData(acc(0, { z: 1, a: 2 }))).toBe('{"a":2,"z":1}');
  });

  test("nothing matches: no profile counted and none left out", () => {
    expect(matchesNothing(undefined)).toBe(true);
    expect(matchesNothing(acc(0))).toBe(true);
    expect(matchesNothing(acc(0, { x: 0 }))).toBe(true);
    expect(matchesNothing(acc(0, { x: 1 }))).toBe(false);
    expect(matchesNothing(acc(1))).toBe(false);
  });

  test("what the selection asks for", () => {
    const s = { ...newFleet("api", 0n, 3600n * NS), hosts: ["a", "b"], labels: [{ name: "env", value: "prod", not: false }, { name: "dc", value: "x", not: true }], fn: "f", xfn: "g", event: "cycles" };
    const w = selectionWords(s);
    expect(w.startsWith("app api, hosts a, b, labels env=prod dc!=x, with function f, without function g, event cycles, in ")).toBe(true);
    expect(w.endsWith(")")).toBe(true);
    expect(selectionWords({ ...s, hosts: ["a"], labels: [], fn: "", xfn: "", event: "" })).toMatch(/^app api, host a, in /);
  });

  test("the whole window's graph checked against the heatmap", () => {
    const s = newFleet("api", 100n * NS, 160n * NS);
    expect(windowCheck(s, { total: 5, profiles: 2 }, { total: 5, profiles: 2 })).toEqual({ kind: "agree" });
    expect(windowCheck(s, { total: 5, profiles: 2 }, { total: 6, profiles: 2 })).toEqual({ kind: "disagree", total: 6 });
    expect(windowCheck(s, { total: 5, profiles: 2 }, { total: 9, profiles: 3 })).toEqual({ kind: "untimed", profiles: 1 });
    expect(windowCheck(s, { total: 0, profiles: 1 }, { total: 0, profiles: 1 })).toBeNull(); // 0 against 0
    expect(windowCheck(s, { total: 5, profiles: 2 }, null)).toBeNull(); // no graph yet
    expect(windowCheck({ ...s, range: { start: 110n * NS, end: 120n * NS } }, { total: 5, profiles: 2 }, { total: 5, profiles: 2 })).toBeNull();
    expect(windowCheck({ ...s, to: 160n * NS + 1n }, { total: 5, profiles: 2 }, { total: 5, profiles: 2 })).toBeNull(); // not whole seconds
    expect(windowCheck(s, { total: 5, profiles: undefined }, { total: 5, profiles: 2 })).toEqual({ kind: "untimed", profiles: 2 });
  });

  test("a listed profile's span and the window that shows it", () => {
    const p = { timed: true, startTime: timestampOf(10n * NS + 5n), endTime: timestampOf(12n * NS) };
    expect(profileSpan(p)).toEqual({ start: 10n * NS + 5n, end: 12n * NS });
    expect(profileSpan({ timed: false })).toEqual({ start: 0n, end: 0n });
    expect(profileSpan({ timed: true, startTime: timestampOf(5n * NS), endTime: timestampOf(4n * NS) })).toEqual({ start: 5n * NS, end: 5n * NS });
    expect(spanWindow(profileSpan(p))).toEqual({ from: 10n * NS, to: 12n * NS });
    expect(spanWindow({ start: 7n * NS, end: 7n * NS })).toEqual({ from: 7n * NS, to: 8n * NS }); // at least a second
  });
});

test("nearestProfiles: the latest to end of the newest page, the first to start of the last", () => {
  const p = (id: string, start: bigint, end: bigint) => ({ id, timed: true, startTime: timestampOf(start * NS), endTime: timestampOf(end * NS) });
  const newest = [p("a", 50n, 60n), p("b", 40n, 70n), p("c", 55n, 58n)];
  const oldest = [p("x", 5n, 9n), p("y", 3n, 4n), p("z", 8n, 30n)];
  const n = nearestProfiles(newest, oldest);
  expect([n.last?.id, n.first?.id]).toEqual(["b", "y"]);
  expect(nearestProfiles(newest, newest).first?.id).toBe("b");
  expect(nearestProfiles([], [])).toEqual({ last: undefined, first: undefined });
});

describe("the fleet view's timing and empty states", () => {
  const s = newFleet("api", 1795000000n * NS, 1795000060n * NS);
  const r = { start: 1795000010n * NS, end: 1795000020n * NS };

  test("a live second: nothing, refresh the range, or slide the window to now", () => {
    expect(liveTick(s, new Date(1795000100_250))).toEqual({ kind: "none" }); // not live
    const live = { ...s, live: true };
    expect(liveTick({ ...live, range: r }, new Date(1795000100_250))).toEqual({ kind: "refresh" });
    const t = liveTick(live, new Date(1795000100_250));
    expect(t.kind).toBe("move");
    if (t.kind !== "move") return;
    expect([t.next.from, t.next.to]).toEqual([1795000041n * NS, 1795000101n * NS]);
    expect(liveTick(t.next, new Date(1795000100_900))).toEqual({ kind: "none" }); // the same second
  });

  test("a flame graph waits for the heatmap's event only when it could count another", () => {
    expect(flameWaitsForHeatmap(s)).toBe(false); // the whole window: the same event
    expect(flameWaitsForHeatmap({ ...s, range: r })).toBe(true);
    expect(flameWaitsForHeatmap({ ...s, cmp: "host", chost: "a" })).toBe(true);
    expect(flameWaitsForHeatmap({ ...s, range: r, event: "cycles" })).toBe(false); // named
  });

  test("why a heatmap is empty", () => {
    expect(emptyHeatmapWords(s, 0)).toMatch(/^No profile of this selection/);
    expect(emptyHeatmapWords({ ...s, idle: true }, 2)).toBe("No samples of this event in the window.");
    expect(emptyHeatmapWords(s, 2)).toMatch(/Include idle/);
  });

  test("what a merged flame graph covers", () => {
    expect(flameWords(s).scope).toMatch(/^whole window, /);
    expect(flameWords(s).empty).toBe("No samples of this event in the window.");
    expect(flameWords({ ...s, range: r }).empty).toMatch(/^No host ran anything \(that is not idle\) in /);
  });
});

describe("the fleet view's requests for its answers", () => {
  const s = { ...newFleet("api", 1795000000n * NS, 1795000060n * NS), labels: [{ name: "env", value: "prod", not: false }, { name: "dc", value: "x", not: true }] };
  const r = { start: 1795000010n * NS, end: 1795000020n * NS + 5n };

  test("a host against the rest needs the hosts first, only when the strip has not listed them", () => {
    const host = { ...s, cmp: "host" as const, chost: "a" };
    expect(diffNeedsHosts(host, [])).toBe(true);
    expect(diffNeedsHosts(host, ["a", "b"])).toBe(false);
    expect(diffNeedsHosts({ ...s, cmp: "labels", la: "v=1", lb: "v=2" }, [])).toBe(false);
    expect(diffNeedsHosts(s, [])).toBe(false);
  });

  test("a comparison's request: both sides as fleets, the tree and the 20 largest changes", () => {
    const sides = fleetDiffSides({ ...s, cmp: "host", chost: "a" }, ["a", "b"])!;
    const req = fleetDiffRequest(sides, true);
    expect(req).toEqual({ a: { side: { case: "fleet", value: sides.a } }, b: { side: { case: "fleet", value: sides.b } }, normalize: true, format: FlameGraphFormat.TREE, top: 20 });
    expect(fleetDiffRequest(sides, false).normalize).toBe(false);
  });

  test("a range's timeline in one column counts its timed profiles", () => {
    const req = rangeTimelineRequest(s, r);
    expect(req.selection).toEqual(selectionOf(s, r.start, r.end));
    expect(req.minSecondsPerColumn).toBe(BigInt(31 * 24 * 3600)); // longer than any window: one column
  });

  test("the events offered: the window's profiles, by base name, once each, sorted", () => {
    expect(eventsSearch(s)).toEqual({ app: "api", since: timestampOf(s.from), until: timestampOf(s.to), pageSize: 200 });
    expect(eventNames([{ events: [{ name: "cycles:u" }, { name: "cpu-clock:pppH" }] }, { events: [{ name: "cpu-clock" }] }, { events: [] }])).toEqual(["cpu-clock", "cycles"]);
    expect(eventNames([])).toEqual([]);
  });

  test("a host's profiles at the range: its k=v labels asked of the server (k!=v is applied after)", () => {
    expect(hostProfilesSearch(s, "web-1", r)).toEqual({ app: "api", host: "web-1", labels: { env: "prod" }, since: timestampOf(r.start), until: timestampOf(r.end), pageSize: 100 });
  });
});

describe("the fleet view's answers, checked and said", () => {
  const s = newFleet("api", 1795000000n * NS, 1795000004n * NS);
  // 4 one-second columns of 10 rows (100 ms cells), the samples from column 2
  const cols = [new Array(10).fill(0), new Array(10).fill(0), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], new Array(10).fill(1)];
  const heat = { event: "cpu-clock", startSecond: 1795000000, secondsPerColumn: 1, firstColumn: 0, rows: 10, columns: cols, maxCount: 10, total: 65 };
  const cells = { start: 1795000002_200_000_000n, end: 1795000002_500_000_000n }; // rows 2..4 of column 2

  test("the range on the heatmap, relative to its start second", () => {
    expect(shownRange(s, 1795000000)).toBeNull();
    expect(shownRange({ ...s, range: cells }, 1795000000)).toEqual({ start: 2_200_000_000, end: 2_500_000_000 });
  });

  test("a long window's heatmap scrolls to where its samples start, unless a range is shown", () => {
    expect(startColumn(s, heat)).toBe(2);
    expect(startColumn({ ...s, range: cells }, heat)).toBeNull();
    expect(startColumn(s, { columns: [[1], [0]] })).toBeNull(); // from the first column
    expect(startColumn(s, { columns: [[0], [0]] })).toBeNull(); // no samples
  });

  test("the selected cells' sum, when the range is exactly cells", () => {
    expect(rangeCellSum(heat, cells)).toBe(3 + 4 + 5);
    expect(rangeCellSum(heat, { start: 1795000002_900_000_000n, end: 1795000003_200_000_000n })).toBe(10 + 1 + 1); // across columns
    expect(rangeCellSum(heat, { start: cells.start + 1n, end: cells.end })).toBeNull(); // not on a cell's edge
    expect(rangeCellSum(heat, { start: 1795000010n * NS, end: 1795000011n * NS })).toBeNull(); // outside
  });

  test("a range's flame graph differs from its cells only when they are exactly cells and the totals differ", () => {
    expect(flameDiffersFromCells({ ...s, range: cells }, heat, 12)).toBe(false);
    expect(flameDiffersFromCells({ ...s, range: cells }, heat, 15)).toBe(true);
    expect(flameDiffersFromCells(s, heat, 99)).toBe(false); // no range: the whole window's check is windowCheck
    expect(flameDiffersFromCells({ ...s, range: { start: cells.start + 1n, end: cells.end } }, heat, 99)).toBe(false);
  });

  test("a difference explained by profiles without per-sample times", () => {
    expect(untimedWords(3, 2)).toBe("it also counts 1 profile without per-sample times lying wholly inside the range (they have no heatmap)");
    expect(untimedWords(5, 2)).toMatch(/^it also counts 3 profiles without per-sample times/);
    expect(untimedWords(2, 2)).toBeUndefined();
    expect(untimedWords(1, 2)).toBeUndefined();
  });

  test("the heatmap's hint: one-second columns, or long ones selected whole", () => {
    expect(heatmapHint(1)).toMatch(/^each column is one second of wall-clock time/);
    expect(heatmapHint(120)).toMatch(/^each column is 120 seconds \(a long window\)/);
  });

  test("a comparison's words: its sides, what it covers, and a shifted one's two ranges", () => {
    const host = diffWords({ ...s, cmp: "host", chost: "web-2" });
    expect([host.a, host.b, host.sides]).toEqual(["the rest of the fleet", "web-2", ""]);
    expect(host.scope).toMatch(/^web-2 against the rest of the fleet, /);
    expect(host.empty).toBe("web-2 ran nothing (that is not idle) here.");
    const shift = { ...s, cmp: "shift" as const, shift: "1d", range: cells };
    const shifted = diffWords(shift);
    expect([shifted.a, shifted.b]).toEqual(["the same range a day earlier", "this range"]);
    const earlier = shiftedRange(shift)!;
    expect(shifted.sides).toBe(`A: ${formatWallRange(earlier.start, earlier.end)} · B: ${formatWallRange(cells.start, cells.end)}`);
  });
});
