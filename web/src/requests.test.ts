import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { FleetService, GetFleetFlameGraphRequestSchema, GetFleetHeatmapRequestSchema } from "./gen/fleetscope/v1/fleet_pb";
import { GetFlameGraphRequestSchema, GetHeatmapRequestSchema, QueryService } from "./gen/fleetscope/v1/query_pb";
import {
  encodeFlameGraphRequest,
  encodeFleetFlameGraphRequest,
  encodeFleetHeatmapRequest,
  encodeHeatmapRequest,
  GET_FLAME_GRAPH,
  GET_FLEET_FLAME_GRAPH,
  GET_FLEET_HEATMAP,
  GET_HEATMAP,
} from "./requests";

// A small deterministic generator (mulberry32), so a failure reproduces.
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("hand-encoded requests", () => {
  it("name the generated methods", () => {
    expect(GET_HEATMAP).toBe(`${QueryService.typeName}/${QueryService.method.getHeatmap.name}`);
    expect(GET_FLAME_GRAPH).toBe(`${QueryService.typeName}/${QueryService.method.getFlameGraph.name}`);
    expect(GET_FLEET_HEATMAP).toBe(`${FleetService.typeName}/${FleetService.method.getFleetHeatmap.name}`);
    expect(GET_FLEET_FLAME_GRAPH).toBe(`${FleetService.typeName}/${FleetService.method.getFleetFlameGraph.name}`);
  });

  const r = rng(7);
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)];
  const maybe = <T>(x: T): T | undefined => (r() < 0.5 ? x : undefined);
  const str = () => pick(["", "a", "cpu-clock", "ünïcødé ✓", "x".repeat(200), "^main\\.run$", "0e8f-uuid"]);
  const ints = () => Array.from({ length: Math.floor(r() * 4) }, () => pick([0, 1, 127, 128, 300, 65535, 2 ** 31 - 1, -1, -(2 ** 31)]));
  const i64 = () => pick([0n, 1n, 999_999_999n, 60_000_000_000n, 2n ** 62n, 2n ** 63n - 1n, -1n, -(2n ** 63n)]);
  const filter = () =>
    maybe({ function: str(), excludeFunction: str(), pids: ints(), tids: ints(), cpus: ints(), inSpans: str(), spanEntry: maybe(str()), spanReturn: maybe(str()) });

  it("GetHeatmapRequest equals protobuf-es's encoding", () => {
    for (let i = 0; i < 500; i++) {
      const req = { profileId: str(), event: maybe(str()), rows: maybe(pick([0, 1, 50, 1000, -5])), includeIdle: maybe(r() < 0.5), filter: filter() };
      expect(encodeHeatmapRequest(req), JSON.stringify(req)).toEqual(toBinary(GetHeatmapRequestSchema, create(GetHeatmapRequestSchema, req)));
    }
  });

  it("GetFlameGraphRequest equals protobuf-es's encoding", () => {
    for (let i = 0; i < 500; i++) {
      const req = {
        profileId: str(),
        event: maybe(str()),
        startNanos: maybe(i64()),
        endNanos: maybe(i64()),
        includeIdle: maybe(r() < 0.5),
        format: maybe(pick([0, 1, 2, 3, 4, 5])),
        weightByPeriod: maybe(r() < 0.5),
        annotateKernel: maybe(r() < 0.5),
        annotateJit: maybe(r() < 0.5),
        filter: filter(),
        outside: maybe(r() < 0.5),
      };
      expect(encodeFlameGraphRequest(req), JSON.stringify(req, (_, v) => (typeof v === "bigint" ? `${v}n` : v))).toEqual(
        toBinary(GetFlameGraphRequestSchema, create(GetFlameGraphRequestSchema, req)),
      );
    }
  });

  const bigjson = (x: unknown) => JSON.stringify(x, (_, v) => (typeof v === "bigint" ? `${v}n` : v));
  const timestamp = () => maybe({ seconds: maybe(pick([0n, 1n, 1795000000n, 253402300799n])), nanos: maybe(pick([0, 1, 500_000_000, 999_999_999])) });
  const selection = () =>
    maybe({
      app: maybe(str()),
      hosts: maybe(Array.from({ length: Math.floor(r() * 3) }, str)),
      labels: maybe(Array.from({ length: Math.floor(r() * 3) }, () => ({ name: maybe(str()), value: maybe(str()), notEqual: maybe(r() < 0.5) }))),
      from: timestamp(),
      to: timestamp(),
      event: maybe(str()),
      includeIdle: maybe(r() < 0.5),
      filter: filter(),
    });

  it("GetFleetHeatmapRequest equals protobuf-es's encoding", () => {
    for (let i = 0; i < 500; i++) {
      const req = { selection: selection(), rows: maybe(pick([0, 1, 50, 1000])), minSecondsPerColumn: maybe(pick([0n, 1n, 60n, 2678400n])) };
      expect(encodeFleetHeatmapRequest(req), bigjson(req)).toEqual(toBinary(GetFleetHeatmapRequestSchema, create(GetFleetHeatmapRequestSchema, req)));
    }
  });

  it("GetFleetFlameGraphRequest equals protobuf-es's encoding", () => {
    for (let i = 0; i < 500; i++) {
      const req = { selection: selection(), format: maybe(pick([0, 1, 2, 6])), weightByPeriod: maybe(r() < 0.5), annotateKernel: maybe(r() < 0.5), annotateJit: maybe(r() < 0.5) };
      expect(encodeFleetFlameGraphRequest(req), bigjson(req)).toEqual(toBinary(GetFleetFlameGraphRequestSchema, create(GetFleetFlameGraphRequestSchema, req)));
    }
  });
});
