import { describe, expect, test } from "vitest";
import { diffColour, diffLayout } from "./diff";

// all(10 → 12): x grew 4 → 8, y shrank 6 → 4.
const TREE = { names: ["all", "x", "y"], name: [0, 1, 2], valueA: [10, 4, 6], valueB: [12, 8, 4], depth: [0, 1, 1] };

describe("differential flame graph", () => {
  test("B's shape, red where it grew, blue where it shrank, by the largest change", () => {
    const d = diffLayout(TREE, false);
    expect(Array.from(d.layout.value)).toEqual([12, 8, 4]);
    expect(d.colours[1]).toBe("rgb(255,0,0)"); // +4, the largest change
    expect(d.colours[2]).toBe("rgb(105,105,255)"); // −2: half the largest
  });

  test("normalized: A scaled to B's total first", () => {
    const d = diffLayout(TREE, true);
    expect(Array.from(d.a).map((v) => +v.toFixed(9))).toEqual([12, 4.8, 7.2]);
    // x +3.2, y −3.2: both the largest change
    expect(d.colours[1]).toBe("rgb(255,0,0)");
    expect(d.colours[2]).toBe("rgb(0,0,255)");
  });

  test("no change is white", () => {
    expect(diffColour(0, 5)).toBe("rgb(250,250,250)");
  });
});
