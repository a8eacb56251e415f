// A hand-written decoder for GetHeatmapResponse: a heatmap is cols × rows
// int64 counts (30,000 for ten minutes at 50 rows), which the generic
// decoder turns into as many bigints, ~10 ms here before the first paint.
// This reads them straight into numbers (exact up to 2^53).
//
//   GetHeatmapResponse: 1 event (string), 2 start_second (int64), 3 rows (int32),
//                       4 columns (repeated Column), 5 max_count, 6 total,
//                       7 seconds_per_column (int64)
//   Column:             1 counts (repeated int64, packed or not)

import { countVarints, Reader } from "../protowire";

/** WireHeatmap is a GetHeatmapResponse with numbers for its int64s. */
export interface WireHeatmap {
  event: string;
  startSecond: number;
  rows: number;
  columns: { counts: number[] }[];
  maxCount: number;
  total: number;
  secondsPerColumn: number;
}

function decodeColumn(buf: Uint8Array, s: number, e: number): number[] {
  // The usual column, one packed field (tag 0x0a) filling it, read in one
  // loop over locals into an array of its size (counted first: one varint
  // per byte under 0x80): a page's first heatmap is decoded before the
  // engine warms up, and a Reader, its arrays and pushes per column were
  // half of it (30,000 cells cold in Node: 6.6-15 -> 3.2-5.4 ms). Anything
  // else (unpacked counts, other fields, a varint past 2^49) goes through
  // the Reader.
  if (buf[s] === 0x0a) {
    let p = s + 1;
    let len = buf[p++]; // a length of one or two bytes (up to 16,383)
    if (len >= 0x80) {
      const hi = buf[p++];
      len = hi < 0x80 ? (len & 0x7f) + hi * 128 : -1;
    }
    if (len >= 0 && p + len === e) {
      const counts = new Array<number>(countVarints(buf, p, e));
      let i = 0;
      while (p < e) {
        let c = buf[p++];
        if (c < 0x80) {
          counts[i++] = c;
          continue;
        }
        let x = c & 0x7f;
        let mul = 128;
        do {
          if (p >= e || mul > 2 ** 42) return readColumn(buf, s, e);
          c = buf[p++];
          x += (c & 0x7f) * mul;
          mul *= 128;
        } while (c >= 0x80);
        counts[i++] = x;
      }
      return counts;
    }
  }
  return readColumn(buf, s, e);
}

// readColumn reads a Column in general.
function readColumn(buf: Uint8Array, s: number, e: number): number[] {
  const r = new Reader(buf, s, e);
  const counts: number[] = [];
  while (r.pos < e) {
    const tag = r.varint();
    if (tag === (1 << 3)) counts.push(r.int64());
    else if (tag === ((1 << 3) | 2)) {
      const [a, b] = r.bytes();
      for (let pos = a; pos < b; ) {
        // one loop over locals for the usual short varint (fast before the
        // engine warms up: a page's first heatmap); a long one (negative,
        // never a count) through Reader.int64
        const c = buf[pos];
        if (c < 0x80) {
          counts.push(c);
          pos++;
          continue;
        }
        const sub = new Reader(buf, pos, b);
        counts.push(sub.int64());
        pos = sub.pos;
      }
    } else r.skip(tag & 7);
  }
  return counts;
}

/** WireAccounting is an Accounting (fleet.proto) with numbers. */
export interface WireAccounting {
  event: string;
  profiles: number;
  leftOut: Record<string, number>;
  servedSeconds: number;
  servedMinutes: number;
  servedTens: number;
  liveSegments: number;
  liveStreams: number;
  rawFiles: number;
}

/** decodeAccounting reads an Accounting: 1 event, 2 profiles, 3 left_out
 * (map<string, int32>: entries of 1 key, 2 value), 4 served_seconds,
 * 5 served_minutes, 6 live_segments, 7 live_streams, 10 served_tens,
 * 11 raw_files. */
export function decodeAccounting(buf: Uint8Array, s = 0, e = buf.length): WireAccounting {
  const r = new Reader(buf, s, e);
  const out: WireAccounting = { event: "", profiles: 0, leftOut: {}, servedSeconds: 0, servedMinutes: 0, servedTens: 0, liveSegments: 0, liveStreams: 0, rawFiles: 0 };
  while (r.pos < e) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (field === 1 && wire === 2) out.event = r.string();
    else if (field === 2 && wire === 0) out.profiles = r.int64();
    else if (field === 3 && wire === 2) {
      const [a, b] = r.bytes();
      const m = new Reader(buf, a, b);
      let key = "";
      let value = 0;
      while (m.pos < b) {
        const t = m.varint();
        if (t === ((1 << 3) | 2)) key = m.string();
        else if (t === (2 << 3)) value = m.int64();
        else m.skip(t & 7);
      }
      out.leftOut[key] = value;
    } else if (field === 4 && wire === 0) out.servedSeconds = r.int64();
    else if (field === 5 && wire === 0) out.servedMinutes = r.int64();
    else if (field === 6 && wire === 0) out.liveSegments = r.int64();
    else if (field === 7 && wire === 0) out.liveStreams = r.int64();
    else if (field === 10 && wire === 0) out.servedTens = r.int64();
    else if (field === 11 && wire === 0) out.rawFiles = r.int64();
    else r.skip(wire);
  }
  return out;
}

/** WireFleetHeatmap is a GetFleetHeatmapResponse with numbers. */
export interface WireFleetHeatmap {
  startSecond: number;
  secondsPerColumn: number;
  rows: number;
  columns: { counts: number[] }[];
  maxCount: number;
  total: number;
  accounting: WireAccounting;
}

/** decodeFleetHeatmap reads a GetFleetHeatmapResponse (1 start_second,
 * 2 seconds_per_column, 3 rows, 4 columns, 5 max_count, 6 total,
 * 7 accounting) in protobuf binary, as decodeHeatmap does a profile's. */
export function decodeFleetHeatmap(buf: Uint8Array): WireFleetHeatmap {
  const r = new Reader(buf);
  const out: WireFleetHeatmap = { startSecond: 0, secondsPerColumn: 0, rows: 0, columns: [], maxCount: 0, total: 0, accounting: decodeAccounting(buf, 0, 0) };
  while (r.pos < buf.length) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (field === 1 && wire === 0) out.startSecond = r.int64();
    else if (field === 2 && wire === 0) out.secondsPerColumn = r.int64();
    else if (field === 3 && wire === 0) out.rows = r.int64();
    else if (field === 4 && wire === 2) {
      const [a, b] = r.bytes();
      out.columns.push({ counts: decodeColumn(buf, a, b) });
    } else if (field === 5 && wire === 0) out.maxCount = r.int64();
    else if (field === 6 && wire === 0) out.total = r.int64();
    else if (field === 7 && wire === 2) {
      const [a, b] = r.bytes();
      out.accounting = decodeAccounting(buf, a, b);
    } else r.skip(wire);
  }
  return out;
}

/** decodeHeatmap reads a GetHeatmapResponse in protobuf binary. */
export function decodeHeatmap(buf: Uint8Array): WireHeatmap {
  const r = new Reader(buf);
  const out: WireHeatmap = { event: "", startSecond: 0, rows: 0, columns: [], maxCount: 0, total: 0, secondsPerColumn: 0 };
  while (r.pos < buf.length) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (field === 1 && wire === 2) out.event = r.string();
    else if (field === 2 && wire === 0) out.startSecond = r.int64();
    else if (field === 3 && wire === 0) out.rows = r.int64();
    else if (field === 4 && wire === 2) {
      const [a, b] = r.bytes();
      out.columns.push({ counts: decodeColumn(buf, a, b) });
    } else if (field === 5 && wire === 0) out.maxCount = r.int64();
    else if (field === 6 && wire === 0) out.total = r.int64();
    else if (field === 7 && wire === 0) out.secondsPerColumn = r.int64();
    else r.skip(wire);
  }
  return out;
}
