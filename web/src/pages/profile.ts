// One profile (/p/ID?...): the header, the heatmap, the flame graph of the
// selected range and the top-functions table, composed from the panels in
// src/panels. This page owns the view state (src/viewstate.ts: what the URL,
// a permalink, holds) and the requests: a panel reports what the user did,
// the page records it in the view and the URL, asks the server what it
// needs, and hands the answers to the panels. Answers to requests that a
// newer one has replaced are dropped.

import { getFlameGraph, problem, query, type Problem } from "../api";
import { h, replace } from "../dom";
import { exactSearch, findPath, layout, pathOf, type Layout } from "../flame/model";
import type { WireFlameGraph } from "../flame/wire";
import { formatTime } from "../format";
import { FlameGraphFormat, type GetHeatmapResponse } from "../gen/fleetscope/v1/query_pb";
import type { Profile } from "../gen/fleetscope/v1/profile_pb";
import type { Heatmap } from "../heatmap/model";
import { FlamePanel } from "../panels/flame";
import { HeaderPanel } from "../panels/header";
import { HeatmapPanel } from "../panels/heatmap";
import { TopPanel } from "../panels/top";
import { perf } from "../perf";
import { takeHeatmap } from "../prefetch";
import { setQuery } from "../router";
import { chooseEvent, flameRequest, foldedFilename, heatmapRequest, Latest, permalink, readView, wholeProfile, writeView, type ViewState } from "../viewstate";
import type { Page } from "./page";
import { onUnauthenticated } from "./states";

function toHeatmap(r: GetHeatmapResponse): Heatmap {
  return {
    event: r.event,
    startSecond: Number(r.startSecond),
    secondsPerColumn: Math.max(Number(r.secondsPerColumn), 1), // 0 from a server older than the field
    rows: r.rows,
    columns: r.columns.map((c) => c.counts.map(Number)),
    maxCount: Number(r.maxCount),
    total: Number(r.total),
  };
}

function toLayout(r: WireFlameGraph): Layout {
  return layout(r.tree ?? { names: [], name: [], value: [], depth: [] });
}

export function profilePage(id: string, params: URLSearchParams): Page {
  let view = readView(params);
  const ctrl = new AbortController();
  const heatReq = new Latest();
  const flameReq = new Latest();
  let profile: Profile | null = null;
  let flameTotal: number | null = null; // the shown flame graph's total, once it has arrived

  /** update records a new view in the URL (without drawing anything). */
  const update = (next: ViewState) => {
    view = next;
    setQuery(writeView(view));
  };

  const header = new HeaderPanel();
  const heat = new HeatmapPanel({
    rows: view.rows,
    idle: view.idle,
    onSelect: (range) => {
      update({ ...view, range }); // the zoomed frame stays if the new range has it
      showSelection();
      void loadFlame();
    },
    onClear: () => {
      heat.clearSelection();
      selectWhole();
    },
    onEvent: (event) => {
      update(chooseEvent(view, event, profile?.defaultEvent ?? ""));
      void loadHeatmap();
      void loadFlame();
    },
    onRows: (rows) => {
      update({ ...view, rows });
      void loadHeatmap();
    },
    onIdle: (idle) => {
      update({ ...view, idle });
      void loadHeatmap();
      void loadFlame();
    },
    onDrawn: (ms) => perf.heatmapDrawn(ms),
  });
  const flame = new FlamePanel({
    search: view.search,
    orient: view.orient,
    onSearch: (search) => {
      update({ ...view, search });
      redrawFlame();
    },
    onOrient: (orient) => {
      update({ ...view, orient });
      redrawFlame();
    },
    onZoom: (i) => zoomTo(i),
    link: () => permalink(location.origin, id, view),
    onDownloadFolded: () => downloadFolded(),
    onRendered: (ms) => perf.flameRendered(ms),
  });
  const top = new TopPanel({
    onPick: (name) => {
      const search = exactSearch(name);
      flame.setSearch(search);
      update({ ...view, search });
      redrawFlame();
    },
  });
  const el = h("div", { class: "page profile-page" }, header.el, heat.el, flame.el, top.el);

  // ---- loading -----------------------------------------------------------------
  async function loadProfile() {
    try {
      const res = await query.getProfile({ id }, { signal: ctrl.signal });
      profile = res.profile!;
      header.show(profile);
      heat.setEvents(profile.events, profile.defaultEvent, view.event);
      document.title = `${profile.app}${profile.host ? ` on ${profile.host}` : ""} · fleetscope`;
      if (!profile.timed) heat.untimed();
    } catch (err) {
      if (ctrl.signal.aborted) return;
      const p = problem(err);
      if (p.kind === "notfound") notFound();
      else failed(p, (p) => header.error(p, () => void loadProfile()));
    }
  }

  /** failed reports a failed request: the sign-in page for a rejected key,
   * else show(p) in the panel that asked. */
  function failed(p: Problem, show: (p: Problem) => void) {
    if (p.kind === "unauthenticated") onUnauthenticated();
    else show(p);
  }

  function notFound() {
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
  }

  async function loadHeatmap() {
    const current = heatReq.begin();
    heat.loading();
    try {
      const res = (await takeHeatmap(id, view.event, view.rows, view.idle)) ?? (await query.getHeatmap(heatmapRequest(id, view), { signal: ctrl.signal }));
      if (!current()) return;
      perf.mark("heatmap-response");
      heat.show(toHeatmap(res), view.range, view.idle);
      showSelection();
    } catch (err) {
      if (ctrl.signal.aborted || !current()) return;
      const p = problem(err);
      if (p.kind === "invalid" && profile && !profile.timed) return; // said already
      if (p.kind === "notfound") return; // the profile request says it
      failed(p, (p) => heat.error(p, () => void loadHeatmap()));
    }
  }

  async function loadFlame() {
    const current = flameReq.begin();
    flameTotal = null;
    flame.loading();
    showSelection();
    const t0 = performance.now();
    try {
      const res = await getFlameGraph(flameRequest(id, view, FlameGraphFormat.TREE), ctrl.signal);
      if (!current()) return;
      const t1 = performance.now();
      const l = toLayout(res);
      const t2 = performance.now();
      flameTotal = Number(res.total);
      let zoom = view.frame ? findPath(l, view.frame) : 0;
      if (zoom < 0) {
        zoom = 0;
        update({ ...view, frame: "" });
      }
      const r = view.range;
      flame.show(
        l,
        zoom,
        view.search,
        view.orient,
        r ? `${formatTime(r.start)} – ${formatTime(r.end)}` : "whole profile",
        r
          ? `Nothing ran (that is not idle) in ${formatTime(r.start)} – ${formatTime(r.end)}. Choose other cells in the heatmap${view.idle ? "" : ", or include idle samples"}.`
          : "This profile has no samples for this event.",
      );
      showTop();
      perf.flameLoaded({ nodes: l.n, fetchMs: t1 - t0, decodeMs: t2 - t1, renderMs: Number(flame.canvas.dataset.renderMs) });
      showSelection();
    } catch (err) {
      if (ctrl.signal.aborted || !current()) return;
      const p = problem(err);
      if (p.kind === "notfound") return;
      if (p.kind === "invalid" && view.range) {
        flame.badRange(p, () => {
          heat.clearSelection();
          selectWhole();
        });
        return;
      }
      failed(p, (p) => flame.error(p, () => void loadFlame()));
    }
  }

  async function downloadFolded() {
    try {
      const res = await getFlameGraph(flameRequest(id, view, FlameGraphFormat.FOLDED), ctrl.signal);
      const a = h("a", { href: URL.createObjectURL(new Blob([res.folded], { type: "text/plain" })), download: foldedFilename(profile?.app, view) });
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    } catch (err) {
      failed(problem(err), (p) => flame.error(p, () => void loadFlame()));
    }
  }

  // ---- changes -------------------------------------------------------------------
  function selectWhole() {
    update(wholeProfile(view));
    void loadFlame();
  }

  function zoomTo(i: number) {
    const l = flame.layout;
    if (!l) return;
    update({ ...view, frame: i > 0 ? pathOf(l, i) : "" });
    flame.zoom(i, view.search, view.orient);
    showTop();
  }

  function redrawFlame() {
    flame.redraw(view.search, view.orient);
    showTop();
  }

  function showTop() {
    const l = flame.layout;
    if (l) top.show(l, flame.zoomed, view.search.trim() !== "");
  }

  function showSelection() {
    heat.showSelection(view.range, flameTotal);
  }

  const onKey = (e: KeyboardEvent) => {
    if (e.key === "/" && !(e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement || e.target instanceof HTMLSelectElement)) {
      e.preventDefault();
      flame.focusSearch();
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
  showSelection();

  return {
    el,
    title: "Profile",
    destroy() {
      ctrl.abort();
      heat.destroy();
      flame.destroy();
      window.removeEventListener("keydown", onKey);
    },
  };
}
