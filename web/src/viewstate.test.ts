import { describe, expect, test } from "vitest";
import { FlameGraphFormat } from "./gen/fleetscope/v1/query_pb";
import { chooseEvent, flameRequest, foldedFilename, heatmapRequest, Latest, permalink, readView, wholeProfile, writeView, type ViewState } from "./viewstate";

const DEFAULTS: ViewState = { event: "", rows: 50, idle: false, range: null, frame: "", search: "", orient: "icicle" };

describe("URL ↔ view", () => {
  test("an empty query is the default view, and the default view writes an empty query", () => {
    expect(readView(new URLSearchParams())).toEqual(DEFAULTS);
    expect(writeView(DEFAULTS).toString()).toBe("");
  });

  test("every field is read exactly", () => {
    const v = readView(new URLSearchParams("event=cycles&rows=100&idle=1&start=2.4&end=2.48&frame=java;start_thread&search=%2FGC%2F&orient=flame"));
    expect(v).toEqual({
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

  test("permalink", () => {
    expect(permalink("http://h:1", "6f0c-1", DEFAULTS)).toBe("http://h:1/p/6f0c-1");
    expect(permalink("http://h:1", "a/b", { ...DEFAULTS, range: { start: 2_400_000_000, end: 2_480_000_000 } })).toBe("http://h:1/p/a%2Fb?start=2.4&end=2.48");
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
