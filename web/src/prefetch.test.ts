// The inline script in index.html encodes GetHeatmapRequest by hand; it
// must agree with the generated code byte for byte, and name its request as
// prefetchKey does. For a fleet permalink it encodes GetFleetHeatmapRequest
// and GetFleetFlameGraphRequest: byte for byte what the fleet view asks
// for the same URL (fleetstate.ts's reading, requests.ts's encoding), or
// the app would not take them.
import { create, toBinary } from "@bufbuild/protobuf";
// @ts-expect-error: node modules in a test run by vitest (no @types/node here)
import { readFileSync } from "node:fs";
// @ts-expect-error: as above
import { runInNewContext } from "node:vm";
import { expect, test } from "vitest";
import { FlameGraphFormat } from "./enums";
import { flameRequest, heatmapRequest, readFleet } from "./fleetstate";
import { GetHeatmapRequestSchema } from "./gen/fleetscope/v1/query_pb";
import { prefetchKey } from "./prefetch";
import { encodeFlameGraphRequest, encodeFleetFlameGraphRequest, encodeFleetHeatmapRequest } from "./requests";
import { flameRequest as profileFlameRequest, readView } from "./viewstate";

const html = readFileSync(new URL("../index.html", import.meta.url), "utf8");
const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1];

function run(path: string, search: string, key: string | null) {
  const calls: { url: string; init: { headers: Record<string, string>; body: Uint8Array } }[] = [];
  const store = { getItem: (k: string) => (k === "fleetscope.apiKey" ? key : null) };
  const window: Record<string, unknown> = {};
  runInNewContext(script, {
    window,
    location: { pathname: path, search },
    sessionStorage: store,
    localStorage: { getItem: () => null },
    URLSearchParams,
    TextEncoder,
    Uint8Array,
    fetch: (url: string, init: never) => {
      calls.push({ url, init });
      return Promise.resolve();
    },
  });
  return {
    calls,
    prefetch: window.__fleetscopePrefetch as { request: string } | undefined,
    asked: window.__fleetscopeAsked as Record<string, { request: string }> | undefined,
  };
}

test("the inline prefetch encodes GetHeatmapRequest like protobuf-es", () => {
  const cases: [string, string, { id: string; event: string; rows: number; idle: boolean }][] = [
    ["/p/6f0c-aa", "", { id: "6f0c-aa", event: "", rows: 50, idle: false }],
    ["/p/6f0c-aa/", "?start=2.4&end=2.48&rows=100&idle=1", { id: "6f0c-aa", event: "", rows: 100, idle: true }],
    ["/p/x%20y", "?event=cpu-clock%3ApppH&rows=300", { id: "x y", event: "cpu-clock:pppH", rows: 300, idle: false }],
    ["/p/é", "?rows=0&event=ctx-é", { id: "é", event: "ctx-é", rows: 50, idle: false }],
  ];
  for (const [path, search, want] of cases) {
    const { calls, prefetch, asked } = run(path, search, "fsk_test");
    expect(calls[0].url).toBe("/fleetscope.v1.QueryService/GetHeatmap");
    expect(calls[0].init.headers.Authorization).toBe("Bearer fsk_test");
    const bytes = toBinary(GetHeatmapRequestSchema, create(GetHeatmapRequestSchema, { profileId: want.id, event: want.event, rows: want.rows, includeIdle: want.idle }));
    expect([...calls[0].init.body]).toEqual([...bytes]);
    expect(prefetch!.request).toBe(prefetchKey(want.id, want.event, want.rows, want.idle));
    // the whole profile's flame graph, when the link shows it (no range)
    const whole = !search.includes("start=");
    expect(calls.length).toBe(whole ? 2 : 1);
    if (!whole) continue;
    const flame = encodeFlameGraphRequest(profileFlameRequest(want.id, readView(new URLSearchParams(search)), FlameGraphFormat.TREE));
    expect(calls[1].url).toBe("/fleetscope.v1.QueryService/GetFlameGraph");
    expect([...calls[1].init.body], search).toEqual([...flame]);
    expect(asked!.flame.request).toBe(flame.join(","));
  }
  // a filter or a comparison: no flame graph asked (the view's first is another)
  for (const search of ["?fn=GC", "?xfn=x", "?pid=1", "?tid=2", "?cpu=0", "?cmp=rest", "?spans=slower:p95", "?sw=malloc", "?start=1&end=2"]) {
    expect(run("/p/abc", search, "fsk_test").calls.map((c) => c.url), search).toEqual(["/fleetscope.v1.QueryService/GetHeatmap"]);
  }
  // what a link may carry besides: the same whole flame graph
  const all = "?event=e&rows=7&idle=1&frame=a;b&search=GC&orient=flame&axis=thread";
  const f = run("/p/abc", all, "fsk_test").calls[1];
  expect([...f.init.body]).toEqual([...encodeFlameGraphRequest(profileFlameRequest("abc", readView(new URLSearchParams(all)), FlameGraphFormat.TREE))]);
});

test("no prefetch without a key or off a profile page", () => {
  expect(run("/p/abc", "", null).calls).toEqual([]);
  expect(run("/", "?app=x", "fsk_test").calls).toEqual([]);
});

test("a fleet permalink: the heatmap and the whole window's flame graph, byte for byte the fleet view's requests", () => {
  const now = new Date("2026-11-23T10:00:00.4Z");
  const cases: [string, boolean][] = [
    ["?app=checkout&from=1795000000&to=1795000060", true],
    ["?app=check%20out&host=web-1&host=web%202&host=web-1&host=&label=env%3Dprod&label=region!%3De%26u&label=%3Dx&label=oops&label=%20%3Dy&label=k%3D&from=1795000000.25&to=1795003600.000000001&event=cpu-clock&idle=1&rows=100", true],
    ["?app=é&from=1795000000.5&to=1795000030&rows=0&zoom=1-2&search=GC&orient=flame&frame=a;b", true],
    ["?app=a&from=1795000000&to=1795000060&live=1&norm=1", true],
    // a range: its flame graph waits for the heatmap's event (the app's rule)
    ["?app=a&from=1795000000&to=1795000060&start=1795000001&end=1795000002", false],
    // a comparison draws a diff, not the merged flame graph
    ["?app=a&from=1795000000&to=1795000060&cmp=shift&shift=1d", false],
  ];
  for (const [search, withFlame] of cases) {
    const { calls, asked } = run("/fleet", search, "fsk_test");
    const read = readFleet(new URLSearchParams(search), now);
    expect(read.defaulted, search).toBe(false);
    const state = read.state;
    const heat = encodeFleetHeatmapRequest(heatmapRequest(state));
    expect(calls[0].url).toBe("/fleetscope.v1.FleetService/GetFleetHeatmap");
    expect(calls[0].init.headers.Authorization).toBe("Bearer fsk_test");
    expect([...calls[0].init.body], search).toEqual([...heat]);
    expect(asked!.fleetHeatmap.request).toBe(heat.join(","));
    expect(calls.length, search).toBe(withFlame ? 2 : 1);
    if (!withFlame) continue;
    const flame = encodeFleetFlameGraphRequest(flameRequest(state, FlameGraphFormat.TREE));
    expect(calls[1].url).toBe("/fleetscope.v1.FleetService/GetFleetFlameGraph");
    expect([...calls[1].init.body], search).toEqual([...flame]);
    expect(asked!.fleetFlame.request).toBe(flame.join(","));
  }
});

test("no fleet prefetch without an app, a window the app would take, or with a function filter", () => {
  for (const search of [
    "?from=1795000000&to=1795000060",
    "?app=a",
    "?app=a&from=1795000060&to=1795000000",
    "?app=a&from=1795000000&to=1795000000",
    `?app=a&from=1700000000&to=${1700000000 + 31 * 86400 + 1}`,
    "?app=a&from=x&to=1795000060",
    "?app=a&from=1795000000&to=1795000060&fn=GC",
  ]) {
    expect(run("/fleet", search, "fsk_test").calls, search).toEqual([]);
  }
  expect(run("/fleet", "?app=a&from=1795000000&to=1795000060", null).calls).toEqual([]);
  // 31 days exactly is a window the server takes
  expect(run("/fleet", `?app=a&from=1700000000&to=${1700000000 + 31 * 86400}`, "fsk_test").calls.length).toBe(2);
});
