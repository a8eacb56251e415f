// The requests a profile page makes first, GetHeatmap and GetFlameGraph,
// and those a fleet view makes first, GetFleetHeatmap and
// GetFleetFlameGraph, encoded by hand (protowire.ts's Writer), so that none
// waits for the generated code, which loads with the RPC clients
// (src/rpc.ts) after the first drawings. requests.test.ts checks each
// against protobuf-es's own encoding, byte for byte (and index.html's
// prefetches against these).

import type { MessageInitShape } from "@bufbuild/protobuf";
import type { FleetSelectionSchema, GetFleetFlameGraphRequestSchema, GetFleetHeatmapRequestSchema } from "./gen/fleetscope/v1/fleet_pb";
import type { GetFlameGraphRequestSchema, GetHeatmapRequestSchema, SampleFilterSchema } from "./gen/fleetscope/v1/query_pb";
import { Writer } from "./protowire";

/** The methods' procedure paths (index.html's prefetches name them too). */
export const GET_HEATMAP = "fleetscope.v1.QueryService/GetHeatmap";
export const GET_FLAME_GRAPH = "fleetscope.v1.QueryService/GetFlameGraph";
export const GET_FLEET_HEATMAP = "fleetscope.v1.FleetService/GetFleetHeatmap";
export const GET_FLEET_FLAME_GRAPH = "fleetscope.v1.FleetService/GetFleetFlameGraph";

type Filter = MessageInitShape<typeof SampleFilterSchema>;

function filter(w: Writer, f: Filter) {
  w.string(1, f.function);
  w.string(2, f.excludeFunction);
  w.packed(3, f.pids);
  w.packed(4, f.tids);
  w.packed(5, f.cpus);
  w.string(6, f.inSpans);
  w.string(7, f.spanEntry);
  w.string(8, f.spanReturn);
}

/** encodeHeatmapRequest is toBinary(GetHeatmapRequestSchema, create(..., req)). */
export function encodeHeatmapRequest(req: MessageInitShape<typeof GetHeatmapRequestSchema>): Uint8Array {
  const w = new Writer();
  w.string(1, req.profileId);
  w.string(2, req.event);
  w.intIfSet(3, req.rows);
  w.bool(4, req.includeIdle);
  const f = req.filter;
  if (f) w.message(5, (w) => filter(w, f));
  return w.finish();
}

/** encodeFlameGraphRequest is toBinary(GetFlameGraphRequestSchema, create(..., req)). */
export function encodeFlameGraphRequest(req: MessageInitShape<typeof GetFlameGraphRequestSchema>): Uint8Array {
  const w = new Writer();
  w.string(1, req.profileId);
  w.string(2, req.event);
  if (req.startNanos !== undefined) w.int(3, req.startNanos); // optional: present even when 0
  if (req.endNanos !== undefined) w.int(4, req.endNanos);
  w.bool(5, req.includeIdle);
  w.intIfSet(6, req.format);
  w.bool(7, req.weightByPeriod);
  w.bool(8, req.annotateKernel);
  w.bool(9, req.annotateJit);
  const f = req.filter;
  if (f) w.message(10, (w) => filter(w, f));
  w.bool(11, req.outside);
  return w.finish();
}

type Timestamp = { seconds?: bigint; nanos?: number };

function timestamp(w: Writer, field: number, t: Timestamp | undefined) {
  if (t) w.message(field, (w) => (w.intIfSet(1, t.seconds), w.intIfSet(2, t.nanos)));
}

function fleetSelection(w: Writer, s: MessageInitShape<typeof FleetSelectionSchema>) {
  w.string(1, s.app);
  w.strings(2, s.hosts);
  for (const l of s.labels ?? []) w.message(3, (w) => (w.string(1, l.name), w.string(2, l.value), w.bool(3, l.notEqual)));
  timestamp(w, 4, s.from);
  timestamp(w, 5, s.to);
  w.string(6, s.event);
  w.bool(7, s.includeIdle);
  const f = s.filter;
  if (f) w.message(8, (w) => filter(w, f));
}

/** encodeFleetHeatmapRequest is toBinary(GetFleetHeatmapRequestSchema, create(..., req)). */
export function encodeFleetHeatmapRequest(req: MessageInitShape<typeof GetFleetHeatmapRequestSchema>): Uint8Array {
  const w = new Writer();
  const s = req.selection;
  if (s) w.message(1, (w) => fleetSelection(w, s));
  w.intIfSet(2, req.rows);
  w.intIfSet(3, req.minSecondsPerColumn);
  return w.finish();
}

/** encodeFleetFlameGraphRequest is toBinary(GetFleetFlameGraphRequestSchema, create(..., req)). */
export function encodeFleetFlameGraphRequest(req: MessageInitShape<typeof GetFleetFlameGraphRequestSchema>): Uint8Array {
  const w = new Writer();
  const s = req.selection;
  if (s) w.message(1, (w) => fleetSelection(w, s));
  w.intIfSet(2, req.format);
  w.bool(3, req.weightByPeriod);
  w.bool(4, req.annotateKernel);
  w.bool(5, req.annotateJit);
  return w.finish();
}
