import { describe, expect, test } from "vitest";
import { formatBytes, formatClock, formatCount, formatDuration, formatLabels, formatPercent, formatSeconds, formatTick, formatTimeRange, formatWallRange, parseLocalInput, parseSeconds, profileDuration, toLocalInput, zoneOffsetSeconds } from "./format";

describe("relative seconds", () => {
  test("parse exactly, without floats", () => {
    expect(parseSeconds("2.4")).toBe(2_400_000_000);
    expect(parseSeconds("2.48")).toBe(2_480_000_000);
    expect(parseSeconds("0.142857143")).toBe(142_857_143);
    expect(parseSeconds("12")).toBe(12_000_000_000);
    expect(parseSeconds("12.")).toBe(12_000_000_000);
    expect(parseSeconds("0.000000001")).toBe(1);
    // 0.1 + 0.2 style traps
    expect(parseSeconds("0.3")).toBe(300_000_000);
  });
  test("reject what is not a time", () => {
    for (const s of ["", "-1", "1e3", "1.0000000001", "abc", ".5", null, undefined]) expect(parseSeconds(s)).toBeNull();
  });
  test("format is the shortest exact decimal and round-trips", () => {
    expect(formatSeconds(2_400_000_000)).toBe("2.4");
    expect(formatSeconds(3_000_000_000)).toBe("3");
    expect(formatSeconds(142_857_143)).toBe("0.142857143");
    for (const ns of [0, 1, 999_999_999, 1_000_000_000, 123_456_789_012, 9_007_199_254]) {
      expect(parseSeconds(formatSeconds(ns))).toBe(ns);
    }
  });
});

describe("display", () => {
  test("durations", () => {
    expect(formatDuration(80_000_000)).toBe("80 ms");
    expect(formatDuration(1_500_000_000)).toBe("1.5 s");
    expect(formatDuration(600_000_000_000)).toBe("10 min 00 s");
    expect(formatDuration(3_720_000_000_000)).toBe("1 h 02 min");
  });
  test("a profile's duration: timed, untimed with its profiler's span, or none", () => {
    expect(profileDuration({ timed: true, durationNanos: 30_000_000_000n })).toBe("30 s");
    expect(profileDuration({ timed: true, durationNanos: 0n })).toBe("0 ns"); // one sample
    expect(profileDuration({ timed: false, durationNanos: 2_503_000_000n })).toBe("2.5 s");
    expect(profileDuration({ timed: false, durationNanos: 0n })).toBeNull();
  });
  test("counts and percentages", () => {
    expect(formatCount(1234567)).toBe("1,234,567");
    // as Intl.NumberFormat("en-US") writes them, without creating one
    const intl = new Intl.NumberFormat("en-US");
    const values: (number | bigint)[] = [0, 1, -1, 12, 999, 1000, -1000, 99_999, 100_000, 123_456_789, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2.5, 1e21, 0n, 7n, 1000n, -1234n, 12_345_678_901_234_567_890n];
    for (let x = 1; x < 1e16; x = x * 7 + 3) values.push(x, -x, BigInt(x));
    for (const v of values) expect(formatCount(v), String(v)).toBe(intl.format(v));
    expect(formatPercent(1, 3)).toBe("33.3%");
    expect(formatPercent(1, 1)).toBe("100%");
    expect(formatPercent(0, 0)).toBe("0%");
    expect(formatPercent(1, 1e6)).toBe("<0.01%");
  });
  test("labels: k=v, keys sorted, as the CLI prints them", () => {
    expect(formatLabels({})).toBe("");
    expect(formatLabels({ team: "a", env: "prod" })).toBe("env=prod,team=a");
  });
  test("sizes: bytes, then KB, MB, GB with at most three significant digits", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(999)).toBe("999 B");
    expect(formatBytes(1000)).toBe("1.0 KB");
    expect(formatBytes(3_149)).toBe("3.1 KB");
    expect(formatBytes(99_949)).toBe("99.9 KB");
    expect(formatBytes(99_950)).toBe("100 KB");
    expect(formatBytes(315_270)).toBe("315 KB");
    expect(formatBytes(999_499)).toBe("999 KB");
    expect(formatBytes(999_500)).toBe("1.0 MB"); // not "1000 KB"
    expect(formatBytes(5_012_345)).toBe("5.0 MB");
    expect(formatBytes(74_000_000)).toBe("74.0 MB");
    expect(formatBytes(1_234_000_000)).toBe("1.2 GB");
    expect(formatBytes(5e15)).toBe("5000 TB");
  });
});

test("wall-clock times, in the viewer's zone (one half an hour off UTC here)", () => {
  const env = (globalThis as unknown as { process: { env: Record<string, string | undefined> } }).process.env; // Node's (no @types/node here)
  const saved = env.TZ;
  env.TZ = "Asia/Kolkata"; // UTC+5:30, no daylight saving: Node applies a new TZ at once
  try {
    const t = 1795000002_480_000_000n; // 2026-11-18T11:06:42.48Z
    expect(zoneOffsetSeconds(1795000002)).toBe(5.5 * 3600);
    expect(formatClock(t)).toBe("16:36:42.48");
    expect(formatClock(t, true)).toBe("2026-11-18 16:36:42.48");
    expect(formatClock(1795000002_000_000_001n)).toBe("16:36:42.000000001");
    expect(formatClock(1795000002_000_000_000n)).toBe("16:36:42");
    expect(formatWallRange(1795000002_400_000_000n, t)).toBe("2026-11-18 16:36:42.4 – 16:36:42.48");
    // across local midnight (2026-11-18T18:30:00Z): the end's date too
    expect(formatWallRange(1795020000_000_000_000n, 1795026000_000_000_000n)).toBe("2026-11-18 22:10:00 – 23:50:00");
    expect(formatWallRange(1795026000_000_000_000n, 1795027200_000_000_000n)).toBe("2026-11-18 23:50:00 – 2026-11-19 00:10:00");
    expect(formatTick(1795000020, 10)).toBe("16:37:00");
    expect(formatTick(1795000020, 60)).toBe("16:37");
    expect(formatTick(1795026600, 3600)).toBe("11-19"); // local midnight
    expect(formatTick(1795026600, 5)).toBe("00:00:00");
    expect(formatTick(1795026600, 86400)).toBe("11-19");
  } finally {
    if (saved === undefined) delete env.TZ;
    else env.TZ = saved;
  }
});

test("formatTimeRange: relative [start, end) as formatTime writes each end", () => {
  expect(formatTimeRange({ start: 2_400_000_000, end: 3_000_000_000 })).toBe("2.400 s – 3.000 s");
  expect(formatTimeRange({ start: 0, end: 20_000_001 })).toBe("0.000 s – 0.020000001 s");
});

describe("date fields", () => {
  test("24-hour local text, read back with or without seconds, T or space", () => {
    const d = new Date(2026, 10, 18, 16, 10, 42);
    expect(toLocalInput(d, true)).toBe("2026-11-18 16:10:42");
    expect(toLocalInput(d)).toBe("2026-11-18 16:10");
    expect(parseLocalInput("2026-11-18 16:10:42")).toEqual(d);
    expect(parseLocalInput("2026-11-18T16:10")).toEqual(new Date(2026, 10, 18, 16, 10));
    expect(parseLocalInput("2026-11-18")).toEqual(new Date(2026, 10, 18));
    for (const bad of ["", "04:10:16 PM", "2026-02-30 10:00", "2026-11-18 24:00", "18.11.2026"]) expect(parseLocalInput(bad)).toBeNull();
  });
});

