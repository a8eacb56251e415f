// Shared helpers for the browser tests and the benchmark: Chromium through
// playwright-core (Debian's /usr/bin/chromium, no browser download), Connect
// JSON calls to the server under test, and exact parsing of perf script
// samples (timestamps and stacks) for the planted profiles' ground truth.

import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const env = (name, fallback) => {
  const v = process.env[name] ?? fallback;
  if (v === undefined) throw new Error(`${name} is not set (run web/scripts/test.sh)`);
  return v;
};

// Headless Chromium opens each page in a window of its own, and each new
// window's address bar loads its suggestion popups: two WebUI apps of ~50
// modules each, in a renderer of their own, while the page under test loads
// (traced in Chromium 156). A user's browser did that when its window
// opened, not for each link followed; on a 2-core machine it took ~45 ms
// from the benchmark's heatmap (and ~15 from its reference page).
const omniboxPopups = ["WebUIOmniboxPopup", "WebUIOmniboxFullPopup", "WebUIOmniboxAimPopup"];

// Chromium reads only the last --disable-features switch, so ours repeats
// the one playwright-core passes (its chromiumSwitches, version 1.65.1;
// e2e.test.mjs checks that it still does).
export const playwrightDisabledFeatures = [
  "AvoidUnnecessaryBeforeUnloadCheckSync", "DestroyProfileOnBrowserClose", "HttpsUpgrades", "HttpsFirstBalancedModeAutoEnable",
  "LensOverlay", "MediaRouter", "PaintHolding", "ThirdPartyStoragePartitioning", "AvoidCorsURLLoaderRestartOnRedirect",
  "TcpPortRandomizationWin", "OptimizationHints", "NetworkTimeServiceQuerying", "AimEnabled", "PreconnectToSearch",
  "msForceBrowserSignIn", "msEdgeUpdateLaunchServicesPreferredVersion",
];

/** launch starts headless Chromium (playwright gives it a fresh, temporary
 * profile directory, removed when it closes). */
export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage",
      `--disable-features=${[...playwrightDisabledFeatures, ...omniboxPopups].join(",")}`,
    ],
  });
}

/** rpc calls a Connect procedure with JSON, as a client of the server. */
export async function rpc(baseURL, key, procedure, body) {
  const res = await fetch(`${baseURL}/${procedure}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${procedure}: HTTP ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** serverHeatmap is GetHeatmap's columns as numbers. */
export async function serverHeatmap(baseURL, key, profileId, rows = 50, includeIdle = false) {
  const r = await rpc(baseURL, key, "fleetscope.v1.QueryService/GetHeatmap", { profileId, rows, includeIdle });
  return {
    startSecond: Number(r.startSecond),
    rows: r.rows,
    columns: (r.columns ?? []).map((c) => (c.counts ?? []).map(Number)),
    total: Number(r.total ?? 0),
  };
}

/** serverFlameTotal is GetFlameGraph's total for [start, end) in ns. */
export async function serverFlameTotal(baseURL, key, profileId, startNanos, endNanos) {
  const r = await rpc(baseURL, key, "fleetscope.v1.QueryService/GetFlameGraph", {
    profileId,
    startNanos: String(startNanos),
    endNanos: String(endNanos),
    format: "FLAME_GRAPH_FORMAT_FOLDED",
  });
  return Number(r.total ?? 0);
}

/** plantedSamples reads a planted.perf's samples exactly: process name,
 * timestamp in integer microseconds (planted.py prints %.6f) and the stack's
 * symbols, leaf first as perf prints them, without their +0x offsets. */
export function plantedSamples(path) {
  const out = [];
  const re = /^(\S+)\s+(-?\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{6}):/;
  const frame = /^\t\s*[0-9a-f]+ (.+?)(?:\+0x[0-9a-f]+)? \(.*\)$/;
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line[0] === "\t") {
      const f = frame.exec(line);
      if (f && out.length > 0) out[out.length - 1].stack.push(f[1]);
      continue;
    }
    if (line === "" || line[0] === "#" || line[0] === " ") continue;
    const m = re.exec(line);
    if (m) out.push({ comm: m[1], tid: Number(m[2]), cpu: Number(m[3]), us: Number(m[4]) * 1e6 + Number(m[5]), stack: [] });
  }
  return out;
}

/** exactHeatmap counts non-idle planted samples (all with includeIdle: the
 * planted idle samples are swapper's) with the server's integer rule,
 * secondsPerColumn seconds to a column; it also lists the samples lying
 * exactly on a row boundary. */
export function exactHeatmap(samples, rows, secondsPerColumn = 1, includeIdle = false) {
  const first = Math.min(...samples.map((s) => s.us));
  const startSecond = Math.floor(first / 1e6);
  const seconds = Math.floor(Math.max(...samples.map((s) => s.us)) / 1e6) - startSecond + 1;
  const cols = Math.ceil(seconds / secondsPerColumn);
  const columns = Array.from({ length: cols }, () => new Array(rows).fill(0));
  const boundary = Array.from({ length: cols }, () => new Array(rows).fill(0));
  for (const s of samples) {
    if (s.comm === "swapper" && !includeIdle) continue;
    const col = Math.floor((Math.floor(s.us / 1e6) - startSecond) / secondsPerColumn);
    const off = s.us % 1e6;
    const row = Math.floor((off * rows) / 1e6);
    columns[col][row]++;
    if ((off * rows) % 1e6 === 0) boundary[col][row]++;
  }
  return { startSecond, seconds, columns, boundary };
}

/** secondsPerColumnFor is the README's rule: one second per column up to
 * 1,000 s, else the fewest whole seconds that keep the columns at or
 * under 1,000. */
export function secondsPerColumnFor(seconds) {
  let spc = 1;
  while (Math.ceil(seconds / spc) > 1000) spc++;
  return spc;
}

/** countInRange counts non-idle planted samples in [startNanos, endNanos)
 * relative to startSecond (microsecond timestamps: exact in nanoseconds). */
export function countInRange(samples, startSecond, startNanos, endNanos) {
  let n = 0;
  for (const s of samples) {
    const ns = (s.us - startSecond * 1e6) * 1000;
    if (s.comm !== "swapper" && ns >= startNanos && ns < endNanos) n++;
  }
  return n;
}

/** truthColumns turns truth.json's sparse heatmap into columns. */
export function truthColumns(truth, cols) {
  const out = Array.from({ length: cols }, () => new Array(truth.rows).fill(0));
  for (const [c, rowsObj] of Object.entries(truth.heatmap)) for (const [r, n] of Object.entries(rowsObj)) out[Number(c)][Number(r)] = n;
  return out;
}

/** explainTruth checks that truth.json (float arithmetic) differs from the
 * exact heatmap only by boundary samples moved one cell down (earlier in
 * time). It returns how many moved, or throws with the first cell that no
 * boundary sample explains. Cells run in time order; walking back from the
 * last, m = samples moved out of a cell = m(next cell) - diff. */
export function explainTruth(exact, boundary, truth) {
  const rows = exact[0].length;
  let movedIn = 0; // moved into the current cell from the next one
  let total = 0;
  for (let idx = exact.length * rows - 1; idx >= 0; idx--) {
    const c = Math.floor(idx / rows);
    const r = idx % rows;
    const diff = (truth[c]?.[r] ?? 0) - exact[c][r];
    const out = movedIn - diff; // truth = exact - out + movedIn
    if (out < 0 || out > boundary[c][r]) throw new Error(`cell (${c}, ${r}): truth ${truth[c]?.[r] ?? 0}, exact ${exact[c][r]}, ${boundary[c][r]} boundary samples`);
    total += out;
    movedIn = out;
  }
  if (movedIn !== 0) throw new Error(`a boundary sample moved before the first cell`);
  return total;
}

export function artifactsDir() {
  const dir = env("E2E_ARTIFACTS", join(process.cwd(), "test-results", "e2e"));
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** wallColumns counts the non-idle samples of several hosts on one wall
 * clock: hosts are [{samples, shiftUs}] (shiftUs added to a sample's
 * microseconds: 0 for an epoch clock), columns of secondsPerColumn seconds
 * from unix second startSecond, cols of them (samples outside are left
 * out), rows per second. */
export function wallColumns(hosts, startSecond, cols, rows = 50, secondsPerColumn = 1) {
  const columns = Array.from({ length: cols }, () => new Array(rows).fill(0));
  for (const { samples, shiftUs } of hosts) {
    for (const s of samples) {
      if (s.comm === "swapper") continue;
      const us = s.us + shiftUs;
      const sec = Math.floor(us / 1e6);
      const col = Math.floor((sec - startSecond) / secondsPerColumn);
      if (col < 0 || col >= cols) continue;
      columns[col][Math.floor(((us - sec * 1e6) * rows) / 1e6)]++;
    }
  }
  return columns;
}

/** wallCount counts the non-idle samples of several hosts (as for
 * wallColumns) in [startUs, endUs), unix microseconds. */
export function wallCount(hosts, startUs, endUs) {
  let n = 0;
  for (const { samples, shiftUs } of hosts) for (const s of samples) if (s.comm !== "swapper" && s.us + shiftUs >= startUs && s.us + shiftUs < endUs) n++;
  return n;
}

/** wallSpan is the whole seconds the hosts' samples (idle ones too) span:
 * [first, end) unix seconds. */
export function wallSpan(hosts) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const { samples, shiftUs } of hosts) {
    for (const s of samples) {
      lo = Math.min(lo, s.us + shiftUs);
      hi = Math.max(hi, s.us + shiftUs);
    }
  }
  return { first: Math.floor(lo / 1e6), end: Math.floor(hi / 1e6) + 1 };
}
