// The generated enums' values that the first page's code uses, without
// importing src/gen: a generated module builds its file's descriptors when
// it is evaluated (protobuf-es, ~30 ms for all of ours), so the app loads
// src/gen only with the RPC clients (src/rpc.ts), after the first paint.
// enums.test.ts checks every value here against the generated enum.

import type { FlameGraphFormat as Format, SeriesKey as Key } from "./gen/fleetscope/v1/query_pb";

export const FlameGraphFormat = {
  FOLDED: 1 as Format.FOLDED,
  TREE: 2 as Format.TREE,
  SVG: 3 as Format.SVG,
  PPROF: 4 as Format.PPROF,
  SPEEDSCOPE: 5 as Format.SPEEDSCOPE,
  FOLDED_LINES: 6 as Format.FOLDED_LINES,
} as const;
export type FlameGraphFormat = Format;

export const SeriesKey = {
  CPU: 1 as Key.CPU,
  THREAD: 2 as Key.THREAD,
  PROCESS: 3 as Key.PROCESS,
} as const;
export type SeriesKey = Key;
