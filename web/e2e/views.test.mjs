// Browser tests of what the panels draw, measured on the page: the
// differential flame graph's labels against their frames (contrast from
// the drawn pixels), empty and failed states that must not pass for data,
// and the panels sharing the heatmap's time axis (geometry). Run by
// web/scripts/test.sh after e2e.test.mjs, with the same server and
// profiles (the same E2E_* variables).

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { artifactsDir, env, launch, plantedSamples, rpc } from "./lib.mjs";

const URL_ = env("E2E_URL");
const KEY = env("E2E_KEY");
const PROFILE = env("E2E_PROFILE");
const ART = artifactsDir();
const VIEWPORT = { width: 1400, height: 1000 };

let browser;
let page;
const errors = [];

before(async () => {
  browser = await launch();
  const ctx = await browser.newContext({ viewport: VIEWPORT, timezoneId: "UTC", locale: "en-US" });
  ctx.setDefaultTimeout(15_000);
  await ctx.addInitScript((key) => sessionStorage.setItem("fleetscope.apiKey", key), KEY);
  page = await ctx.newPage();
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
});

after(async () => {
  await browser?.close();
});

async function screenshot(name) {
  await page.screenshot({ path: join(ART, `views-${name}.png`), fullPage: true });
}

const query = () => new URL(page.url()).searchParams;

/** cellPoint is the page coordinate of heatmap cell (col, row)'s centre. */
async function cellPoint(col, row) {
  const c = page.getByTestId("heatmap");
  await c.scrollIntoViewIfNeeded();
  const box = await c.boundingBox();
  const ds = await c.evaluate((el) => ({ ...el.dataset }));
  return { x: box.x + Number(ds.plotLeft) + (col + 0.5) * Number(ds.cellWidth), y: box.y + Number(ds.plotTop) + (Number(ds.rows) - 1 - row + 0.5) * Number(ds.cellHeight) };
}

async function drag(from, to) {
  const a = await cellPoint(...from);
  const b = await cellPoint(...to);
  await page.mouse.move(a.x, a.y);
  await page.mouse.down();
  await page.mouse.move(b.x, b.y, { steps: 6 });
  await page.mouse.up();
}

/** diffDrawn waits for a differential flame graph's answer on screen. */
async function diffDrawn() {
  await page.waitForFunction(() => {
    const c = document.querySelector("[data-testid=flamegraph]");
    return c?.dataset.diff === "1" && c.dataset.totalB !== undefined && !document.querySelector(".flame-box").classList.contains("stale");
  });
  await page.mouse.move(0, 0); // no hover outline
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

/** labelContrasts reads the flame graph canvas: for each frame in view
 * wide enough to carry a label (a run of one colour at least 22 CSS px
 * long on the line one pixel under its row's top), the WCAG contrast
 * between its colour and the label pixel that differs most from it. */
async function labelContrasts() {
  return page.getByTestId("flamegraph").evaluate((c) => {
    const lum = ([r, g, b]) => {
      const l = [r, g, b].map((v) => ((v /= 255) <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
      return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2];
    };
    const ratio = (a, b) => {
      const [x, y] = [lum(a), lum(b)];
      return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
    };
    const dpr = devicePixelRatio;
    const rowH = Number(c.dataset.rowHeight);
    const scroll = Number(c.dataset.scrollTop);
    const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    const at = (x, y) => {
      const i = 4 * (y * c.width + x);
      return [px[i], px[i + 1], px[i + 2], px[i + 3]];
    };
    const out = [];
    for (let k = 0; (k + 1) * rowH - scroll <= c.clientHeight; k++) {
      const top = k * rowH - scroll;
      if (top < 0) continue;
      const line = Math.floor((top + 1) * dpr);
      let x = 0;
      while (x < c.width) {
        const bg = at(x, line);
        let end = x + 1;
        while (end < c.width && at(end, line).every((v, i) => v === bg[i])) end++;
        if (bg[3] === 255 && end - x >= 22 * dpr) {
          let best = 1;
          let differing = 0;
          for (let y = Math.floor((top + 2) * dpr); y < Math.floor((top + rowH - 2) * dpr); y++) {
            for (let xx = x + 1; xx < end - 1; xx++) {
              const p = at(xx, y);
              if (p.every((v, i) => v === bg[i])) continue;
              differing++;
              best = Math.max(best, ratio(bg, p));
            }
          }
          if (differing > 4) out.push({ row: k, x: x / dpr, width: (end - x) / dpr, bg: bg.slice(0, 3), contrast: +best.toFixed(2) });
        }
        x = end;
      }
    }
    return out;
  });
}

describe("views", () => {
  test("differential flame graph: every label keeps WCAG AA contrast with its frame; selection vs rest is normalized by default and says so", async () => {
    await page.goto(`${URL_}/p/${PROFILE}`);
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
    await drag([2, 20], [2, 23]); // the GC stripe: a few dozen samples against thousands
    await page.waitForFunction(() => new URL(location.href).searchParams.get("start") === "2.4");
    await page.getByTestId("compare").selectOption("rest");
    await diffDrawn();
    // The mode is on screen, and it is normalized without being asked.
    const mode = page.getByTestId("diff-mode");
    assert.equal(await mode.getAttribute("data-mode"), "auto-normalized");
    const apart = /^Normalized \(automatic: totals (\d+)× apart\)/.exec(await mode.textContent());
    assert.ok(apart && Number(apart[1]) > 2, await mode.textContent());
    assert.ok(await page.getByTestId("diff-normalize").isChecked());
    assert.equal(query().get("norm"), null);
    const shades = new Set();
    for (const norm of ["auto", "raw"]) {
      if (norm === "raw") {
        await page.getByTestId("diff-normalize").uncheck();
        await page.waitForFunction(() => document.querySelector("[data-testid=diff-mode]")?.dataset.mode === "raw");
        await diffDrawn();
      }
      await screenshot(`diff-${norm}`);
      const labels = await labelContrasts();
      assert.ok(labels.length >= 5, `${labels.length} labelled frames in view`);
      const low = labels.filter((l) => l.contrast < 4.5);
      assert.deepEqual(low.slice(0, 5), [], `${low.length} of ${labels.length} labels under 4.5:1 (${norm})`);
      for (const l of labels) shades.add(l.bg.join(","));
    }
    // Raw counts of a small selection against the rest: the deepest blue is drawn, and its label is legible too.
    assert.ok([...shades].some((s) => s === "33,102,172"), `the deepest blue among ${[...shades].join(" ")}`);
    await page.getByTestId("diff-normalize-auto").click();
    await page.waitForFunction(() => !new URL(location.href).searchParams.has("norm"));
  });

  test("fleet: an unknown app, and an app's empty window, say no profiles match, with the selection and where the app's profiles are", async () => {
    const visible = (testid) => page.evaluate((t) => (document.querySelector(`[data-testid=${t}]`)?.getClientRects().length ?? 0) > 0, testid);
    await page.goto(`${URL_}/fleet?app=nosuchapp`);
    await page.getByTestId("no-match").waitFor();
    await page.waitForFunction(() => !/Looking for/.test(document.querySelector("[data-testid=no-match-nearest]")?.textContent ?? "Looking for"));
    await screenshot("fleet-unknown-app");
    assert.match(await page.getByTestId("no-match-selection").textContent(), /app nosuchapp, in \d{4}-\d\d-\d\d \d\d:\d\d:\d\d – .*\(1 h 00 min\)/);
    assert.match(await page.getByTestId("no-match-nearest").textContent(), /No profile of app nosuchapp is stored/);
    const summary = await page.getByTestId("accounting").textContent();
    assert.match(summary, /^No profiles match app nosuchapp/);
    assert.doesNotMatch(summary, /✓|0 samples of no event/);
    // No panels of zeros: no heatmap, legend or timeline on screen, nowhere a "0 – 0" scale.
    for (const t of ["heatmap", "timeline", "flamegraph"]) assert.equal(await visible(t), false, `${t} shown`);
    assert.equal(await page.evaluate(() => (document.querySelector(".heatmap .legend")?.getClientRects().length ?? 0) > 0), false);
    assert.doesNotMatch(await page.locator("main, body").first().innerText(), /\b0 – 0\b/);

    // App fleet exists, but not in the last hour (its profiles are days old).
    const hosts = env("E2E_FLEET").split(" ").map((x) => plantedSamples(x.split("=")[1]));
    const lastUs = Math.max(...hosts.flat().map((s) => s.us));
    await page.goto(`${URL_}/fleet?app=fleet`);
    await page.getByTestId("no-match").waitFor();
    const nearest = page.getByTestId("no-match-nearest");
    await page.waitForFunction(() => document.querySelector("[data-testid=no-match-nearest]")?.dataset.last);
    await screenshot("fleet-empty-window");
    const lastNs = BigInt(await nearest.getAttribute("data-last"));
    assert.ok(Math.abs(Number(lastNs / 1000n) - lastUs) < 1e6, `the latest profile ends at ${lastNs} ns, its last sample at ${lastUs} µs`);
    assert.match(await nearest.textContent(), /^fleet's latest profile: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d – .* on fleet-\w/);
    assert.equal(await visible("heatmap"), false);
    // One click to the data: the heatmap is back, with samples.
    await page.getByTestId("no-match-latest").click();
    await page.waitForFunction(() => Number(document.querySelector("[data-testid=heatmap]")?.dataset.total) > 0);
    assert.equal(await visible("heatmap"), true);
    assert.equal(await visible("no-match"), false);
  });

  test("a bad function regex: the last filter's numbers go (flame graph total, top functions, cell sums), on a profile and in the fleet view", async () => {
    const shown = (sel) => page.evaluate((s) => [...document.querySelectorAll(s)].some((el) => el.getClientRects().length > 0), sel);
    const filter = async (re) => {
      await page.getByTestId("filter-function").fill(re);
      await page.getByTestId("filter-function").press("Enter");
    };
    await page.goto(`${URL_}/p/${PROFILE}`);
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
    await drag([2, 20], [2, 23]);
    await filter("GCTaskThread::run");
    await page.waitForFunction(() => new URL(location.href).searchParams.get("fn") === "GCTaskThread::run");
    await page.waitForFunction(() => Number(document.querySelector("[data-testid=flame-total]")?.dataset.total) > 0 && !document.querySelector(".flame-box.stale"));
    await page.getByTestId("top-functions").waitFor();
    assert.match(await page.getByTestId("flame-total").textContent(), /^[\d,]+ samples/);
    assert.ok(await page.getByTestId("selection-count").count());
    await filter("(");
    await page.locator(".flame-box [data-testid=error]").waitFor();
    await page.locator(".heatmap-box [data-testid=error]").waitFor();
    await screenshot("bad-regex-profile");
    assert.equal((await page.getByTestId("flame-total").textContent()).trim(), "", "the flame graph's total is the last filter's");
    assert.equal(await shown("[data-testid=top-functions]"), false, "the top-functions table is the last filter's");
    assert.equal(await shown("[data-testid=selection-count]"), false, "the cells' sum is the last heatmap's");
    assert.doesNotMatch(await page.getByTestId("selection").innerText(), /samples/);

    const hosts = env("E2E_FLEET").split(" ").map((x) => plantedSamples(x.split("=")[1]));
    const all = hosts.flat().map((s) => s.us);
    const [first, last] = [Math.floor(Math.min(...all) / 1e6), Math.floor(Math.max(...all) / 1e6) + 1];
    await page.goto(`${URL_}/fleet?app=fleet&from=${first}&to=${last}&fn=GCTaskThread::run`);
    await page.waitForFunction(() => Number(document.querySelector("[data-testid=flame-total]")?.dataset.total) > 0 && !document.querySelector(".flame-box.stale"));
    await page.getByTestId("top-functions").waitFor();
    await filter("(");
    await page.locator(".flame-box [data-testid=error]").waitFor();
    await page.locator(".heatmap-box [data-testid=error]").waitFor();
    await page.waitForFunction(() => document.querySelector(".hosts-box [data-testid=error]") && document.querySelector(".timeline-box [data-testid=error]"));
    await screenshot("bad-regex-fleet");
    assert.equal((await page.getByTestId("flame-total").textContent()).trim(), "");
    assert.equal(await shown("[data-testid=top-functions]"), false);
    assert.doesNotMatch(await page.getByTestId("accounting").innerText(), /samples of/);
    assert.doesNotMatch(await page.locator(".hosts-panel .panel-head").innerText(), /\d samples/);
    assert.doesNotMatch(await page.getByTestId("timeline-summary").innerText(), /\d samples/);
  });

  test("one time axis: the thread view's strips, the host strip and the timeline draw each column at the heatmap's pixels", async () => {
    /** heatEdges: the client x of the heatmap's first column's left edge and its last column's right edge. */
    const heatEdges = () =>
      page.getByTestId("heatmap").evaluate((c) => {
        const r = c.getBoundingClientRect();
        const [left, w, cols, scroll] = [c.dataset.plotLeft, c.dataset.cellWidth, c.dataset.cols, c.dataset.scrollLeft].map(Number);
        return { left: r.left + left, right: r.left + left + cols * w, cols, cellW: w, visLeft: r.left + left + scroll, visRight: r.right };
      });
    /** painted: the client x range of the pixels drawn on a canvas's row y
     * (CSS px); purple: only the timeline's purple (not its axis labels). */
    const painted = (loc, y, purple = false) =>
      loc.evaluate((c, [y, purple]) => {
        const dpr = devicePixelRatio;
        const px = c.getContext("2d").getImageData(0, Math.floor(y * dpr), c.width, 1).data;
        let [lo, hi] = [-1, -1];
        const hit = (i) => px[i + 3] > 0 && (!purple || (px[i + 1] < px[i] && px[i] < px[i + 2]));
        for (let x = 0; x < c.width; x++) if (hit(4 * x)) (lo < 0 && (lo = x), (hi = x));
        const r = c.getBoundingClientRect();
        return lo < 0 ? null : { left: r.left + lo / dpr, right: r.left + (hi + 1) / dpr };
      }, [y, purple]);
    const near = (got, want, what) => assert.ok(got && Math.abs(got.left - want.left) <= 1.5 && Math.abs(got.right - want.right) <= 1.5, `${what}: ${JSON.stringify(got)} vs the heatmap's ${JSON.stringify(want)}`);

    // A profile's thread view.
    await page.goto(`${URL_}/p/${PROFILE}?axis=thread`);
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells && document.querySelector(".series-strip"));
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    await page.getByTestId("series").scrollIntoViewIfNeeded();
    const heat = await heatEdges();
    const strips = page.locator(".series-strip");
    assert.ok((await strips.count()) > 1);
    for (let i = 0; i < Math.min(await strips.count(), 5); i++) near(await painted(strips.nth(i), 5), heat, `thread strip ${i}`);
    await screenshot("axis-threads");

    // The fleet: timeline above the heatmap, host strip below.
    const hosts = env("E2E_FLEET").split(" ").map((x) => plantedSamples(x.split("=")[1]));
    const all = hosts.flat().map((s) => s.us);
    const [first, last] = [Math.floor(Math.min(...all) / 1e6), Math.floor(Math.max(...all) / 1e6) + 1];
    for (const [from, to] of [[first, last], [first - 600, last + 600]]) {
      await page.goto(`${URL_}/fleet?app=fleet&from=${from}&to=${to}`);
      await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells && document.querySelector("[data-testid=host-strip-canvas]") && document.querySelector("[data-testid=timeline]")?.dataset.totals);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      const fh = await heatEdges();
      const want = { left: Math.max(fh.left, fh.visLeft), right: Math.min(fh.right, fh.visRight) }; // (a long window scrolls sideways)
      // the host strip's cells (row 0's middle), the timeline's area just above its baseline
      near(await painted(page.getByTestId("host-strip-canvas"), 10), want, `host strip, window ${to - from} s`);
      const tl = page.getByTestId("timeline");
      const base = await tl.evaluate((c) => c.clientHeight - 22 - 2);
      if (from === first) near(await painted(tl, base, true), want, `timeline, window ${to - from} s`); // (every column has samples)
      // and a column in between: the timeline's column edges are the heatmap's
      const tcol = await tl.evaluate((c) => ({ x0: Number(c.dataset.x0) + c.getBoundingClientRect().left, w: Number(c.dataset.colWidth) }));
      assert.ok(Math.abs(tcol.x0 - fh.left) <= 0.5 && Math.abs(tcol.w - fh.cellW) <= 0.01, `timeline columns ${JSON.stringify(tcol)} vs ${JSON.stringify(fh)}`);
      await screenshot(`axis-fleet-${to - from}`);
    }
  });

  test("a comparison: the pinned baseline is outlined on the heatmap; the largest-changes tables keep their own heights", async () => {
    await page.goto(`${URL_}/p/${PROFILE}`);
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
    await drag([2, 20], [2, 23]);
    await page.waitForFunction(() => new URL(location.href).searchParams.get("start") === "2.4");
    await page.getByTestId("compare").selectOption("rest");
    await diffDrawn();
    // Rows of either table are as tall as their text, not stretched to the other table's height.
    const heights = await page.evaluate(() => ["diff-by-self", "diff-by-total"].map((t) => [...document.querySelectorAll(`[data-testid=${t}] tbody tr`)].map((tr) => tr.getBoundingClientRect().height)));
    const flat = heights.flat();
    assert.ok(heights[0].length > 0 && heights[1].length > 0);
    assert.ok(Math.max(...flat) <= 1.25 * Math.min(...flat), `row heights ${JSON.stringify(heights)}`);
    // Pin the stripe, select second 5: the stripe is outlined in the baseline's colour.
    await page.getByTestId("pin-baseline").click();
    await page.waitForFunction(() => new URL(location.href).searchParams.get("cmp") === "base");
    await drag([5, 0], [5, 49]);
    await page.waitForFunction(() => new URL(location.href).searchParams.get("start") === "5");
    await diffDrawn();
    await page.evaluate(() => document.activeElement?.blur());
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    await screenshot("baseline");
    const px = await page.getByTestId("heatmap").evaluate((c) => {
      const [left, top, w, hh, rows] = [c.dataset.plotLeft, c.dataset.plotTop, c.dataset.cellWidth, c.dataset.cellHeight, c.dataset.rows].map(Number);
      const dpr = devicePixelRatio;
      const at = (x, y) => [...c.getContext("2d").getImageData(Math.floor(x * dpr), Math.floor(y * dpr), 1, 1).data];
      const y = top + (rows - 1 - 21.5) * hh; // row 21's middle, inside the stripe's rows 20-23
      return { left: at(left + 2 * w + 1.5, y), right: at(left + 3 * w - 1.5, y), outside: at(left + 2 * w + 1.5, top + (rows - 1 - 30) * hh + hh / 2) };
    });
    const orange = [230, 126, 0];
    const is = (p) => orange.every((v, k) => Math.abs(v - p[k]) <= 3);
    assert.ok(is(px.left) && is(px.right), `the stripe's edges: ${JSON.stringify(px)}`);
    assert.ok(!is(px.outside), "a cell outside the baseline is not outlined");
    await page.getByTestId("compare").selectOption("");
    await page.waitForFunction(() => !document.querySelector("[data-testid=heatmap]")?.dataset.baselineStart);
  });

  test("the flame graph's search row keeps its height when a search starts (no layout shift)", async () => {
    await page.goto(`${URL_}/p/${PROFILE}`);
    await page.waitForFunction(() => document.querySelector("[data-testid=flamegraph]")?.dataset.total > 0);
    // (the graph's top within its panel: the header above grows when the profile's facts come)
    const geo = () =>
      page.evaluate(() => ({
        head: document.querySelector(".flame-panel .panel-head").getBoundingClientRect().height,
        graph: document.querySelector("[data-testid=flamegraph]").getBoundingClientRect().top - document.querySelector(".flame-panel").getBoundingClientRect().top,
      }));
    const before = await geo();
    await page.getByTestId("flame-search").fill("GCTaskThread");
    await page.getByTestId("flame-search").press("Enter");
    await page.waitForFunction(() => document.querySelector("[data-testid=matched]")?.dataset.samples);
    const after_ = await geo();
    assert.deepEqual(after_, before, "the head's height and the graph's top");
    await page.getByTestId("flame-search").press("Escape");
  });

  test("labels read in name order wherever a profile's are listed", async () => {
    // A live stream's one batch, final: a stored profile with labels given version first.
    const stream = `labels-${Date.now()}`;
    const text = Array.from({ length: 20 }, (_, i) => `app 1 [000] ${(Date.now() / 1000 - 5 + i * 0.01).toFixed(6)}: 1 cpu-clock:\n\t    1 main (/bin/app)\n\t    2 f (/bin/app)\n\n`).join("");
    await rpc(URL_, KEY, "fleetscope.v1.IngestService/AppendLive", { stream, seq: 0, metadata: { app: "labelsapp", host: "l-1", labels: { version: "1", zone: "b", env: "prod" } }, chunk: Buffer.from(text).toString("base64"), final: true });
    let id;
    for (let i = 0; i < 50 && !id; i++) {
      id = (await rpc(URL_, KEY, "fleetscope.v1.QueryService/SearchProfiles", { app: "labelsapp" })).profiles?.[0]?.id;
      if (!id) await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(id, "the stream's profile is stored");
    // The server's map has no order: each load may list them differently, unless sorted.
    for (let i = 0; i < 6; i++) {
      await page.goto(`${URL_}/p/${id}`);
      await page.locator(".profile-head .chip").first().waitFor();
      assert.deepEqual(await page.locator(".profile-head .title-row .chip").allTextContents(), ["env=prod", "version=1", "zone=b"]);
    }
    await page.goto(`${URL_}/?app=labelsapp`);
    await page.locator("[data-testid=results] .chip").first().waitFor();
    assert.deepEqual(await page.locator("[data-testid=results] .chip").allTextContents(), ["env=prod", "version=1", "zone=b"]);
  });

  test("GetSpans is asked only of a profile with entry/return probes", async () => {
    const asked = [];
    const onReq = (r) => /QueryService\/GetSpans$/.test(r.url()) && asked.push(r.url());
    page.on("request", onReq);
    await page.goto(`${URL_}/p/${PROFILE}`);
    await page.waitForFunction(() => document.querySelector(".facts") && document.querySelector("[data-testid=flamegraph]")?.dataset.total > 0);
    await page.waitForTimeout(800);
    assert.equal(asked.length, 0, "a profile without probes");
    await page.goto(`${URL_}/p/${env("E2E_SPANS")}`);
    await page.getByTestId("span-histogram").waitFor();
    page.off("request", onReq);
    assert.equal(asked.length, 1, "a profile with probes");
  });

  test("'profile ↗' opens the host's profile at its top; a shared page hides the size and id, as the docs say", async () => {
    const hosts = env("E2E_FLEET").split(" ").map((x) => plantedSamples(x.split("=")[1]));
    const all = hosts.flat().map((s) => s.us);
    const [first, last] = [Math.floor(Math.min(...all) / 1e6), Math.floor(Math.max(...all) / 1e6) + 1];
    await page.setViewportSize({ width: 1400, height: 600 }); // a laptop's window: the host strip is far down the page
    await page.goto(`${URL_}/fleet?app=fleet&from=${first}&to=${last}`);
    await page.waitForFunction(() => document.querySelector("[data-testid=host-strip]"));
    await page.locator("[data-testid=host-strip] li[data-host=fleet-a] [data-testid=host-profile]").click();
    await page.waitForURL("**/p/**");
    await page.waitForFunction(() => document.querySelector("[data-testid=heatmap]")?.heatmapCells);
    const top = await page.evaluate(() => ({ y: scrollY, heat: document.querySelector(".heat-panel").getBoundingClientRect().top }));
    assert.equal(top.y, 0, "the new page is at its top");
    assert.ok(top.heat >= 0, `the heatmap's panel starts on screen (${top.heat})`);
    await page.setViewportSize(VIEWPORT);
    // A share link to this profile, opened: no size, no id.
    const id = new URL(page.url()).pathname.split("/").pop();
    const link = await rpc(URL_, env("E2E_ADMIN_KEY"), "fleetscope.v1.AdminService/CreateShareLink", { profileId: id, ttlSeconds: "3600" });
    await page.goto(link.url);
    await page.getByTestId("shared-badge").waitFor();
    const facts = await page.locator(".facts dt").allTextContents();
    assert.ok(facts.includes("duration") && !facts.includes("size") && !facts.includes("id"), `facts ${facts}`);
  });

  test("date fields read 24-hour times, as the rest of the page, whole in their boxes", async () => {
    const from = Date.UTC(2026, 10, 18, 16, 10, 42) / 1000; // an afternoon (the browser runs in UTC)
    await page.goto(`${URL_}/fleet?app=fleet&from=${from}&to=${from + 600}`);
    await page.getByTestId("fleet-from").waitFor();
    await page.waitForFunction(() => document.querySelector("[data-testid=fleet-from]").value);
    const fields = await page.evaluate(() =>
      ["fleet-from", "fleet-to"].map((t) => {
        const el = document.querySelector(`[data-testid=${t}]`);
        return { value: el.value, fits: el.scrollWidth <= el.clientWidth };
      }),
    );
    assert.deepEqual(fields, [
      { value: "2026-11-18 16:10:42", fits: true },
      { value: "2026-11-18 16:20:42", fits: true },
    ]);
    // Typed in 24-hour time, the window is that time.
    await page.getByTestId("fleet-to").fill("2026-11-18 17:00:00");
    await page.getByTestId("fleet-apply").click();
    await page.waitForFunction((to) => new URL(location.href).searchParams.get("to") === to, String(Date.UTC(2026, 10, 18, 17) / 1000));
    // The search page's custom range too.
    await page.goto(`${URL_}/?since=2026-11-18T16:10:00.000Z&until=2026-11-18T17:00:00.000Z`);
    await page.getByTestId("since").waitFor();
    assert.deepEqual(await page.evaluate(() => ["since", "until"].map((t) => document.querySelector(`[data-testid=${t}]`).value)), ["2026-11-18 16:10", "2026-11-18 17:00"]);
  });

  test("a live view opens on the last 3 minutes: the stream is in view, not a sliver at the right edge", async () => {
    const stream = `live-window-${Date.now()}`;
    const t0 = Date.now() / 1000 - 20;
    let text = "";
    for (let i = 0; i < 200; i++) text += `app 1 [000] ${(t0 + i * 0.1).toFixed(6)}: 1 cpu-clock:\n\t    1 main (/bin/app)\n\t    2 f${i % 3} (/bin/app)\n\n`;
    await rpc(URL_, KEY, "fleetscope.v1.IngestService/AppendLive", { stream, seq: 0, metadata: { app: "livewin", host: "lw-1" }, chunk: Buffer.from(text).toString("base64"), final: false });
    await page.goto(`${URL_}/fleet?app=livewin&live=1`);
    await page.waitForFunction(() => Number(document.querySelector("[data-testid=heatmap]")?.dataset.total) > 0);
    const q = query();
    assert.equal(Number(q.get("to")) - Number(q.get("from")), 180, "a 3-minute window");
    // The whole window on screen (no sideways scroll), the stream's 20 s a visible span of it.
    const g = await page.getByTestId("heatmap").evaluate((c) => {
      const [cols, w, scroll] = [c.dataset.cols, c.dataset.cellWidth, c.dataset.scrollLeft].map(Number);
      const cells = c.heatmapCells();
      const busy = cells.map((col) => col.some((n) => n > 0));
      return { cols, width: cols * w, scroll, visible: c.clientWidth, busyPx: busy.filter(Boolean).length * w };
    });
    assert.equal(g.scroll, 0);
    assert.ok(g.width <= g.visible, `${g.width} px of columns in ${g.visible}`);
    assert.ok(g.busyPx >= 60, `the stream spans ${g.busyPx} px`);
    await screenshot("live-window");
    await rpc(URL_, KEY, "fleetscope.v1.IngestService/AppendLive", { stream, seq: 1, metadata: { app: "livewin", host: "lw-1" }, chunk: "", final: true }).catch(() => {});
  });

  test("no script errors", () => {
    assert.deepEqual(errors, []);
  });
});
