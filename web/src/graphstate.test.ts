import { describe, expect, test } from "vitest";
import { askDiff } from "./flame/diff";
import { layout } from "./flame/model";
import { diffMode, downloadBase, frameAt, pickFunction, zoomOf } from "./graphstate";
import { foldedFilename as fleetFolded } from "./fleetstate";
import { foldedFilename as profileFolded } from "./viewstate";

// all → a → b, all → c
const L = layout({ names: ["all", "a", "b", "c"], name: [0, 1, 2, 3], value: [5, 3, 2, 2], depth: [0, 1, 2, 1] });

describe("zoom", () => {
  test("a frame the graph has is zoomed to and kept", () => {
    expect(zoomOf(L, "a;b")).toEqual({ zoom: 2, frame: "a;b" });
    expect(zoomOf(L, "c")).toEqual({ zoom: 3, frame: "c" });
  });
  test("no frame is the root", () => {
    expect(zoomOf(L, "")).toEqual({ zoom: 0, frame: "" });
  });
  test("a frame the graph lacks (another range, another filter) is dropped", () => {
    expect(zoomOf(L, "a;nope")).toEqual({ zoom: 0, frame: "" });
    expect(zoomOf(L, "c;b")).toEqual({ zoom: 0, frame: "" });
  });
  test("the frame recorded for a node is its path, the root none", () => {
    expect(frameAt(L, 0)).toBe("");
    expect(frameAt(L, 2)).toBe("a;b");
    for (let i = 1; i < L.n; i++) expect(zoomOf(L, frameAt(L, i)).zoom).toBe(i);
  });
});

describe("picks and downloads", () => {
  test("a picked function is searched for exactly", () => {
    expect(pickFunction("a.b(c)")).toBe("/^a\\.b\\(c\\)$/");
  });
  test("a download is named as its folded stacks", () => {
    expect(downloadBase("app-all.folded")).toBe("app-all");
    expect(downloadBase("x.folded.folded")).toBe("x.folded");
    expect(downloadBase("plain")).toBe("plain");
  });
  test("both pages' folded names give a base", () => {
    const v = { range: { start: 1_000_000_000, end: 2_500_000_000 } } as Parameters<typeof profileFolded>[1];
    expect(downloadBase(profileFolded("app", v))).toBe("app-1-2.5");
    const s = { app: "api", range: null, from: 10n * 1_000_000_000n, to: 20n * 1_000_000_000n } as Parameters<typeof fleetFolded>[0];
    expect(downloadBase(fleetFolded(s))).toBe("api-fleet-10-20");
  });
});

describe("diffMode", () => {
  test("a chosen mode is said as chosen", () => {
    expect(diffMode(true, { normalized: true, totalA: 10, totalB: 20 })).toMatchObject({ mode: "normalized", normalized: true });
  });
  test("an automatic mode keeps the raw totals askDiff saw", async () => {
    const d = await askDiff(null, async (normalize) => ({ normalized: normalize, totalA: normalize ? 100n : 10n, totalB: 100n }));
    const m = diffMode(null, d);
    expect(m.normalized).toBe(d.normalized);
    expect(m.text).toContain("10× apart");
  });
});
