// The flame tree's number columns decoded and the tree laid out in
// WebAssembly (tree.wat): a page's first flame graph is read by cold
// JavaScript, which the engine optimises only as it runs; the module is
// compiled before. One WebAssembly memory per tree holds its bytes and the
// arrays; the tree and its layout are views of it (its size is fixed, so
// they stay valid), and it lives as long as they do.
//
// wasmTree returns null whenever it cannot give what the JavaScript would
// (no WebAssembly, a column not packed, a malformed varint or tree): the
// caller then decodes and lays out in JavaScript, which throws the precise
// error for a malformed answer.

import { treeWasm } from "../gen/flame_tree_wasm";
import type { Layout } from "./model";

/** Columns are the byte ranges [start, end) of the tree's packed name,
 * value and depth fields, in the order they came. */
export interface Columns {
  name: number[];
  value: number[];
  depth: number[];
}

interface Exports {
  count(s: number, e: number): number;
  u32(s: number, e: number, out: number): number;
  f64(s: number, e: number, out: number): number;
  layout(n: number, names: number, name: number, value: number, depth: number, x: number, end: number, parent: number, self: number, stack: number): number;
}

let compiled: WebAssembly.Module | null | undefined; // null: no WebAssembly here (or a policy forbids it)
let compiling = false;

const wasmBytes = () => Uint8Array.from(atob(treeWasm), (c) => c.charCodeAt(0));

/** prepareTreeWasm compiles the module in the background, once: a flame
 * graph call starts it, so that its answer finds it compiled (~3 ms of the
 * page's thread otherwise). */
export function prepareTreeWasm() {
  if (compiled !== undefined || compiling || typeof WebAssembly === "undefined") return;
  compiling = true;
  WebAssembly.compile(wasmBytes()).then(
    (m) => void (compiled ??= m),
    () => void (compiled ??= null),
  );
}

function module(): WebAssembly.Module | null {
  if (compiled === undefined) {
    try {
      compiled = new WebAssembly.Module(wasmBytes());
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

const PAGE = 65536;

function count(ex: Exports, spans: number[], base: number): number {
  let n = 0;
  for (let i = 0; i < spans.length; i += 2) n += ex.count(spans[i] - base, spans[i + 1] - base);
  return n;
}

// decode decodes the spans into the array at out; false if a varint is
// malformed.
function decode(fn: (s: number, e: number, out: number) => number, spans: number[], base: number, out: number): boolean {
  for (let i = 0; i < spans.length; i += 2) {
    out = fn(spans[i] - base, spans[i + 1] - base, out);
    if (out < 0) return false;
  }
  return true;
}

/** wasmTree decodes the columns of the tree whose bytes are buf[s:e]
 * and lays it out over its names; null when it cannot (see above). */
export function wasmTree(buf: Uint8Array, s: number, e: number, cols: Columns, names: string[]): Layout | null {
  const mod = module();
  if (!mod) return null;
  // The tree's bytes, then (8-byte aligned) the float64 arrays, then the
  // 32-bit ones, the stack last.
  const bytes = e - s;
  const base = (bytes + 7) & ~7;
  let mem: WebAssembly.Memory;
  let ex: Exports;
  let n: number;
  try {
    mem = new WebAssembly.Memory({ initial: Math.ceil(base / PAGE) + 1 });
    ex = new WebAssembly.Instance(mod, { js: { mem } }).exports as unknown as Exports;
    new Uint8Array(mem.buffer).set(buf.subarray(s, e));
    n = count(ex, cols.name, s);
    if (count(ex, cols.value, s) !== n || count(ex, cols.depth, s) !== n) return null;
    const need = base + n * (3 * 8 + 5 * 4);
    mem.grow(Math.max(0, Math.ceil(need / PAGE) - mem.buffer.byteLength / PAGE));
  } catch {
    return null; // out of memory for it: the JavaScript may manage
  }
  const at = { value: base, x: base + 8 * n, self: base + 16 * n, name: base + 24 * n, depth: base + 28 * n, end: base + 32 * n, parent: base + 36 * n, stack: base + 40 * n };
  if (!decode(ex.u32, cols.name, s, at.name) || !decode(ex.f64, cols.value, s, at.value) || !decode(ex.u32, cols.depth, s, at.depth)) return null;
  const maxDepth = ex.layout(n, names.length, at.name, at.value, at.depth, at.x, at.end, at.parent, at.self, at.stack);
  if (maxDepth < 0) return null;
  const b = mem.buffer; // grown once, above: never detached after this
  const value = new Float64Array(b, at.value, n);
  return {
    n,
    names,
    name: new Uint32Array(b, at.name, n),
    value,
    depth: new Uint32Array(b, at.depth, n),
    x: new Float64Array(b, at.x, n),
    end: new Int32Array(b, at.end, n),
    parent: new Int32Array(b, at.parent, n),
    self: new Float64Array(b, at.self, n),
    maxDepth,
    total: n > 0 ? value[0] : 0,
  };
}
