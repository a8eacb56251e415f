// The inline script in index.html encodes GetHeatmapRequest by hand; it
// must agree with the generated code byte for byte, and name its request as
// prefetchKey does.
import { create, toBinary } from "@bufbuild/protobuf";
// @ts-expect-error: node modules in a test run by vitest (no @types/node here)
import { readFileSync } from "node:fs";
// @ts-expect-error: as above
import { runInNewContext } from "node:vm";
import { expect, test } from "vitest";
import { GetHeatmapRequestSchema } from "./gen/fleetscope/v1/query_pb";
import { prefetchKey } from "./prefetch";

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
  return { calls, prefetch: window.__fleetscopePrefetch as { request: string } | undefined };
}

test("the inline prefetch encodes GetHeatmapRequest like protobuf-es", () => {
  const cases: [string, string, { id: string; event: string; rows: number; idle: boolean }][] = [
    ["/p/6f0c-aa", "", { id: "6f0c-aa", event: "", rows: 50, idle: false }],
    ["/p/6f0c-aa/", "?start=2.4&end=2.48&rows=100&idle=1", { id: "6f0c-aa", event: "", rows: 100, idle: true }],
    ["/p/x%20y", "?event=cpu-clock%3ApppH&rows=300", { id: "x y", event: "cpu-clock:pppH", rows: 300, idle: false }],
    ["/p/é", "?rows=0&event=ctx-é", { id: "é", event: "ctx-é", rows: 50, idle: false }],
  ];
  for (const [path, search, want] of cases) {
    const { calls, prefetch } = run(path, search, "fsk_test");
    expect(calls.length).toBe(1);
    expect(calls[0].url).toBe("/fleetscope.v1.QueryService/GetHeatmap");
    expect(calls[0].init.headers.Authorization).toBe("Bearer fsk_test");
    const bytes = toBinary(GetHeatmapRequestSchema, create(GetHeatmapRequestSchema, { profileId: want.id, event: want.event, rows: want.rows, includeIdle: want.idle }));
    expect([...calls[0].init.body]).toEqual([...bytes]);
    expect(prefetch!.request).toBe(prefetchKey(want.id, want.event, want.rows, want.idle));
  }
});

test("no prefetch without a key or off a profile page", () => {
  expect(run("/p/abc", "", null).calls).toEqual([]);
  expect(run("/", "?app=x", "fsk_test").calls).toEqual([]);
});
