import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { describe, expect, test } from "vitest";
import { FlameGraphFormat } from "./gen/fleetscope/v1/query_pb";
import {
  chooseEvent,
  diffSides,
  functionRegex,
  flameRequest,
  foldedFilename,
  heatmapRequest,
  Latest,
  linkRange,
  linkState,
  permalink,
  readSharedView,
  readView,
  sharedFlameRequest,
  sharedHeatmapRequest,
  sharedPermalink,
  shareRequest,
  shareURL,
  wholeProfile,
  writeSharedView,
  writeView,
  type ViewState,
} from "./viewstate";

const DEFAULTS: ViewState = {
  event: "",
  rows: 50,
  idle: false,
  range: null,
  frame: "",
  search: "",
  orient: "icicle",
  fn: "",
  xfn: "",
  pids: [],
  tids: [],
  cpus: [],
  axis: "offset",
  cmp: "",
  base: null,
  norm: null,
  sw: "",
  spans: "",
};

describe("URL ↔ view", () => {
  test("an empty query is the default view, and the default view writes an empty query", () => {
    expect(readView(new URLSearchParams())).toEqual(DEFAULTS);
    expect(writeView(DEFAULTS).toString()).toBe("");
  });

  test("every field is read exactly", () => {
    const v = readView(new URLSearchParams("event=cycles&rows=100&idle=1&start=2.4&end=2.48&frame=java;start_thread&search=%2FGC%2F&orient=flame"));
    expect(v).toEqual({
      ...DEFAULTS,
      event: "cycles",
      rows: 100,
      idle: true,
      range: { start: 2_400_000_000, end: 2_480_000_000 },
      frame: "java;start_thread",
      search: "/GC/",
      orient: "flame",
    });
  });

  test("invalid values fall back to defaults", () => {
    for (const rows of ["0", "1001", "2.5", "-3", "x", ""]) expect(readView(new URLSearchParams({ rows })).rows).toBe(50);
    expect(readView(new URLSearchParams({ rows: "1000" })).rows).toBe(1000);
    expect(readView(new URLSearchParams({ orient: "sideways" })).orient).toBe("icicle");
    expect(readView(new URLSearchParams({ idle: "true" })).idle).toBe(false);
    // a range needs both ends, each an exact decimal
    expect(readView(new URLSearchParams({ start: "2.4" })).range).toBeNull();
    expect(readView(new URLSearchParams({ start: "2.4", end: "1e3" })).range).toBeNull();
  });

  test("views round-trip through the URL", () => {
    const views: ViewState[] = [
      { ...DEFAULTS, range: { start: 0, end: 1 } },
      { ...DEFAULTS, event: "context-switches", rows: 25, idle: true },
      { ...DEFAULTS, range: { start: 142_857_143, end: 123_456_789_012 }, frame: "a;b c;d", search: "x&y=z", orient: "flame" },
    ];
    for (const v of views) expect(readView(new URLSearchParams(writeView(v).toString()))).toEqual(v);
  });

  test("filters, thread view, comparison and sandwich round-trip", () => {
    const v: ViewState = {
      ...DEFAULTS,
      range: { start: 1e9, end: 2e9 },
      fn: "^GC.*$",
      xfn: "Idle|swapper",
      pids: [12],
      tids: [13, 14],
      cpus: [0],
      axis: "thread",
      cmp: "base",
      base: { start: 0, end: 500_000_000 },
      norm: true,
      sw: "malloc",
    };
    const q = writeView(v).toString();
    expect(q).toBe("start=1&end=2&fn=%5EGC.*%24&xfn=Idle%7Cswapper&pid=12&tid=13%2C14&cpu=0&axis=thread&cmp=base&bstart=0&bend=0.5&norm=1&sw=malloc");
    expect(readView(new URLSearchParams(q))).toEqual(v);
    expect(readView(new URLSearchParams("axis=sideways&cmp=x&tid=1,a")).axis).toBe("offset");
    expect(readView(new URLSearchParams("cmp=x")).cmp).toBe("");
    // norm: 1 normalized, 0 raw counts, absent automatic (null)
    expect([readView(new URLSearchParams("norm=0")).norm, readView(new URLSearchParams("")).norm]).toEqual([false, null]);
    expect(writeView({ ...v, norm: false }).get("norm")).toBe("0");
    expect(readView(new URLSearchParams("tid=1,a")).tids).toEqual([]);
  });

  test("requests carry the filter; a comparison's sides", () => {
    const v: ViewState = { ...DEFAULTS, range: { start: 1e9, end: 2e9 }, fn: "GC", cmp: "rest" };
    expect(heatmapRequest("p", v).filter).toEqual({ function: "GC", excludeFunction: "", pids: [], tids: [], cpus: [], inSpans: "" });
    const slow = diffSides("p", { ...DEFAULTS, cmp: "spans" })!; // slow requests vs the rest, whole profile
    expect([slow.a.filter?.inSpans, slow.b.filter?.inSpans, slow.a.startNanos]).toEqual(["faster:p95", "slower:p95", undefined]);
    expect(heatmapRequest("p", DEFAULTS).filter).toBeUndefined();
    const sides = diffSides("p", v)!;
    expect(sides.a.outside).toBe(true);
    expect([sides.a.startNanos, sides.a.endNanos, sides.b.startNanos, sides.b.endNanos]).toEqual([1_000_000_000n, 2_000_000_000n, 1_000_000_000n, 2_000_000_000n]);
    expect(sides.b.outside).toBeFalsy();
    const base = diffSides("p", { ...v, cmp: "base", base: { start: 0, end: 5e8 } })!;
    expect([base.a.startNanos, base.a.endNanos, base.a.outside]).toEqual([0n, 500_000_000n, undefined]);
    expect(diffSides("p", { ...v, cmp: "base" })).toBeNull(); // nothing pinned
    expect(diffSides("p", { ...v, range: null })).toBeNull(); // nothing selected
    expect(functionRegex("PSPromotionManager::drain_stacks_depth(bool)")).toBe("^PSPromotionManager::drain_stacks_depth\\(bool\\)$");
  });

  test("permalink", () => {
    expect(permalink("http://h:1", "6f0c-1", DEFAULTS)).toBe("http://h:1/p/6f0c-1");
    expect(permalink("http://h:1", "a/b", { ...DEFAULTS, range: { start: 2_400_000_000, end: 2_480_000_000 } })).toBe("http://h:1/p/a%2Fb?start=2.4&end=2.48");
  });
});

describe("shared views", () => {
  const gc = { start: 2_400_000_000, end: 2_480_000_000 };
  const view: ViewState = { ...DEFAULTS, event: "cycles", rows: 100, idle: true, range: gc, frame: "java;GC", search: "drain", orient: "flame" };

  test("the URL holds the view but the link's event and range", () => {
    const q = writeSharedView(view);
    expect(q.toString()).toBe("rows=100&idle=1&frame=java%3BGC&search=drain&orient=flame");
    // what the URL says about event and range is ignored: the link's win
    const read = readSharedView(new URLSearchParams(`${q}&event=other&start=0&end=1`), { event: "cycles", range: gc });
    expect(read).toEqual(view);
    expect(readSharedView(new URLSearchParams(), { event: "", range: null })).toEqual({ ...DEFAULTS });
  });

  test("permalinks and a new link's URL carry the view", () => {
    expect(sharedPermalink("http://h:1", "fss_abc", view)).toBe("http://h:1/s/fss_abc?rows=100&idle=1&frame=java%3BGC&search=drain&orient=flame");
    expect(sharedPermalink("http://h:1", "fss_abc", { ...DEFAULTS, range: gc })).toBe("http://h:1/s/fss_abc");
    expect(shareURL("https://fs.example/s/fss_x", { ...DEFAULTS, orient: "flame" })).toBe("https://fs.example/s/fss_x?orient=flame");
  });

  test("a link's range: both bounds, or the whole profile", () => {
    expect(linkRange({ startNanos: 2_400_000_000n, endNanos: 2_480_000_000n })).toEqual(gc);
    expect(linkRange({ startNanos: 2_400_000_000n })).toBeNull();
    expect(linkRange({})).toBeNull();
  });

  test("a link is live until it expires or is revoked", () => {
    const now = new Date("2026-11-23T12:00:00Z");
    const at = (iso: string) => timestampFromDate(new Date(iso));
    expect(linkState({ expiresAt: at("2026-11-24T00:00:00Z") }, now)).toBe("live");
    expect(linkState({ expiresAt: at("2026-11-23T11:59:59Z") }, now)).toBe("expired");
    expect(linkState({ expiresAt: at("2026-11-24T00:00:00Z"), revokedAt: at("2026-11-23T11:00:00Z") }, now)).toBe("revoked");
  });

  test("requests: a new link names the event shown; shared reads choose presentation only", () => {
    expect(shareRequest("p1", view, "cpu-clock", 3600)).toEqual({ profileId: "p1", event: "cycles", startNanos: 2_400_000_000n, endNanos: 2_480_000_000n, ttlSeconds: 3600n });
    const whole = shareRequest("p1", DEFAULTS, "cpu-clock", 86400);
    expect(whole).toEqual({ profileId: "p1", event: "cpu-clock", startNanos: undefined, endNanos: undefined, ttlSeconds: 86400n });
    expect(sharedHeatmapRequest("fss_t", view)).toEqual({ token: "fss_t", rows: 100, includeIdle: true });
    expect(sharedFlameRequest("fss_t", view, FlameGraphFormat.TREE)).toEqual({ token: "fss_t", includeIdle: true, format: FlameGraphFormat.TREE });
  });
});

describe("changes", () => {
  const zoomed: ViewState = { ...DEFAULTS, event: "cycles", range: { start: 1, end: 2 }, frame: "java", search: "GC" };

  test("choosing an event zooms out; the default event is stored as empty", () => {
    expect(chooseEvent(zoomed, "instructions", "cycles")).toEqual({ ...zoomed, event: "instructions", frame: "" });
    expect(chooseEvent(zoomed, "cycles", "cycles")).toEqual({ ...zoomed, event: "", frame: "" });
  });

  test("the whole profile has no range and no zoom, and keeps the rest", () => {
    expect(wholeProfile(zoomed)).toEqual({ ...zoomed, range: null, frame: "" });
  });

  test("changes do not modify the view they start from", () => {
    const before = structuredClone(zoomed);
    chooseEvent(zoomed, "x", "y");
    wholeProfile(zoomed);
    expect(zoomed).toEqual(before);
  });
});

describe("requests", () => {
  test("heatmap", () => {
    expect(heatmapRequest("p1", { ...DEFAULTS, event: "e", rows: 100, idle: true })).toEqual({ profileId: "p1", event: "e", rows: 100, includeIdle: true });
  });

  test("flame graph of the range, or of the whole profile", () => {
    const r = flameRequest("p1", { ...DEFAULTS, range: { start: 2_400_000_000, end: 2_480_000_000 }, idle: true }, FlameGraphFormat.TREE);
    expect(r).toEqual({ profileId: "p1", event: "", startNanos: 2_400_000_000n, endNanos: 2_480_000_000n, includeIdle: true, format: FlameGraphFormat.TREE });
    const whole = flameRequest("p1", DEFAULTS, FlameGraphFormat.FOLDED);
    expect(whole.startNanos).toBeUndefined();
    expect(whole.endNanos).toBeUndefined();
    expect(whole.format).toBe(FlameGraphFormat.FOLDED);
  });

  test("folded download names", () => {
    expect(foldedFilename("checkout", { ...DEFAULTS, range: { start: 2_400_000_000, end: 3_000_000_000 } })).toBe("checkout-2.4-3.folded");
    expect(foldedFilename(undefined, DEFAULTS)).toBe("profile-all.folded");
  });
});

describe("request sequencing", () => {
  test("only the latest request is current", () => {
    const seq = new Latest();
    const first = seq.begin();
    expect(first()).toBe(true);
    const second = seq.begin();
    expect(first()).toBe(false);
    expect(second()).toBe(true);
  });

  test("independent sequences do not interfere", () => {
    const heat = new Latest();
    const flame = new Latest();
    const h = heat.begin();
    flame.begin();
    expect(h()).toBe(true);
  });

  test("a slow answer to an older request does not overwrite a newer one", async () => {
    const seq = new Latest();
    let shown = "";
    const resolvers: Record<string, () => void> = {};
    // load asks the "server" and shows its answer if the request is still the latest.
    const load = async (what: string) => {
      const current = seq.begin();
      await new Promise<void>((resolve) => (resolvers[what] = resolve));
      if (current()) shown = what;
    };
    const older = load("range 1");
    const newer = load("range 2");
    resolvers["range 2"]();
    await newer;
    expect(shown).toBe("range 2");
    resolvers["range 1"](); // arrives last
    await older;
    expect(shown).toBe("range 2");
  });
});
