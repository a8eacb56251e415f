import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { expect, test } from "vitest";
import { AccountingSchema, GetFleetFlameGraphResponseSchema } from "../gen/fleetscope/v1/fleet_pb";
import { GetFlameGraphResponseSchema } from "../gen/fleetscope/v1/query_pb";
import { GetSharedFlameGraphResponseSchema } from "../gen/fleetscope/v1/share_pb";
import { syntheticTree } from "./model";
import { decodeFlameGraph, decodeFleetFlameGraph, decodeSharedFlameGraph } from "./wire";

function encode(t: { names: string[]; name: ArrayLike<number>; value: ArrayLike<number>; depth: ArrayLike<number> }, total: number) {
  return toBinary(
    GetFlameGraphResponseSchema,
    create(GetFlameGraphResponseSchema, {
      event: "cpu-clock:pppH",
      total: BigInt(total),
      folded: "java;GC 3\n",
      tree: { names: t.names, name: Array.from(t.name), value: Array.from(t.value, (v) => BigInt(v)), depth: Array.from(t.depth) },
    }),
  );
}

test("decodes what protobuf-es encodes", () => {
  for (const n of [1, 2, 100, 20_000]) {
    const t = syntheticTree(n, n);
    const names = t.names.map((s, i) => (i % 7 === 3 ? `${s} ünïcødé ✓` : s));
    const got = decodeFlameGraph(encode({ ...t, names }, t.value[0]));
    expect(got.event).toBe("cpu-clock:pppH");
    expect(got.total).toBe(t.value[0]);
    expect(got.folded).toBe("java;GC 3\n");
    expect(got.tree!.names).toEqual(names);
    expect(Array.from(got.tree!.name)).toEqual(Array.from(t.name));
    expect(Array.from(got.tree!.value)).toEqual(Array.from(t.value));
    expect(Array.from(got.tree!.depth)).toEqual(Array.from(t.depth));
  }
});

test("names: long ones (two-byte lengths), Latin-1's odd bytes, invalid UTF-8", () => {
  const long = "java.util.concurrent.".repeat(9); // 189 bytes: its length takes two bytes, the first 0xbd
  const names = ["all", long, `${long}ü`, "\u0080\u0081\u009f", "€", "", "plain", "x\u{1F600}y", long + "z"];
  const t = { names, name: names.map((_, i) => i), value: names.map(() => 1), depth: names.map((_, i) => (i === 0 ? 0 : 1)) };
  expect(decodeFlameGraph(encode(t, names.length)).tree!.names).toEqual(names);
  // Invalid UTF-8 (0xff) reads as U+FFFD, as a per-name decoder has it.
  const tree = [0x0a, 1, 0x61, 0x0a, 3, 0x62, 0xff, 0x63, 0x0a, 1, 0x64];
  expect(decodeFlameGraph(new Uint8Array([0x22, tree.length, ...tree])).tree!.names).toEqual(["a", "b\ufffdc", "d"]);
});

test("large values, unpacked numbers and unknown fields", () => {
  const big = 2 ** 52 + 3;
  const got = decodeFlameGraph(encode({ names: ["all"], name: [0], value: [big], depth: [0] }, big));
  expect(got.total).toBe(big);
  expect(got.tree!.value[0]).toBe(big);
  // FlameTree with unpacked fields (wire type 0), an unknown varint field 9
  // and an unknown length-delimited field 10, inside a response that also
  // has an unknown fixed64 field 11.
  const tree = [0x0a, 3, 0x61, 0x6c, 0x6c, 0x10, 0, 0x18, 0xac, 0x02, 0x20, 0, 0x48, 5, 0x52, 2, 1, 2];
  const msg = new Uint8Array([0x59, 1, 2, 3, 4, 5, 6, 7, 8, 0x22, tree.length, ...tree]);
  const d = decodeFlameGraph(msg);
  expect(d.tree!.names).toEqual(["all"]);
  expect(Array.from(d.tree!.value)).toEqual([300]);
  expect(Array.from(d.tree!.depth)).toEqual([0]);
});

test("32-bit columns: multi-byte varints, the largest uint32, and longer varints cut to their low 32 bits as protobuf-es reads them", () => {
  // name: packed 0, 127, 128, 300, 2^21, 2^28, 2^32-1, then 2^32+5 (keeps 5)
  // and 2^63+7 (keeps 7), ten bytes long; depth: the same, as numbers to compare.
  const nums = [0n, 127n, 128n, 300n, 2n ** 21n, 2n ** 28n, 2n ** 32n - 1n, 2n ** 32n + 5n, 2n ** 63n + 7n];
  const varint = (v: bigint) => {
    const out: number[] = [];
    for (; v >= 0x80n; v >>= 7n) out.push(Number(v & 0x7fn) | 0x80);
    out.push(Number(v));
    return out;
  };
  const packed = nums.flatMap(varint);
  const tree = [0x12, packed.length, ...packed, 0x22, packed.length, ...packed];
  const got = decodeFlameGraph(new Uint8Array([0x22, tree.length, ...tree])).tree!;
  const want = nums.map((v) => Number(BigInt.asUintN(32, v)));
  expect(Array.from(got.name)).toEqual(want);
  expect(Array.from(got.depth)).toEqual(want);
  // The same bytes as a value column: 64-bit numbers (2^63+7 is past 2^53: approximate).
  const values = [0x1a, packed.length, ...packed];
  const v = decodeFlameGraph(new Uint8Array([0x22, values.length, ...values])).tree!.value;
  expect(Array.from(v).slice(0, 8)).toEqual(nums.slice(0, 8).map(Number));
  expect(v[8]).toBe(2 ** 63);
  // A varint cut off at the end of its packed run.
  const cut = [0x12, 2, 0x05, 0x80];
  expect(() => decodeFlameGraph(new Uint8Array([0x22, cut.length, ...cut]))).toThrow(/truncated/);
});

test("an empty response and truncated input", () => {
  expect(decodeFlameGraph(new Uint8Array())).toEqual({ event: "", total: 0, folded: "", tree: null });
  const b = encode(syntheticTree(50, 1), 10);
  expect(() => decodeFlameGraph(b.subarray(0, b.length - 3))).toThrow(/truncated/);
});

test("a shared flame graph is the same response one field down", () => {
  const t = syntheticTree(300, 9);
  const plain = encode(t, t.value[0]);
  const shared = toBinary(GetSharedFlameGraphResponseSchema, create(GetSharedFlameGraphResponseSchema, { flameGraph: fromBinary(GetFlameGraphResponseSchema, plain) }));
  expect(decodeSharedFlameGraph(shared)).toEqual(decodeFlameGraph(plain));
  expect(decodeSharedFlameGraph(new Uint8Array())).toEqual({ event: "", total: 0, folded: "", tree: null });
});

test("a fleet flame graph: the response one field down, and its accounting", () => {
  const t = syntheticTree(200, 4);
  const plain = encode(t, t.value[0]);
  const accounting = { event: "cpu-clock", profiles: 3, leftOut: { "no per-sample times: no heatmap": 2 } };
  const fleet = toBinary(
    GetFleetFlameGraphResponseSchema,
    create(GetFleetFlameGraphResponseSchema, { flameGraph: fromBinary(GetFlameGraphResponseSchema, plain), accounting }),
  );
  const got = decodeFleetFlameGraph(fleet);
  expect(got.graph).toEqual(decodeFlameGraph(plain));
  expect(fromBinary(AccountingSchema, got.accounting)).toMatchObject(accounting);
  const empty = decodeFleetFlameGraph(new Uint8Array());
  expect(empty.graph).toEqual({ event: "", total: 0, folded: "", tree: null });
  expect(fromBinary(AccountingSchema, empty.accounting).profiles).toBe(0);
});
