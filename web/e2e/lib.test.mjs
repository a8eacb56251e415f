// Unit tests (Vitest) of the browser tests' own ground-truth helpers.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "vitest";
import { countInRange, exactHeatmap, explainTruth, plantedSamples, secondsPerColumnFor, wallColumns, wallCount, wallSpan } from "./lib.mjs";

test("planted.perf: headers and stacks", () => {
  const dir = mkdtempSync(join(tmpdir(), "planted-"));
  try {
    const file = join(dir, "planted.perf");
    writeFileSync(
      file,
      "# ========\n# hostname : planted-host\n#\n" +
        "java  4242 [000] 51234.400123: cpu-clock:pppH: \n" +
        "\t          400300 PSPromotionManager::drain_stacks_depth(bool)+0x13 (/usr/lib/jvm/libjvm.so)\n" +
        "\t          400000 start_thread+0x10 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\n" +
        "postgres  1201 [001] 51235.000001: cpu-clock:pppH: \n" +
        "\t          400000 [unknown] (/usr/lib/postgresql/15/bin/postgres)\n\n",
    );
    expect(plantedSamples(file)).toEqual([
      { comm: "java", tid: 4242, cpu: 0, us: 51234_400123, stack: ["PSPromotionManager::drain_stacks_depth(bool)", "start_thread"] },
      { comm: "postgres", tid: 1201, cpu: 1, us: 51235_000001, stack: ["[unknown]"] },
    ]);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

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

test("several seconds per column; counts in a range; the columns rule", () => {
  const s = (comm, sec, us) => ({ comm, us: sec * 1e6 + us });
  const samples = [s("java", 100, 3), s("java", 101, 20_000), s("java", 102, 20_000), s("swapper", 101, 20_000), s("gc", 104, 999_999)];
  const { seconds, columns } = exactHeatmap(samples, 50, 2);
  expect(seconds).toBe(5);
  expect(columns.length).toBe(3); // [100, 102), [102, 104), [104, 106)
  expect(columns[0][0]).toBe(1);
  expect(columns[0][1]).toBe(1);
  expect(columns[1][1]).toBe(1);
  expect(columns[2][49]).toBe(1);
  expect(countInRange(samples, 100, 1e9, 2.02e9)).toBe(1); // 101.02 is in, 102.02 is not, swapper never
  expect(countInRange(samples, 100, 0, 5e9)).toBe(4);
  expect(exactHeatmap(samples, 50, 2, true).columns[0][1]).toBe(2); // swapper counted with idle
  expect([1, 999, 1000, 1001, 1500, 2000, 2001, 86400].map(secondsPerColumnFor)).toEqual([1, 1, 1, 2, 2, 2, 3, 87]);
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

test("hosts on one wall clock: columns, counts and span", () => {
  const s = (comm, us) => ({ comm, us, stack: [] });
  const epoch = { samples: [s("java", 1795000000_000_000), s("java", 1795000001_999_999), s("swapper", 1795000002_500_000)], shiftUs: 0 };
  // a boot clock at 100 s, shifted to 1795000001.5
  const boot = { samples: [s("gc", 100_000_000), s("gc", 100_600_000)], shiftUs: 1795000001_500_000 - 100_000_000 };
  const cols = wallColumns([epoch, boot], 1795000000, 3, 10);
  expect(cols[0][0]).toBe(1);
  expect(cols[1][9]).toBe(1); // 1.999999
  expect(cols[1][5]).toBe(1); // the boot sample at 1.5
  expect(cols[2][1]).toBe(1); // the boot sample at 2.1; swapper left out
  expect(cols.flat().reduce((a, b) => a + b, 0)).toBe(4);
  expect(wallColumns([epoch, boot], 1795000000, 1, 10, 2).flat().reduce((a, b) => a + b, 0)).toBe(3); // 2-s column: 0..2 s
  expect(wallCount([epoch, boot], 1795000001_500_000, 1795000002_100_000)).toBe(2); // half-open: 2.1 is out
  expect(wallCount([epoch, boot], 1795000001_500_000, 1795000002_100_001)).toBe(3);
  expect(wallSpan([epoch, boot])).toEqual({ first: 1795000000, end: 1795000003 });
});
