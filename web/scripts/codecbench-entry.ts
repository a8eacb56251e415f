// The entry web/scripts/codecbench.mjs bundles and runs in fresh Node
// processes: decodes one benchmark answer (protobuf binary, written by the
// Go test TestCodecAnswers) to what the dashboard draws from, with the
// hand-written decoders (flame/wire.ts, heatmap/wire.ts, flame/tree.wat)
// or with protobuf-es's generated code plus the conversion the dashboard
// would still need (bigints to numbers, number arrays to typed arrays, the
// flame layout). Prints {first, warm}: the first decode in this process
// (cold: what a page's first answer costs) and the median of later ones.
//
//   node entry.mjs ANSWER.pb KIND DECODER     (KIND: flame|fleet-flame|heatmap|fleet-heatmap; DECODER: hand|es)

import { readFileSync } from "node:fs";
import { fromBinary } from "@bufbuild/protobuf";
import { decodeFlameGraph, decodeFleetFlameGraph, layoutOf } from "../src/flame/wire";
import { layout, type Layout } from "../src/flame/model";
import { decodeAccounting, decodeFleetHeatmap, decodeHeatmap } from "../src/heatmap/wire";
import { GetFlameGraphResponseSchema, type FlameTree } from "../src/gen/fleetscope/v1/query_pb";
import { GetHeatmapResponseSchema } from "../src/gen/fleetscope/v1/query_pb";
import { GetFleetFlameGraphResponseSchema, GetFleetHeatmapResponseSchema } from "../src/gen/fleetscope/v1/fleet_pb";

const [path, kind, decoder] = process.argv.slice(2);
const bytes = new Uint8Array(readFileSync(path));

// esLayout is the flame layout of a tree protobuf-es decoded: its columns
// made the typed arrays the layout takes (uint64s as numbers).
function esLayout(t: FlameTree | undefined): Layout {
  if (!t) return layout({ names: [], name: [], value: [], depth: [] });
  const value = new Float64Array(t.value.length);
  for (let i = 0; i < value.length; i++) value[i] = Number(t.value[i]);
  return layout({ names: t.names, name: Uint32Array.from(t.name), value, depth: Uint32Array.from(t.depth) });
}

const columns = (cols: { counts: bigint[] }[]) => cols.map((c) => ({ counts: c.counts.map(Number) }));

const decoders: Record<string, Record<string, (b: Uint8Array) => unknown>> = {
  flame: {
    hand: (b) => layoutOf(decodeFlameGraph(b)),
    es: (b) => esLayout(fromBinary(GetFlameGraphResponseSchema, b).tree),
  },
  "fleet-flame": {
    hand: (b) => {
      const r = decodeFleetFlameGraph(b);
      return [layoutOf(r.graph), decodeAccounting(r.accounting)];
    },
    es: (b) => {
      const m = fromBinary(GetFleetFlameGraphResponseSchema, b);
      return [esLayout(m.flameGraph?.tree), m.accounting];
    },
  },
  heatmap: {
    hand: (b) => decodeHeatmap(b),
    es: (b) => {
      const m = fromBinary(GetHeatmapResponseSchema, b);
      return { ...m, startSecond: Number(m.startSecond), maxCount: Number(m.maxCount), total: Number(m.total), secondsPerColumn: Number(m.secondsPerColumn), columns: columns(m.columns) };
    },
  },
  "fleet-heatmap": {
    hand: (b) => decodeFleetHeatmap(b),
    es: (b) => {
      const m = fromBinary(GetFleetHeatmapResponseSchema, b);
      return { ...m, startSecond: Number(m.startSecond), maxCount: Number(m.maxCount), total: Number(m.total), secondsPerColumn: Number(m.secondsPerColumn), columns: columns(m.columns) };
    },
  },
};

const decode = decoders[kind]?.[decoder];
if (!decode) throw new Error(`no decoder ${kind}/${decoder}`);
let t = performance.now();
let sink = decode(bytes);
const first = performance.now() - t;
const times: number[] = [];
for (let i = 0; i < 40; i++) {
  t = performance.now();
  sink = decode(bytes);
  times.push(performance.now() - t);
}
times.sort((a, b) => a - b);
if (!sink) throw new Error("nothing decoded");
console.log(JSON.stringify({ first, warm: times[times.length >> 1] }));
