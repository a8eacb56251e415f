import { describe, expect, test } from "vitest";
import { layout, type FlatTree } from "./model";
import { sandwich, treeOf } from "./sandwich";

// Folded stacks, counted by hand below.
const FOLDED: [string, number][] = [
  ["app;main;a;f;g", 3],
  ["app;main;b;f", 2],
  ["app;main;f;f;h", 4], // recursive: counted once per sample
  ["app;main;a", 5],
  ["other;f", 1],
];

function stacks(lines: [string, number][]): [string[], number][] {
  return lines.map(([s, v]) => [s.split(";"), v]);
}

/** paths lists a flat tree's nodes as "path value", the root named first. */
function paths(t: FlatTree): string[] {
  const out: string[] = [];
  const path: string[] = [];
  for (let i = 0; i < t.value.length; i++) {
    path.length = t.depth[i];
    path.push(t.names[t.name[i]]);
    out.push(`${path.join(";")} ${t.value[i]}`);
  }
  return out;
}

describe("sandwich", () => {
  const l = layout(treeOf(stacks(FOLDED)));

  test("callers: the function at the root, its callers inverted and merged", () => {
    const s = sandwich(l, "f")!;
    expect(s.total).toBe(3 + 2 + 4 + 1);
    expect(paths(s.callers)).toEqual([
      "f 10",
      "f;a 3",
      "f;a;main 3",
      "f;a;main;app 3",
      "f;b 2",
      "f;b;main 2",
      "f;b;main;app 2",
      "f;main 4",
      "f;main;app 4",
      "f;other 1", // the process frame counts as a caller
    ]);
  });

  test("callees: the function at the root, merged; recursion stays below", () => {
    const s = sandwich(l, "f")!;
    expect(paths(s.callees)).toEqual(["f 10", "f;f 4", "f;f;h 4", "f;g 3"]);
  });

  test("a function not in the graph has no sandwich", () => {
    expect(sandwich(l, "nope")).toBeNull();
  });

  test("both trees total the function's total in the top-functions sense", () => {
    const s = sandwich(l, "main")!;
    expect(s.total).toBe(14);
    expect(s.callers.value[0]).toBe(14);
    expect(s.callees.value[0]).toBe(14);
    expect(paths(s.callers)).toEqual(["main 14", "main;app 14"]);
  });
});
