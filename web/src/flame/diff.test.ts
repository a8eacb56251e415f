import { describe, expect, test } from "vitest";
import { autoNormalize, contrast, diffColour, diffLayout, labelColour, normMode, parseRGB } from "./diff";

// all(10 → 12): x grew 4 → 8, y shrank 6 → 4.
const TREE = { names: ["all", "x", "y"], name: [0, 1, 2], valueA: [10, 4, 6], valueB: [12, 8, 4], depth: [0, 1, 1] };

describe("differential flame graph", () => {
  test("B's shape, red where it grew, blue where it shrank, by the largest change", () => {
    const d = diffLayout(TREE, false);
    expect(Array.from(d.layout.value)).toEqual([12, 8, 4]);
    expect(d.colours[1]).toBe("rgb(178,24,43)"); // +4, the largest change
    expect(d.colours[2]).toBe("rgb(140,175,210)"); // −2: half the largest
  });

  test("normalized: A scaled to B's total first", () => {
    const d = diffLayout(TREE, true);
    expect(Array.from(d.a).map((v) => +v.toFixed(9))).toEqual([12, 4.8, 7.2]);
    // x +3.2, y −3.2: both the largest change
    expect(d.colours[1]).toBe("rgb(178,24,43)");
    expect(d.colours[2]).toBe("rgb(33,102,172)");
  });

  test("no change is near-white", () => {
    expect(diffColour(0, 5)).toBe("rgb(247,247,247)");
  });

  test("every shade's label meets WCAG AA (4.5:1)", () => {
    for (let d = -100; d <= 100; d++) {
      const fill = diffColour(d, 100);
      const text = parseRGB(labelColour(fill));
      expect(contrast(parseRGB(fill), text)).toBeGreaterThanOrEqual(4.5);
    }
    expect(labelColour("rgb(0,0,255)")).toBe("#ffffff"); // flamegraph.pl's deepest blue: black would be 2.4:1
    expect(labelColour("rgb(250,250,250)")).toBe("#000000");
  });

  test("normalized by default when the totals differ more than twofold", () => {
    expect(autoNormalize(5392, 31)).toBe(true);
    expect(autoNormalize(100, 200)).toBe(false);
    expect(autoNormalize(100, 201)).toBe(true);
    expect(autoNormalize(0, 31)).toBe(false);
    expect(normMode(null, true, 5392, 31).mode).toBe("auto-normalized");
    expect(normMode(null, false, 100, 150).text).toMatch(/^Raw counts \(automatic: totals 1\.5× apart/);
    expect(normMode(false, false, 5392, 31).mode).toBe("raw");
  });
});
