import { create, toBinary } from "@bufbuild/protobuf";
import { expect, test } from "vitest";
import { AccountingSchema, GetFleetHeatmapResponseSchema } from "../gen/fleetscope/v1/fleet_pb";
import { GetHeatmapResponseSchema } from "../gen/fleetscope/v1/query_pb";
import { fleetHeatmapOf } from "./model";
import { decodeAccounting, decodeFleetHeatmap, decodeHeatmap } from "./wire";

test("decodes what protobuf-es encodes, numbers for int64s", () => {
  for (const [cols, rows, start] of [
    [0, 50, 0n],
    [1, 1, 1n],
    [600, 50, 1_795_000_000n],
    [7, 1000, -3n],
  ] as const) {
    const columns = Array.from({ length: cols }, (_, c) => ({
      counts: Array.from({ length: rows }, (_, r) => BigInt((c * 7919 + r * 104729) % 1000 === 0 ? 2 ** 52 + c : (c * r) % 97)),
    }));
    const msg = create(GetHeatmapResponseSchema, { event: "cpu-clock:pppH ✓", startSecond: start, rows, columns, maxCount: 96n, total: 123_456n, secondsPerColumn: 4n });
    const got = decodeHeatmap(toBinary(GetHeatmapResponseSchema, msg));
    expect(got.event).toBe("cpu-clock:pppH ✓");
    expect(got.startSecond).toBe(Number(start));
    expect(got.rows).toBe(rows);
    expect(got.columns.map((c) => c.counts)).toEqual(columns.map((c) => c.counts.map(Number)));
    expect([got.maxCount, got.total, got.secondsPerColumn]).toEqual([96, 123_456, 4]);
  }
});

test("unpacked counts, unknown fields and truncated input", () => {
  // Column with unpacked counts 3 and 300, an unknown varint field 9, in a
  // response with an unknown fixed64 field 11.
  const col = [0x08, 3, 0x08, 0xac, 0x02, 0x48, 5];
  const msg = new Uint8Array([0x59, 1, 2, 3, 4, 5, 6, 7, 8, 0x22, col.length, ...col, 0x18, 2]);
  const got = decodeHeatmap(msg);
  expect(got.columns).toEqual([{ counts: [3, 300] }]);
  expect(got.rows).toBe(2);
  expect(() => decodeHeatmap(msg.subarray(0, msg.length - 4))).toThrow(/truncated/);
});

test("packed columns: multi-byte counts, long lengths, counts past 2^49 and truncation", () => {
  const values = [0n, 127n, 128n, 300n, 2n ** 21n, 2n ** 48n + 5n, 2n ** 49n + 1n, 2n ** 52n + 3n];
  for (const counts of [values.slice(0, 6), values, Array.from({ length: 3000 }, (_, i) => BigInt(i))]) {
    const msg = create(GetHeatmapResponseSchema, { rows: counts.length, columns: [{ counts }, { counts: counts.slice().reverse() }] });
    const got = decodeHeatmap(toBinary(GetHeatmapResponseSchema, msg));
    expect(got.columns.map((c) => c.counts)).toEqual([counts.map(Number), counts.slice().reverse().map(Number)]);
  }
  // A varint cut off at the end of its column's packed field.
  const col = [0x0a, 2, 0x05, 0x80];
  expect(() => decodeHeatmap(new Uint8Array([0x22, col.length, ...col]))).toThrow(/truncated/);
});

test("a fleet heatmap and its accounting: what protobuf-es encodes, numbers for int64s", () => {
  const columns = Array.from({ length: 60 }, (_, c) => ({ counts: Array.from({ length: 50 }, (_, r) => BigInt((c * r) % 13)) }));
  const accounting = {
    event: "cpu-clock",
    profiles: 19,
    leftOut: { "no per-sample times: no heatmap": 2, "ünïcødé ✓": 1 },
    servedSeconds: 240,
    servedMinutes: 3,
    servedTens: 11,
    liveSegments: 17,
    liveStreams: 2,
    rawFiles: 4,
  };
  const msg = create(GetFleetHeatmapResponseSchema, { startSecond: 1_795_000_000n, secondsPerColumn: 60n, rows: 50, columns, maxCount: 12n, total: 9_876n, accounting });
  const got = decodeFleetHeatmap(toBinary(GetFleetHeatmapResponseSchema, msg));
  expect([got.startSecond, got.secondsPerColumn, got.rows, got.maxCount, got.total]).toEqual([1_795_000_000, 60, 50, 12, 9_876]);
  expect(got.columns.map((c) => c.counts)).toEqual(columns.map((c) => c.counts.map(Number)));
  expect(got.accounting).toEqual(accounting);
  // the model reads it as it reads the generic decoder's answer
  expect(fleetHeatmapOf(got)).toEqual(fleetHeatmapOf(msg));
  // absent accounting and defaults
  const empty = decodeFleetHeatmap(toBinary(GetFleetHeatmapResponseSchema, create(GetFleetHeatmapResponseSchema, {})));
  expect(empty.accounting).toEqual({ event: "", profiles: 0, leftOut: {}, servedSeconds: 0, servedMinutes: 0, servedTens: 0, liveSegments: 0, liveStreams: 0, rawFiles: 0 });
  // an Accounting alone (a fleet flame graph's)
  expect(decodeAccounting(toBinary(AccountingSchema, create(AccountingSchema, accounting)))).toEqual(accounting);
});
