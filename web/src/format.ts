// Formatting and exact parsing of the numbers the UI shows and puts in URLs.
// Relative times travel as decimal seconds ("2.48") and are parsed into
// integer nanoseconds without going through a float, like the CLI does.

export const NS_PER_SEC = 1_000_000_000;

/** parseSeconds parses a non-negative decimal number of seconds ("12", "2.4",
 * "0.000000001") into integer nanoseconds; null when it is not one. */
export function parseSeconds(s: string | null | undefined): number | null {
  if (s == null) return null;
  const m = /^(\d{1,9})(?:\.(\d{0,9}))?$/.exec(s.trim());
  if (!m) return null;
  const frac = (m[2] ?? "").padEnd(9, "0");
  return Number(m[1]) * NS_PER_SEC + Number(frac);
}

/** formatSeconds writes integer nanoseconds as the shortest exact decimal
 * number of seconds ("2.48", "3", "0.142857143"). */
export function formatSeconds(ns: number): string {
  if (!Number.isSafeInteger(ns) || ns < 0) throw new RangeError(`not a time: ${ns}`);
  const whole = Math.floor(ns / NS_PER_SEC);
  const frac = ns - whole * NS_PER_SEC;
  if (frac === 0) return String(whole);
  return `${whole}.${String(frac).padStart(9, "0").replace(/0+$/, "")}`;
}

/** formatTime writes a relative time for people: seconds with millisecond
 * precision, more digits only when the value needs them ("2.400 s"). */
export function formatTime(ns: number): string {
  if (ns % 1_000_000 === 0) return `${(ns / NS_PER_SEC).toFixed(3)} s`;
  return `${formatSeconds(ns)} s`;
}

/** formatTimeRange writes a relative range [start, end) for people:
 * "2.400 s – 3.000 s". */
export function formatTimeRange(r: { start: number; end: number }): string {
  return `${formatTime(r.start)} – ${formatTime(r.end)}`;
}

/** formatDuration writes a span of nanoseconds compactly: "80 ms", "1.5 s",
 * "2 min 05 s", "1 h 02 min". */
export function formatDuration(ns: number): string {
  if (ns < 0) ns = 0;
  if (ns < 1_000) return `${ns} ns`;
  if (ns < 1_000_000) return `${trim(ns / 1_000)} µs`;
  if (ns < NS_PER_SEC) return `${trim(ns / 1_000_000)} ms`;
  const s = ns / NS_PER_SEC;
  if (s < 60) return `${trim(s)} s`;
  const total = Math.round(s);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = total % 60;
  if (h > 0) return `${h} h ${String(m).padStart(2, "0")} min`;
  return `${m} min ${String(sec).padStart(2, "0")} s`;
}

/** profileDuration writes a profile's duration, or null when it has none:
 * a timed profile's runs from its first to its last sample; an untimed one
 * (no per-sample timestamps) may still carry the span its profiler
 * recorded (pprof's duration_nanos), which is 0 when unknown. */
export function profileDuration(p: { timed: boolean; durationNanos: bigint }): string | null {
  return p.timed || p.durationNanos > 0n ? formatDuration(Number(p.durationNanos)) : null;
}

function trim(x: number): string {
  const digits = x >= 100 ? 0 : x >= 10 ? 1 : 2;
  return x.toFixed(digits).replace(/\.?0+$/, "");
}

let intl: Intl.NumberFormat | null = null;

/** formatCount writes an integer with thousands separators, as
 * Intl.NumberFormat("en-US") does. Integers are grouped here: creating
 * the Intl formatter costs 15-30 ms in a new page, before the heatmap's
 * first paint; it is made only for what is not a safe integer. */
export function formatCount(n: number | bigint): string {
  if (typeof n === "number" && !Number.isSafeInteger(n)) return (intl ??= new Intl.NumberFormat("en-US")).format(n);
  const digits = String(n < 0 ? -n : n);
  let out = digits.length > 3 ? digits.slice(0, ((digits.length - 1) % 3) + 1) : digits;
  for (let i = out.length; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`;
  return n < 0 ? `-${out}` : out;
}

/** formatPercent writes part/whole as a percentage with sensible digits. */
export function formatPercent(part: number, whole: number): string {
  if (whole <= 0) return "0%";
  const p = (100 * part) / whole;
  if (p === 100 || p === 0) return `${p}%`;
  if (p >= 10) return `${p.toFixed(1)}%`;
  if (p >= 0.01) return `${p.toFixed(2)}%`;
  return "<0.01%";
}

/** formatBytes writes a size with a decimal unit (1 KB = 1000 B, as the
 * CLI and the docs count): "512 B", "3.1 KB", "315 KB", "5.0 MB"; at most
 * three significant digits, so a small size never shows as "0.0 MB". */
export function formatBytes(n: number): string {
  if (n < 1000) return `${n} B`;
  const units = ["KB", "MB", "GB", "TB"];
  for (let u = 0; ; u++) {
    const v = n / 1000 ** (u + 1);
    const text = v >= 99.95 ? v.toFixed(0) : v.toFixed(1);
    if (Number(text) < 1000 || u === units.length - 1) return `${text} ${units[u]}`;
  }
}

/** formatLabels writes labels as "k=v,k2=v2", keys sorted, as the CLI
 * prints them ("" for none). */
/** sortedLabels is a profile's labels in name order (a map's order is its
 * decoder's: "env=prod version=1" on one page was "version=1 env=prod"
 * on another). */
export function sortedLabels(labels: Record<string, string>): [string, string][] {
  return Object.keys(labels)
    .sort()
    .map((k) => [k, labels[k]]);
}

export function formatLabels(labels: Record<string, string>): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(",");
}

/** dateOf reads a protobuf Timestamp as a Date, as protobuf-es's
 * timestampDate does (to the nearest millisecond), without loading the
 * protobuf runtime with the first page. */
export function dateOf(t: { seconds: bigint; nanos: number }): Date {
  return new Date(Number(t.seconds) * 1000 + Math.round(t.nanos / 1_000_000));
}

/** formatDate writes an absolute time in the viewer's time zone as
 * "YYYY-MM-DD HH:MM:SS". */
export function formatDate(d: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** toLocalInput writes a Date for a date field, local time, 24-hour
 * ("2026-11-18 16:10", with seconds "2026-11-18 16:10:42"): a text field,
 * since a datetime-local input shows the browser locale's 12-hour
 * "04:10:42 PM" where the rest of the app reads 24-hour times. */
export function toLocalInput(d: Date, seconds = false): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}${seconds ? `:${p(d.getSeconds())}` : ""}`;
}

/** parseLocalInput reads a date field (local time): "YYYY-MM-DD HH:MM",
 * seconds optional, a "T" for the space accepted; null if it is not one. */
export function parseLocalInput(v: string): Date | null {
  const m = /^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ]+(\d{1,2}):(\d{2})(?::(\d{2}))?)?\s*$/.exec(v);
  if (!m) return null;
  const [y, mo, d, hh, mm, ss] = m.slice(1).map((x) => Number(x ?? 0));
  const date = new Date(y, mo - 1, d, hh, mm, ss);
  return date.getMonth() === mo - 1 && date.getDate() === d && hh < 24 && mm < 60 && ss < 60 ? date : null;
}

// ---- wall-clock time (the fleet view) -------------------------------------------

const p2 = (n: number) => String(n).padStart(2, "0");

/** formatClock writes unix nanoseconds as wall-clock time in the viewer's
 * time zone, "HH:MM:SS" with the exact fraction when there is one
 * ("11:06:42.48"), the date in front ("2026-11-18 11:06:42") when withDate. */
export function formatClock(ns: bigint, withDate = false): string {
  const sec = ns / 1_000_000_000n;
  const frac = ns % 1_000_000_000n;
  const d = new Date(Number(sec) * 1000);
  const time = `${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}${frac === 0n ? "" : `.${String(frac).padStart(9, "0").replace(/0+$/, "")}`}`;
  return withDate ? `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())} ${time}` : time;
}

/** formatWallRange writes [start, end) in wall-clock time, the date once
 * when both lie on the same day: "2026-11-18 11:06:42.4 – 11:06:42.48". */
export function formatWallRange(start: bigint, end: bigint): string {
  const day = (ns: bigint) => new Date(Number(ns / 1_000_000_000n) * 1000).toDateString();
  return `${formatClock(start, true)} – ${formatClock(end, day(start) !== day(end))}`;
}

/** formatTick labels an axis tick at unix second sec, step seconds from the
 * next: the date for steps of days and at midnight, else hours and
 * minutes, with seconds for steps under a minute. */
export function formatTick(sec: number, step: number): string {
  const d = new Date(sec * 1000);
  const midnight = d.getHours() === 0 && d.getMinutes() === 0 && d.getSeconds() === 0;
  if (step >= 86400 || (midnight && step >= 60)) return `${p2(d.getMonth() + 1)}-${p2(d.getDate())}`;
  const hm = `${p2(d.getHours())}:${p2(d.getMinutes())}`;
  return step >= 60 ? hm : `${hm}:${p2(d.getSeconds())}`;
}

/** zoneOffsetSeconds is how far the viewer's time zone is east of UTC at
 * unix second sec. */
export function zoneOffsetSeconds(sec: number): number {
  return -new Date(sec * 1000).getTimezoneOffset() * 60;
}
