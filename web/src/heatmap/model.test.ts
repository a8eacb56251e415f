import { create } from "@bufbuild/protobuf";
import { describe, expect, test } from "vitest";
import { GetFleetHeatmapResponseSchema } from "../gen/fleetscope/v1/fleet_pb";
import { GetHeatmapResponseSchema } from "../gen/fleetscope/v1/query_pb";
import {
  cellAt,
  cellIndex,
  cellOfIndex,
  cellRange,
  cellsOfRange,
  colourLUT,
  colourOf,
  columnRange,
  EMPTY,
  extendSelection,
  fleetHeatmapOf,
  heatmapOf,
  legendGradient,
  moveCell,
  msTicks,
  cellWidth,
  MAX_CELL_WIDTH,
  MIN_CELL_WIDTH,
  rangeOfCells,
  rowOf,
  rowOffsets,
  secondTicks,
  sumCells,
  wallTicks,
} from "./model";

const NS = 1_000_000_000;
/** one-second columns */
const g1 = (rows: number, cols = 30) => ({ rows, secondsPerColumn: 1, firstColumn: 0, cols });

// A seeded generator so failures reproduce.
function rng(seed: number) {
  let s = seed;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 4294967296;
  };
}

describe("cellRange", () => {
  test("20 ms cells at 50 rows", () => {
    expect(cellRange(2, 20, 50)).toEqual({ start: 2.4e9, end: 2.42e9 });
    expect(cellRange(0, 0, 50)).toEqual({ start: 0, end: 20_000_000 });
    expect(cellRange(9, 49, 50)).toEqual({ start: 9.98e9, end: 10e9 });
  });
  test("ceil bounds at 7 rows, like the Go geometry (geometry.go)", () => {
    expect(cellRange(0, 1, 7)).toEqual({ start: 142_857_143, end: 285_714_286 });
    expect(cellRange(3, 6, 7)).toEqual({ start: 3 * NS + 857_142_858, end: 4 * NS });
  });
  test("each cell holds exactly the offsets rowOf puts in its row, for every row count", () => {
    for (let rows = 1; rows <= 1000; rows++) {
      let prev = 0;
      for (let r = 0; r < rows; r++) {
        const { start, end } = cellRange(0, r, rows);
        if (start !== prev || end <= start || rowOf(start, rows) !== r || rowOf(end - 1, rows) !== r) {
          throw new Error(`rows=${rows} r=${r}: [${start}, ${end}) rows ${rowOf(start, rows)}..${rowOf(end - 1, rows)}`);
        }
        prev = end;
      }
      expect(prev).toBe(NS);
    }
  });
});

describe("selections", () => {
  test("a drag selects the same span in either direction, in time order", () => {
    const a = cellIndex(2, 23, 50);
    const b = cellIndex(2, 20, 50);
    expect(rangeOfCells(a, b, g1(50))).toEqual({ start: 2.4e9, end: 2.48e9 });
    expect(rangeOfCells(b, a, g1(50))).toEqual({ start: 2.4e9, end: 2.48e9 });
    // across columns: from the top of second 3 to the bottom of second 5
    expect(rangeOfCells(cellIndex(5, 0, 50), cellIndex(3, 49, 50), g1(50))).toEqual({ start: 3.98e9, end: 5.02e9 });
  });
  test("shift-click extends from the anchor", () => {
    expect(extendSelection(10, 4)).toEqual({ first: 4, last: 10 });
    expect(extendSelection(4, 10)).toEqual({ first: 4, last: 10 });
  });
  test("cellsOfRange inverts rangeOfCells and says when a range is not cell-aligned", () => {
    const r = rng(7);
    for (const rows of [1, 7, 25, 50, 100]) {
      for (let k = 0; k < 500; k++) {
        const a = Math.floor(r() * 30 * rows);
        const b = Math.floor(r() * 30 * rows);
        const span = cellsOfRange(rangeOfCells(a, b, g1(rows)), g1(rows))!;
        expect(span).toEqual({ first: Math.min(a, b), last: Math.max(a, b), aligned: true });
      }
    }
    expect(cellsOfRange({ start: 2.41e9, end: 2.48e9 }, g1(50))).toEqual({ first: cellIndex(2, 20, 50), last: cellIndex(2, 23, 50), aligned: false });
    expect(cellsOfRange({ start: 40e9, end: 41e9 }, g1(50))).toBeNull();
    expect(cellsOfRange({ start: 5e9, end: 5e9 }, g1(50))).toBeNull();
  });
  test("the sum of the selected cells is the number of samples in the selected range", () => {
    const r = rng(42);
    for (const rows of [7, 50, 100, 25]) {
      const cols = 12;
      const samples: number[] = [];
      for (let i = 0; i < 5000; i++) samples.push(Math.floor(r() * cols * NS));
      // boundary samples, where float arithmetic goes wrong
      for (let c = 0; c < cols; c++) for (let row = 0; row < rows; row++) samples.push(cellRange(c, row, rows).start);
      const columns = Array.from({ length: cols }, () => new Array<number>(rows).fill(0));
      for (const t of samples) {
        const { col, row } = cellOfIndex(cellAt(t, g1(rows)), rows);
        columns[col][row]++;
      }
      for (let k = 0; k < 200; k++) {
        const a = Math.floor(r() * cols * rows);
        const b = Math.floor(r() * cols * rows);
        const range = rangeOfCells(a, b, g1(rows));
        const inRange = samples.filter((t) => t >= range.start && t < range.end).length;
        expect(sumCells({ columns, rows }, Math.min(a, b), Math.max(a, b))).toBe(inRange);
      }
    }
  });
  test("keyboard moves clamp to the grid; up is a later row", () => {
    const rows = 50;
    const cols = 30;
    expect(cellOfIndex(moveCell(cellIndex(0, 0, rows), -1, -1, rows, cols), rows)).toEqual({ col: 0, row: 0 });
    expect(cellOfIndex(moveCell(cellIndex(0, 0, rows), 1, 1, rows, cols), rows)).toEqual({ col: 1, row: 1 });
    expect(cellOfIndex(moveCell(cellIndex(29, 49, rows), 5, 5, rows, cols), rows)).toEqual({ col: 29, row: 49 });
  });
});

describe("columns of several seconds", () => {
  test("a selection is the whole seconds of the columns from the earlier to the later, whatever the rows", () => {
    const g = { rows: 50, secondsPerColumn: 2, firstColumn: 0, cols: 750 };
    // one cell of column 1: seconds [2, 4)
    expect(rangeOfCells(cellIndex(1, 20, 50), cellIndex(1, 20, 50), g)).toEqual({ start: 2 * NS, end: 4 * NS });
    // a drag from column 5 back to column 3, top row to bottom row: [6, 12)
    expect(rangeOfCells(cellIndex(5, 0, 50), cellIndex(3, 49, 50), g)).toEqual({ start: 6 * NS, end: 12 * NS });
    expect(columnRange(3, { secondsPerColumn: 7, firstColumn: 0 })).toEqual({ start: 21 * NS, end: 28 * NS });
    expect(columnRange(3, { secondsPerColumn: 7, firstColumn: 2 })).toEqual({ start: 35 * NS, end: 42 * NS });
  });
  test("cellsOfRange: the columns a range touches, aligned only for whole columns", () => {
    const g = { rows: 50, secondsPerColumn: 2, firstColumn: 0, cols: 750 };
    const col = (c: number) => ({ first: cellIndex(c, 0, 50), last: cellIndex(c, 49, 50) });
    expect(cellsOfRange({ start: 2 * NS, end: 4 * NS }, g)).toEqual({ ...col(1), aligned: true });
    expect(cellsOfRange({ start: 6 * NS, end: 12 * NS }, g)).toEqual({ first: col(3).first, last: col(5).last, aligned: true });
    // a GC stripe [2.40, 2.48) lies in column 1 but is not all of it
    expect(cellsOfRange({ start: 2.4e9, end: 2.48e9 }, g)).toEqual({ ...col(1), aligned: false });
    // one second of a two-second column is not the column
    expect(cellsOfRange({ start: 2 * NS, end: 3 * NS }, g)).toEqual({ ...col(1), aligned: false });
    // [3.9, 4.1) touches columns 1 and 2
    expect(cellsOfRange({ start: 3.9e9, end: 4.1e9 }, g)).toEqual({ first: col(1).first, last: col(2).last, aligned: false });
    expect(cellsOfRange({ start: 1500 * NS, end: 1501 * NS }, g)).toBeNull();
    const r = rng(3);
    for (const spc of [2, 3, 7]) {
      const h = { rows: 25, secondsPerColumn: spc, firstColumn: 0, cols: 40 };
      for (let k = 0; k < 300; k++) {
        const a = Math.floor(r() * 40 * 25);
        const b = Math.floor(r() * 40 * 25);
        const span = cellsOfRange(rangeOfCells(a, b, h), h)!;
        const lo = Math.floor(Math.min(a, b) / 25);
        const hi = Math.floor(Math.max(a, b) / 25);
        expect(span).toEqual({ first: cellIndex(lo, 0, 25), last: cellIndex(hi, 24, 25), aligned: true });
      }
    }
  });
  test("the sum of the selected columns is the number of samples in the selected range", () => {
    const r = rng(99);
    for (const spc of [2, 3, 7]) {
      for (const rows of [7, 50]) {
        const cols = 10;
        const samples: number[] = [];
        for (let i = 0; i < 5000; i++) samples.push(Math.floor(r() * cols * spc * NS));
        for (let s = 0; s < cols * spc; s++) for (let row = 0; row < rows; row++) samples.push(s * NS + rowOffsets(row, rows).start);
        // counted as the server counts them: column floor(second / spc), row floor(offset·rows / 1e9)
        const columns = Array.from({ length: cols }, () => new Array<number>(rows).fill(0));
        for (const t of samples) {
          const sec = Math.floor(t / NS);
          columns[Math.floor(sec / spc)][Math.floor(((t - sec * NS) * rows) / NS)]++;
        }
        const g = { rows, secondsPerColumn: spc, firstColumn: 0, cols };
        for (let k = 0; k < 100; k++) {
          const a = Math.floor(r() * cols * rows);
          const b = Math.floor(r() * cols * rows);
          const range = rangeOfCells(a, b, g);
          const span = cellsOfRange(range, g)!;
          const inRange = samples.filter((t) => t >= range.start && t < range.end).length;
          expect(sumCells({ columns, rows }, span.first, span.last)).toBe(inRange);
        }
        // cellAt agrees with the server's rule
        for (const t of samples.slice(0, 500)) {
          const sec = Math.floor(t / NS);
          expect(cellOfIndex(cellAt(t, g), rows)).toEqual({ col: Math.floor(sec / spc), row: Math.floor(((t - sec * NS) * rows) / NS) });
        }
      }
    }
  });
});

describe("reading the API's heatmap", () => {
  const res = (startSecond: number, secondsPerColumn: number) =>
    create(GetHeatmapResponseSchema, {
      event: "cpu-clock",
      startSecond: BigInt(startSecond),
      secondsPerColumn: BigInt(secondsPerColumn),
      rows: 2,
      columns: [{ counts: [1n, 2n] }, { counts: [0n, 5n] }],
      maxCount: 5n,
      total: 8n,
    });
  test("a whole heatmap, and a slice starting later", () => {
    expect(heatmapOf(res(51234, 1), 51234n)).toEqual({ event: "cpu-clock", startSecond: 51234, secondsPerColumn: 1, firstColumn: 0, rows: 2, columns: [[1, 2], [0, 5]], maxCount: 5, total: 8 });
    expect(heatmapOf(res(51236, 1), 51234n).firstColumn).toBe(2);
    expect(heatmapOf(res(51240, 2), 51234n).firstColumn).toBe(3);
    expect(heatmapOf(res(51234, 0), 51234n).secondsPerColumn).toBe(1); // an older server
  });
  test("a slice that does not start on a column boundary is refused", () => {
    expect(() => heatmapOf(res(51235, 2), 51234n)).toThrow(/column/);
    expect(() => heatmapOf(res(51233, 1), 51234n)).toThrow();
  });
});

describe("a slice of the heatmap (a share link's: only the columns its range touches)", () => {
  test("cells map to the profile's time from the slice's first column", () => {
    const g = { rows: 50, secondsPerColumn: 1, firstColumn: 2, cols: 1 }; // second 2 alone
    expect(cellsOfRange({ start: 2.4e9, end: 2.48e9 }, g)).toEqual({ first: cellIndex(0, 20, 50), last: cellIndex(0, 23, 50), aligned: true });
    expect(rangeOfCells(cellIndex(0, 23, 50), cellIndex(0, 20, 50), g)).toEqual({ start: 2.4e9, end: 2.48e9 });
    expect(cellsOfRange({ start: 1.5e9, end: 1.6e9 }, g)).toBeNull();
    expect(cellsOfRange({ start: 3e9, end: 4e9 }, g)).toBeNull();
    // a range reaching outside the slice is shown on the part inside, not as aligned
    expect(cellsOfRange({ start: 1.9e9, end: 2.1e9 }, g)).toEqual({ first: cellIndex(0, 0, 50), last: cellIndex(0, 4, 50), aligned: false });
    const g2 = { rows: 50, secondsPerColumn: 2, firstColumn: 3, cols: 2 }; // seconds [6, 10)
    expect(rangeOfCells(cellIndex(1, 7, 50), cellIndex(1, 7, 50), g2)).toEqual({ start: 8 * NS, end: 10 * NS });
    expect(cellsOfRange({ start: 6.5e9, end: 8.5e9 }, g2)).toEqual({ first: cellIndex(0, 0, 50), last: cellIndex(1, 49, 50), aligned: false });
    expect(secondTicks({ cols: 1, secondsPerColumn: 1, firstColumn: 2 }, 480)).toEqual([2, 3]);
    expect(secondTicks({ cols: 2, secondsPerColumn: 2, firstColumn: 3 }, 300)).toEqual([6, 8, 10]);
  });
  test("the sum of a slice's selected cells is the number of samples in the selected range", () => {
    const r = rng(5);
    for (const spc of [1, 2, 3]) {
      const rows = 25;
      const cols = 12;
      const samples: number[] = [];
      for (let i = 0; i < 4000; i++) samples.push(Math.floor(r() * cols * spc * NS));
      const full = Array.from({ length: cols }, () => new Array<number>(rows).fill(0));
      for (const t of samples) {
        const sec = Math.floor(t / NS);
        full[Math.floor(sec / spc)][Math.floor(((t - sec * NS) * rows) / NS)]++;
      }
      const slice = { columns: full.slice(3, 8), rows };
      const g = { rows, secondsPerColumn: spc, firstColumn: 3, cols: 5 };
      for (let k = 0; k < 100; k++) {
        const a = Math.floor(r() * 5 * rows);
        const b = Math.floor(r() * 5 * rows);
        const range = rangeOfCells(a, b, g);
        const span = cellsOfRange(range, g)!;
        expect(span.aligned).toBe(true);
        expect(sumCells(slice, span.first, span.last)).toBe(samples.filter((t) => t >= range.start && t < range.end).length);
      }
    }
  });
});

describe("colour scale", () => {
  const lum = ([r, g, b]: number[]) => 0.2126 * r + 0.7152 * g + 0.0722 * b;
  test("empty cells are white and unlike a cell with one sample", () => {
    expect(colourOf(0, 30)).toEqual(EMPTY);
    expect(colourOf(1, 30)).not.toEqual(EMPTY);
  });
  test("more samples are darker, monotonically", () => {
    let prev = Infinity;
    for (let c = 1; c <= 100; c++) {
      const l = lum(colourOf(c, 100));
      expect(l).toBeLessThanOrEqual(prev);
      prev = l;
    }
    expect(lum(colourOf(100, 100))).toBeLessThan(lum(colourOf(1, 100)) / 4);
  });
  test("the legend's gradient is the scale: blending its stops gives each count's colour", () => {
    const stops = [...legendGradient().matchAll(/rgb\((\d+),(\d+),(\d+)\) ([\d.]+)%/g)].map((m) => ({ rgb: [1, 2, 3].map((i) => Number(m[i])), at: Number(m[4]) / 100 }));
    expect(stops[0]).toEqual({ rgb: [0xfc, 0xff, 0xa4], at: 0 }); // inferno's light end
    expect(stops.at(-1)).toEqual({ rgb: [0x16, 0x0b, 0x39], at: 1 }); // inferno at 0.1
    for (const max of [2, 7, 50, 333]) {
      for (let c = 1; c <= max; c++) {
        const f = (c - 1) / (max - 1);
        const i = Math.max(stops.findIndex((s) => s.at >= f), 1);
        const [a, b] = [stops[i - 1], stops[i]];
        const blend = a.rgb.map((v, k) => v + ((b.rgb[k] - v) * (f - a.at)) / (b.at - a.at));
        colourOf(c, max).forEach((v, k) => expect(Math.abs(v - blend[k])).toBeLessThanOrEqual(0.5 + 1e-9)); // colourOf rounds
      }
    }
  });
  test("the LUT packs RGBA for ImageData", () => {
    const lut = colourLUT(10);
    expect(lut.length).toBe(11);
    const [r, g, b] = colourOf(10, 10);
    expect(lut[10]).toBe(((255 << 24) | (b << 16) | (g << 8) | r) >>> 0);
  });
});

describe("geometry", () => {
  test("columns fill the plot: a short profile as well as a long one", () => {
    for (const cols of [3, 4, 6, 30, 100]) {
      const w = cellWidth(1322, cols);
      expect(cols * w).toBeLessThanOrEqual(1322);
      expect(cols * w).toBeGreaterThan(1322 - cols); // whole pixels: less than one per column left over
    }
  });
  test("within bounds: wider than the plot scrolls, narrower stops growing", () => {
    expect(cellWidth(1322, 600)).toBe(MIN_CELL_WIDTH);
    expect(cellWidth(1322, 1)).toBe(MAX_CELL_WIDTH);
    expect(cellWidth(1322, 0)).toBe(MAX_CELL_WIDTH);
  });
});

describe("axes", () => {
  test("second labels at least 48 px apart", () => {
    expect(secondTicks({ cols: 30, secondsPerColumn: 1, firstColumn: 0 }, 24)).toEqual([0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30]);
    expect(secondTicks({ cols: 600, secondsPerColumn: 1, firstColumn: 0 }, 4).slice(0, 3)).toEqual([0, 15, 30]);
  });
  test("with several seconds per column, labels sit on column boundaries", () => {
    expect(secondTicks({ cols: 750, secondsPerColumn: 2, firstColumn: 0 }, 4).slice(0, 3)).toEqual([0, 30, 60]);
    expect(secondTicks({ cols: 750, secondsPerColumn: 2, firstColumn: 0 }, 4).at(-1)).toBe(1500);
    for (const [cols, w, spc] of [
      [750, 4, 2],
      [1000, 4, 7],
      [500, 40, 3],
      [1000, 4, 87],
    ]) {
      const ticks = secondTicks({ cols, secondsPerColumn: spc, firstColumn: 0 }, w);
      expect(ticks[0]).toBe(0);
      for (let i = 1; i < ticks.length; i++) {
        expect(ticks[i] % spc).toBe(0);
        expect(((ticks[i] - ticks[i - 1]) / spc) * w).toBeGreaterThanOrEqual(48);
      }
      expect(ticks.at(-1)!).toBeLessThanOrEqual(cols * spc);
    }
  });
  test("wall-clock labels at round times of the viewer's zone, wherever the window starts", () => {
    // a window from 11:06:43 UTC (unix 1795000003), one second a column, 20 px each
    const g = { cols: 120, secondsPerColumn: 1, firstColumn: 0 };
    const utc = wallTicks(g, 20, 1795000003, 0);
    expect(utc.step).toBe(5); // 5 s × 20 px = 100 px ≥ 72
    expect(utc.seconds.slice(0, 3)).toEqual([2, 7, 12]); // 11:06:45, :50, :55
    for (const s of utc.seconds) expect((1795000003 + s) % 5).toBe(0);
    // half an hour off UTC: ticks at round local times (minutes here are round in both)
    const ist = wallTicks({ cols: 900, secondsPerColumn: 4, firstColumn: 0 }, 1.5, 1795000003, 5.5 * 3600);
    expect(ist.step).toBe(300); // 300 s = 75 columns × 1.5 px = 112 px
    for (const s of ist.seconds) expect((1795000003 + 5.5 * 3600 + s) % 300).toBe(0);
    const hours = wallTicks({ cols: 994, secondsPerColumn: 87, firstColumn: 0 }, 1.3, 1795000003, 5.5 * 3600);
    expect(hours.step).toBe(7200);
    for (const s of hours.seconds) expect((1795000003 + 5.5 * 3600 + s) % 7200).toBe(0);
    expect(hours.seconds.at(-1)!).toBeLessThanOrEqual(994 * 87);
    expect(hours.seconds[0]).toBeGreaterThanOrEqual(0);
    // labels stay at least 72 px apart
    for (const t of [utc, ist, hours]) expect(t.seconds.length).toBeGreaterThan(1);
  });
  test("a fleet heatmap starts at a unix second, column 0 its first", () => {
    const r = create(GetFleetHeatmapResponseSchema, {
      startSecond: 1795000000n,
      secondsPerColumn: 4n,
      rows: 2,
      columns: [{ counts: [1n, 2n] }, { counts: [0n, 5n] }],
      maxCount: 5n,
      total: 8n,
      accounting: { event: "cpu-clock", profiles: 3 },
    });
    expect(fleetHeatmapOf(r)).toEqual({ event: "cpu-clock", startSecond: 1795000000, secondsPerColumn: 4, firstColumn: 0, rows: 2, columns: [[1, 2], [0, 5]], maxCount: 5, total: 8 });
  });
  test("ms labels", () => {
    expect(msTicks(400)).toEqual([0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]);
    expect(msTicks(100)).toEqual([0, 500, 1000]);
  });
});
