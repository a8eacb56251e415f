// A hand-written decoder for GetFlameGraphResponse, the one large message
// the dashboard reads (the benchmark profile's whole flame graph is ~140k
// nodes, ~0.7 MB). Packed varints go straight into typed arrays instead of
// arrays of bigint: several times faster than the generic decoder, and the
// layout takes the arrays as they are. Where it can, the tree's numbers are
// decoded and the tree laid out in WebAssembly (flame/treewasm.ts), faster
// again in a page whose JavaScript has not warmed up. Values above 2^53
// (never sample counts; possibly huge period sums) lose precision, as any
// JS number does.
//
//   GetFlameGraphResponse:       1 event (string), 2 total (uint64), 3 folded (string), 4 tree (FlameTree), 5 export (bytes)
//   FlameTree:                   1 names (repeated string), 2 name, 3 value, 4 depth (repeated, packed or not)
//   GetSharedFlameGraphResponse: 1 flame_graph (GetFlameGraphResponse)
//   GetFleetFlameGraphResponse:  1 flame_graph (GetFlameGraphResponse), 2 accounting (Accounting)

import { countVarints, Reader, utf8 } from "../protowire";
import { layout, type Layout } from "./model";
import { wasmTree, type Columns } from "./treewasm";

export interface WireFlameTree {
  names: string[];
  name: Uint32Array;
  value: Float64Array;
  depth: Uint32Array;
}

export interface WireFlameGraph {
  event: string;
  total: number;
  folded: string;
  tree: WireFlameTree | null;
  /** The file of an export format (svg, pprof, speedscope), when asked. */
  export?: Uint8Array;
  /** The tree laid out with the decoding (flame/treewasm.ts), when it
   * could be; layoutOf gives it either way. */
  layout?: Layout | null;
}

/** layoutOf is g's tree laid out: as decoded, else now (an answer
 * without a tree: an empty one). */
export function layoutOf(g: WireFlameGraph): Layout {
  return g.layout ?? layout(g.tree ?? { names: [], name: [], value: [], depth: [] });
}

// numbers records where a number field's varints are in spans: a packed
// run's bytes, or an unpacked field's one varint (a run of one).
function numbers(r: Reader, wire: number, spans: number[]) {
  const at = r.pos;
  if (wire === 0) {
    r.varint();
    spans.push(at, r.pos);
    return;
  }
  if (wire !== 2) throw new Error(`flame graph: wire type ${wire} for a number`);
  spans.push(...r.bytes());
}

// column decodes the runs of varints at spans into one array of the size
// they need (counted first: one per byte under 0x80).
function column<T extends Uint32Array | Float64Array>(buf: Uint8Array, spans: number[], make: (n: number) => T, read: (buf: Uint8Array, s: number, e: number, out: T, at: number) => number): T {
  let n = 0;
  for (let i = 0; i < spans.length; i += 2) n += countVarints(buf, spans[i], spans[i + 1]);
  const out = make(n);
  let at = 0;
  for (let i = 0; i < spans.length; i += 2) at = read(buf, spans[i], spans[i + 1], out, at);
  return out;
}

// readPacked decodes the packed varints in buf[s:e] into out from index at
// (out has room for them all) and returns the index after the last: one
// loop over local variables, fast even before the engine has warmed up,
// which a page's first flame graph never is. It and readPacked32 are two
// loops, not one over either array type: each sees one type of array and
// one kind of arithmetic (36 -> 27 ms for the benchmark profile's tree).
function readPacked(buf: Uint8Array, s: number, e: number, out: Float64Array, at: number): number {
  let pos = s;
  let i = at;
  while (pos < e) {
    let c = buf[pos++];
    if (c < 0x80) {
      out[i++] = c;
      continue;
    }
    let x = c & 0x7f;
    let mul = 128;
    while (c >= 0x80) {
      if (pos >= e || mul > 2 ** 63) throw new Error("protobuf: truncated varint");
      c = buf[pos++];
      x += (c & 0x7f) * mul;
      mul *= 128;
    }
    out[i++] = x;
  }
  return i;
}

// readPacked32 is readPacked for 32-bit fields, in integer arithmetic (a
// longer varint keeps its low 32 bits, as protobuf reads it).
function readPacked32(buf: Uint8Array, s: number, e: number, out: Uint32Array, at: number): number {
  let pos = s;
  let i = at;
  while (pos < e) {
    let c = buf[pos++];
    if (c < 0x80) {
      out[i++] = c;
      continue;
    }
    let x = c & 0x7f;
    let shift = 7;
    do {
      if (pos >= e || shift > 63) throw new Error("protobuf: truncated varint");
      c = buf[pos++];
      if (shift < 32) x |= (c & 0x7f) << shift;
      shift += 7;
    } while (c >= 0x80);
    out[i++] = x >>> 0;
  }
  return i;
}

// Names are read as one text: Latin-1 (windows-1252, as TextDecoder has
// it) reads one character per byte, so an ASCII name is a slice of it; a
// name with other bytes is read as UTF-8 on its own. (A decoder call per
// name cost ~8 ms of the benchmark profile's whole flame graph: 4,909 names.)
const latin1 = new TextDecoder("latin1");
const nonASCII = /[^\x00-\x7f]/g;

/** decodeNames reads the strings at byte ranges [spans[2i], spans[2i+1]) of buf, in order. */
function decodeNames(buf: Uint8Array, spans: number[]): string[] {
  const n = spans.length / 2;
  const names = new Array<string>(n);
  if (n === 0) return names;
  const lo = spans[0];
  const text = latin1.decode(buf.subarray(lo, spans[spans.length - 1]));
  let wide = -1; // the first non-ASCII byte at or after the current name, -1: look again
  for (let i = 0; i < n; i++) {
    const a = spans[2 * i] - lo;
    const b = spans[2 * i + 1] - lo;
    if (wide < a) {
      nonASCII.lastIndex = a;
      wide = nonASCII.exec(text)?.index ?? text.length;
    }
    names[i] = wide >= b ? text.slice(a, b) : utf8.decode(buf.subarray(a + lo, b + lo));
  }
  return names;
}

// decodeTree reads the FlameTree in buf[s:e] and, where it can, lays it
// out at once (flame/treewasm.ts).
function decodeTree(buf: Uint8Array, s: number, e: number): { tree: WireFlameTree; layout: Layout | null } {
  const r = new Reader(buf, s, e);
  const spans: number[] = []; // where each name's bytes are
  const cols: Columns = { name: [], value: [], depth: [] };
  while (r.pos < e) {
    // A name under 128 bytes (one byte of tag, one of length), read
    // inline: there are thousands, and this loop runs cold.
    const p = r.pos;
    if (buf[p] === 0x0a && buf[p + 1] < 0x80 && p + 2 + buf[p + 1] <= e) {
      spans.push(p + 2, p + 2 + buf[p + 1]);
      r.pos = p + 2 + buf[p + 1];
      continue;
    }
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (field === 1 && wire === 2) spans.push(...r.bytes());
    else if (field === 2) numbers(r, wire, cols.name);
    else if (field === 3) numbers(r, wire, cols.value);
    else if (field === 4) numbers(r, wire, cols.depth);
    else r.skip(wire);
  }
  const names = decodeNames(buf, spans);
  const l = wasmTree(buf, s, e, cols, names);
  if (l) return { tree: { names, name: l.name, value: l.value, depth: l.depth }, layout: l };
  const name = column(buf, cols.name, (n) => new Uint32Array(n), readPacked32);
  const value = column(buf, cols.value, (n) => new Float64Array(n), readPacked);
  const depth = column(buf, cols.depth, (n) => new Uint32Array(n), readPacked32);
  return { tree: { names, name, value, depth }, layout: null };
}

/** decodeFlameGraph reads a GetFlameGraphResponse in protobuf binary. */
export function decodeFlameGraph(buf: Uint8Array): WireFlameGraph {
  const r = new Reader(buf);
  const out: WireFlameGraph = { event: "", total: 0, folded: "", tree: null };
  while (r.pos < buf.length) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (field === 1 && wire === 2) out.event = r.string();
    else if (field === 2 && wire === 0) out.total = r.varint();
    else if (field === 3 && wire === 2) out.folded = r.string();
    else if (field === 4 && wire === 2) {
      const [a, b] = r.bytes();
      ({ tree: out.tree, layout: out.layout } = decodeTree(buf, a, b)); // protobuf would merge a second tree; the server sends one
    } else if (field === 5 && wire === 2) {
      const [a, b] = r.bytes();
      out.export = buf.slice(a, b);
    } else r.skip(wire);
  }
  return out;
}

/** decodeSharedFlameGraph reads a GetSharedFlameGraphResponse (a
 * GetFlameGraphResponse in field 1) in protobuf binary. */
export function decodeSharedFlameGraph(buf: Uint8Array): WireFlameGraph {
  return decodeFlameGraph(fields(buf)[1]);
}

/** decodeFleetFlameGraph reads a GetFleetFlameGraphResponse (a
 * GetFlameGraphResponse in field 1, an Accounting in field 2) in protobuf
 * binary: the flame graph decoded, the small accounting left as bytes for
 * the generic decoder. */
export function decodeFleetFlameGraph(buf: Uint8Array): { graph: WireFlameGraph; accounting: Uint8Array } {
  const f = fields(buf);
  return { graph: decodeFlameGraph(f[1]), accounting: f[2] };
}

// fields returns the bytes of fields 1 and 2 of a message whose fields 1
// and 2 are messages (empty when absent). Protobuf would merge a repeated
// field; the server sends each once.
function fields(buf: Uint8Array): Record<1 | 2, Uint8Array> {
  const r = new Reader(buf);
  const out: Record<1 | 2, Uint8Array> = { 1: new Uint8Array(0), 2: new Uint8Array(0) };
  while (r.pos < buf.length) {
    const tag = r.varint();
    if (tag === ((1 << 3) | 2) || tag === ((2 << 3) | 2)) {
      const [a, b] = r.bytes();
      out[(tag >> 3) as 1 | 2] = buf.subarray(a, b);
    } else r.skip(tag & 7);
  }
  return out;
}
