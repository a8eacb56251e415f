// One profile: its facts, the sub-second heatmap, the selected range and its
// flame graph with the top-functions table. Everything a colleague needs to
// see the same view is in the URL (a permalink):
//   /p/ID?event=E&rows=50&idle=1&start=2.4&end=2.48&frame=java;start_thread&search=GC&orient=flame
// start and end are seconds relative to the profile's start second, exact
// decimals (as the CLI's --start/--end); frame is the zoomed frame's path.

import { timestampDate } from "@bufbuild/protobuf/wkt";
import { getFlameGraph, problem, query } from "../api";
import { h, replace, debounce } from "../dom";
import { layout, findPath, pathOf, ancestors, topFunctions, sortFunctions, type Layout, type SortKey, type FunctionStat } from "../flame/model";
import { FlameView, type Orientation } from "../flame/view";
import { formatCount, formatDate, formatDuration, formatPercent, formatSeconds, formatTime, parseSeconds } from "../format";
import { FlameGraphFormat, type GetHeatmapResponse } from "../gen/fleetscope/v1/query_pb";
import type { WireFlameGraph } from "../flame/wire";
import type { Profile } from "../gen/fleetscope/v1/profile_pb";
import { cellsOfRange, type Heatmap, type Range } from "../heatmap/model";
import { HeatmapView } from "../heatmap/view";
import { setQuery } from "../router";
import type { Page } from "./page";
import { emptyState, errorState, loadingState, onUnauthenticated } from "./states";
import { perf } from "../perf";
import { takeHeatmap } from "../prefetch";

const ROW_OPTIONS = [50, 100, 25];

interface ViewState {
  event: string;
  rows: number;
  idle: boolean;
  range: Range | null;
  frame: string;
  search: string;
  orient: Orientation;
}

export function readView(p: URLSearchParams): ViewState {
  const rows = Number(p.get("rows"));
  const start = parseSeconds(p.get("start"));
  const end = parseSeconds(p.get("end"));
  return {
    event: p.get("event") ?? "",
    rows: Number.isInteger(rows) && rows >= 1 && rows <= 1000 ? rows : 50,
    idle: p.get("idle") === "1",
    range: start !== null && end !== null ? { start, end } : null,
    frame: p.get("frame") ?? "",
    search: p.get("search") ?? "",
    orient: p.get("orient") === "flame" ? "flame" : "icicle",
  };
}

export function writeView(v: ViewState): URLSearchParams {
  const p = new URLSearchParams();
  if (v.event) p.set("event", v.event);
  if (v.rows !== 50) p.set("rows", String(v.rows));
  if (v.idle) p.set("idle", "1");
  if (v.range) {
    p.set("start", formatSeconds(v.range.start));
    p.set("end", formatSeconds(v.range.end));
  }
  if (v.frame) p.set("frame", v.frame);
  if (v.search) p.set("search", v.search);
  if (v.orient !== "icicle") p.set("orient", v.orient);
  return p;
}

function toHeatmap(r: GetHeatmapResponse): Heatmap {
  return {
    event: r.event,
    startSecond: Number(r.startSecond),
    rows: r.rows,
    columns: r.columns.map((c) => c.counts.map(Number)),
    maxCount: Number(r.maxCount),
    total: Number(r.total),
  };
}

function toLayout(r: WireFlameGraph): Layout {
  return layout(r.tree ?? { names: [], name: [], value: [], depth: [] });
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

export function profilePage(id: string, params: URLSearchParams): Page {
  const view = readView(params);
  const ctrl = new AbortController();
  let profile: Profile | null = null;
  let heatmap: Heatmap | null = null;
  let flameSeq = 0;
  let heatSeq = 0;
  let flameTotal: number | null = null;
  let topSort: { key: SortKey; asc: boolean } = { key: "self", asc: false };
  let topLimit = 50;

  const sync = () => setQuery(writeView(view));

  // ---- skeleton ----------------------------------------------------------------
  const header = h("header", { class: "profile-head" }, loadingState("profile"));
  const eventSel = h("select", { "data-testid": "event", "aria-label": "Event", disabled: true });
  const rowsSel = h(
    "select",
    { "data-testid": "rows", "aria-label": "Rows per second" },
    ROW_OPTIONS.map((r) => h("option", { value: String(r) }, `${r} rows (${formatDuration(1e9 / r)} cells)`)),
  );
  if (!ROW_OPTIONS.includes(view.rows)) rowsSel.appendChild(h("option", { value: String(view.rows) }, `${view.rows} rows`));
  rowsSel.value = String(view.rows);
  const idleBox = h("input", { type: "checkbox", "data-testid": "idle", checked: view.idle });
  const tableBtn = h("button", { type: "button", class: "ghost", "aria-pressed": "false", "data-testid": "heatmap-table-toggle" }, "Table");
  const heatView = new HeatmapView({
    onSelect: (r) => {
      view.range = r; // the zoomed frame stays if the new range has it
      sync();
      renderSelection();
      loadFlame();
    },
    onDrawn: (ms) => perf.heatmapDrawn(ms),
  });
  const heatBox = h("div", { class: "heatmap-box" }, loadingState("heatmap", 440));
  const heatHint = h("span", { class: "muted small" }, "each column is one second; each cell a slice of it. Click a cell or drag across cells to choose a range; shift-click extends.");
  const rowsLabel = h("label", null, "Rows ", rowsSel);
  const selectionBar = h("div", { class: "selection-bar", "data-testid": "selection", "aria-live": "polite" });

  const searchBox = h("input", {
    type: "search",
    class: "flame-search",
    placeholder: "Search functions (text or /regex/)",
    "aria-label": "Search functions",
    "data-testid": "flame-search",
    value: view.search,
    spellcheck: "false",
  });
  const matched = h("span", { class: "matched", "data-testid": "matched", "aria-live": "polite" });
  const orientBtns = (["icicle", "flame"] as Orientation[]).map((o) =>
    h(
      "button",
      {
        type: "button",
        class: "seg",
        "data-testid": `orient-${o}`,
        "aria-pressed": String(view.orient === o),
        title: o === "icicle" ? "Root at the top" : "Root at the bottom",
        onclick: () => {
          view.orient = o;
          orientBtns.forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.testid === `orient-${o}`)));
          sync();
          drawFlame();
        },
      },
      o === "icicle" ? "Icicle" : "Flame",
    ),
  );
  const copyBtn = h("button", { type: "button", class: "primary", "data-testid": "copy-link", onclick: () => copyLink() }, "Copy link");
  const foldedBtn = h("button", { type: "button", class: "ghost", "data-testid": "download-folded", title: "Download this range as folded stacks", onclick: () => downloadFolded() }, "Folded ↓");
  const breadcrumb = h("nav", { class: "breadcrumb", "aria-label": "Zoomed frame", "data-testid": "breadcrumb" });
  const resetBtn = h("button", { type: "button", class: "ghost", "data-testid": "reset-zoom", disabled: true, onclick: () => zoomTo(0) }, "Reset zoom");
  const flameTotalEl = h("span", { class: "flame-total", "data-testid": "flame-total" });
  const flameView = new FlameView({ onZoom: (i) => zoomTo(i), onRendered: (ms) => perf.flameRendered(ms) });
  const flameBox = h("div", { class: "flame-box" }, loadingState("flame graph", 200));
  const topBox = h("section", { class: "panel top-panel", "aria-labelledby": "top-title" });

  const el = h(
    "div",
    { class: "page profile-page" },
    header,
    h(
      "section",
      { class: "panel heat-panel", "aria-labelledby": "heat-title" },
      h(
        "div",
        { class: "panel-head" },
        h("h2", { id: "heat-title" }, "Heatmap"),
        heatHint,
        h("div", { class: "controls" }, h("label", null, "Event ", eventSel), rowsLabel, h("label", { class: "check" }, idleBox, " Include idle"), tableBtn),
      ),
      heatBox,
      selectionBar,
    ),
    h(
      "section",
      { class: "panel flame-panel", "aria-labelledby": "flame-title" },
      h(
        "div",
        { class: "panel-head" },
        h("h2", { id: "flame-title" }, "Flame graph"),
        flameTotalEl,
        h("div", { class: "controls" }, h("div", { class: "search-wrap" }, searchBox, matched), h("div", { class: "segmented", role: "group", "aria-label": "Orientation" }, orientBtns), foldedBtn, copyBtn),
      ),
      h("div", { class: "crumb-row" }, breadcrumb, resetBtn),
      flameBox,
    ),
    topBox,
  );

  // ---- header ------------------------------------------------------------------
  function renderHeader(p: Profile) {
    const start = p.startTime ? timestampDate(p.startTime) : null;
    const fact = (k: string, v: string | Node, title?: string) => h("div", { class: "fact", title }, h("dt", null, k), h("dd", null, v));
    replace(
      header,
      h("a", { href: "/", class: "back" }, "← Profiles"),
      h(
        "div",
        { class: "title-row" },
        h("h1", null, p.app, p.host ? h("span", { class: "host" }, ` on ${p.host}`) : null),
        Object.entries(p.labels).map(([k, v]) => h("span", { class: "chip" }, `${k}=${v}`)),
      ),
      h(
        "dl",
        { class: "facts" },
        fact("start", start ? formatDate(start) : "—", start ? `${start.toISOString()} (${p.timeSource})` : undefined),
        fact("duration", p.timed ? formatDuration(Number(p.durationNanos)) : "untimed", p.timed ? undefined : "no per-sample timestamps"),
        fact("samples", formatCount(p.samples)),
        fact("events", p.events.map((e) => `${e.name} (${formatCount(e.samples)})`).join(", ") || "—"),
        fact("format", p.format),
        fact("size", `${(Number(p.sizeBytes) / 1e6).toFixed(1)} MB`),
        fact("id", h("code", null, p.id)),
      ),
    );
    replace(
      eventSel,
      p.events.map((e) => h("option", { value: e.name }, `${e.name}${e.name === p.defaultEvent ? " (default)" : ""}`)),
    );
    eventSel.value = view.event || p.defaultEvent;
    eventSel.disabled = p.events.length < 2;
    document.title = `${p.app}${p.host ? ` on ${p.host}` : ""} · fleetscope`;
  }

  // ---- loading -----------------------------------------------------------------
  async function loadProfile() {
    try {
      const res = await query.getProfile({ id }, { signal: ctrl.signal });
      profile = res.profile!;
      renderHeader(profile);
      if (!profile.timed) {
        replace(heatBox, emptyState("No heatmap", "This profile has no per-sample timestamps, so it has no heatmap: the flame graph below is the whole profile.", "no-heatmap"));
        for (const e of [heatHint, rowsLabel, tableBtn, selectionBar]) e.hidden = true;
      }
    } catch (err) {
      if (ctrl.signal.aborted) return;
      fail(err, true);
    }
  }

  function fail(err: unknown, whole: boolean, box?: HTMLElement, retry?: () => void) {
    const p = problem(err);
    if (p.kind === "unauthenticated") return onUnauthenticated();
    if (whole && p.kind === "notfound") {
      ctrl.abort();
      replace(
        el,
        h(
          "div",
          { class: "state error-state", role: "alert", "data-testid": "not-found" },
          h("h2", null, "Profile not found"),
          h("p", null, `No profile ${id} in your tenant. The link may be mistyped, the profile deleted, or it may belong to another tenant (links work only within a tenant).`),
          h("a", { href: "/", class: "button primary" }, "Search profiles"),
        ),
      );
      return;
    }
    if (whole) {
      replace(header, errorState(p, () => void loadProfile()));
      return;
    }
    if (box) replace(box, errorState(p, retry));
  }

  async function loadHeatmap() {
    const seq = ++heatSeq;
    if (!heatmap) replace(heatBox, loadingState("heatmap", 440));
    else heatBox.classList.add("stale");
    try {
      const res =
        (await takeHeatmap(id, view.event, view.rows, view.idle)) ??
        (await query.getHeatmap({ profileId: id, event: view.event, rows: view.rows, includeIdle: view.idle }, { signal: ctrl.signal }));
      if (seq !== heatSeq) return;
      perf.mark("heatmap-response");
      heatmap = toHeatmap(res);
      heatBox.classList.remove("stale");
      if (heatView.el.parentElement !== heatBox) replace(heatBox, heatView.el);
      heatView.setSelection(view.range);
      heatView.setData(heatmap);
      if (heatmap.total === 0) {
        heatBox.appendChild(emptyState("No samples", view.idle ? "This event has no samples." : "Every sample of this event is idle. Tick “Include idle” to see them.", "no-samples-heatmap"));
      }
      heatView.scrollToSelection();
      renderSelection();
    } catch (err) {
      if (ctrl.signal.aborted || seq !== heatSeq) return;
      const p = problem(err);
      if (p.kind === "invalid" && profile && !profile.timed) return; // said already
      if (p.kind === "notfound") return; // the profile request says it
      fail(err, false, heatBox, () => void loadHeatmap());
    }
  }

  async function loadFlame() {
    const seq = ++flameSeq;
    flameTotal = null;
    flameBox.classList.add("stale");
    if (!flameView.current) replace(flameBox, loadingState("flame graph", 200));
    renderSelection();
    const t0 = performance.now();
    try {
      const res = await getFlameGraph(
        {
          profileId: id,
          event: view.event,
          startNanos: view.range ? BigInt(view.range.start) : undefined,
          endNanos: view.range ? BigInt(view.range.end) : undefined,
          includeIdle: view.idle,
          format: FlameGraphFormat.TREE,
        },
        ctrl.signal,
      );
      if (seq !== flameSeq) return;
      const t1 = performance.now();
      const l = toLayout(res);
      const t2 = performance.now();
      flameTotal = Number(res.total);
      flameBox.classList.remove("stale");
      let zoom = view.frame ? findPath(l, view.frame) : 0;
      if (zoom < 0) {
        zoom = 0;
        view.frame = "";
        sync();
      }
      if (l.total === 0) {
        flameView.set(l, 0, view.search, view.orient);
        replace(
          flameBox,
          emptyState(
            "No samples in this range",
            view.range
              ? `Nothing ran (that is not idle) in ${formatTime(view.range.start)} – ${formatTime(view.range.end)}. Choose other cells in the heatmap${view.idle ? "" : ", or include idle samples"}.`
              : "This profile has no samples for this event.",
            "no-samples",
          ),
          h("div", { hidden: true }, flameView.el),
        );
      } else {
        if (flameView.el.parentElement !== flameBox) replace(flameBox, flameView.el);
        flameView.set(l, zoom, view.search, view.orient);
      }
      perf.flameLoaded({ nodes: l.n, fetchMs: t1 - t0, decodeMs: t2 - t1, renderMs: Number(flameView.canvas.dataset.renderMs) });
      renderFlameChrome();
      renderSelection();
    } catch (err) {
      if (ctrl.signal.aborted || seq !== flameSeq) return;
      const p = problem(err);
      if (p.kind === "notfound") return;
      flameBox.classList.remove("stale");
      if (p.kind === "invalid" && view.range) {
        replace(
          flameBox,
          errorState(p, undefined, "Cannot show this range"),
          h("button", { type: "button", class: "ghost", onclick: () => { heatView.setSelection(null); selectWhole(); } }, "Show the whole profile"),
        );
        return;
      }
      fail(err, false, flameBox, () => void loadFlame());
    }
  }

  function selectWhole() {
    view.range = null;
    view.frame = "";
    sync();
    loadFlame();
  }

  // ---- selection, flame chrome, top table ----------------------------------------
  function renderSelection() {
    const r = view.range;
    if (!r) {
      replace(
        selectionBar,
        h("span", { class: "sel-label" }, "Whole profile"),
        h("span", { class: "muted" }, " — no range selected. Click a cell or drag from a start cell to an end cell."),
        flameTotal !== null ? h("span", { class: "sel-count" }, ` ${formatCount(flameTotal)} samples`) : null,
      );
      delete selectionBar.dataset.start;
      return;
    }
    const span = heatmap ? cellsOfRange(r, heatmap.rows, heatmap.columns.length) : null;
    const outside = heatmap !== null && span === null;
    const cellSum = heatmap && !outside ? heatView.selectedCount() : null;
    const cells = span ? span.last - span.first + 1 : 0;
    const agree = cellSum !== null && flameTotal !== null ? cellSum === flameTotal : null;
    selectionBar.dataset.start = formatSeconds(r.start);
    selectionBar.dataset.end = formatSeconds(r.end);
    replace(
      selectionBar,
      h("span", { class: "sel-label" }, "Range "),
      h("b", { "data-testid": "selection-range" }, `${formatTime(r.start)} – ${formatTime(r.end)}`),
      h("span", { class: "muted" }, ` (${formatDuration(r.end - r.start)}${cells ? `, ${cells} cell${cells === 1 ? "" : "s"}` : ""})`),
      cellSum !== null
        ? h("span", { class: "sel-count", "data-testid": "selection-count", "data-count": String(cellSum) }, ` · ${formatCount(cellSum)} samples in the cells`)
        : span && !span.aligned
          ? h("span", { class: "muted" }, " · not aligned to cells: the flame graph counts the exact range")
          : outside
            ? h("span", { class: "muted" }, ` · outside the profile (0 – ${heatmap!.columns.length} s)`)
            : null,
      agree === true ? h("span", { class: "agree", title: "The flame graph's total equals the selected cells' sum" }, " ✓ flame graph total matches") : null,
      agree === false ? h("span", { class: "disagree", role: "alert" }, ` ✗ flame graph total ${formatCount(flameTotal!)} differs`) : null,
      h("button", { type: "button", class: "ghost small", "data-testid": "clear-selection", onclick: () => { heatView.setSelection(null); selectWhole(); } }, "Clear"),
    );
  }

  function drawFlame() {
    const l = flameView.current;
    if (!l) return;
    flameView.set(l, l.n ? flameView.zoomed : 0, view.search, view.orient);
    renderFlameChrome();
  }

  function zoomTo(i: number) {
    const l = flameView.current;
    if (!l) return;
    view.frame = i > 0 ? pathOf(l, i) : "";
    sync();
    flameView.set(l, i, view.search, view.orient);
    renderFlameChrome();
  }

  function renderFlameChrome() {
    const l = flameView.current;
    if (!l) return;
    flameTotalEl.dataset.total = String(l.total);
    replace(flameTotalEl, h("b", null, formatCount(l.total)), ` samples · ${view.range ? `${formatTime(view.range.start)} – ${formatTime(view.range.end)}` : "whole profile"}`);
    const zoom = flameView.zoomed;
    const chain = l.n ? ancestors(l, zoom) : [];
    replace(
      breadcrumb,
      chain.map((i, k) =>
        k === chain.length - 1
          ? h("span", { class: "crumb current", "aria-current": "true", title: l.names[l.name[i]] }, l.names[l.name[i]])
          : [h("button", { type: "button", class: "crumb", title: l.names[l.name[i]], onclick: () => zoomTo(i) }, l.names[l.name[i]]), h("span", { class: "sep", "aria-hidden": "true" }, "›")],
      ),
    );
    resetBtn.disabled = zoom === 0;
    if (view.search.trim()) {
      const m = flameView.matched();
      matched.dataset.samples = String(m);
      matched.dataset.percent = l.total ? ((100 * m) / l.total).toFixed(2) : "0";
      matched.textContent = `Matched ${formatPercent(m, l.total)} · ${formatCount(m)} samples`;
      matched.hidden = false;
    } else {
      matched.hidden = true;
      delete matched.dataset.samples;
    }
    renderTop(l, zoom);
  }

  function renderTop(l: Layout, zoom: number) {
    const stats = sortFunctions(topFunctions(l, zoom), topSort.key, topSort.asc);
    const total = l.total;
    const searchRe = view.search.trim();
    const th = (key: SortKey, label: string, num: boolean) => {
      const active = topSort.key === key;
      return h(
        "th",
        { scope: "col", class: num ? "num" : undefined, "aria-sort": active ? (topSort.asc ? "ascending" : "descending") : "none" },
        h(
          "button",
          {
            type: "button",
            class: "sort",
            "data-sort": key,
            onclick: () => {
              topSort = { key, asc: active ? !topSort.asc : key === "name" };
              renderTop(l, zoom);
            },
          },
          label,
          h("span", { class: "sort-mark", "aria-hidden": "true" }, active ? (topSort.asc ? "▲" : "▼") : ""),
        ),
      );
    };
    const row = (s: FunctionStat) =>
      h(
        "tr",
        { "data-name": s.name },
        h(
          "td",
          { class: "fn" },
          h(
            "button",
            {
              type: "button",
              class: "linkish mono",
              title: `Search for ${s.name}`,
              onclick: () => {
                searchBox.value = `/^${escapeRegExp(s.name)}$/`;
                onSearch();
              },
            },
            s.name,
          ),
        ),
        h("td", { class: "num" }, formatCount(s.self)),
        h("td", { class: "num bar-cell" }, h("span", { class: "bar", style: `width:${total ? (100 * s.self) / total : 0}%` }), formatPercent(s.self, total)),
        h("td", { class: "num" }, formatCount(s.total)),
        h("td", { class: "num bar-cell" }, h("span", { class: "bar total", style: `width:${total ? (100 * s.total) / total : 0}%` }), formatPercent(s.total, total)),
      );
    replace(
      topBox,
      h(
        "div",
        { class: "panel-head" },
        h("h2", { id: "top-title" }, "Top functions"),
        h("span", { class: "muted small" }, zoom ? `under ${l.names[l.name[zoom]]}` : "in this range", searchRe ? " · click a name to search for it" : " · click a name to highlight it"),
      ),
      stats.length === 0
        ? h("p", { class: "muted" }, "No functions.")
        : h(
            "table",
            { class: "data-table top-table", "data-testid": "top-functions" },
            h("thead", null, h("tr", null, th("name", "Function", false), th("self", "Self", true), h("th", { class: "num", scope: "col" }, "Self %"), th("total", "Total", true), h("th", { class: "num", scope: "col" }, "Total %"))),
            h("tbody", null, stats.slice(0, topLimit).map(row)),
          ),
      stats.length > topLimit
        ? h(
            "button",
            {
              type: "button",
              class: "ghost",
              onclick: () => {
                topLimit = stats.length;
                renderTop(l, zoom);
              },
            },
            `Show all ${formatCount(stats.length)} functions`,
          )
        : null,
    );
  }

  const onSearch = () => {
    view.search = searchBox.value;
    sync();
    drawFlame();
  };
  searchBox.addEventListener("input", debounce(onSearch, 120));
  searchBox.addEventListener("keydown", (e) => {
    if (e.key === "Enter") onSearch();
    if (e.key === "Escape") {
      searchBox.value = "";
      onSearch();
    }
  });

  async function copyLink() {
    const url = `${location.origin}/p/${encodeURIComponent(id)}${writeView(view).toString() ? `?${writeView(view)}` : ""}`;
    copyBtn.dataset.link = url;
    let ok = false;
    try {
      await navigator.clipboard.writeText(url);
      ok = true;
    } catch {
      const ta = h("textarea", { class: "visually-hidden" }, url);
      document.body.appendChild(ta);
      ta.select();
      ok = document.execCommand("copy");
      ta.remove();
    }
    copyBtn.textContent = ok ? "Copied ✓" : "Copy failed";
    setTimeout(() => (copyBtn.textContent = "Copy link"), 1800);
  }

  async function downloadFolded() {
    foldedBtn.disabled = true;
    try {
      const res = await getFlameGraph(
        {
          profileId: id,
          event: view.event,
          startNanos: view.range ? BigInt(view.range.start) : undefined,
          endNanos: view.range ? BigInt(view.range.end) : undefined,
          includeIdle: view.idle,
          format: FlameGraphFormat.FOLDED,
        },
        ctrl.signal,
      );
      const a = h("a", {
        href: URL.createObjectURL(new Blob([res.folded], { type: "text/plain" })),
        download: `${profile?.app ?? "profile"}-${view.range ? `${formatSeconds(view.range.start)}-${formatSeconds(view.range.end)}` : "all"}.folded`,
      });
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    } catch (err) {
      fail(err, false, flameBox, () => void loadFlame());
    } finally {
      foldedBtn.disabled = false;
    }
  }

  // ---- controls ------------------------------------------------------------------
  eventSel.addEventListener("change", () => {
    view.event = eventSel.value === profile?.defaultEvent ? "" : eventSel.value;
    view.frame = "";
    sync();
    loadHeatmap();
    loadFlame();
  });
  rowsSel.addEventListener("change", () => {
    view.rows = Number(rowsSel.value);
    sync();
    loadHeatmap();
  });
  idleBox.addEventListener("change", () => {
    view.idle = idleBox.checked;
    sync();
    loadHeatmap();
    loadFlame();
  });
  tableBtn.addEventListener("click", () => {
    const on = tableBtn.getAttribute("aria-pressed") !== "true";
    tableBtn.setAttribute("aria-pressed", String(on));
    heatView.toggleTable(on);
  });
  const onKey = (e: KeyboardEvent) => {
    if (e.key === "/" && !(e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement || e.target instanceof HTMLSelectElement)) {
      e.preventDefault();
      searchBox.focus();
    }
  };
  window.addEventListener("keydown", onKey);

  // The heatmap and the profile's facts are asked for at once. The flame
  // graph of a selected range is cheap and comes along; the whole profile's
  // (no range) costs the server a pass over every sample, so it waits until
  // the heatmap is up, not to slow what the user looks at first.
  performance.mark("fleetscope:requests");
  const heatDone = loadHeatmap();
  void loadProfile();
  if (view.range) void loadFlame();
  else void heatDone.finally(() => !ctrl.signal.aborted && loadFlame());
  renderSelection();

  return {
    el,
    title: "Profile",
    destroy() {
      ctrl.abort();
      heatView.destroy();
      flameView.destroy();
      window.removeEventListener("keydown", onKey);
    },
  };
}
