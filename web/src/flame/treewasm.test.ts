import { create, toBinary } from "@bufbuild/protobuf";
import { expect, test } from "vitest";
import { GetFlameGraphResponseSchema } from "../gen/fleetscope/v1/query_pb";
import { layout, syntheticTree, type FlatTree, type Layout } from "./model";
import { decodeFlameGraph, layoutOf } from "./wire";

function encode(t: FlatTree) {
  return toBinary(
    GetFlameGraphResponseSchema,
    create(GetFlameGraphResponseSchema, {
      tree: { names: t.names, name: Array.from(t.name), value: Array.from(t.value, (v) => BigInt(v)), depth: Array.from(t.depth) },
    }),
  );
}

const arrays = (l: Layout) => ({
  n: l.n,
  names: l.names,
  maxDepth: l.maxDepth,
  total: l.total,
  ...Object.fromEntries((["name", "value", "depth", "x", "end", "parent", "self"] as const).map((k) => [k, Array.from(l[k])])),
});

test("WebAssembly decodes and lays out trees exactly as the JavaScript does", () => {
  const trees: FlatTree[] = [syntheticTree(1, 1), syntheticTree(2, 2), syntheticTree(100, 3), syntheticTree(20_000, 4, 300), syntheticTree(120_000, 5)];
  // Values past 2^32 and up to 2^53; deep chains (varint depths, a long stack).
  trees.push({ names: ["all", "a"], name: [0, 1, 1], value: [2 ** 53, 2 ** 52 + 3, 2 ** 40], depth: [0, 1, 2] });
  const deep = 5000;
  trees.push({ names: ["all", "f"], name: Array.from({ length: deep }, (_, i) => (i ? 1 : 0)), value: Array.from({ length: deep }, (_, i) => deep - i), depth: Array.from({ length: deep }, (_, i) => i) });
  for (const t of trees) {
    const g = decodeFlameGraph(encode(t));
    expect(g.layout, "laid out in WebAssembly").toBeTruthy();
    expect(arrays(g.layout!)).toEqual(arrays(layout(t)));
    expect(layoutOf(g)).toBe(g.layout);
  }
});

test("unpacked number fields are laid out too (each a run of one varint)", () => {
  // names "all", "b"; node 0: name 0, value 300, depth 0; node 1 unpacked: name 1, value 5, depth 1.
  const tree = [0x0a, 3, 0x61, 0x6c, 0x6c, 0x0a, 1, 0x62, 0x10, 0, 0x18, 0xac, 0x02, 0x20, 0, 0x10, 1, 0x18, 5, 0x20, 1];
  const g = decodeFlameGraph(new Uint8Array([0x22, tree.length, ...tree]));
  expect(g.layout).toBeTruthy();
  expect(arrays(g.layout!)).toEqual(arrays(layout({ names: ["all", "b"], name: [0, 1], value: [300, 5], depth: [0, 1] })));
});

test("a tree the layout refuses is left to the JavaScript, which says why", () => {
  const bad: [FlatTree, RegExp][] = [
    [{ names: ["all", "a"], name: [0, 1, 1], value: [3, 1, 1], depth: [0, 0, 1] }, /second root/],
    [{ names: ["all", "a"], name: [0, 1], value: [3, 1], depth: [0, 2] }, /at depth 2 under depth 0/],
    [{ names: ["all", "a"], name: [0, 1], value: [3, 1], depth: [1, 2] }, /node 0 is not at depth 0/],
    [{ names: ["all"], name: [0, 1], value: [3, 1], depth: [0, 1] }, /names 1 of 1/],
    [{ names: ["all", "a"], name: [0, 1], value: [3], depth: [0, 1] }, /different lengths/],
  ];
  for (const [t, why] of bad) {
    const g = decodeFlameGraph(encode(t));
    expect(g.layout).toBeNull();
    expect(() => layoutOf(g)).toThrow(why);
  }
  // A truncated varint: the decoder throws as before.
  const cut = [0x12, 2, 0x05, 0x80];
  expect(() => decodeFlameGraph(new Uint8Array([0x22, cut.length, ...cut]))).toThrow(/truncated/);
});

test("any bytes: WebAssembly lays out exactly what the JavaScript decodes, or leaves it to the JavaScript", () => {
  // Valid answers with bytes flipped, cut, repeated or dropped (a seeded
  // generator: the same 800 inputs every run; each WebAssembly layout
  // instantiates the module, ~4 ms in Node). Each either fails to
  // decode, or decodes to a tree whose WebAssembly layout, when there is
  // one, equals the JavaScript's layout of the same tree.
  let seed = 0x2545f491;
  const rand = (n: number) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  const bases = [syntheticTree(3, 1), syntheticTree(40, 2), syntheticTree(200, 3, 20)].map(encode);
  let laidOut = 0;
  let refused = 0;
  for (let i = 0; i < 800; i++) {
    const base = bases[i % bases.length];
    let b = Array.from(base);
    for (let k = 1 + (rand(4) === 0 ? 1 : 0); k > 0; k--) {
      const at = rand(b.length);
      switch (rand(8)) {
        case 0:
          b = b.slice(0, at);
          break;
        case 1:
          b.splice(at, 0, ...b.slice(at, at + 1 + rand(8)));
          break;
        case 2:
          b.splice(at, 1 + rand(3));
          break;
        default: // most often a byte changed: a name, a number, a length
          b[at] = rand(256);
      }
      if (b.length === 0) b = [0];
    }
    let g;
    try {
      g = decodeFlameGraph(new Uint8Array(b));
    } catch {
      refused++;
      continue;
    }
    if (!g.layout || !g.tree) continue;
    laidOut++;
    let js: Layout;
    try {
      js = layout(g.tree);
    } catch (e) {
      throw new Error(`input ${i}: WebAssembly laid out a tree the JavaScript refuses (${String(e)}): ${b.join(",")}`);
    }
    const [got, want] = [arrays(g.layout), arrays(js)];
    if (JSON.stringify(got) !== JSON.stringify(want)) expect(got, `input ${i}: ${b.join(",")}`).toEqual(want);
  }
  expect(laidOut, "inputs laid out in WebAssembly").toBeGreaterThan(100);
  expect(refused, "inputs refused").toBeGreaterThan(100);
}, 60_000);
