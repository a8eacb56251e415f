// The two requests a profile page makes first, GetHeatmap and
// GetFlameGraph, encoded by hand (protowire.ts's Writer), so that neither
// waits for the generated code, which loads with the RPC clients
// (src/rpc.ts) after the heatmap is drawn. requests.test.ts checks each
// against protobuf-es's own encoding, byte for byte.

import type { MessageInitShape } from "@bufbuild/protobuf";
import type { GetFlameGraphRequestSchema, GetHeatmapRequestSchema, SampleFilterSchema } from "./gen/fleetscope/v1/query_pb";
import { Writer } from "./protowire";

/** The two methods' procedure paths (index.html's prefetch names the first too). */
export const GET_HEATMAP = "fleetscope.v1.QueryService/GetHeatmap";
export const GET_FLAME_GRAPH = "fleetscope.v1.QueryService/GetFlameGraph";

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
