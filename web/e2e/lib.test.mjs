// Unit tests (Vitest) of the browser tests' own ground-truth helpers.
import { expect, test } from "vitest";
import { exactHeatmap, explainTruth } from "./lib.mjs";

test("exact heatmap from perf timestamps, with boundary samples", () => {
  const s = (comm, sec, us) => ({ comm, us: sec * 1e6 + us });
  const { startSecond, columns, boundary } = exactHeatmap(
    [s("java", 100, 3), s("java", 100, 20_000), s("swapper", 100, 500), s("gc", 101, 999_999), s("gc", 101, 0)],
    50,
  );
  expect(startSecond).toBe(100);
  expect(columns[0][0]).toBe(1);
  expect(columns[0][1]).toBe(1); // exactly 20 ms: row 1
  expect(boundary[0][1]).toBe(1);
  expect(columns[1][49]).toBe(1);
  expect(columns[1][0]).toBe(1);
  expect(boundary[1][0]).toBe(1);
  expect(columns.flat().reduce((a, b) => a + b)).toBe(4); // swapper is idle
});

test("truth.json may put boundary samples one cell lower, nothing else", () => {
  const exact = [
    [1, 2, 0],
    [3, 0, 1],
  ];
  const boundary = [
    [0, 1, 0],
    [1, 0, 0],
  ];
  expect(explainTruth(exact, boundary, exact)).toBe(0);
  // one boundary sample of (0,1) counted in (0,0); one of (1,0) in (0,2)
  expect(
    explainTruth(exact, boundary, [
      [2, 1, 1],
      [2, 0, 1],
    ]),
  ).toBe(2);
  // a sample moved from a cell without boundary samples
  expect(() =>
    explainTruth(exact, boundary, [
      [1, 2, 1],
      [3, 0, 0],
    ]),
  ).toThrow(/cell \(1, 2\)/);
  // a sample missing altogether
  expect(() =>
    explainTruth(exact, boundary, [
      [1, 2, 0],
      [3, 0, 0],
    ]),
  ).toThrow();
});
