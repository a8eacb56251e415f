// End-to-end tests of the dashboard in real Chromium against a real
// `fleetscope server` (real Postgres, blobs in a directory), set up by
// web/scripts/test.sh, which passes:
//   E2E_URL, E2E_KEY            the server and a key with ingest,read
//   E2E_ADMIN_KEY               a key of the same tenant with ingest,read,admin (share links)
//   E2E_PROFILE                 a planted profile (30 s, boot clock), app checkout, host web-1
//   E2E_PERF, E2E_TRUTH         its planted.perf and truth.json
//   E2E_EPOCH_PROFILE           a planted profile on the epoch clock, app checkout, host web-2
//   E2E_DROP_FILE               a small planted profile to upload by drag and drop
//   E2E_TWO_EVENTS              a recorded profile with two events (cpu-clock, context-switches)
//   E2E_UNTIMED                 a perf profile without timestamps
//   E2E_PPROF                   a pprof profile (no per-sample timestamps, a recorded duration), app gosort
//   E2E_LONG, E2E_LONG_PERF     a planted profile of 1,500 s (several seconds per heatmap column) and its planted.perf
//   E2E_FLEET                   "host=planted.perf ..." of app fleet's hosts (epoch clock, overlapping windows)
//   E2E_ARTIFACTS               where screenshots go
// Steps run in order and share one signed-in page, like a person would.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  artifactsDir,
  countInRange,
  env,
  exactHeatmap,
  explainTruth,
  launch,
  plantedSamples,
  playwrightDisabledFeatures,
  rpc,
  secondsPerColumnFor,
  serverFlameTotal,
  serverHeatmap,
  truthColumns,
  wallColumns,
  wallCount,
  wallSpan,
} from "./lib.mjs";

const URL_ = env("E2E_URL");
const KEY = env("E2E_KEY");
const ADMIN_KEY = env("E2E_ADMIN_KEY");
const PROFILE = env("E2E_PROFILE");
const EPOCH_PROFILE = env("E2E_EPOCH_PROFILE");
const ART = artifactsDir();
const VIEWPORT = { width: 1400, height: 1000 };
const HIGHLIGHT = [230, 0, 230];

let browser;
let ctx;
let page;
let shot = 0;
const consoleErrors = [];

async function screenshot(p, name, fullPage = true) {
  shot++;
  const file = join(ART, `${String(shot).padStart(2, "0")}-${name}.png`);
  await p.screenshot({ path: file, fullPage });
  return file;
}

async function newContext(opts = {}) {
  const c = await browser.newContext({ viewport: VIEWPORT, timezoneId: "UTC", locale: "en-US", ...opts });
  await c.grantPermissions(["clipboard-read", "clipboard-write"], { origin: URL_ });
  c.setDefaultTimeout(15_000);
  return c;
}

function watch(p) {
  p.on("pageerror", (e) => consoleErrors.push(`pageerror: ${e.message}`));
  p.on("console", (m) => m.type() === "error" && !/Failed to load resource|net::ERR_/.test(m.text()) && consoleErrors.push(`console: ${m.text()}`));
  return p;
}

/** heatmapData reads what the heatmap canvas exposes. */
async function heatmapData(p) {
  return p.locator("[data-testid=heatmap]").evaluate((c) => ({
    rows: Number(c.dataset.rows),
    cols: Number(c.dataset.cols),
    secondsPerColumn: Number(c.dataset.secondsPerColumn),
    startSecond: Number(c.dataset.startSecond),
    total: Number(c.dataset.total),
    cells: c.heatmapCells(),
    cellWidth: Number(c.dataset.cellWidth),
    cellHeight: Number(c.dataset.cellHeight),
    plotLeft: Number(c.dataset.plotLeft),
    plotTop: Number(c.dataset.plotTop),
    selectionStart: c.dataset.selectionStart ?? null,
    selectionEnd: c.dataset.selectionEnd ?? null,
    selectedCount: c.dataset.selectedCount === undefined ? null : Number(c.dataset.selectedCount),
  }));
}

/** cellPoint is the page coordinate of the centre of cell (col, row). */
async function cellPoint(p, col, row) {
  await p.locator("[data-testid=heatmap]").scrollIntoViewIfNeeded();
  const box = await p.locator("[data-testid=heatmap]").boundingBox();
  const d = await heatmapData(p);
  return { x: box.x + d.plotLeft + (col + 0.5) * d.cellWidth, y: box.y + d.plotTop + (d.rows - 1 - row + 0.5) * d.cellHeight };
}

async function drag(p, from, to) {
  const a = await cellPoint(p, ...from);
  const b = await cellPoint(p, ...to);
  await p.mouse.move(a.x, a.y);
  await p.mouse.down();
  await p.mouse.move((a.x + b.x) / 2, (a.y + b.y) / 2, { steps: 4 });
  await p.mouse.move(b.x, b.y, { steps: 4 });
  await p.mouse.up();
}

async function clickCell(p, col, row, modifiers = []) {
  const a = await cellPoint(p, col, row);
  for (const m of modifiers) await p.keyboard.down(m);
  await p.mouse.click(a.x, a.y);
  for (const m of modifiers) await p.keyboard.up(m);
}

/** flameState waits for the flame graph of the current selection and reads it. */
async function flameState(p) {
  await p.waitForFunction(() => {
    const box = document.querySelector(".flame-box");
    const c = document.querySelector("[data-testid=flamegraph]");
    return box && !box.classList.contains("stale") && c && c.dataset.total !== undefined;
  });
  return p.locator("[data-testid=flamegraph]").evaluate((c) => ({ ...c.dataset }));
}

function sumCells(cells, rows, firstIdx, lastIdx) {
  let s = 0;
  for (let i = firstIdx; i <= lastIdx; i++) s += cells[Math.floor(i / rows)][i % rows];
  return s;
}

/** legendScale reads the heatmap's legend as a person sees it: the "no
 * samples" swatch, the gradient bar (its computed CSS stops) and the count
 * at its right end ("1 – max"). colourFor(count) is the colour the bar
 * shows for that count: count 1 at the left end, max at the right, blended
 * between stops as the browser paints a gradient. */
async function legendScale(p) {
  const l = await p.locator(".heatmap .legend").evaluate((el) => ({
    empty: getComputedStyle(el.querySelector(".legend-swatch")).backgroundColor,
    bar: getComputedStyle(el.querySelector(".legend-bar")).backgroundImage,
    ticks: [...el.querySelectorAll(".legend-tick")].map((t) => t.textContent),
  }));
  const rgb = (m) => [1, 2, 3].map((i) => Number(m[i]));
  const empty = rgb(/^rgb\((\d+), (\d+), (\d+)\)$/.exec(l.empty));
  const stops = [...l.bar.matchAll(/rgb\((\d+), (\d+), (\d+)\) ([\d.]+)%/g)].map((m) => ({ rgb: rgb(m), at: Number(m[4]) / 100 }));
  assert.ok(stops.length >= 2 && stops[0].at === 0 && stops.at(-1).at === 1, `legend bar ${l.bar}`);
  const top = /^(?:1 – )?([\d,]+)$/.exec(l.ticks[1]);
  assert.ok(l.ticks[0] === "0" && top, `legend ticks ${l.ticks}`);
  const max = Number(top[1].replace(/,/g, ""));
  return {
    max,
    stops,
    colourFor(count) {
      if (count === 0) return empty;
      const f = max <= 1 ? 0 : (count - 1) / (max - 1);
      const i = Math.max(stops.findIndex((s) => s.at >= f), 1);
      const [a, b] = [stops[i - 1], stops[i]];
      return a.rgb.map((v, k) => v + ((b.rgb[k] - v) * (f - a.at)) / (b.at - a.at));
    },
  };
}

/** drawnCells reads the heatmap canvas's pixel at the centre of each cell,
 * placed with the page's own scale (data-plot-left/-top, data-cell-width/
 * -height in CSS pixels, devicePixelRatio): cells[col][row] = [r, g, b, a],
 * or null for a cell scrolled out of view. */
async function drawnCells(p) {
  return p.getByTestId("heatmap").evaluate((c) => {
    const ds = c.dataset;
    const [rows, cols, left, top, w, h, scroll] = [ds.rows, ds.cols, ds.plotLeft, ds.plotTop, ds.cellWidth, ds.cellHeight, ds.scrollLeft].map(Number);
    const dpr = devicePixelRatio;
    const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    return Array.from({ length: cols }, (_, col) =>
      Array.from({ length: rows }, (_, row) => {
        const x = left + (col + 0.5) * w;
        if (x < left + scroll || x >= c.clientWidth) return null; // the plot shows from x = left + scroll
        const i = 4 * (Math.floor((top + (rows - 1 - row + 0.5) * h) * dpr) * c.width + Math.floor(x * dpr));
        return [px[i], px[i + 1], px[i + 2], px[i + 3]];
      }),
    );
  });
}

/** checkHeatmapPixels checks that every visible cell but those skipped is
 * drawn in the legend's colour for its count in cells (counted by the test),
 * and that the legend's scale runs to the largest count. It returns the
 * number of cells checked. */
async function checkHeatmapPixels(p, cells, skip = () => false) {
  // Nothing drawn over the cells: no hover outline, no keyboard cursor.
  await p.mouse.move(0, 0);
  await p.evaluate(() => document.activeElement?.blur());
  await p.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const scale = await legendScale(p);
  assert.equal(scale.max, Math.max(...cells.flat()), "the legend's scale ends at the largest count");
  const drawn = await drawnCells(p);
  const bad = [];
  let checked = 0;
  for (let col = 0; col < cells.length; col++) {
    for (let row = 0; row < cells[col].length; row++) {
      const got = drawn[col][row];
      if (!got || skip(col, row)) continue;
      checked++;
      const want = scale.colourFor(cells[col][row]);
      if (got[3] !== 255 || want.some((v, k) => Math.abs(v - got[k]) > 1)) bad.push({ col, row, count: cells[col][row], want: want.map(Math.round), got });
    }
  }
  assert.deepEqual(bad.slice(0, 5), [], `${bad.length} of ${checked} cells drawn in another colour than the legend's for their count`);
  return checked;
}

/** frameExtent measures, on the flame graph canvas, the bar drawn in the
 * search highlight colour on the row of depth (one pixel below the row's
 * top, clear of labels), in device pixels: from its left edge to its right
 * edge, edge pixels counted by their coverage (alpha). It fails unless the
 * highlighted pixels on that row are one bar. */
async function frameExtent(p, depth) {
  return p.getByTestId("flamegraph").evaluate(
    (c, [depth, rgb]) => {
      const ds = c.dataset;
      const dpr = devicePixelRatio;
      const rowH = Number(ds.rowHeight);
      const rows = Number(ds.rows);
      // The canvas shows the rows in the box's view, from data-scroll-top.
      const top = (ds.orientation === "icicle" ? depth : rows - 1 - depth) * rowH - Number(ds.scrollTop);
      if (top < 0 || top + rowH > c.clientHeight) throw new Error(`row of depth ${depth} is not in view (top ${top}, canvas ${c.clientHeight} px)`);
      const px = c.getContext("2d").getImageData(0, Math.floor((top + 1) * dpr), c.width, 1).data;
      const lit = [];
      for (let x = 0; x < c.width; x++) {
        const i = 4 * x;
        const a = px[i + 3];
        // A partly covered pixel is stored premultiplied by its alpha: read
        // back, its colour is off by up to 0.5 · 255 / alpha.
        const tol = a === 255 ? 0 : 1 + (0.5 * 255) / a;
        if (a > 0 && [0, 1, 2].every((k) => Math.abs(px[i + k] - rgb[k]) <= tol)) lit.push([x, a / 255]);
      }
      if (lit.length === 0) return { width: 0, canvas: c.width };
      const [first, last] = [lit[0], lit.at(-1)];
      const inner = lit.slice(1, -1);
      const solid = inner.length === last[0] - first[0] - 1 && inner.every(([, a]) => a === 1);
      return { left: first[0] + 1 - first[1], right: last[0] + last[1], width: last[0] + last[1] - (first[0] + 1 - first[1]), solid, canvas: c.width };
    },
    [depth, HIGHLIGHT],
  );
}

/** highlightPixels counts flame graph pixels in the search highlight colour. */
async function highlightPixels(p) {
  return p.locator("[data-testid=flamegraph]").evaluate((c, rgb) => {
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] === rgb[0] && d[i + 1] === rgb[1] && d[i + 2] === rgb[2]) n++;
    return n;
  }, HIGHLIGHT);
}

function query(p) {
  return new URL(p.url()).searchParams;
}

/** fact reads one of the profile header's facts ("duration", "size"). */
async function fact(p, name) {
  const dd = p.locator(".facts .fact").filter({ has: p.locator("dt", { hasText: new RegExp(`^${name}$`) }) }).locator("dd");
  return (await dd.textContent()).trim();
}

/** serverProfile is GetProfile's profile (JSON: int64 fields are strings). */
async function serverProfile(id) {
  return (await rpc(URL_, KEY, "fleetscope.v1.QueryService/GetProfile", { id })).profile;
}

// ---- fleet helpers ----------------------------------------------------------------

let fleetCache;
/** fleetHosts is E2E_FLEET's hosts with their planted samples (epoch clock: no shift). */
function fleetHosts() {
  fleetCache ??= env("E2E_FLEET")
    .split(" ")
    .map((x) => {
      const [host, path] = x.split("=");
      return { host, samples: plantedSamples(path), shiftUs: 0 };
    });
  return fleetCache;
}

/** iso writes unix second sec (and ms milliseconds) as RFC 3339, for Connect JSON. */
function iso(sec, ms = "000") {
  return new Date(sec * 1000).toISOString().replace(".000Z", `.${ms}Z`);
}

/** isoMicros reads an RFC 3339 time as unix microseconds, its fraction exactly. */
function isoMicros(s) {
  const m = /^(.*?)(?:\.(\d+))?Z$/.exec(s);
  return Date.parse(`${m[1]}Z`) * 1e3 + Number((m[2] ?? "").padEnd(6, "0").slice(0, 6));
}

/** fleetReady waits until every panel of a fleet view shows its answer to
 * the current selection (none greyed out or loading). */
async function fleetReady(p) {
  await p.waitForFunction(() => {
    const done = (sel) => {
      const b = document.querySelector(sel);
      return b && !b.classList.contains("stale") && !b.querySelector("[data-testid=loading]");
    };
    return (
      document.querySelector("[data-testid=heatmap]")?.heatmapCells &&
      document.querySelector("[data-testid=fleet-total]") &&
      document.querySelector("[data-testid=flamegraph]")?.dataset.total !== undefined &&
      [".heatmap-box", ".hosts-box", ".timeline-box", ".flame-box"].every(done)
    );
  });
}

/** hostStrip reads the host strip's hosts in order, with their totals. */
async function hostStrip(p) {
  return p.locator("[data-testid=host-strip] li").evaluateAll((lis) => lis.map((li) => ({ host: li.dataset.host, total: Number(li.dataset.total) })));
}

/** fields reads protobuf wire bytes into {field number: [values]}: varints
 * as BigInt, length-delimited fields as bytes (enough to read a request). */
function fields(buf) {
  const out = {};
  let i = 0;
  const varint = () => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = buf[i++];
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const [n, wire] = [key >> 3, key & 7];
    let v;
    if (wire === 0) v = varint();
    else if (wire === 2) {
      const len = Number(varint());
      v = buf.subarray(i, i + len);
      i += len;
    } else if (wire === 1) (v = buf.subarray(i, i + 8)), (i += 8);
    else if (wire === 5) (v = buf.subarray(i, i + 4)), (i += 4);
    else throw new Error(`wire type ${wire}`);
    (out[n] ??= []).push(v);
  }
  return out;
}

/** accounting reads what the fleet view says its heatmap counted. */
async function accounting(p) {
  return p.getByTestId("accounting").evaluate((el) => ({ profiles: Number(el.dataset.profiles), leftOut: JSON.parse(el.dataset.leftOut), event: el.dataset.event }));
}

async function signIn(p, key, remember = false) {
  await p.getByTestId("api-key").fill(key);
  if (remember) await p.getByTestId("remember").check();
  await p.getByTestId("signin").click();
}

before(async () => {
  browser = await launch();
  ctx = await newContext();
  page = watch(await ctx.newPage());
});

after(async () => {
  await browser?.close();
});

describe("dashboard", () => {
  test("sign in: a bad key is refused, a good one kept in sessionStorage", async () => {
    await page.goto(`${URL_}/`);
    await page.getByTestId("api-key").waitFor();
    await screenshot(page, "signin");
    await signIn(page, "fsk_not_a_key");
    await page.getByTestId("signin-error").filter({ hasText: "not accepted" }).waitFor();
    await signIn(page, KEY);
    await page.getByTestId("search").waitFor();
    const stored = await page.evaluate(() => [sessionStorage.getItem("fleetscope.apiKey"), localStorage.getItem("fleetscope.apiKey")]);
    assert.deepEqual(stored, [KEY, null]);
    await page.getByTestId("results").waitFor();
    await screenshot(page, "home");
  });

  test("search by app on Enter, then by date; the URL holds the search", async () => {
    const box = page.getByTestId("search");
    await box.fill("checkout");
    await box.press("Enter");
    await page.waitForFunction(() => new URL(location.href).searchParams.get("app") === "checkout");
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=results] tbody tr").length === 2);
    const hosts = await page.locator("[data-testid=results] tbody tr td:nth-child(2)").allTextContents();
    assert.deepEqual(hosts.sort(), ["web-1", "web-2"]);
    const apps = await page.locator("[data-testid=results] tbody tr td:first-child").allTextContents();
    assert.ok(apps.every((a) => a === "checkout"), `apps: ${apps}`);

    // The epoch-clock profile starts 2026-11-18 11:06:40 UTC; the browser runs in UTC.
    await page.getByTestId("time-range").selectOption("custom");
    await page.getByTestId("since").fill("2026-11-18T00:00");
    await page.getByTestId("until").fill("2026-11-19T00:00");
    await box.press("Enter");
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=results] tbody tr").length === 1);
    assert.equal(await page.locator("[data-testid=results] tbody tr").getAttribute("data-profile-id"), EPOCH_PROFILE);
    const q = query(page);
    assert.equal(q.get("since"), "2026-11-18T00:00:00.000Z");
    assert.equal(q.get("until"), "2026-11-19T00:00:00.000Z");
    await screenshot(page, "search-by-date");

    // The URL alone restores the search.
    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=results] tbody tr").length === 1);
    assert.equal(await page.getByTestId("search").inputValue(), "checkout");

    // A preset: the boot-clock profile was placed at its upload time.
    await page.getByTestId("time-range").selectOption("1h");
    await page.waitForFunction((id) => {
      const rows = [...document.querySelectorAll("[data-testid=results] tbody tr")];
      return rows.length === 1 && rows[0].dataset.profileId === id;
    }, PROFILE);
    assert.equal(query(page).get("range"), "1h");

    // Sortable: any time, sort by host ascending then descending.
    await page.getByTestId("time-range").selectOption("");
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=results] tbody tr").length === 2);
    await page.getByRole("button", { name: /^Host/ }).click();
    assert.deepEqual(await page.locator("[data-testid=results] tbody tr td:nth-child(2)").allTextContents(), ["web-1", "web-2"]);
    await page.getByRole("button", { name: /^Host/ }).click();
    assert.deepEqual(await page.locator("[data-testid=results] tbody tr td:nth-child(2)").allTextContents(), ["web-2", "web-1"]);
    assert.equal(query(page).get("sort"), "host");
    await screenshot(page, "search-sorted");
  });

  test("open a planted profile: heatmap cells equal the server's and truth.json", async () => {
    await page.locator(`[data-testid=results] tbody tr[data-profile-id="${PROFILE}"] a`).click();
    await page.waitForURL(`**/p/${PROFILE}`);
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
    const ui = await heatmapData(page);
    const server = await serverHeatmap(URL_, KEY, PROFILE, 50);
    assert.equal(ui.rows, 50);
    assert.equal(ui.startSecond, server.startSecond);
    assert.deepEqual(ui.cells, server.columns, "UI cells differ from GetHeatmap");

    const samples = plantedSamples(env("E2E_PERF"));
    const exact = exactHeatmap(samples, 50);
    assert.equal(exact.startSecond, ui.startSecond);
    assert.deepEqual(ui.cells, exact.columns, "UI cells differ from the exact count of planted.perf");
    const truth = JSON.parse(readFileSync(env("E2E_TRUTH"), "utf8"));
    const moved = explainTruth(exact.columns, exact.boundary, truthColumns(truth, ui.cols));
    const total = ui.cells.flat().reduce((a, b) => a + b, 0);
    assert.equal(total, truth.non_idle);
    assert.equal(ui.total, truth.non_idle);
    console.log(`# heatmap: ${ui.cols} columns × ${ui.rows} rows, ${total} non-idle samples = truth.json's ${truth.non_idle}; cells equal GetHeatmap exactly; ${moved} boundary sample(s) sit one cell lower in truth.json`);
    // What is drawn, not only what the page received: each cell's pixels
    // are the legend's colour for the count of planted.perf.
    const checked = await checkHeatmapPixels(page, exact.columns);
    assert.equal(checked, ui.cols * ui.rows);
    await screenshot(page, "profile");
  });

  test("drag backwards across a second: the range runs in time order", async () => {
    // from (7, 10) back to (6, 40): [6.80, 7.22)
    await drag(page, [7, 10], [6, 40]);
    await page.waitForFunction(() => new URL(location.href).searchParams.get("start") === "6.8");
    assert.equal(query(page).get("end"), "7.22");
    const d = await heatmapData(page);
    const want = sumCells(d.cells, 50, 6 * 50 + 40, 7 * 50 + 10);
    assert.equal(d.selectedCount, want);
    const f = await flameState(page);
    assert.equal(Number(f.total), want, "flame graph total vs the selected cells");
    assert.equal(await serverFlameTotal(URL_, KEY, PROFILE, 6_800_000_000, 7_220_000_000), want);
  });

  test("click one cell, shift-click extends; keyboard selects too", async () => {
    await clickCell(page, 12, 20);
    await page.waitForFunction(() => new URL(location.href).searchParams.get("end") === "12.42");
    assert.equal(query(page).get("start"), "12.4");
    await clickCell(page, 12, 23, ["Shift"]);
    await page.waitForFunction(() => new URL(location.href).searchParams.get("end") === "12.48");
    assert.equal(query(page).get("start"), "12.4");
    let d = await heatmapData(page);
    assert.equal(d.selectedCount, sumCells(d.cells, 50, 12 * 50 + 20, 12 * 50 + 23));

    // Keyboard: the canvas has focus after the click; Escape clears, arrows
    // move, Enter selects one cell, Shift+Arrow extends.
    const canvas = page.getByTestId("heatmap");
    await canvas.focus();
    await page.keyboard.press("Escape");
    await page.waitForFunction(() => !new URL(location.href).searchParams.has("start"));
    await page.keyboard.press("ArrowRight");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => new URL(location.href).searchParams.get("start") === "13.46");
    await page.keyboard.press("Shift+ArrowUp");
    await page.keyboard.press("Shift+ArrowUp");
    await page.waitForFunction(() => new URL(location.href).searchParams.get("end") === "13.52");
    d = await heatmapData(page);
    assert.equal(d.selectionStart, "13.46");
    assert.equal(d.selectedCount, sumCells(d.cells, 50, 13 * 50 + 23, 13 * 50 + 25));
    const f = await flameState(page);
    assert.equal(Number(f.total), d.selectedCount);
  });

  test("drag-select a GC stripe: the flame graph totals the cells and GC dominates", async () => {
    // GC runs on CPUs 0-5 in [s+0.40, s+0.48) for s % 5 == 2: rows 20-23 of second 2
    await drag(page, [2, 20], [2, 23]);
    await page.waitForFunction(() => new URL(location.href).searchParams.get("start") === "2.4");
    assert.equal(query(page).get("end"), "2.48");
    const d = await heatmapData(page);
    const cells = sumCells(d.cells, 50, 2 * 50 + 20, 2 * 50 + 23);
    assert.equal(d.selectedCount, cells);
    const f = await flameState(page);
    assert.equal(Number(f.total), cells, "flame graph total vs the selected cells");
    assert.equal(await page.getByTestId("selection-count").getAttribute("data-count"), String(cells));
    assert.equal(await page.getByTestId("flame-total").getAttribute("data-total"), String(cells));
    assert.equal(await serverFlameTotal(URL_, KEY, PROFILE, 2_400_000_000, 2_480_000_000), cells);
    await page.locator(".selection-bar .agree").waitFor();

    // Top functions, by total: GC's frames hold most of the range.
    await page.locator("[data-testid=top-functions] [data-sort=total]").click();
    const rows = await page.locator("[data-testid=top-functions] tbody tr").evaluateAll((trs) =>
      trs.map((tr) => ({ name: tr.dataset.name, total: Number(tr.children[3].textContent.replace(/,/g, "")), self: Number(tr.children[1].textContent.replace(/,/g, "")) })),
    );
    const gc = rows.find((r) => /^GCTaskThread::run/.test(r.name));
    assert.ok(gc, `no GCTaskThread::run row in ${JSON.stringify(rows.slice(0, 5))}`);
    assert.ok(gc.total / cells > 0.6, `GC holds ${gc.total} of ${cells}`);
    const topSelf = rows.slice().sort((a, b) => b.self - a.self)[0];
    assert.match(topSelf.name, /drain_stacks_depth/);
    console.log(`# GC stripe [2.40, 2.48): ${cells} samples in 4 cells = flame graph total; GCTaskThread::run ${gc.total} (${((100 * gc.total) / cells).toFixed(1)}%)`);
    await screenshot(page, "gc-stripe");
  });

  test("search a function: matched % and the highlight", async () => {
    assert.equal(await highlightPixels(page), 0);
    await page.getByTestId("flame-search").fill("drain_stacks");
    await page.waitForFunction(() => document.querySelector("[data-testid=matched]")?.dataset.samples);
    const m = page.getByTestId("matched");
    const samples = Number(await m.getAttribute("data-samples"));
    const total = Number((await flameState(page)).total);
    const drain = await page.locator("[data-testid=top-functions] tbody tr").evaluateAll((trs) =>
      trs.filter((tr) => /drain_stacks_depth/.test(tr.dataset.name)).map((tr) => Number(tr.children[3].textContent.replace(/,/g, ""))),
    );
    assert.equal(samples, drain[0]);
    assert.match(await m.textContent(), new RegExp(`Matched ${((100 * samples) / total).toFixed(1)}%`));
    // The matching frame is drawn as wide as its share of the range, as
    // planted.perf counts it: its samples over the range's, times the width.
    const planted = plantedSamples(env("E2E_PERF"));
    const startSecond = exactHeatmap(planted, 50).startSecond;
    const inRange = planted.filter((s) => s.comm !== "swapper" && s.us - startSecond * 1e6 >= 2_400_000 && s.us - startSecond * 1e6 < 2_480_000);
    const depths = new Set();
    for (const s of inRange) {
      const i = s.stack.findIndex((f) => f.startsWith("PSPromotionManager::drain_stacks_depth"));
      if (i >= 0) depths.add(1 + s.stack.length - i); // root "all" at 0, the process at 1, then the stack from its outermost frame
    }
    assert.equal(depths.size, 1, `drain_stacks_depth at depths ${[...depths]}`);
    const drainPlanted = inRange.filter((s) => s.stack.some((f) => f.startsWith("PSPromotionManager::drain_stacks_depth"))).length;
    assert.equal(drainPlanted, samples, "matched samples vs planted.perf");
    assert.equal(inRange.length, total, "range total vs planted.perf");
    const bar = await frameExtent(page, [...depths][0]);
    const want = (bar.canvas * drainPlanted) / inRange.length;
    assert.ok(bar.solid && Math.abs(bar.width - want) <= 1, `drain_stacks_depth drawn ${JSON.stringify(bar)} px wide, its share is ${want.toFixed(2)} px`);
    console.log(`# drain_stacks_depth: ${drainPlanted} of ${inRange.length} planted samples = ${want.toFixed(2)} of ${bar.canvas} px; drawn ${bar.width.toFixed(2)} px`);
    assert.equal(query(page).get("search"), "drain_stacks");
    await screenshot(page, "search-highlight");

    // A name in the top-functions table searches for exactly that function.
    const name = await page.locator("[data-testid=top-functions] tbody tr[data-name*=drain_stacks_depth]").getAttribute("data-name");
    const btn = page.locator("[data-testid=top-functions] tbody tr[data-name*=drain_stacks_depth] td.fn button");
    await btn.click();
    assert.match(name, /^[\w:]+$/); // nothing to escape in a /regex/
    const exact = `/^${name}$/`;
    await page.waitForFunction((q) => new URL(location.href).searchParams.get("search") === q, exact);
    assert.equal(await page.getByTestId("flame-search").inputValue(), exact);
    assert.equal(Number(await m.getAttribute("data-samples")), samples, "the one function drain_stacks matched");
    await page.getByTestId("flame-search").fill("drain_stacks");
    await page.getByTestId("flame-search").press("Enter");
    await page.waitForFunction(() => new URL(location.href).searchParams.get("search") === "drain_stacks");
  });

  test("hover shows a frame's numbers; click zooms; orientation flips", async () => {
    const canvas = page.getByTestId("flamegraph");
    const box = await canvas.boundingBox();
    const rowH = Number(await canvas.getAttribute("data-row-height"));
    // icicle: depth 3 is java;start_thread;GCTaskThread::run
    let found = false;
    for (let x = box.width * 0.95; x > 0; x -= box.width * 0.05) {
      await page.mouse.move(box.x + x, box.y + 3 * rowH + rowH / 2);
      const tip = page.locator(".flame .tooltip");
      if (!(await tip.isVisible())) continue;
      if (/^GCTaskThread::run/.test(await tip.locator(".tooltip-title").textContent())) {
        const text = await tip.textContent();
        assert.match(text, /samples/);
        assert.match(text, /of range/);
        assert.match(text, /of parent/);
        // The hovered frame is outlined: a box over its bar, on its row.
        const outline = await page.locator(".flame-hover").boundingBox();
        assert.ok(outline, "the hovered frame's outline is shown");
        assert.ok(Math.abs(outline.y - (box.y + 3 * rowH)) < 1, `the outline is on the hovered row (y ${outline.y}, row at ${box.y + 3 * rowH})`);
        assert.ok(outline.x <= box.x + x && box.x + x <= outline.x + outline.width, "the outline spans the pointer");
        await screenshot(page, "flame-tooltip");
        await page.mouse.click(box.x + x, box.y + 3 * rowH + rowH / 2);
        found = true;
        break;
      }
    }
    assert.ok(found, "found the GCTaskThread::run frame");
    await page.waitForFunction(() => new URL(location.href).searchParams.get("frame")?.endsWith("GCTaskThread::run"));
    assert.equal(query(page).get("frame"), "java;start_thread;GCTaskThread::run");
    assert.match(await page.getByTestId("breadcrumb").textContent(), /all.*java.*start_thread.*GCTaskThread::run/);
    assert.equal(await canvas.getAttribute("data-zoom"), "java;start_thread;GCTaskThread::run");
    await page.getByTestId("orient-flame").click();
    assert.equal(query(page).get("orient"), "flame");
    assert.equal(await canvas.getAttribute("data-orientation"), "flame");
    await screenshot(page, "zoomed-flame");
  });

  test("copy the permalink; a fresh page opens it after sign-in with the same view", async () => {
    await page.getByTestId("copy-link").click();
    await page.getByTestId("copy-link").filter({ hasText: "Copied" }).waitFor();
    const link = await page.evaluate(() => navigator.clipboard.readText());
    assert.equal(link, page.url());
    const q = new URL(link).searchParams;
    assert.deepEqual(
      { start: q.get("start"), end: q.get("end"), frame: q.get("frame"), search: q.get("search"), orient: q.get("orient") },
      { start: "2.4", end: "2.48", frame: "java;start_thread;GCTaskThread::run", search: "drain_stacks", orient: "flame" },
    );
    const before = { heat: await heatmapData(page), flame: await flameState(page), pixels: await page.getByTestId("flamegraph").evaluate((c) => c.toDataURL()) };

    const fresh = await newContext();
    try {
      const p2 = watch(await fresh.newPage());
      await p2.goto(link);
      await p2.getByTestId("api-key").waitFor();
      await signIn(p2, KEY);
      await p2.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
      const flame = await flameState(p2);
      const heat = await heatmapData(p2);
      assert.equal(p2.url(), link, "the URL survives sign-in");
      assert.equal(heat.selectionStart, before.heat.selectionStart);
      assert.equal(heat.selectionEnd, before.heat.selectionEnd);
      assert.equal(heat.selectedCount, before.heat.selectedCount);
      for (const k of ["total", "zoom", "matched", "orientation", "nodes"]) assert.equal(flame[k], before.flame[k], k);
      assert.equal(await p2.getByTestId("flame-search").inputValue(), "drain_stacks");
      const pixels = await p2.getByTestId("flamegraph").evaluate((c) => c.toDataURL());
      assert.ok(pixels === before.pixels, "the flame graph is drawn pixel for pixel the same");
      await screenshot(p2, "permalink-fresh-page");
    } finally {
      await fresh.close();
    }
  });

  test("a permalink's first frames: the frame reported painted shows the heatmap, drawn once; the flame graph is drawn once, decoded in WebAssembly", async () => {
    const link = page.url();
    const c = await newContext();
    try {
      await c.addInitScript((k) => sessionStorage.setItem("fleetscope.apiKey", k), KEY);
      // What the heatmap's canvas holds when the page says its frame was
      // painted (src/perf.ts): counted in that task, before anything else runs.
      await c.addInitScript(() =>
        window.addEventListener("fleetscope:perf", (e) => {
          if (e.detail !== "heatmapPainted") return;
          const cv = document.querySelector("[data-testid=heatmap]");
          const d = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
          let n = 0;
          for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) n++;
          window.__paintedPixels = n;
          window.__heatmapDraws = cv.dataset.drawn;
        }),
      );
      const p = watch(await c.newPage());
      await p.goto(link);
      await p.waitForFunction(() => window.__paintedPixels !== undefined);
      await flameState(p);
      await p.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r)))));
      const got = await p.evaluate(() => ({ painted: window.__paintedPixels, draws: window.__heatmapDraws, renders: window.__fleetscopePerf.flameRenders.length, wasm: window.__fleetscopePerf.flames.map((f) => f.wasm) }));
      // (The resize observers' first reports had laid the heatmap out again,
      // clearing its canvas for that frame, and drawn the flame graph twice.)
      assert.ok(got.painted > 0, "the heatmap's canvas is drawn in the frame reported painted");
      // (A selection set before the data had scheduled a second drawing of
      // the same into that frame.)
      assert.equal(got.draws, "1", "the heatmap is drawn once before its frame");
      assert.equal(got.renders, 1, "the flame graph is drawn once");
      assert.deepEqual(got.wasm, [true], "its tree was decoded and laid out in WebAssembly (src/flame/treewasm.ts)");
    } finally {
      await c.close();
    }
  });

  test("a permalink of the whole profile: its flame graph is asked by index.html with the heatmap, once, before the app's code, and taken over", async () => {
    const c = await newContext();
    try {
      await c.addInitScript((k) => sessionStorage.setItem("fleetscope.apiKey", k), KEY);
      // Who calls fetch, and whether the heatmap had answered by then: an
      // inline classic script is index.html's (the app's code is a module,
      // whose currentScript is null). Recorded in the page, not timed.
      await c.addInitScript(() => {
        const fetch0 = window.fetch;
        let heatmapAnswered = false;
        window.__fetches = [];
        window.fetch = function (input, init) {
          const url = String(input instanceof Request ? input.url : input);
          const s = document.currentScript;
          window.__fetches.push({ method: url.split("/").pop(), inline: !!s && !s.src && s.type !== "module", heatmapAnswered });
          const r = fetch0.apply(this, arguments);
          if (url.endsWith("/GetHeatmap")) r.then(() => (heatmapAnswered = true), () => {});
          return r;
        };
      });
      const p = watch(await c.newPage());
      const asked = [];
      p.on("request", (r) => asked.push(new URL(r.url()).pathname.replace(/^\/assets\/([a-z]+)-[\w-]+\.js$/, "$1.js")));
      await p.goto(`${URL_}/p/${PROFILE}?orient=flame`);
      const f = await flameState(p);
      const count = (n) => asked.filter((x) => x === n).length;
      const flame = "/fleetscope.v1.QueryService/GetFlameGraph";
      assert.deepEqual([count("/fleetscope.v1.QueryService/GetHeatmap"), count(flame)], [1, 1], asked.join(" "));
      // asked by index.html with the heatmap, not after its answer (as the app would)
      const fetches = await p.evaluate(() => window.__fetches.filter((f) => /^Get(Heatmap|FlameGraph)$/.test(f.method)));
      assert.deepEqual(
        fetches,
        [
          { method: "GetHeatmap", inline: true, heatmapAnswered: false },
          { method: "GetFlameGraph", inline: true, heatmapAnswered: false },
        ],
        JSON.stringify(fetches),
      );
      const whole = await rpc(URL_, KEY, "fleetscope.v1.QueryService/GetFlameGraph", { profileId: PROFILE, format: "FLAME_GRAPH_FORMAT_FOLDED" });
      assert.equal(Number(f.total), Number(whole.total), "the whole profile's flame graph");
      const perf = await p.evaluate(() => ({ renders: window.__fleetscopePerf.flameRenders.length, wasm: window.__fleetscopePerf.flames.map((x) => x.wasm) }));
      assert.deepEqual(perf, { renders: 1, wasm: [true] });
    } finally {
      await c.close();
    }
  });

  test("rows 100 and the idle toggle keep the heatmap exact", async () => {
    await page.getByTestId("rows").selectOption("100");
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.dataset.rows === "100");
    let d = await heatmapData(page);
    // 10 ms cells counted straight from planted.perf.
    const planted = plantedSamples(env("E2E_PERF"));
    const exact100 = exactHeatmap(planted, 100);
    assert.deepEqual(d.cells, exact100.columns);
    // The GC range is still [2.40, 2.48): 8 cells of 10 ms, the same samples.
    assert.equal(d.selectedCount, sumCells(exact100.columns, 100, 2 * 100 + 40, 2 * 100 + 47));
    assert.equal(d.selectedCount, Number((await flameState(page)).total));
    assert.equal(query(page).get("rows"), "100");
    // Drawn: every cell outside the selection (which is shaded over) in the legend's colour for its count.
    const checked = await checkHeatmapPixels(page, exact100.columns, (col, row) => col === 2 && row >= 40 && row <= 47);
    assert.equal(checked, d.cols * 100 - 8);
    await screenshot(page, "rows-100");

    await page.getByTestId("idle").check();
    await page.waitForFunction(() => new URL(location.href).searchParams.get("idle") === "1");
    await page.waitForFunction((t) => Number(document.querySelector("[data-testid=heatmap]")?.dataset.total) > t, d.total);
    d = await heatmapData(page);
    assert.deepEqual(d.cells, exactHeatmap(planted, 100, 1, true).columns);
    const truth = JSON.parse(readFileSync(env("E2E_TRUTH"), "utf8"));
    assert.equal(d.total, truth.samples);
    await page.getByTestId("idle").uncheck();
    await page.getByTestId("rows").selectOption("50");
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.dataset.rows === "50");
  });

  test("a two-event profile: the event selector switches heatmap and flame graph", async () => {
    const id = env("E2E_TWO_EVENTS");
    await page.goto(`${URL_}/p/${id}`);
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
    const sel = page.getByTestId("event");
    // enabled once the profile's facts (its events) have come, after the heatmap and flame graph
    await page.waitForFunction(() => document.querySelector("[data-testid=event]")?.disabled === false);
    const options = await sel.locator("option").evaluateAll((os) => os.map((o) => o.value));
    assert.equal(options.length, 2);
    const first = await page.getByTestId("heatmap").getAttribute("data-event");
    assert.equal(await sel.inputValue(), first);

    // A 3-second profile's columns grow to fill the panel.
    const short = await heatmapData(page);
    const canvasWidth = (await page.getByTestId("heatmap").boundingBox()).width;
    assert.ok(short.cols <= 6 && short.cols * short.cellWidth > 0.9 * (canvasWidth - short.plotLeft), `${short.cols} columns of ${short.cellWidth} px in ${canvasWidth} px`);

    // The default event's stacks are ~130 frames deep: the graph scrolls in a
    // box that fits the viewport, with the root in view in both orientations.
    await flameState(page);
    const rootShown = () =>
      page.getByTestId("flamegraph").evaluate((c) => {
        const box = c.parentElement;
        const rowH = Number(c.dataset.rowHeight);
        const h = Number(c.dataset.rows) * rowH; // the graph's height
        const rootTop = c.dataset.orientation === "icicle" ? 0 : h - rowH;
        return {
          graph: h,
          scroll: box.scrollHeight,
          canvas: c.getBoundingClientRect().height,
          box: box.clientHeight,
          viewport: innerHeight,
          visible: rootTop >= box.scrollTop && rootTop + rowH <= box.scrollTop + box.clientHeight,
        };
      });
    let deep = await rootShown();
    assert.ok(deep.graph > deep.viewport, `a graph taller than the viewport: ${JSON.stringify(deep)}`);
    assert.equal(deep.scroll, deep.graph, "the box scrolls through the whole graph");
    assert.equal(deep.canvas, deep.box, "the canvas is as tall as the box, not the graph");
    assert.ok(deep.box < deep.viewport && deep.visible, `icicle: ${JSON.stringify(deep)}`);
    await page.getByTestId("orient-flame").click();
    await page.waitForFunction(() => document.querySelector("[data-testid=flamegraph]").dataset.orientation === "flame");
    deep = await rootShown();
    assert.ok(deep.box < deep.viewport && deep.visible, `flame: ${JSON.stringify(deep)}`);
    await page.locator(".flame").scrollIntoViewIfNeeded();
    await screenshot(page, "deep-flame-graph", false);
    // Scrolled to the deepest frames (the top, in a flame graph), the
    // canvas draws the rows then in view.
    await page.locator(".flame").evaluate((b) => (b.scrollTop = 0));
    await page.waitForFunction(() => document.querySelector("[data-testid=flamegraph]").dataset.scrollTop === "0");
    const drawn = await page.getByTestId("flamegraph").evaluate((c) => {
      const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) n++;
      return n;
    });
    assert.ok(drawn > 0, "the deepest rows are drawn when scrolled to");
    await page.getByTestId("orient-icicle").click();
    assert.equal((await rootShown()).visible, true);
    const other = options.find((o) => o !== first);
    await sel.selectOption(other);
    await page.waitForFunction((ev) => document.querySelector("[data-testid=heatmap]")?.dataset.event === ev, other);
    assert.equal(query(page).get("event"), other);
    const d = await heatmapData(page);
    const server = await rpc(URL_, KEY, "fleetscope.v1.QueryService/GetHeatmap", { profileId: id, event: other });
    assert.deepEqual(d.cells, server.columns.map((c) => (c.counts ?? []).map(Number)));
    const f = await flameState(page);
    assert.equal(Number(f.total), d.total, "the whole-profile flame graph of the event totals its heatmap");
    await screenshot(page, "two-events");

    // Scrolled down the long top-functions table, its header stays on top
    // of the rows: each header cell is what is under its own centre.
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=top-functions] tbody tr").length >= 40);
    const covered = await page.locator("[data-testid=top-functions]").evaluate((t) => {
      window.scrollTo(0, t.getBoundingClientRect().top + window.scrollY + 300);
      return [...t.querySelectorAll("thead th")].map((th) => {
        const b = th.getBoundingClientRect();
        const top = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);
        return { th: th.textContent, stuck: Math.round(b.top) === 0, onTop: th.contains(top), under: `${top.tagName}.${top.className}` };
      });
    });
    for (const c of covered) assert.ok(c.stuck && c.onTop, `header ${JSON.stringify(c)}`);
    await screenshot(page, "top-table-sticky-header", false);
    await page.evaluate(() => window.scrollTo(0, 0));
  });

  test("share a range: the link opens without a key, totals the owner's range, and stops when revoked", async () => {
    const planted = plantedSamples(env("E2E_PERF"));
    const exact = exactHeatmap(planted, 50);
    const gcTotal = countInRange(planted, exact.startSecond, 2.4e9, 2.48e9);

    // A key without the admin scope cannot share, and the panel says so.
    await page.goto(`${URL_}/p/${PROFILE}?start=2.4&end=2.48`);
    await page.getByTestId("share-open").click();
    const forbidden = page.getByTestId("share-forbidden");
    await forbidden.waitFor();
    assert.match(await forbidden.textContent(), new RegExp(`${KEY.slice(0, 12)}.*lacks the admin scope`));
    assert.equal(await page.getByTestId("share-create").count(), 0);
    await screenshot(page, "share-forbidden", false);

    const owner = await newContext();
    const visitor = await newContext();
    try {
      await owner.addInitScript((k) => sessionStorage.setItem("fleetscope.apiKey", k), ADMIN_KEY);
      const o = watch(await owner.newPage());
      await o.goto(`${URL_}/p/${PROFILE}?start=2.4&end=2.48&search=drain_stacks&orient=flame`);
      const ownerTotal = Number((await flameState(o)).total);
      assert.equal(ownerTotal, gcTotal);
      await o.getByTestId("share-open").click();
      await o.getByTestId("share-none").waitFor();
      assert.match(await o.getByTestId("share-subject").textContent(), /2\.400 s – 2\.480 s of cpu-clock/);
      await o.getByTestId("share-ttl").selectOption({ label: "1 day" });
      await o.getByTestId("share-create").click();
      const url = await o.getByTestId("share-url").inputValue();
      assert.match(url, new RegExp(`^${URL_}/s/fss_[a-z0-9]+\\?search=drain_stacks&orient=flame$`), "the link and the view on screen");
      await o.getByTestId("share-copy").click();
      await o.getByTestId("share-copy").filter({ hasText: "Copied" }).waitFor();
      assert.equal(await o.evaluate(() => navigator.clipboard.readText()), url);
      const row = o.locator("[data-testid=share-links] tbody tr");
      await row.first().waitFor();
      assert.equal(await row.count(), 1);
      assert.equal(await row.getAttribute("data-state"), "live");
      const { links } = await rpc(URL_, ADMIN_KEY, "fleetscope.v1.AdminService/ListShareLinks", {});
      const linkId = await row.getAttribute("data-link-id");
      const made = links.find((l) => l.id === linkId);
      assert.deepEqual([made.profileId, made.startNanos, made.endNanos], [PROFILE, "2400000000", "2480000000"]);
      const lives = Date.parse(made.expiresAt) - Date.parse(made.createdAt); // two clocks: the server's and the database's
      assert.ok(Math.abs(lives - 86_400_000) < 5000, `the chosen expiry: the link lives ${lives} ms`);
      await screenshot(o, "share-created", false);

      // A fresh browser with no key: no sign-in, the shared range.
      const v = watch(await visitor.newPage());
      await v.goto(url);
      const shared = await flameState(v);
      assert.equal(Number(shared.total), ownerTotal, "the shared flame graph totals the owner's range");
      assert.equal(shared.orientation, "flame");
      assert.equal(await v.getByTestId("flame-search").inputValue(), "drain_stacks");
      assert.equal(await v.getByTestId("api-key").count(), 0, "no sign-in");
      assert.deepEqual(await v.evaluate(() => [sessionStorage.getItem("fleetscope.apiKey"), localStorage.getItem("fleetscope.apiKey")]), [null, null]);
      // The heatmap of the second the range touches, the range on it, its cells = the flame total.
      await v.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.dataset.selectedCount);
      const heat = await heatmapData(v);
      assert.deepEqual(heat.cells, [exact.columns[2]], "only second 2, as planted.perf counts it");
      assert.deepEqual([heat.selectionStart, heat.selectionEnd, heat.selectedCount], ["2.4", "2.48", gcTotal]);
      await v.locator(".selection-bar .agree").waitFor();
      await checkHeatmapPixels(v, [exact.columns[2]], (col, row) => row >= 20 && row <= 23);
      // What a link hides and what a visitor cannot do.
      assert.equal((await v.locator("h1").textContent()).trim(), "checkout", "no host");
      assert.equal(await v.locator(".title-row .chip").count(), 0, "no labels");
      await v.getByTestId("shared-badge").waitFor();
      for (const id of ["dropzone", "search", "share-open", "clear-selection"]) assert.equal(await v.getByTestId(id).count(), 0, id);
      assert.equal(await v.locator(".topnav").isVisible(), false);
      assert.equal(await v.getByTestId("event").isDisabled(), true);
      await clickCell(v, 0, 40); // read-only: the range stays
      assert.equal((await heatmapData(v)).selectionStart, "2.4");
      await screenshot(v, "shared-view");
      // The shared view's permalink keeps zoom, search and orientation.
      await v.getByTestId("orient-icicle").click();
      await v.getByTestId("flame-search").fill("GC");
      await v.getByTestId("flame-search").press("Enter");
      await v.waitForFunction(() => new URL(location.href).searchParams.get("search") === "GC");
      await v.getByTestId("copy-link").click();
      await v.getByTestId("copy-link").filter({ hasText: "Copied" }).waitFor();
      const permalink = await v.evaluate(() => navigator.clipboard.readText());
      assert.equal(permalink, `${url.split("?")[0]}?search=GC`);
      await v.goto(permalink);
      const again = await flameState(v);
      assert.deepEqual([again.total, again.orientation], [String(ownerTotal), "icicle"]);
      assert.equal(await v.getByTestId("flame-search").inputValue(), "GC");

      // Revoked on the profile page: the link stops at once.
      await o.getByTestId("share-revoke").click();
      await o.locator("[data-testid=share-links] tbody tr[data-state=revoked]").waitFor();
      await v.reload();
      await v.getByTestId("link-gone").waitFor();
      assert.match(await v.getByTestId("link-gone").textContent(), /revoked or has expired/);
      await screenshot(v, "shared-revoked", false);
    } finally {
      await owner.close();
      await visitor.close();
    }
  });

  test("a 25-minute profile: columns of several seconds, selections of whole columns, exact sums", async () => {
    const id = env("E2E_LONG");
    const samples = plantedSamples(env("E2E_LONG_PERF"));
    const first = exactHeatmap(samples, 50);
    const spc = secondsPerColumnFor(first.seconds);
    assert.ok(spc > 1, `a ${first.seconds}-s profile has one second per column: the test needs a longer one`);
    const exact = exactHeatmap(samples, 50, spc);
    const inRange = (start, end) => countInRange(samples, exact.startSecond, start, end);
    const NS = 1e9;

    await page.goto(`${URL_}/p/${id}`);
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
    let d = await heatmapData(page);
    assert.equal(d.secondsPerColumn, spc);
    assert.equal(d.startSecond, exact.startSecond);
    assert.deepEqual(d.cells, exact.columns, "UI cells differ from the exact count of planted.perf in columns of several seconds");
    const visible = await checkHeatmapPixels(page, exact.columns);
    assert.ok(visible >= 100 * 50, `${visible} cells in view`);
    assert.match(await page.getByTestId("heatmap-hint").textContent(), new RegExp(`each column is ${spc} seconds.*whole columns.*no time window`));

    // Hovering a cell names the column's seconds and the slice of each.
    await page.mouse.move(...Object.values(await cellPoint(page, 3, 20)));
    const tip = page.locator(".heatmap .tooltip");
    await tip.waitFor();
    assert.match(await tip.textContent(), new RegExp(`seconds ${3 * spc}–${4 * spc}, 400–420 ms of each.*whole column.*${exact.columns[3][20]} samples?$`));
    await screenshot(page, "long-profile-hover");

    // A click on one cell selects its column's whole seconds.
    await clickCell(page, 1, 20);
    await page.waitForFunction((e) => new URL(location.href).searchParams.get("end") === e, String(2 * spc));
    assert.equal(query(page).get("start"), String(spc));
    const col1 = inRange(spc * NS, 2 * spc * NS);
    assert.equal(col1, exact.columns[1].reduce((a, b) => a + b, 0));
    d = await heatmapData(page);
    assert.equal(d.selectedCount, col1);
    assert.equal(Number((await flameState(page)).total), col1, "flame graph total vs the planted samples of the column's seconds");
    await page.locator(".selection-bar .agree").waitFor();
    assert.match(await page.getByTestId("selection").textContent(), new RegExp(`1 column of ${spc} s`));

    // A drag backwards from column 5 to column 3 selects columns 3-5, rows aside.
    await drag(page, [5, 10], [3, 40]);
    await page.waitForFunction((s) => new URL(location.href).searchParams.get("start") === s, String(3 * spc));
    assert.equal(query(page).get("end"), String(6 * spc));
    const cols35 = inRange(3 * spc * NS, 6 * spc * NS);
    assert.equal((await heatmapData(page)).selectedCount, cols35);
    assert.equal(Number((await flameState(page)).total), cols35);
    await screenshot(page, "long-profile-columns");

    // The permalink restores the selection.
    const link = page.url();
    await page.goto(link);
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.dataset.selectedCount);
    d = await heatmapData(page);
    assert.deepEqual([d.selectionStart, d.selectionEnd, d.selectedCount], [String(3 * spc), String(6 * spc), cols35]);
    assert.equal(Number((await flameState(page)).total), cols35);

    // A range that is not whole columns (a GC stripe, from a link): the
    // column is shown, no cell sum is claimed, the flame graph counts the range.
    await page.goto(`${URL_}/p/${id}?start=2.4&end=2.48`);
    const f = await flameState(page);
    assert.equal(Number(f.total), inRange(2.4e9, 2.48e9));
    await page.getByTestId("not-aligned").waitFor();
    assert.equal(await page.getByTestId("selection-count").count(), 0);
    assert.equal((await heatmapData(page)).selectedCount, null);
  });

  test("a profile without timestamps: no heatmap, the whole flame graph", async () => {
    await page.goto(`${URL_}/p/${env("E2E_UNTIMED")}`);
    await page.getByTestId("no-heatmap").waitFor();
    const f = await flameState(page);
    assert.ok(Number(f.total) > 0);
    assert.equal(await page.getByTestId("selection").isVisible(), false);
    await screenshot(page, "untimed");

    // A small file's size reads in bytes or KB (not "0.0 MB"), and is right.
    const bytes = Number((await serverProfile(env("E2E_UNTIMED"))).sizeBytes);
    const size = await fact(page, "size");
    const m = /^(\d+(?:\.\d)?) (B|KB|MB|GB)$/.exec(size);
    assert.ok(m && Number(m[1]) >= 1, `size ${size}`);
    const shown = Number(m[1]) * { B: 1, KB: 1e3, MB: 1e6, GB: 1e9 }[m[2]];
    assert.ok(Math.abs(shown - bytes) <= 0.05 * bytes, `size ${size} for ${bytes} bytes`);
  });

  test("a pprof profile: no timestamps, but the duration its profiler recorded", async () => {
    const id = env("E2E_PPROF");
    const prof = await serverProfile(id);
    const nanos = Number(prof.durationNanos ?? 0);
    assert.ok(!prof.timed && nanos > 0, `GetProfile: timed ${prof.timed}, duration_nanos ${prof.durationNanos}`);
    const seconds = (text) => Number(/^(\d+(?:\.\d+)?) s$/.exec(text)?.[1]);
    await page.goto(`${URL_}/p/${id}`);
    await page.getByTestId("no-heatmap").waitFor();
    const shown = await fact(page, "duration");
    assert.ok(Math.abs(seconds(shown) - nanos / 1e9) < 0.01, `header: ${shown} for ${nanos} ns`);
    await screenshot(page, "pprof");
    await page.goto(`${URL_}/?app=gosort`);
    const row = page.locator(`[data-testid=results] tbody tr[data-profile-id="${id}"]`);
    await row.waitFor();
    const listed = (await row.locator("td:nth-child(4)").textContent()).trim();
    assert.ok(Math.abs(seconds(listed) - nanos / 1e9) < 0.01, `search results: ${listed} for ${nanos} ns`);
  });

  test("upload a file by drag and drop, with progress", async () => {
    await page.goto(`${URL_}/`);
    await page.getByTestId("dropzone").waitFor();
    const said = await page.getByTestId("dropzone").textContent();
    for (const format of [/perf script/, /nflxprofile/, /cpuprofile/, /trace events/, /pprof/, /folded/, /gzip/]) assert.match(said, format, "the drop zone names every format");
    await page.getByTestId("upload-app").fill("dropped");
    await page.getByTestId("upload-host").fill("laptop");
    await page.getByTestId("upload-labels").fill("env=test");
    await page.evaluate(() => {
      const el = document.querySelector("[data-testid=upload-status]");
      window.__phases = [];
      new MutationObserver(() => {
        const ph = el.dataset.phase;
        if (ph && window.__phases.at(-1) !== ph) window.__phases.push(ph);
      }).observe(el, { attributes: true, attributeFilter: ["data-phase"] });
    });
    const bytes = readFileSync(env("E2E_DROP_FILE"));
    const dt = await page.evaluateHandle((b64) => {
      const bin = atob(b64);
      const u8 = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
      const t = new DataTransfer();
      t.items.add(new File([u8], "dropped.perf", { type: "text/plain" }));
      return t;
    }, bytes.toString("base64"));
    const zone = page.getByTestId("dropzone");
    await zone.dispatchEvent("dragenter", { dataTransfer: dt });
    await zone.dispatchEvent("dragover", { dataTransfer: dt });
    await screenshot(page, "drag-over");
    await zone.dispatchEvent("drop", { dataTransfer: dt });
    await page.getByTestId("upload-done").waitFor({ timeout: 60_000 });
    const phases = await page.evaluate(() => window.__phases);
    assert.ok(phases.includes("sending") && phases.includes("processing") && phases.at(-1) === "done", `phases: ${phases}`);
    const id = await page.getByTestId("upload-done").getAttribute("data-profile-id");
    assert.match(await page.getByTestId("upload-done").textContent(), /^Uploaded/);
    await screenshot(page, "uploaded");
    assert.equal(await page.getByTestId("upload-duplicate").count(), 0);
    // Dropped anywhere on the page, the same bytes again with another host:
    // recognised as stored, with what it is stored as and what was not applied.
    await page.getByTestId("upload-host").fill("desk");
    await page.locator("h1").dispatchEvent("dragenter", { dataTransfer: dt });
    assert.equal(await page.locator(".drop-overlay").isVisible(), true);
    await page.locator("h1").dispatchEvent("drop", { dataTransfer: dt });
    await page.getByTestId("upload-done").filter({ hasText: "Already stored" }).waitFor();
    assert.equal(await page.getByTestId("upload-done").getAttribute("data-profile-id"), id);
    assert.equal(await page.locator(".drop-overlay").isVisible(), false);
    const dup = page.getByTestId("upload-duplicate");
    assert.equal(await dup.getAttribute("data-ignored"), "host");
    assert.match(await dup.textContent(), new RegExp(`^Stored before as app=dropped, host=laptop, labels env=test: this upload's host not applied\\. An admin changes the stored metadata with fleetscope admin update-profile ${id}\\.$`));
    await screenshot(page, "upload-duplicate");
    await page.getByTestId("upload-host").fill("laptop");
    // The results list refreshed, and the profile opens.
    await page.getByTestId("search").fill("dropped host:laptop env=test");
    await page.getByTestId("search").press("Enter");
    await page.waitForFunction((pid) => [...document.querySelectorAll("[data-testid=results] tbody tr")].some((r) => r.dataset.profileId === pid), id);
    await page.getByTestId("upload-link").click();
    await page.waitForURL(`**/p/${id}`);
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
    const d = await heatmapData(page);
    const server = await serverHeatmap(URL_, KEY, id, 50);
    assert.deepEqual(d.cells, server.columns);
    assert.ok(d.total > 0);
  });

  test("empty and error states: not found, no samples, server down", async () => {
    await page.goto(`${URL_}/p/00000000-0000-4000-8000-000000000000`);
    await page.getByTestId("not-found").waitFor();
    await screenshot(page, "not-found");

    // A range wholly outside the profile is refused by the server, which
    // says so with the profile's span; the page offers the whole profile.
    await page.goto(`${URL_}/p/${PROFILE}?start=100&end=101`);
    const outside = page.locator(".flame-box [data-testid=error]");
    await outside.waitFor();
    assert.match(await outside.innerText(), /lies outside the profile/);
    await screenshot(page, "range-outside");
    await page.getByRole("button", { name: "Show the whole profile" }).click();
    await page.waitForFunction(() => Number(document.querySelector("[data-testid=flamegraph]")?.dataset.total) > 0);

    // The flame graph's own request failing: its panel says so and retries.
    await page.route("**/fleetscope.v1.QueryService/GetFlameGraph", (r) => r.abort("connectionrefused"));
    await page.goto(`${URL_}/p/${PROFILE}?start=2.4&end=2.48`);
    const flameErr = page.locator(".flame-box [data-testid=error]");
    await flameErr.waitFor();
    assert.equal(await flameErr.getAttribute("data-kind"), "down");
    await page.unroute("**/fleetscope.v1.QueryService/GetFlameGraph");
    await flameErr.getByRole("button", { name: "Retry" }).click();
    assert.equal(Number((await flameState(page)).total), (await heatmapData(page)).selectedCount);

    await page.route("**/fleetscope.v1.QueryService/**", (r) => r.abort("connectionrefused"));
    await page.goto(`${URL_}/`);
    const err = page.getByTestId("error");
    await err.waitFor();
    assert.equal(await err.getAttribute("data-kind"), "down");
    await screenshot(page, "server-down");
    await page.unroute("**/fleetscope.v1.QueryService/**");
    await err.getByRole("button", { name: "Retry" }).click();
    await page.getByTestId("results").waitFor();
  });

  // ---- the fleet view -------------------------------------------------------------
  // E2E_FLEET: app "fleet", hosts fleet-a, fleet-b, fleet-c (epoch clock,
  // from the same second, 30, 20 and 12 s; fleet-c labelled env=canary,
  // the others env=prod). Every expected number is counted here from their
  // planted.perf files, placed on the wall clock.

  test("fleet view from search: the heatmap is the planted hosts summed by wall clock; total, accounting, hosts and timeline agree", async () => {
    const fleet = fleetHosts();
    const span = wallSpan(fleet);
    const cols = span.end - span.first;
    await page.goto(`${URL_}/?app=fleet`);
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=results] tbody tr").length === 3);
    await page.locator("[data-testid=fleet-link][data-app=fleet]").click();
    await page.waitForURL("**/fleet?**");
    // The window the link opens is the whole seconds the listed profiles span.
    assert.equal(query(page).get("app"), "fleet");
    assert.deepEqual([query(page).get("from"), query(page).get("to")], [String(span.first), String(span.end)]);
    await fleetReady(page);
    const ui = await heatmapData(page);
    const want = wallColumns(fleet, span.first, cols);
    assert.deepEqual([ui.startSecond, ui.secondsPerColumn, ui.rows, ui.cols], [span.first, 1, 50, cols]);
    assert.deepEqual(ui.cells, want, "fleet heatmap cells differ from the planted hosts summed by wall clock");
    const total = want.flat().reduce((a, b) => a + b, 0);
    // The total the page shows is the API's and the planted files'.
    const api = await rpc(URL_, KEY, "fleetscope.v1.FleetService/GetFleetHeatmap", { selection: { app: "fleet", from: iso(span.first), to: iso(span.end) }, rows: 50 });
    const shown = Number((await page.getByTestId("fleet-total").textContent()).replace(/,/g, ""));
    assert.deepEqual([shown, Number(api.total), ui.total], [total, total, total]);
    assert.deepEqual(await accounting(page), { profiles: 3, leftOut: {}, event: "cpu-clock" });
    assert.equal(api.accounting.profiles, 3);
    // Each cell drawn in the legend's colour for its planted count.
    const checked = await checkHeatmapPixels(page, want);
    assert.equal(checked, cols * 50);
    // Host strip: every host, by total, its total its planted count.
    const hosts = await hostStrip(page);
    const wantHosts = fleet.map((h) => ({ host: h.host, total: wallCount([h], span.first * 1e6, span.end * 1e6) })).sort((a, b) => b.total - a.total || (a.host < b.host ? -1 : 1));
    assert.deepEqual(hosts, wantHosts);
    assert.equal(wantHosts.reduce((a, h) => a + h.total, 0), total);
    // Timeline: the columns' sums.
    const tl = await page.getByTestId("timeline").evaluate((c) => JSON.parse(c.dataset.totals));
    assert.deepEqual(tl, want.map((c) => c.reduce((a, b) => a + b, 0)));
    // The whole window's merged flame graph totals the heatmap.
    assert.equal(Number((await flameState(page)).total), total);
    await page.getByTestId("window-check").and(page.locator(".agree")).waitFor();
    console.log(`# fleet: ${fleet.length} hosts, ${cols} s, ${total} samples = GetFleetHeatmap's total; hosts ${wantHosts.map((h) => `${h.host} ${h.total}`).join(", ")}`);
    await screenshot(page, "fleet");
  });

  test("fleet: drag-select a GC stripe; the merged flame graph totals the selected cells", async () => {
    const fleet = fleetHosts();
    const { first } = wallSpan(fleet);
    // GC runs in [s+0.40, s+0.48) for s % 5 == 2 on every host: rows 20-23 of column 2
    await drag(page, [2, 20], [2, 23]);
    await page.waitForFunction((s) => new URL(location.href).searchParams.get("start") === s, `${first + 2}.4`);
    assert.equal(query(page).get("end"), `${first + 2}.48`);
    const d = await heatmapData(page);
    const cells = sumCells(d.cells, 50, 2 * 50 + 20, 2 * 50 + 23);
    assert.equal(d.selectedCount, cells);
    assert.equal(cells, wallCount(fleet, (first + 2) * 1e6 + 400_000, (first + 2) * 1e6 + 480_000), "the selected cells vs the planted samples");
    const f = await flameState(page);
    assert.equal(Number(f.total), cells, "merged flame graph total vs the selected cells");
    assert.equal(await page.getByTestId("selection-count").getAttribute("data-count"), String(cells));
    await page.locator(".selection-bar .agree").waitFor();
    assert.equal(await page.getByTestId("flame-accounting").getAttribute("data-profiles"), "3");
    const api = await rpc(URL_, KEY, "fleetscope.v1.FleetService/GetFleetFlameGraph", {
      selection: { app: "fleet", from: iso(first + 2, "400"), to: iso(first + 2, "480") },
      format: "FLAME_GRAPH_FORMAT_FOLDED",
    });
    assert.equal(Number(api.flameGraph.total), cells);
    // GC dominates the stripe, across hosts.
    await page.locator("[data-testid=top-functions] [data-sort=total]").click();
    const gc = await page.locator('[data-testid=top-functions] tbody tr[data-name^="GCTaskThread::run"] td:nth-child(4)').textContent();
    assert.ok(Number(gc.replace(/,/g, "")) / cells > 0.6, `GC ${gc} of ${cells}`);
    await screenshot(page, "fleet-gc-stripe");
  });

  test("fleet: clicking a host narrows the selection to it; its profile opens at the same range", async () => {
    const fleet = fleetHosts();
    const span = wallSpan(fleet);
    const b = fleet.find((h) => h.host === "fleet-b");
    const [rs, re] = [(span.first + 2) * 1e6 + 400_000, (span.first + 2) * 1e6 + 480_000];
    await page.locator('[data-testid=host-strip] li[data-host="fleet-b"] [data-testid=host-narrow]').click();
    await page.waitForFunction(() => new URL(location.href).searchParams.getAll("host").join() === "fleet-b");
    await fleetReady(page);
    const d = await heatmapData(page);
    assert.deepEqual(d.cells, wallColumns([b], span.first, span.end - span.first), "the narrowed heatmap is fleet-b's alone");
    assert.deepEqual(await hostStrip(page), [{ host: "fleet-b", total: wallCount([b], span.first * 1e6, span.end * 1e6) }]);
    assert.equal((await accounting(page)).profiles, 1);
    // The range stays; its cells and merged flame graph are now fleet-b's.
    assert.equal(query(page).get("start"), `${span.first + 2}.4`);
    const inB = wallCount([b], rs, re);
    assert.equal(d.selectedCount, inB);
    assert.equal(Number((await flameState(page)).total), inB);
    await page.getByTestId("all-hosts").waitFor();
    await screenshot(page, "fleet-host");

    // Its profile, at the same range on the profile's own clock.
    await page.locator('[data-testid=host-strip] li[data-host="fleet-b"] [data-testid=host-profile]').click();
    await page.waitForURL("**/p/**");
    const id = decodeURIComponent(new URL(page.url()).pathname.split("/").pop());
    const prof = await serverProfile(id);
    assert.deepEqual([prof.app, prof.host], ["fleet", "fleet-b"]);
    const rel = (us) => (us - isoMicros(prof.startTime)) / 1e6;
    assert.deepEqual([query(page).get("start"), query(page).get("end")], [String(rel(rs)), String(rel(re))]);
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.dataset.selectedCount);
    assert.equal((await heatmapData(page)).selectedCount, inB);
    assert.equal(Number((await flameState(page)).total), inB, "the host's profile at the range counts what the fleet did");

    // Back: the narrowed fleet view; "All hosts" widens it again.
    await page.goBack();
    await page.waitForURL("**/fleet?**");
    await fleetReady(page);
    assert.deepEqual((await hostStrip(page)).map((h) => h.host), ["fleet-b"]);
    await page.getByTestId("all-hosts").click();
    await page.waitForFunction(() => !new URL(location.href).searchParams.has("host"));
    await fleetReady(page);
    assert.equal((await hostStrip(page)).length, 3);
  });

  test("fleet: labels (k!=v); an hour around the fleet (4-s columns); zoom to a selection re-queries at 1 s, and backs out", async () => {
    const fleet = fleetHosts();
    const prod = fleet.filter((h) => h.host !== "fleet-c");
    const { first } = wallSpan(fleet);
    await page.getByTestId("fleet-labels").fill("env!=canary");
    await page.getByTestId("fleet-labels").press("Enter");
    await page.waitForFunction(() => new URL(location.href).searchParams.get("label") === "env!=canary");
    await fleetReady(page);
    let d = await heatmapData(page);
    assert.deepEqual(d.cells, wallColumns(prod, first, d.cols), "env!=canary leaves the canary out");
    assert.deepEqual((await hostStrip(page)).map((h) => h.host).sort(), ["fleet-a", "fleet-b"]);
    assert.equal((await accounting(page)).profiles, 2);

    // An hour around the fleet's first second (columns of 5 s or more would be whole tens of seconds), typed in the pickers (the browser runs in UTC).
    const at = (sec) => new Date(sec * 1000).toISOString().slice(0, 19);
    const [wFrom, wTo] = [first - 1800, first + 1800];
    await page.getByTestId("fleet-from").fill(at(wFrom));
    await page.getByTestId("fleet-to").fill(at(wTo));
    await page.getByTestId("fleet-apply").click();
    await page.waitForFunction((to) => new URL(location.href).searchParams.get("to") === to, String(wTo));
    assert.equal(query(page).get("from"), String(wFrom));
    await fleetReady(page);
    d = await heatmapData(page);
    assert.deepEqual([d.secondsPerColumn, d.cols, d.startSecond], [4, 900, wFrom], "3,600 s: 4 s a column, 900 columns");
    const want4 = wallColumns(prod, wFrom, 900, 50, 4);
    assert.deepEqual(d.cells, want4, "4-s columns: each cell sums its slice of 4 seconds");
    assert.match(await page.getByTestId("heatmap-hint").textContent(), /each column is 4 seconds.*Zoom to selection/);
    // The GC stripe's range stayed (it lies in the window); not whole columns, so no cell sum is claimed.
    await page.getByTestId("not-aligned").waitFor();
    await page.getByTestId("clear-selection").click();
    await page.waitForFunction(() => !new URL(location.href).searchParams.has("start"));
    assert.ok((await checkHeatmapPixels(page, want4)) > 0);
    // A drag across columns 450-452 (the fleet's first 12 s) selects their whole seconds.
    const col0 = (first - wFrom) / 4;
    await drag(page, [col0, 10], [col0 + 2, 40]);
    await page.waitForFunction((e) => new URL(location.href).searchParams.get("end") === e, String(first + 12));
    assert.equal(query(page).get("start"), String(first));
    const in12 = wallCount(prod, first * 1e6, (first + 12) * 1e6);
    assert.equal((await heatmapData(page)).selectedCount, in12);
    assert.equal(in12, sumCells(want4, 50, col0 * 50, (col0 + 3) * 50 - 1));
    assert.equal(Number((await flameState(page)).total), in12);
    assert.equal(await page.getByTestId("zoom-trail").isHidden(), true, "no zoom yet");
    await screenshot(page, "fleet-2h");

    // Zoom to the selection: its 12 seconds at one second a column, the range still selected;
    // the hour goes on the zoom stack (in the URL).
    await page.getByTestId("zoom-in").click();
    await page.waitForFunction((to) => new URL(location.href).searchParams.get("to") === to, String(first + 12));
    await fleetReady(page);
    d = await heatmapData(page);
    assert.deepEqual([d.secondsPerColumn, d.cols, d.startSecond], [1, 12, first]);
    assert.deepEqual(d.cells, wallColumns(prod, first, 12));
    assert.deepEqual([d.selectionStart, d.selectionEnd, d.selectedCount], ["0", "12", in12]);
    assert.equal(Number((await flameState(page)).total), in12);
    assert.deepEqual(query(page).getAll("zoom"), [`${wFrom}-${wTo}`]);
    const crumbs = async () => page.getByTestId("zoom-back").evaluateAll((bs) => bs.map((b) => [b.dataset.from, b.dataset.to]));
    assert.deepEqual(await crumbs(), [[String(wFrom), String(wTo)]]);
    await screenshot(page, "fleet-zoomed");

    // Back out through the trail: the hour again, 4-s columns, the range still selected.
    await page.getByTestId("zoom-back").click();
    await page.waitForFunction((to) => new URL(location.href).searchParams.get("to") === to, String(wTo));
    assert.deepEqual([query(page).get("from"), query(page).getAll("zoom"), query(page).get("start"), query(page).get("end")], [String(wFrom), [], String(first), String(first + 12)]);
    await fleetReady(page);
    d = await heatmapData(page);
    assert.deepEqual([d.secondsPerColumn, d.cols], [4, 900]);
    assert.deepEqual(d.cells, want4);
    assert.equal(d.selectedCount, in12);
    assert.equal(await page.getByTestId("zoom-trail").isHidden(), true);

    // History: back to the zoomed view; "Zoom out ×2" widens it about its middle and keeps the stack.
    await page.goBack();
    await page.waitForFunction((to) => new URL(location.href).searchParams.get("to") === to, String(first + 12));
    await fleetReady(page);
    await page.getByTestId("zoom-out").click();
    await page.waitForFunction((from) => new URL(location.href).searchParams.get("from") === from, String(first - 6));
    assert.deepEqual([query(page).get("to"), query(page).getAll("zoom")], [String(first + 18), [`${wFrom}-${wTo}`]]);
    await fleetReady(page);
    assert.deepEqual((await heatmapData(page)).cells, wallColumns(prod, first - 6, 24));
    // Back to the zoomed window (a history entry per window).
    await page.goBack();
    await page.waitForFunction((to) => new URL(location.href).searchParams.get("to") === to, String(first + 12));
    await fleetReady(page);
    assert.equal((await heatmapData(page)).selectedCount, in12);
  });

  test("fleet: a permalink opens the same view in a fresh browser, signed in or after signing in", async () => {
    // Add a zoom-free view state: a search and the flame orientation.
    await page.getByTestId("flame-search").fill("drain_stacks");
    await page.getByTestId("flame-search").press("Enter");
    await page.getByTestId("orient-flame").click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get("orient") === "flame");
    await page.getByTestId("copy-link").click();
    await page.getByTestId("copy-link").filter({ hasText: "Copied" }).waitFor();
    const link = await page.evaluate(() => navigator.clipboard.readText());
    assert.equal(link, page.url(), "the copied link is the URL");
    const view = async (p) => ({
      heatmap: await heatmapData(p),
      flame: await flameState(p),
      labels: await p.getByTestId("fleet-labels").inputValue(),
      search: await p.getByTestId("flame-search").inputValue(),
      total: await p.getByTestId("fleet-total").textContent(),
      hosts: await hostStrip(p),
      zoomedFrom: await p.getByTestId("zoom-back").evaluateAll((bs) => bs.map((b) => [b.dataset.from, b.dataset.to])),
    });
    const before = await view(page);
    assert.equal(before.labels, "env!=canary");
    const { first } = wallSpan(fleetHosts());
    assert.deepEqual(before.zoomedFrom, [[String(first - 1800), String(first + 1800)]], "zoomed in from the hour");
    assert.ok(Number(before.flame.matched) > 0, "drain_stacks matched");

    const signedIn = await newContext();
    const fresh = await newContext();
    try {
      await signedIn.addInitScript((k) => sessionStorage.setItem("fleetscope.apiKey", k), KEY);
      const p = watch(await signedIn.newPage());
      await p.goto(link);
      await fleetReady(p);
      const after = await view(p);
      for (const v of [before, after]) delete v.flame.renderMs;
      assert.deepEqual(after, before, "the permalink restores the view");
      assert.equal(p.url(), link);
      await screenshot(p, "fleet-permalink");

      // Not signed in: the sign-in form, then the same view.
      const q = watch(await fresh.newPage());
      await q.goto(link);
      await signIn(q, KEY);
      await fleetReady(q);
      const again = await view(q);
      delete again.flame.renderMs;
      assert.deepEqual(again, before);
      // The restored zoom stack backs out to the hour's 4-s columns.
      await q.getByTestId("zoom-back").click();
      await q.waitForFunction((from) => new URL(location.href).searchParams.get("from") === from, String(first - 1800));
      await fleetReady(q);
      const out = await heatmapData(q);
      assert.deepEqual([out.secondsPerColumn, out.cols, out.startSecond], [4, 900, first - 1800]);
      assert.equal(out.selectedCount, before.heatmap.selectedCount);
    } finally {
      await signedIn.close();
      await fresh.close();
    }
  });

  test("fleet: a permalink's heatmap and whole-window flame graph are asked before the app's code loads, once each, and taken over; the generated clients load after both are drawn", async () => {
    const { first, end: last } = wallSpan(fleetHosts());
    const c = await newContext();
    try {
      await c.addInitScript((k) => sessionStorage.setItem("fleetscope.apiKey", k), KEY);
      // when the canvases were first drawn (their data attributes are set at the end of a drawing)
      await c.addInitScript(() => {
        window.__drawn = {};
        new MutationObserver((rs) => {
          for (const r of rs) if (!(r.target.dataset.testid in window.__drawn) && Number(r.target.dataset.total) >= 0) window.__drawn[r.target.dataset.testid] = performance.now();
        }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-drawn", "data-render-ms"] });
      });
      const p = watch(await c.newPage());
      const asked = [];
      p.on("request", (r) => asked.push({ path: new URL(r.url()).pathname, at: Date.now() }));
      await p.goto(`${URL_}/fleet?app=fleet&from=${first}&to=${last}`);
      await fleetReady(p);
      const names = asked.map((r) => r.path.replace(/^\/assets\/([a-z]+)-[\w-]+\.js$/, "$1.js"));
      const at = (n) => names.indexOf(n);
      const count = (n) => names.filter((x) => x === n).length;
      const heat = "/fleetscope.v1.FleetService/GetFleetHeatmap";
      const flame = "/fleetscope.v1.FleetService/GetFleetFlameGraph";
      assert.deepEqual([count(heat), count(flame)], [1, 1], names.join(" "));
      assert.ok(at(heat) < at("fleet.js") && at(flame) < at("fleet.js"), `asked before the fleet view's code: ${names.join(" ")}`);
      assert.ok(at("rpc.js") > at("fleet.js"), names.join(" "));
      // the generated clients' code is asked for once both are drawn
      const t = await p.evaluate(() => ({ ...window.__drawn, rpc: performance.getEntriesByType("resource").find((e) => /\/assets\/rpc-/.test(e.name))?.startTime }));
      assert.ok(t.heatmap > 0 && t.flamegraph > 0 && t.rpc > Math.max(t.heatmap, t.flamegraph), JSON.stringify(t));
      assert.ok(t.heatmap <= t.flamegraph, `the heatmap is drawn first: ${JSON.stringify(t)}`);
      // and the view is the one the answers say: the prefetched heatmap is the server's
      const api = await rpc(URL_, KEY, "fleetscope.v1.FleetService/GetFleetHeatmap", {
        selection: { app: "fleet", from: new Date(first * 1000).toISOString(), to: new Date(last * 1000).toISOString() },
      });
      assert.equal((await heatmapData(p)).total, Number(api.total));
      assert.equal(Number((await flameState(p)).total), Number(api.total), "the whole window's merged flame graph totals the heatmap");
      await p.close();
    } finally {
      await c.close();
    }
  });

  test("fleet: a preset window over a boot-clock host placed at upload time; timeline zoom; its profile at the same range", async () => {
    const prof = await serverProfile(PROFILE); // checkout on web-1, boot clock, placed at upload time (minutes ago)
    const host = { host: "web-1", samples: plantedSamples(env("E2E_PERF")), shiftUs: isoMicros(prof.startTime) - Number(prof.startSecond) * 1e6 };
    const span = wallSpan([host]);
    const total = wallCount([host], span.first * 1e6, span.end * 1e6);
    // No window in the URL: the last hour, written into the URL.
    await page.goto(`${URL_}/fleet?app=checkout`);
    await page.waitForFunction(() => new URL(location.href).searchParams.has("from"));
    assert.equal(Number(query(page).get("to")) - Number(query(page).get("from")), 3600);
    await fleetReady(page);
    await page.getByTestId("preset-15m").click();
    await page.waitForFunction(() => Number(new URL(location.href).searchParams.get("to")) - Number(new URL(location.href).searchParams.get("from")) === 900);
    await fleetReady(page);
    let d = await heatmapData(page);
    assert.deepEqual([d.secondsPerColumn, d.cols], [1, 900]);
    assert.deepEqual(d.cells, wallColumns([host], d.startSecond, 900), "web-1's samples, on the wall clock");
    assert.equal(d.total, total);
    assert.deepEqual(await hostStrip(page), [{ host: "web-1", total }], "web-2 (recorded days ago) is outside the window");
    // Drag across the timeline over the profile's seconds: the window becomes them.
    const tl = page.getByTestId("timeline");
    const box = await tl.boundingBox();
    // (its columns are the heatmap's, scrolled with it: column 0 at data-x0)
    const g = await tl.evaluate((c) => ({ x0: Number(c.dataset.x0), colW: Number(c.dataset.colWidth) }));
    const x = (col) => box.x + g.x0 + (col + 0.5) * g.colW;
    const [c0, c1] = [span.first - d.startSecond, span.end - 1 - d.startSecond];
    await page.mouse.move(x(c0), box.y + 40);
    await page.mouse.down();
    await page.mouse.move(x(c1), box.y + 40, { steps: 5 });
    await page.mouse.up();
    await page.waitForFunction((f) => new URL(location.href).searchParams.get("from") === f, String(span.first));
    assert.equal(query(page).get("to"), String(span.end));
    await fleetReady(page);
    d = await heatmapData(page);
    assert.deepEqual([d.startSecond, d.cols], [span.first, span.end - span.first]);
    assert.deepEqual(d.cells, wallColumns([host], span.first, d.cols));
    // Select cells, then open the host's profile: the same samples.
    await drag(page, [5, 10], [6, 30]);
    await page.waitForFunction(() => new URL(location.href).searchParams.has("end"));
    const cells = (await heatmapData(page)).selectedCount;
    assert.equal(cells, wallCount([host], (span.first + 5) * 1e6 + 200_000, (span.first + 6) * 1e6 + 620_000));
    assert.equal(Number((await flameState(page)).total), cells);
    await screenshot(page, "fleet-boot-clock");
    await page.locator('[data-testid=host-strip] li[data-host="web-1"] [data-testid=host-profile]').click();
    await page.waitForURL(`**/p/${PROFILE}?**`);
    assert.equal(Number((await flameState(page)).total), cells, "web-1's profile at the range counts the fleet's cells");
  });

  test("fleet: a profile without per-sample times is left out of the heatmap, and counted in the window's flame graph, as the accounting says", async () => {
    await page.goto(`${URL_}/fleet?app=untimed`);
    await page.waitForFunction(() => new URL(location.href).searchParams.has("from"));
    await fleetReady(page);
    const q = query(page);
    const sel = { app: "untimed", from: new Date(Number(q.get("from")) * 1000).toISOString(), to: new Date(Number(q.get("to")) * 1000).toISOString() };
    const api = await rpc(URL_, KEY, "fleetscope.v1.FleetService/GetFleetHeatmap", { selection: sel });
    const acc = await accounting(page);
    assert.deepEqual(acc, { profiles: 0, leftOut: api.accounting.leftOut, event: api.accounting.event });
    assert.deepEqual(Object.values(acc.leftOut), [1], "the one untimed profile, left out");
    assert.match(await page.getByTestId("fleet-profiles").textContent(), new RegExp(`1 left out \\(${Object.keys(acc.leftOut)[0].replace(/[()]/g, "\\$&")}\\)`));
    await page.getByTestId("no-samples-heatmap").filter({ hasText: "No profile of this selection with per-sample times" }).waitFor();
    // The whole window's merged flame graph is that profile's whole flame graph.
    const whole = await rpc(URL_, KEY, "fleetscope.v1.QueryService/GetFlameGraph", { profileId: env("E2E_UNTIMED"), format: "FLAME_GRAPH_FORMAT_FOLDED" });
    assert.ok(Number(whole.total) > 0);
    assert.equal(Number((await flameState(page)).total), Number(whole.total));
    assert.equal(await page.getByTestId("flame-accounting").getAttribute("data-profiles"), "1");
    assert.match(await page.getByTestId("window-check").textContent(), /also counts 1 profile without per-sample times lying wholly inside the window/);
    await screenshot(page, "fleet-untimed");
  });


  // ---- compare and slice ------------------------------------------------------

  /** cellsOf counts planted samples into a grid of cols × rows columns from startSecond. */
  function cellsOf(samples, startSecond, cols, rows) {
    const out = Array.from({ length: cols }, () => new Array(rows).fill(0));
    for (const s of samples) {
      const col = Math.floor(s.us / 1e6) - startSecond;
      out[col][Math.floor(((s.us % 1e6) * rows) / 1e6)]++;
    }
    return out;
  }

  async function download(p, format) {
    const [dl] = await Promise.all([p.waitForEvent("download"), p.getByTestId("download").selectOption(format)]);
    return { name: dl.suggestedFilename(), data: readFileSync(await dl.path()) };
  }

  test("filter by function: the heatmap re-colours to the samples in it, cell for cell, and a selection's flame graph totals its cells", async () => {
    await page.goto(`${URL_}/p/${PROFILE}`);
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
    const all = await heatmapData(page);
    await page.getByTestId("filter-function").fill("GCTaskThread::run");
    await page.getByTestId("filter-function").press("Enter");
    await page.waitForFunction(() => new URL(location.href).searchParams.get("fn") === "GCTaskThread::run");
    await page.waitForFunction((t) => Number(document.querySelector("[data-testid=heatmap]")?.dataset.total) < t, all.total);
    const d = await heatmapData(page);
    // Counted from planted.perf: non-idle samples with a frame matching the regex.
    const planted = plantedSamples(env("E2E_PERF"));
    const gc = planted.filter((s) => s.comm !== "swapper" && [s.comm, ...s.stack].some((f) => /GCTaskThread::run/.test(f)));
    const want = cellsOf(gc, d.startSecond, d.cols, 50);
    assert.deepEqual(d.cells, want, "filtered cells vs planted.perf");
    assert.equal(d.total, gc.length);
    assert.equal(await checkHeatmapPixels(page, want), d.cols * 50, "drawn in the legend's colours for the filtered counts");
    // A GC stripe: the filtered flame graph totals the filtered cells, and holds only GC stacks.
    await drag(page, [2, 20], [2, 23]);
    await page.waitForFunction(() => new URL(location.href).searchParams.get("start") === "2.4");
    const f = await flameState(page);
    const cells = sumCells(d.cells, 50, 2 * 50 + 20, 2 * 50 + 23);
    assert.equal(Number(f.total), cells);
    assert.equal(cells, countInRange(gc, d.startSecond, 2.4e9, 2.48e9));
    console.log(`# function filter GCTaskThread::run: ${gc.length} of ${all.total} samples, cell for cell as planted.perf; GC stripe ${cells} = flame total`);
    await screenshot(page, "function-heatmap");
    // Escape clears it: the whole heatmap again.
    await page.getByTestId("filter-function").press("Escape");
    await page.waitForFunction(() => !new URL(location.href).searchParams.has("fn"));
    await page.waitForFunction((t) => Number(document.querySelector("[data-testid=heatmap]")?.dataset.total) === t, all.total);
  });

  test("a function picked in the top-functions table filters the heatmap to it", async () => {
    await flameState(page);
    const row = page.locator("[data-testid=top-functions] tbody tr[data-name^='PSPromotionManager::drain_stacks_depth']").first();
    await row.locator("button.fn-heatmap").click();
    await page.waitForFunction(() => (new URL(location.href).searchParams.get("fn") ?? "").startsWith("^PSPromotionManager::drain_stacks_depth"));
    const name = await row.getAttribute("data-name");
    const planted = plantedSamples(env("E2E_PERF"));
    const n = planted.filter((s) => s.comm !== "swapper" && s.stack.some((f) => f === name || f.startsWith(`${name}(`))).length;
    await page.waitForFunction((t) => Number(document.querySelector("[data-testid=heatmap]")?.dataset.total) === t, n);
    await page.getByTestId("filter-function").fill("");
    await page.getByTestId("filter-apply").click();
    await page.waitForFunction(() => !new URL(location.href).searchParams.has("fn"));
  });

  test("thread view: a row per thread, summing to the heatmap's columns; a thread picked filters the heatmap to it", async () => {
    await page.goto(`${URL_}/p/${PROFILE}`);
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
    const d = await heatmapData(page);
    for (const [axis, keyOf] of [
      ["cpu", (s) => String(s.cpu)],
      ["thread", (s) => String(s.tid)],
    ]) {
      await page.getByTestId(`axis-${axis}`).click();
      await page.waitForFunction((a) => new URL(location.href).searchParams.get("axis") === a, axis);
      await page.waitForFunction(() => document.querySelectorAll("[data-testid=series] .series-row").length > 0);
      const series = await page.locator("[data-testid=series] .series-row").evaluateAll((rows) =>
        rows.map((r) => ({ key: r.dataset.key, total: Number(r.dataset.total), columns: r.dataset.columns.split(",").map(Number) })),
      );
      const colSums = d.cells.map((c) => c.reduce((a, b) => a + b, 0));
      const seriesSums = colSums.map((_, i) => series.reduce((a, s) => a + (s.columns[i] ?? 0), 0));
      assert.deepEqual(seriesSums, colSums, `${axis}: the rows sum to the heatmap's columns`);
      // Each row's total, counted from planted.perf by its CPU or thread.
      const planted = plantedSamples(env("E2E_PERF")).filter((s) => s.comm !== "swapper");
      for (const s of series.filter((s) => s.key !== "other")) {
        const key = s.key.split("/").pop();
        assert.equal(s.total, planted.filter((p) => keyOf(p) === key).length, `${axis} ${s.key}`);
      }
      console.log(`# thread view by ${axis}: ${series.length} rows sum to the heatmap's ${colSums.length} columns; totals as planted.perf`);
    }
    // Pick the busiest thread: the heatmap shows only its samples.
    const top = page.locator("[data-testid=series] .series-row").first();
    const total = Number(await top.getAttribute("data-total"));
    await top.locator("button").click();
    await page.waitForFunction(() => new URL(location.href).searchParams.has("tid"));
    await page.waitForFunction((t) => Number(document.querySelector("[data-testid=heatmap]")?.dataset.total) === t, total);
    await screenshot(page, "thread-view");
    await page.getByTestId("filter-threads-clear").click();
    await page.getByTestId("axis-offset").click();
    await page.waitForFunction(() => !new URL(location.href).searchParams.has("axis") && !new URL(location.href).searchParams.has("tid"));
    await page.waitForFunction((t) => Number(document.querySelector("[data-testid=heatmap]")?.dataset.total) === t, d.total);
  });

  test("compare: a range against the rest of the profile, then against a pinned range; the permalink keeps it", async () => {
    await page.goto(`${URL_}/p/${PROFILE}`);
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
    const d = await heatmapData(page);
    await drag(page, [2, 20], [2, 23]);
    await page.waitForFunction(() => new URL(location.href).searchParams.get("start") === "2.4");
    await flameState(page);
    const planted = plantedSamples(env("E2E_PERF"));
    const gc = countInRange(planted, d.startSecond, 2.4e9, 2.48e9);
    await page.getByTestId("compare").selectOption("rest");
    await page.waitForFunction(() => document.querySelector("[data-testid=flamegraph]")?.dataset.diff === "1");
    // The totals differ far more than twofold: normalized by default (no
    // norm in the URL), and it says so.
    await page.waitForFunction(() => document.querySelector("[data-testid=diff-mode]")?.dataset.mode === "auto-normalized");
    assert.ok(await page.getByTestId("diff-normalize").isChecked());
    assert.equal(query(page).get("norm"), null);
    // GC grew, against the rest scaled to the selection's total.
    await page.waitForFunction(() => [...document.querySelectorAll("[data-testid=diff-by-total] tbody tr")].some((tr) => /GCTaskThread::run/.test(tr.dataset.name) && tr.lastChild.classList.contains("grew")));
    // Raw counts, chosen: the sides' own totals.
    await page.getByTestId("diff-normalize").uncheck();
    await page.waitForFunction(() => new URL(location.href).searchParams.get("norm") === "0");
    await page.waitForFunction(() => document.querySelector("[data-testid=diff-mode]")?.dataset.mode === "raw" && !document.querySelector(".flame-box").classList.contains("stale"));
    let f = await flameState(page);
    assert.equal(Number(f.totalB), gc, "B: the selection");
    assert.equal(Number(f.totalA), d.total - gc, "A: the rest of the profile");
    assert.equal(Number(f.total), gc, "the differential graph has B's shape");
    const changed = await page.locator("[data-testid=diff-by-total] tbody tr").count();
    assert.ok(changed > 0, "a table of the largest changes");
    await screenshot(page, "diff-range-vs-rest");
    // Automatic again.
    await page.getByTestId("diff-normalize-auto").click();
    await page.waitForFunction(() => !new URL(location.href).searchParams.has("norm"));
    await page.waitForFunction(() => document.querySelector("[data-testid=diff-mode]")?.dataset.mode === "auto-normalized");
    // Raw counts again for the totals below.
    await page.getByTestId("diff-normalize").uncheck();
    await page.waitForFunction(() => new URL(location.href).searchParams.get("norm") === "0");
    // Pin the GC stripe, select second 5: B is second 5, A the stripe.
    await page.getByTestId("pin-baseline").click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get("cmp") === "base");
    await drag(page, [5, 0], [5, 49]);
    await page.waitForFunction(() => new URL(location.href).searchParams.get("start") === "5");
    await page.waitForFunction(() => document.querySelector("[data-testid=flamegraph]")?.dataset.totalB !== undefined && !document.querySelector(".flame-box").classList.contains("stale"));
    f = await flameState(page);
    assert.equal(Number(f.totalA), gc, "A: the pinned stripe");
    assert.equal(Number(f.totalB), countInRange(planted, d.startSecond, 5e9, 6e9), "B: second 5");
    assert.equal(query(page).get("bstart"), "2.4");
    // The permalink reopens the comparison.
    await page.reload();
    await page.waitForFunction(() => document.querySelector("[data-testid=flamegraph]")?.dataset.diff === "1");
    const again = await flameState(page);
    assert.deepEqual([again.totalA, again.totalB], [f.totalA, f.totalB]);
    assert.equal(await page.getByTestId("compare").inputValue(), "base");
    await page.getByTestId("compare").selectOption("");
    await page.waitForFunction(() => !document.querySelector("[data-testid=flamegraph]")?.dataset.diff);
  });

  test("sandwich: a function's callers and callees, each totalling its samples", async () => {
    await page.goto(`${URL_}/p/${PROFILE}?start=2.4&end=2.48`);
    await flameState(page);
    const row = page.locator("[data-testid=top-functions] tbody tr[data-name='GCTaskThread::run']");
    const total = Number((await row.locator("td").nth(3).textContent()).replace(/,/g, ""));
    await row.locator("button.fn-sandwich").click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get("sw") === "GCTaskThread::run");
    const sw = page.getByTestId("sandwich");
    await sw.waitFor();
    assert.equal(Number(await page.getByTestId("sandwich-total").getAttribute("data-total")), total);
    assert.equal(Number(await page.getByTestId("sandwich-callers").getAttribute("data-total")), total);
    assert.equal(Number(await page.getByTestId("sandwich-callees").getAttribute("data-total")), total);
    // Independently: planted samples in the range whose stack holds the function.
    const planted = plantedSamples(env("E2E_PERF"));
    const start = exactHeatmap(planted, 50).startSecond;
    const inRange = planted.filter((s) => s.comm !== "swapper" && s.us - start * 1e6 >= 2_400_000 && s.us - start * 1e6 < 2_480_000);
    assert.equal(total, inRange.filter((s) => s.stack.some((f) => f === "GCTaskThread::run" || f.startsWith("GCTaskThread::run("))).length);
    await sw.scrollIntoViewIfNeeded();
    await screenshot(page, "sandwich", false);
    await page.getByTestId("sandwich-close").click();
    await page.waitForFunction(() => !new URL(location.href).searchParams.has("sw"));
  });

  test("download menu: svg, pprof, speedscope and json of the selection, each totalling it", async () => {
    await page.goto(`${URL_}/p/${PROFILE}?start=2.4&end=2.48`);
    const f = await flameState(page);
    const total = Number(f.total);
    const svg = await download(page, "svg");
    assert.match(svg.name, /\.svg$/);
    assert.match(svg.data.toString("utf8"), /^<\?xml[\s\S]*<svg[\s\S]*<\/svg>\s*$/);
    const pp = await download(page, "pprof");
    assert.deepEqual([...pp.data.subarray(0, 2)], [0x1f, 0x8b], "pprof is gzipped");
    const ss = JSON.parse((await download(page, "speedscope")).data.toString("utf8"));
    assert.match(ss.$schema, /speedscope/);
    assert.equal(
      ss.profiles.reduce((a, p) => a + p.weights.reduce((x, y) => x + y, 0), 0),
      total,
      "speedscope weights total the flame graph",
    );
    const js = JSON.parse((await download(page, "json")).data.toString("utf8"));
    assert.equal(js.name, "all");
    assert.equal(js.value, total);
    console.log(`# downloads of [2.40, 2.48): svg ${svg.data.length} B, pprof ${pp.data.length} B, speedscope and json total ${total}`);
  });


  test("fleet: a host against the rest of the fleet, label against label, a function filter and downloads", async () => {
    const hostsS = fleetHosts();
    const busy = (h) => hostsS.find((x) => x.host === h).samples.filter((s) => s.comm !== "swapper");
    const all = hostsS.flatMap((x) => x.samples);
    const first = Math.floor(Math.min(...all.map((s) => s.us)) / 1e6);
    const last = Math.floor(Math.max(...all.map((s) => s.us)) / 1e6) + 1;
    await page.goto(`${URL_}/fleet?app=fleet&from=${first}&to=${last}&norm=0`); // raw counts: each side's own total
    await fleetReady(page);
    const diffDone = () =>
      page.waitForFunction(() => {
        const c = document.querySelector("[data-testid=flamegraph]");
        return c?.dataset.diff === "1" && c.dataset.totalB !== undefined && !document.querySelector(".flame-box").classList.contains("stale");
      });
    // One click from the host strip: the canary against the rest.
    await page.locator("[data-testid=host-strip] li[data-host=fleet-c] [data-testid=host-compare]").click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get("chost") === "fleet-c");
    await diffDone();
    let f = await flameState(page);
    assert.equal(Number(f.totalB), busy("fleet-c").length, "B: the canary host");
    assert.equal(Number(f.totalA), busy("fleet-a").length + busy("fleet-b").length, "A: the rest of the fleet");
    assert.ok((await page.locator("[data-testid=diff-by-self] tbody tr").count()) > 0);
    await screenshot(page, "fleet-host-vs-fleet");
    // Label against label: env=canary (A) against env=prod (B).
    await page.getByTestId("fleet-compare").selectOption("labels");
    await page.getByTestId("fleet-compare-a").fill("env=canary");
    await page.getByTestId("fleet-compare-b").fill("env=prod");
    await page.getByTestId("fleet-compare-b").press("Enter");
    await page.waitForFunction(() => new URL(location.href).searchParams.get("lb") === "env=prod");
    await page.waitForFunction((n) => Number(document.querySelector("[data-testid=flamegraph]")?.dataset.totalA) === n, busy("fleet-c").length);
    await diffDone();
    f = await flameState(page);
    assert.equal(Number(f.totalB), busy("fleet-a").length + busy("fleet-b").length, "B: env=prod");
    // The permalink keeps the comparison.
    await page.reload();
    await diffDone();
    assert.deepEqual([(await flameState(page)).totalA, (await flameState(page)).totalB], [f.totalA, f.totalB]);
    await page.getByTestId("fleet-compare").selectOption("");
    await page.waitForFunction(() => !document.querySelector("[data-testid=flamegraph]")?.dataset.diff);
    // A function filter: the fleet heatmap counts only the samples with a matching frame.
    await page.getByTestId("filter-function").fill("GCTaskThread::run");
    await page.getByTestId("filter-function").press("Enter");
    await page.waitForFunction(() => new URL(location.href).searchParams.get("fn") === "GCTaskThread::run");
    await fleetReady(page);
    const gc = ["fleet-a", "fleet-b", "fleet-c"].flatMap(busy).filter((s) => [s.comm, ...s.stack].some((fr) => /GCTaskThread::run/.test(fr))).length;
    assert.equal((await heatmapData(page)).total, gc, "filtered fleet heatmap vs planted.perf");
    assert.equal(Number((await flameState(page)).total), gc, "the window's merged flame graph under the filter");
    // Downloads of the merged flame graph.
    const ss = JSON.parse((await download(page, "speedscope")).data.toString("utf8"));
    assert.equal(ss.profiles.reduce((a, p) => a + p.weights.reduce((x, y) => x + y, 0), 0), gc);
    const svg = await download(page, "svg");
    assert.match(svg.data.toString("utf8"), /<svg[\s\S]*<\/svg>/);
    console.log(`# fleet: fleet-c ${busy("fleet-c").length} vs the rest ${busy("fleet-a").length + busy("fleet-b").length}; GCTaskThread::run in ${gc} samples; speedscope and svg downloads`);
    await page.getByTestId("filter-function").press("Escape");
    await page.waitForFunction(() => !new URL(location.href).searchParams.has("fn"));
  });


  test("fleet: the 7 d and 30 d windows; the same window a day earlier, as a differential flame graph asked with the shifted window", async () => {
    // Three recordings of app shiftapp, stamped now, a day ago and a week
    // ago (a minute from the edges), each stored whole (a final batch).
    const now = Date.now() / 1000;
    const record = async (name, at, fns) => {
      let text = "";
      fns.forEach((fn, i) => (text += `app 1 [000] ${(at + i * 0.01).toFixed(6)}: 1 cpu-clock:\n\t    1 ${fn} (/bin/app)\n\t    2 main (/bin/app)\n\n`));
      await rpc(URL_, KEY, "fleetscope.v1.IngestService/AppendLive", { stream: `shift-${name}-${Date.now()}`, seq: 0, metadata: { app: "shiftapp", host: `s-${name}` }, chunk: Buffer.from(text).toString("base64"), final: true });
    };
    const times = (n, fn) => Array.from({ length: n }, () => fn);
    await record("now", now - 60, [...times(20, "f1"), ...times(30, "f2")]); // 50
    await record("day", now - 86400 - 60, times(30, "f1")); // 30
    await record("week", now - 7 * 86400 - 60, times(12, "f3")); // 12
    await page.goto(`${URL_}/fleet?app=shiftapp&norm=0`); // raw counts: each side's own total
    await fleetReady(page);
    assert.equal((await heatmapData(page)).total, 50, "the last hour: this minute's recording");
    // 7 d: this minute's and yesterday's.
    await page.getByTestId("preset-7d").click();
    await page.waitForFunction(() => {
      const q = new URL(location.href).searchParams;
      return Number(q.get("to")) - Number(q.get("from")) === 7 * 86400;
    });
    await fleetReady(page);
    assert.equal(await page.getByTestId("preset-7d").getAttribute("aria-pressed"), "true");
    assert.equal((await heatmapData(page)).total, 80);
    assert.equal(Number((await flameState(page)).total), 80, "the 7-day window's merged flame graph");
    // The same 7 days a day earlier: yesterday's and last week's (A) against the last 7 days (B).
    const asked = page.waitForRequest((r) => r.url().endsWith("/fleetscope.v1.CompareService/GetDiffFlameGraph"));
    await page.getByTestId("compare-shift-1d").click();
    const body = (await asked).postDataBuffer();
    await page.waitForFunction(() => {
      const c = document.querySelector("[data-testid=flamegraph]");
      return c?.dataset.diff === "1" && c.dataset.totalB !== undefined && !document.querySelector(".flame-box").classList.contains("stale");
    });
    const q = query(page);
    assert.deepEqual([q.get("cmp"), q.get("shift")], ["shift", "1d"]);
    const [from, to] = [Number(q.get("from")), Number(q.get("to"))];
    // The request, decoded from its protobuf bytes: both sides fleet selections of app shiftapp, A the window a day earlier, to the nanosecond.
    const side = (n) => fields(fields(body)[n][0])[2][0]; // GetDiffFlameGraphRequest.a/b → DiffSide.fleet
    const when = (sel, n) => {
      const t = fields(fields(sel)[n][0]);
      return [Number(t[1]?.[0] ?? 0), Number(t[2]?.[0] ?? 0)];
    };
    const [a, b] = [side(1), side(2)];
    assert.equal(Buffer.from(fields(a)[1][0]).toString(), "shiftapp");
    assert.deepEqual([when(b, 4), when(b, 5)], [[from, 0], [to, 0]], "B: the window");
    assert.deepEqual([when(a, 4), when(a, 5)], [[from - 86400, 0], [to - 86400, 0]], "A: the window a day earlier");
    const f = await flameState(page);
    assert.deepEqual([Number(f.totalA), Number(f.totalB)], [42, 80]);
    assert.equal(await page.getByTestId("fleet-compare").inputValue(), "shift:1d");
    assert.equal(await page.getByTestId("compare-shift-1d").getAttribute("aria-pressed"), "true");
    assert.match(await page.getByTestId("diff-sides").textContent(), /^A: the same window a day earlier, 42 samples · B: this window, 80 samples/);
    // the largest changes by self: f2 grew (0 → 30), f3 shrank (12 → 0)
    const rows = await page.locator("[data-testid=diff-by-self] tbody tr").allTextContents();
    assert.ok(rows.some((r) => r.includes("f2")) && rows.some((r) => r.includes("f3")), rows.join(" | "));
    await screenshot(page, "fleet-7d-vs-a-day-earlier");
    // A week earlier, chosen in the comparison switch: last week's recording only.
    await page.getByTestId("fleet-compare").selectOption("shift:1w");
    await page.waitForFunction(() => new URL(location.href).searchParams.get("shift") === "1w");
    await page.waitForFunction(() => Number(document.querySelector("[data-testid=flamegraph]")?.dataset.totalA) === 12);
    assert.equal(await page.getByTestId("compare-shift-1w").getAttribute("aria-pressed"), "true");
    // The permalink keeps it.
    await page.reload();
    await page.waitForFunction(() => document.querySelector("[data-testid=flamegraph]")?.dataset.diff === "1" && Number(document.querySelector("[data-testid=flamegraph]").dataset.totalA) === 12);
    // Pressed again: no comparison.
    await page.getByTestId("compare-shift-1w").click();
    await page.waitForFunction(() => !document.querySelector("[data-testid=flamegraph]")?.dataset.diff && !new URL(location.href).searchParams.has("cmp"));
    // 30 d: all three, in columns of 44 min (2,592 s rounded up to whole minutes).
    await page.getByTestId("preset-30d").click();
    await page.waitForFunction(() => {
      const q = new URL(location.href).searchParams;
      return Number(q.get("to")) - Number(q.get("from")) === 30 * 86400;
    });
    await fleetReady(page);
    const d = await heatmapData(page);
    assert.deepEqual([d.total, d.secondsPerColumn], [92, 2640]);
    assert.ok(d.cols <= 1000, `${d.cols} columns`);
    assert.equal(Number((await flameState(page)).total), 92, "the 30-day window's merged flame graph (hour and day rollups)");
  });

  test("spans: request latency from uprobes; slower than p95 re-colours the heatmap as the CLI counts it; a band; slow vs rest", async () => {
    await page.goto(`${URL_}/p/${env("E2E_SPANS")}`);
    await page.getByTestId("spans").waitFor();
    assert.equal(await page.getByTestId("spans-summary").getAttribute("data-spans"), "2202");
    // The corpus README's latency, within 2%.
    for (const [p, want] of [["p50", 686], ["p90", 3857], ["p95", 4002], ["p99", 4159]]) {
      const got = Number(await page.getByTestId(`spans-${p}`).getAttribute("data-micros"));
      assert.ok(Math.abs(got - want) <= 0.02 * want, `${p} ${got} µs, the recording's ${want} µs`);
    }
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
    const all = await heatmapData(page);
    await page.getByTestId("spans-slow").click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get("spans") === "slower:p95");
    const slow = Number(env("E2E_SPANS_SLOW"));
    await page.waitForFunction((n) => Number(document.querySelector("[data-testid=heatmap]")?.dataset.total) === n, slow);
    assert.equal(Number((await flameState(page)).total), slow, "the whole profile's flame graph under the condition, as the CLI counts it from the file");
    await screenshot(page, "spans-slow");
    // A band dragged across the histogram: fewer samples, heatmap = flame graph.
    await page.getByTestId("span-histogram").scrollIntoViewIfNeeded();
    const bars = page.locator("[data-testid=span-histogram] .span-bar");
    const n = await bars.count();
    const a = await bars.nth(Math.floor(n / 4)).boundingBox();
    const b = await bars.nth(Math.floor(n / 2)).boundingBox();
    await page.mouse.move(a.x + a.width / 2, a.y + a.height - 2);
    await page.mouse.down();
    await page.mouse.move(b.x + b.width / 2, b.y + b.height - 2, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(() => /^slower:\d+ns,faster:\d+ns$/.test(new URL(location.href).searchParams.get("spans") ?? ""));
    await page.waitForFunction(() => !document.querySelector(".flame-box").classList.contains("stale"));
    const band = await heatmapData(page);
    assert.ok(band.total < all.total, `the band keeps ${band.total} of ${all.total} samples`);
    assert.equal(Number((await flameState(page)).total), band.total);
    // Slow requests against the rest, as a differential flame graph.
    await page.getByTestId("spans-all").click();
    await page.waitForFunction(() => !new URL(location.href).searchParams.has("spans"));
    await page.getByTestId("spans-diff").click();
    await page.waitForFunction(() => document.querySelector("[data-testid=flamegraph]")?.dataset.diff === "1" && !document.querySelector(".flame-box").classList.contains("stale"));
    const f = await flameState(page);
    assert.equal(Number(f.totalB), slow, "B: the samples in requests slower than p95");
    assert.ok(Number(f.totalA) > 0);
    assert.equal(await page.getByTestId("compare").inputValue(), "spans");
    console.log(`# spans: 2202 requests, p95 within 2%; slower than p95: ${slow} samples (heatmap = flame = CLI); band ${band.total}; slow vs rest ${f.totalB} vs ${f.totalA}`);
    await screenshot(page, "spans-slow-vs-rest");
  });


  test("fleet: share the fleet view; the link opens without a key with the fleet's heatmap and flame graph, is listed, and stops when revoked", async () => {
    const hostsS = fleetHosts();
    const all = hostsS.flatMap((x) => x.samples);
    const first = Math.floor(Math.min(...all.map((s) => s.us)) / 1e6);
    const last = Math.floor(Math.max(...all.map((s) => s.us)) / 1e6) + 1;
    const prod = hostsS.filter((x) => x.host !== "fleet-c");
    const owner = await newContext();
    const visitor = await newContext();
    try {
      await owner.addInitScript((k) => sessionStorage.setItem("fleetscope.apiKey", k), ADMIN_KEY);
      const o = watch(await owner.newPage());
      await o.goto(`${URL_}/fleet?app=fleet&from=${first}&to=${last}&label=env=prod`);
      await fleetReady(o);
      const ownerHeat = await heatmapData(o);
      assert.deepEqual(ownerHeat.cells, wallColumns(prod, first, ownerHeat.cols), "the owner's view: the prod hosts");
      await o.getByTestId("share-open").click();
      await o.getByTestId("share-create").click();
      const url = await o.getByTestId("share-url").inputValue();
      assert.match(url, new RegExp(`^${URL_}/s/fss_[a-z0-9]+$`));
      const row = o.locator("[data-testid=share-links] tbody tr");
      await row.first().waitFor();
      assert.match(await row.first().textContent(), /fleet fleet/);
      const linkId = await row.first().getAttribute("data-link-id");
      // A fresh browser, no key: the same heatmap and merged flame graph.
      const v = watch(await visitor.newPage());
      await v.goto(url);
      const f = await flameState(v);
      await v.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
      const heat = await heatmapData(v);
      assert.deepEqual(heat.cells, ownerHeat.cells, "the shared fleet heatmap is the owner's, cell for cell");
      assert.equal(Number(f.total), wallCount(prod, first * 1e6, last * 1e6), "the merged flame graph of the prod hosts, as their files count");
      assert.equal(await v.getByTestId("api-key").count(), 0, "no sign-in");
      assert.doesNotMatch(await v.locator("body").textContent(), /fleet-a|fleet-b|env=prod/, "the hosts and labels stay hidden");
      await screenshot(v, "fleet-shared");
      // Revoked: the link stops at once.
      await o.locator(`[data-testid=share-links] tbody tr[data-link-id="${linkId}"] [data-testid=share-revoke]`).click();
      await o.locator(`[data-testid=share-links] tbody tr[data-link-id="${linkId}"][data-state=revoked]`).waitFor();
      await v.reload();
      await v.getByTestId("link-gone").waitFor();
    } finally {
      await owner.close();
      await visitor.close();
    }
  });


  test("fleet: live — batches appended while the page follows now appear without a reload; a selection pauses the sliding", async () => {
    // Perf script text stamped with the wall clock, as agent --live sends it.
    // n samples 10 ms apart from t0 (epoch seconds; default: 2 s ago).
    const batch = (n, t0 = Date.now() / 1000 - 2) => {
      let text = "";
      for (let i = 0; i < n; i++) text += `app 1 [000] ${(t0 + i * 0.01).toFixed(6)}: 1 cpu-clock:\n\t    1 main (/bin/app)\n\t    2 f${i % 3} (/bin/app)\n\n`;
      return Buffer.from(text).toString("base64");
    };
    const stream = `e2e-${Date.now()}`;
    const append = (seq, n, t0, final = false) =>
      rpc(URL_, KEY, "fleetscope.v1.IngestService/AppendLive", { stream, seq, metadata: { app: "liveapp", host: "live-1" }, chunk: batch(n, t0), final });
    await append(0, 30);
    await page.goto(`${URL_}/fleet?app=liveapp&live=1`);
    await fleetReady(page);
    assert.equal(await page.getByTestId("fleet-live").getAttribute("data-state"), "following");
    await page.waitForFunction(() => Number(document.querySelector("[data-testid=heatmap]")?.dataset.total) === 30);
    const url0 = page.url();
    // A second batch: the heatmap counts it without a reload (the waits are
    // for what the page shows, up to the suite's deadline, not a duration).
    await append(1, 40, Date.now() / 1000 - 1.5);
    await page.waitForFunction(() => Number(document.querySelector("[data-testid=heatmap]")?.dataset.total) === 70);
    await page.waitForFunction((u) => location.href !== u, url0); // the window slid
    // One stream of two batches (stored a segment profile each) is one live stream, not two profiles.
    await page.waitForFunction(() => document.querySelector("[data-testid=fleet-profiles]")?.textContent === "1 live stream (2 batches)");
    await page.waitForFunction(() => document.querySelector("[data-testid=flame-accounting]")?.textContent === "merged from 1 live stream (2 batches)");
    assert.equal(query(page).get("live"), "1");
    await screenshot(page, "fleet-live");
    // A selection pauses the sliding; its flame graph counts what arrives in it.
    // Each slide asks for the next heatmap and keeps the last on screen until
    // it comes: a drag made meanwhile is on the one shown, and must not be
    // dropped. Hold the heatmap's answers back to drag in that moment.
    const heatRoute = "**/fleetscope.v1.FleetService/GetFleetHeatmap";
    let release, held;
    const released = new Promise((r) => (release = r));
    const holding = new Promise((r) => (held = r));
    await page.route(heatRoute, async (r) => {
      held();
      await released;
      await r.continue().catch(() => {}); // a newer slide's request may have replaced it
    });
    await holding;
    assert.ok(await page.locator(".heatmap-box.stale").count(), "the last heatmap stays, dimmed, while the next loads");
    const d = await heatmapData(page);
    const lastCol = d.cols - 1;
    const back = Math.ceil(20 / d.secondsPerColumn) - 1; // the last 20 s (a live view's 3 minutes are 1-s columns)
    await drag(page, [lastCol - back, 0], [lastCol, 49]);
    await page.waitForFunction(() => document.querySelector("[data-testid=fleet-live]")?.dataset.state === "paused");
    const sel = query(page); // the columns' seconds, of the heatmap on screen
    const spc = d.secondsPerColumn;
    assert.deepEqual([sel.get("start"), sel.get("end")], [String(d.startSecond + (lastCol - back) * spc), String(d.startSecond + (lastCol + 1) * spc)]);
    release();
    await page.unroute(heatRoute);
    const before = Number((await flameState(page)).total);
    // The last batch, stamped in the middle of the selected range (whatever
    // time has passed since the drag): the recording is stored whole.
    await append(2, 10, (Number(sel.get("start")) + Number(sel.get("end"))) / 2 - 0.05, true);
    await page.waitForFunction((n) => Number(document.querySelector("[data-testid=flamegraph]")?.dataset.total) === n, before + 10);
    await page.getByTestId("clear-selection").click();
    await page.waitForFunction(() => document.querySelector("[data-testid=fleet-live]")?.dataset.state === "following");
    await page.waitForFunction(() => Number(document.querySelector("[data-testid=heatmap]")?.dataset.total) === 80);
    await page.getByTestId("fleet-live").click();
    await page.waitForFunction(() => !new URL(location.href).searchParams.has("live"));
  });

  test("remember me, a rejected stored key, and sign-out", async () => {
    await page.getByTestId("signout").click();
    await page.getByTestId("api-key").waitFor();
    assert.deepEqual(await page.evaluate(() => [sessionStorage.getItem("fleetscope.apiKey"), localStorage.getItem("fleetscope.apiKey")]), [null, null]);
    await signIn(page, KEY, true);
    await page.getByTestId("search").waitFor();
    assert.equal(await page.evaluate(() => localStorage.getItem("fleetscope.apiKey")), KEY);
    // A new tab of the same browser profile is signed in through localStorage.
    const p2 = watch(await ctx.newPage());
    await p2.goto(`${URL_}/p/${PROFILE}`);
    await p2.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
    await p2.close();
    await page.getByTestId("signout").click();
    assert.equal(await page.evaluate(() => localStorage.getItem("fleetscope.apiKey")), null);

    // A key preset by a test (or revoked since) that the server rejects.
    const c = await newContext();
    try {
      await c.addInitScript(() => sessionStorage.setItem("fleetscope.apiKey", "fsk_revoked"));
      const p3 = watch(await c.newPage());
      await p3.goto(`${URL_}/`);
      await p3.getByTestId("signin-error").filter({ hasText: "did not accept" }).waitFor();
    } finally {
      await c.close();
    }
  });

  test("the flame graph benchmark page is built and served apart from the app", async () => {
    const p = watch(await ctx.newPage());
    try {
      await p.goto(`${URL_}/_bench/flame.html?nodes=2000&seed=3`);
      await p.waitForFunction(() => document.querySelector("[data-testid=bench-result]")?.dataset.done === "1");
      assert.equal(await p.getByTestId("bench-result").getAttribute("data-nodes"), "2000");
      assert.equal(Number(await p.getByTestId("flamegraph").getAttribute("data-nodes")), 2000);
    } finally {
      await p.close();
    }
    // Every script the app's page loads is free of the benchmark page.
    const html = await (await fetch(`${URL_}/`)).text();
    const scripts = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+\.js)"/g)].map((m) => m[1]);
    assert.ok(scripts.length > 0, "index.html loads scripts");
    for (const s of scripts) {
      const js = await (await fetch(`${URL_}${s}`)).text();
      assert.ok(js.includes("data-testid") && !js.includes("bench-result"), `${s} holds the benchmark page`);
    }
  });

  test("the browser runs without playwright-core's disabled features lost (Chromium reads the last --disable-features)", async () => {
    const p = await ctx.newPage();
    await p.goto("chrome://version");
    const line = await p.locator("#command_line").textContent();
    await p.close();
    const lists = [...line.matchAll(/--disable-features=(\S*)/g)].map((m) => m[1].split(","));
    assert.ok(lists.length >= 1, line);
    const last = lists.at(-1);
    for (const f of [...lists.flat(), ...playwrightDisabledFeatures]) assert.ok(last.includes(f), `${f} is disabled by an earlier switch only: update lib.mjs's list (${line})`);
  });

  test("no script errors on any page", () => {
    assert.deepEqual(consoleErrors, []);
  });
});
