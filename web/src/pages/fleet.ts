// The fleet view (/fleet?app=...&from=...&to=...): every profile of an app
// in wall-clock time. The selection bar (panels/fleetbar.ts) chooses the
// app, hosts, labels, window, event and idle; below it the accounting (how
// many profiles the answers count, which they left out and why), the
// timeline (samples per column; drag to zoom the window), the fleet heatmap
// (panels/heatmap.ts in wall-clock time: drag-select a range, zoom to it for
// finer columns), the host strip (click a host to narrow to it, or open its
// profile at the range) and the merged flame graph of the range (or of the
// whole window) with its top functions. The selected cells' sum is checked
// against the flame graph's total, as on the profile page. A filter bar
// keeps the samples with (or without) a function; the comparison switch
// draws a differential flame graph of the range: a host against the rest
// of the fleet, or label against label; the flame graph downloads as svg,
// pprof, speedscope or json. "Live" follows now: every second the window
// slides to end at the present (new columns come in on the right, the
// other panels follow); a selected range pauses the sliding, and its flame
// graph keeps counting what arrives in it; clearing the range resumes.
//
// The state lives in the URL (fleetstate.ts): a change of the selection
// (window, hosts, labels, event, idle, rows) is a new history entry and
// re-queries; a range, zoomed frame, search or orientation replaces the
// current entry. Answers to requests that a newer one replaced are dropped.
// The rules for changing the state, and the words said of the answers, are
// fleetstate.ts's pure functions; this page asks for the answers and hands
// them to the panels. The flame graph, top functions and largest changes
// are panels/graphview.ts, as on the profile page.

import { compare, fleet, getFleetFlameGraph, getFleetHeatmap, problem, query, rpcAsked } from "../api";
import { askDiff } from "../flame/diff";
import type { GetDiffFlameGraphResponse } from "../gen/fleetscope/v1/compare_pb";
import { FilterPanel } from "../panels/filter";
import { FleetComparePanel } from "../panels/fleetcompare";
import { h, replace } from "../dom";
import { layoutOf } from "../flame/wire";
import { formatWallRange } from "../format";
import {
  absRange,
  accountingWords,
  compared,
  compareHost,
  compareShift,
  diffNames,
  emptyHeatmapWords,
  eventBase,
  filterFunctions,
  flameRequest,
  fleetPath,
  fleetDiffSides,
  flameWaitsForHeatmap,
  flameWords,
  foldedFilename,
  heatmapRequest,
  hostProfile,
  hostsRequest,
  leftOutData,
  liveTick,
  liveStatus,
  matchesNothing,
  narrowToHost,
  profileLink,
  profilesWithout,
  rangeOrWindow,
  readFleet,
  relRange,
  selectionOf,
  selectionWords,
  shiftedRange,
  timelineRequest,
  timelineZoom,
  timestampOf,
  toggleLive,
  withCountedEvent,
  withWindow,
  writeFleet,
  zoomBack,
  zoomIn,
  zoomOut,
  type AbsRange,
  type Accounting,
  type FleetState,
  type ListedProfile,
} from "../fleetstate";
import { FlameGraphFormat } from "../enums";
import { cellsOfRange, fleetHeatmapOf, gridOf, sumCells, type Heatmap } from "../heatmap/model";
import { AccountingPanel } from "../panels/accounting";
import { FleetBar } from "../panels/fleetbar";
import { GraphView } from "../panels/graphview";
import { diffMode } from "../graphstate";
import { HeatmapPanel } from "../panels/heatmap";
import { HostsPanel } from "../panels/hosts";
import { NoMatchPanel } from "../panels/nomatch";
import { TimelinePanel } from "../panels/timeline";
import { navigate, setQuery } from "../router";
import { functionRegex, Latest } from "../viewstate";
import type { Page } from "./page";
import { shareLinks } from "./sharelinks";
import { emptyState, failed } from "./states";

/** The fleet heatmap's left gutter: the host strip's names and totals
 * take it, so that every panel's columns are the heatmap's pixels. */
const FLEET_GUTTER = 250;

export function fleetPage(params: URLSearchParams): Page {
  const read = readFleet(params, new Date());
  let state: FleetState = read.state;
  // The URL says exactly what is shown (a defaulted window, a dropped range), so it is a permalink.
  if (state.app) setQuery(writeFleet(state));

  const ctrl = new AbortController();
  const heatReq = new Latest();
  const hostsReq = new Latest();
  const timeReq = new Latest();
  const flameReq = new Latest();
  const hostProfileReq = new Latest();
  let heat: Heatmap | null = null;
  let heatAccounting: Accounting | undefined;
  let hostCount: number | null = null;
  let flameTotal: number | null = null;
  let flameAccounting: Accounting | undefined;
  let explain: string | undefined; // why the flame graph's total differs from the cells, when known
  let hostNames: string[] = []; // the selection's hosts, as the host strip lists them

  // ---- panels ----------------------------------------------------------------------
  const bar = new FleetBar({
    onApply: (v) => change({ ...withWindow(state, v.from, v.to), app: v.app, hosts: v.hosts, labels: v.labels, event: v.event, idle: v.idle }),
    onZoomOut: () => change(zoomOut(state)),
    onZoomBack: (i) => change(zoomBack(state, i)),
    onShift: (id) => compareWith(compareShift(state, id)),
  });
  const summary = new AccountingPanel();
  const timeline = new TimelinePanel({
    onZoom: (r) => {
      const next = timelineZoom(state, r);
      if (next) change(next);
    },
  });
  const heatPanel = new HeatmapPanel({
    rows: state.rows,
    idle: state.idle,
    wallClock: true,
    // One time axis: the timeline and the host strip draw each column at
    // the heatmap's pixels, the host names in its gutter.
    axisLeft: FLEET_GUTTER,
    onAxis: (a) => {
      timeline.align(a);
      hosts.align(a);
    },
    eventAndIdle: false,
    hint: (spc) =>
      spc === 1
        ? "each column is one second of wall-clock time, each cell a slice of it, summed over every host. Drag across cells for the merged flame graph of that range."
        : `each column is ${spc} seconds (a long window), each cell the same slice of each of them summed over every host, so a selection takes whole columns; “Zoom to selection” re-queries at finer columns.`,
    whole: { label: "Whole window", hint: "no range selected. Click a cell or drag across cells for the merged flame graph of that range." },
    selectionActions: () => [
      h(
        "button",
        { type: "button", class: "ghost small", "data-testid": "zoom-in", title: "Make the selection's seconds the window (finer columns)", onclick: () => state.range && change(zoomIn(state, state.range)) },
        "Zoom to selection",
      ),
    ],
    // r is of the heatmap on screen, which stays while the next loads (a
    // live view asks for one every second): not of `heat`, null meanwhile
    onSelect: (r) => {
      const on = heatPanel.shown;
      select(r && on ? absRange(r, on.startSecond) : null);
    },
    onClear: () => {
      heatPanel.clearSelection();
      select(null);
    },
    onEvent: () => {},
    onRows: (rows) => change({ ...state, rows }),
    onIdle: () => {},
  });
  const hosts = new HostsPanel({
    onNarrow: (host) => change(narrowToHost(state, host)),
    onProfile: (host) => void openHostProfile(host),
    onAllHosts: () => change({ ...state, hosts: [] }),
    onCompare: (host) => compareWith(compareHost(state, host)),
  });
  const filterBar = new FilterPanel({ onFunctions: (fn, xfn) => change(filterFunctions(state, fn, xfn)) });
  const cmpPanel = new FleetComparePanel({
    onChange: (c) => compareWith(compared(state, c)),
  });
  const liveBtn = h("button", { type: "button", class: "ghost", "data-testid": "fleet-live", "aria-pressed": "false", title: "Follow now: the window slides to the present every second" }, "Live");
  liveBtn.addEventListener("click", () => {
    record(toggleLive(state));
    showLive();
    if (state.live) tick();
  });
  let liveTimer = 0;
  /** showLive says whether the view follows now, or is paused on a range. */
  function showLive() {
    const live = liveStatus(state);
    liveBtn.setAttribute("aria-pressed", String(state.live));
    liveBtn.dataset.state = live.state;
    liveBtn.textContent = live.label;
    window.clearInterval(liveTimer);
    if (state.live) liveTimer = window.setInterval(tick, 1000);
  }
  /** tick moves a live view to now: the whole view without a range; with
   * one, only the range's flame graph (and heatmap), the window kept. */
  function tick() {
    if (ctrl.signal.aborted) return;
    const t = liveTick(state, new Date());
    if (t.kind === "refresh") {
      void loadHeatmap();
      void loadFlame();
    } else if (t.kind === "move") {
      state = t.next;
      setQuery(writeFleet(state));
      start();
    }
  }
  const { button: shareBtn, panel: shared } = shareLinks({
    signal: ctrl.signal,
    title: "Make a link to this fleet view that works without an API key",
    mine: (l) => l.fleet?.app === state.app,
    request: (ttl) => {
      const r = rangeOrWindow(state);
      return { fleet: selectionOf(counted(), r.start, r.end), ttlSeconds: BigInt(ttl) };
    },
    subject: (panel) => {
      const r = rangeOrWindow(state);
      panel.setFleetSubject(state.app, formatWallRange(r.start, r.end));
    },
  });
  const graph = new GraphView({
    state: () => state,
    record: (c) => record({ ...state, ...c }),
    fetch: async (f) => (await getFleetFlameGraph(flameRequest(counted(), f), ctrl.signal)).graph,
    filename: () => foldedFilename(state),
    exports: true,
    link: () => location.origin + fleetPath(state),
    reload: () => void loadFlame(),
    onFilter: (name) => change(filterFunctions(state, functionRegex(name))),
  });
  const flame = graph.flame;
  const flameAcc = h("div", { class: "muted small flame-accounting", "data-testid": "flame-accounting" });
  flame.el.querySelector(".panel-head")?.after(flameAcc, cmpPanel.el);

  const noMatch = new NoMatchPanel({
    search: (req) => query.searchProfiles(req, { signal: ctrl.signal }),
    onWindow: (from, to) => change(withWindow({ ...state, zooms: [] }, from, to)),
    signal: ctrl.signal,
  });
  const title = h("h1", null);
  const back = h("a", { class: "back", href: "/" }, "← Profiles");
  const panels = [filterBar.el, summary.el, noMatch.el, timeline.el, heatPanel.el, hosts.el, flame.el, graph.diff.el, graph.top.el];
  /** The panels of data, hidden while no profile matches. */
  const dataPanels = [timeline.el, heatPanel.el, hosts.el, flame.el, graph.top.el];
  const body = h("div", { class: "fleet-body" }, panels);
  const el = h(
    "div",
    { class: "page fleet-page" },
    h("header", { class: "profile-head" }, back, h("div", { class: "title-row" }, title, h("div", { class: "page-actions" }, liveBtn, shareBtn))),
    bar.el,
    shared.el,
    body,
  );

  // ---- state -----------------------------------------------------------------------

  /** record keeps a change of range or flame view in the URL (no new entry). */
  function record(next: FleetState) {
    state = next;
    setQuery(writeFleet(state));
  }

  /** compareWith draws view next's comparison (or none) of the range. */
  function compareWith(next: FleetState) {
    record(next);
    cmpPanel.show(state, hostNames);
    bar.setShift(state);
    void loadFlame();
  }

  /** change moves to a new selection: a new history entry, and every answer again. */
  function change(next: FleetState) {
    state = next;
    setQuery(writeFleet(state), true);
    start();
  }

  /** counted is the view with the event the heatmap counts named (when
   * none is chosen), so that a range's flame graph counts the same one. */
  function counted(): FleetState {
    return withCountedEvent(state, heatAccounting?.event);
  }

  function select(r: AbsRange | null) {
    record({ ...state, range: r });
    if (state.live) showLive();
    timeline.setSelection(r);
    hosts.setSelection(r);
    showSelection();
    void loadFlame();
  }

  function showHead() {
    title.textContent = "";
    title.append(state.app || "Fleet", h("span", { class: "host" }, state.app ? " · fleet" : ""));
    back.href = state.app ? `/?app=${encodeURIComponent(state.app)}` : "/";
    document.title = `${state.app || "Fleet"} · fleet · fleetscope`;
  }

  let starts = 0;

  /** start asks for everything the selection shows. The heatmap and the
   * whole window's merged flame graph come first, asked at once (neither
   * needs the generated code: a permalink's were asked by index.html
   * before the code loaded); a range's flame graph waits for the heatmap
   * unless the event is named. The host strip, timeline and the events
   * offered use the generated clients: the first time, their code
   * (src/rpc.ts, ~30 ms to evaluate) loads once the heatmap and flame
   * graph are drawn (at most 0.5 s later), not in their way. */
  function start() {
    showHead();
    bar.set(state);
    filterBar.show(state);
    cmpPanel.show(state, hostNames);
    if (!state.app) {
      replace(body, emptyState("Choose an app", "Type an app's name above and press Enter to see its fleet: every host's profiles in wall-clock time.", "no-app"));
      return;
    }
    if (body.firstChild !== filterBar.el) replace(body, panels);
    showNoMatch(false);
    heat = null;
    heatAccounting = undefined;
    hostCount = null;
    flameTotal = null;
    explain = undefined;
    flame.loading(); // the graph on screen is of the old selection
    const heatDone = loadHeatmap();
    // (Asked at once, a flame graph is drawn after the heatmap: the heatmap first.)
    const flameDone = !flameWaitsForHeatmap(state) ? loadFlame(heatDone) : heatDone.finally(() => !ctrl.signal.aborted && loadFlame());
    hosts.loading();
    timeline.loading();
    const gen = ++starts;
    const rest = () => {
      if (ctrl.signal.aborted || gen !== starts) return; // (a newer start asks for its own)
      void loadHosts();
      void loadTimeline();
      void loadEvents();
    };
    if (rpcAsked()) rest();
    else void Promise.race([Promise.allSettled([heatDone, flameDone]), new Promise((r) => setTimeout(r, 500))]).then(rest);
  }

  // ---- loading ---------------------------------------------------------------------

  async function loadHeatmap() {
    const current = heatReq.begin();
    heatPanel.loading();
    try {
      const res = await getFleetHeatmap(heatmapRequest(state), ctrl.signal);
      if (!current()) return;
      heat = fleetHeatmapOf(res);
      heatAccounting = res.accounting;
      bar.setCounted(res.accounting?.event ?? "");
      const none = emptyHeatmapWords(state, res.accounting?.profiles ?? 0);
      if (matchesNothing(res.accounting)) {
        showNoMatch(true);
        showSummary();
        return;
      }
      heatPanel.show(heat, state.range ? relRange(state.range, heat.startSecond) : null, state.idle, none);
      if (!state.range) {
        // a long window may have its samples far to the right: show where they start
        const col = heat.columns.findIndex((c) => c.some((n) => n > 0));
        if (col > 0) heatPanel.scrollToColumn(col);
      }
      showSummary();
      showSelection();
    } catch (err) {
      if (ctrl.signal.aborted || !current()) return;
      failed(problem(err), (p) => {
        heatPanel.error(p, () => void loadHeatmap());
        summary.error(p.kind === "invalid" ? p.message : "");
      });
    }
  }

  async function loadHosts() {
    const current = hostsReq.begin();
    hosts.loading();
    try {
      const res = await fleet.getFleetHosts(hostsRequest(state), { signal: ctrl.signal });
      if (!current()) return;
      hostCount = res.hosts.length;
      hostNames = res.hosts.map((x) => x.host);
      cmpPanel.show(state, hostNames);
      hosts.show(
        {
          startSecond: Number(res.startSecond),
          secondsPerColumn: Number(res.secondsPerColumn),
          columns: res.hosts[0]?.columns.length ?? 0,
          hosts: res.hosts.map((x) => ({ host: x.host, total: Number(x.total), columns: x.columns.map(Number) })),
        },
        state.range,
        state.hosts.length > 0,
      );
      showSummary();
    } catch (err) {
      if (ctrl.signal.aborted || !current()) return;
      failed(problem(err), (p) => hosts.error(p, () => void loadHosts()));
    }
  }

  async function loadTimeline() {
    const current = timeReq.begin();
    timeline.loading();
    try {
      const res = await fleet.getFleetTimeline(timelineRequest(state), { signal: ctrl.signal });
      if (!current()) return;
      timeline.show(
        { startSecond: Number(res.startSecond), secondsPerColumn: Number(res.secondsPerColumn), columns: res.totals.length, totals: res.totals.map(Number) },
        state.range,
      );
    } catch (err) {
      if (ctrl.signal.aborted || !current()) return;
      failed(problem(err), (p) => timeline.error(p, () => void loadTimeline()));
    }
  }

  /** loadEvents offers the events of the app's profiles in the window. */
  async function loadEvents() {
    try {
      const res = await query.searchProfiles(
        { app: state.app, since: timestampOf(state.from), until: timestampOf(state.to), pageSize: 200 },
        { signal: ctrl.signal },
      );
      const names = [...new Set(res.profiles.flatMap((p) => p.events.map((e) => eventBase(e.name))))].sort();
      bar.setEvents(names);
    } catch {
      // only suggestions: the field still takes any name
    }
  }

  /** loadFlame asks for the range's (or window's) flame graph, or its
   * comparison; drawn once after has settled (the heatmap asked with it). */
  async function loadFlame(after?: Promise<unknown>) {
    const current = flameReq.begin();
    flameTotal = null;
    explain = undefined;
    flameAccounting = undefined;
    flameAcc.textContent = "";
    flame.loading();
    showSelection();
    try {
      const sides = fleetDiffSides(counted(), state.cmp === "host" && hostNames.length === 0 ? await hostsOfSelection() : hostNames);
      if (sides) {
        const d = await askDiff(state.norm, (normalize) =>
          compare.getDiffFlameGraph(
            { a: { side: { case: "fleet", value: sides.a } }, b: { side: { case: "fleet", value: sides.b } }, normalize, format: FlameGraphFormat.TREE, top: 20 },
            { signal: ctrl.signal },
          ),
        );
        if (!current()) return;
        return showDiff(d);
      }
      graph.diff.hide();
      cmpPanel.showMode(null);
      const res = await getFleetFlameGraph(flameRequest(counted(), FlameGraphFormat.TREE), ctrl.signal, after);
      if (!current()) return;
      const accounting = res.accounting;
      flameTotal = res.graph.total;
      flameAccounting = accounting;
      const words = flameWords(state);
      graph.show(layoutOf(res.graph), words.scope, words.empty);
      flameAcc.dataset.profiles = String(accounting.profiles);
      flameAcc.dataset.leftOut = leftOutData(accounting);
      flameAcc.textContent = `merged from ${accountingWords(accounting)}`;
      graph.showTop();
      showSelection();
      showSummary();
      void explainDifference(current);
    } catch (err) {
      if (ctrl.signal.aborted || !current()) return;
      failed(problem(err), (p) => {
        flame.error(p, () => void loadFlame());
        graph.clearTables(); // the last graph's functions are not this selection's
      });
    }
  }

  /** explainDifference: when a range's merged flame graph totals more than
   * its cells, profiles without per-sample times that lie wholly inside the
   * range may be why (they enter flame graphs, never heatmaps). The
   * range's timeline counts its timed profiles; the rest of the flame
   * graph's profiles are untimed ones. */
  async function explainDifference(current: () => boolean) {
    const r = state.range;
    if (!r || !heat || flameTotal === null || !flameAccounting) return;
    const cells = cellSum(r);
    if (cells === null || cells === flameTotal) return;
    try {
      const res = await fleet.getFleetTimeline({ selection: selectionOf(counted(), r.start, r.end), minSecondsPerColumn: BigInt(31 * 24 * 3600) }, { signal: ctrl.signal });
      if (!current()) return;
      const untimed = flameAccounting.profiles - (res.accounting?.profiles ?? 0);
      if (untimed > 0) {
        explain = `it also counts ${profilesWithout(untimed)} lying wholly inside the range (they have no heatmap)`;
        showSelection();
      }
    } catch {
      // the difference stays shown without an explanation
    }
  }

  /** cellSum is the selected cells' sum when the range is exactly cells. */
  function cellSum(r: AbsRange): number | null {
    if (!heat) return null;
    const span = cellsOfRange(relRange(r, heat.startSecond), gridOf(heat));
    return span && span.aligned ? sumCells(heat, span.first, span.last) : null;
  }

  /** hostsOfSelection asks for the selection's hosts (for "the rest of the
   * fleet") when the host strip has not answered yet. */
  async function hostsOfSelection(): Promise<string[]> {
    const res = await fleet.getFleetHosts(hostsRequest(state), { signal: ctrl.signal });
    hostNames = res.hosts.map((x) => x.host);
    return hostNames;
  }

  /** showDiff draws a comparison of the range: B's shape coloured by the
   * change, and the largest changes. */
  function showDiff(d: GetDiffFlameGraphResponse) {
    cmpPanel.showMode(diffMode(state.norm, d));
    const r = rangeOrWindow(state);
    const { a, b } = diffNames(state);
    flameTotal = null; // B is part of the selection: its total is not the cells'
    const earlier = state.cmp === "shift" ? shiftedRange(state) : null;
    flameAcc.textContent = earlier ? `A: ${formatWallRange(earlier.start, earlier.end)} · B: ${formatWallRange(r.start, r.end)}` : "";
    graph.showDiff(d, a, b, `${b} against ${a}, ${formatWallRange(r.start, r.end)}`, `${b} ran nothing (that is not idle) here.`);
    showSelection();
  }

  // ---- a host's profile ------------------------------------------------------------

  /** openHostProfile finds host's profile holding samples of the range (or
   * the window) and opens it at that range: the one covering the range's
   * start when several do (fleetstate's hostProfile). */
  async function openHostProfile(host: string) {
    const current = hostProfileReq.begin();
    const r = rangeOrWindow(state);
    hosts.showNote(`Looking for ${host}'s profile of ${formatWallRange(r.start, r.end)}…`);
    try {
      const labels = Object.fromEntries(state.labels.filter((l) => !l.not).map((l) => [l.name, l.value]));
      const res = await query.searchProfiles({ app: state.app, host, labels, since: timestampOf(r.start), until: timestampOf(r.end), pageSize: 100 }, { signal: ctrl.signal });
      if (!current()) return;
      const p = hostProfile(res.profiles, host, state.labels, r);
      if (!p) return hosts.showNote(`${host} has no profile with per-sample times in ${formatWallRange(r.start, r.end)}.`);
      navigate(hostProfileLink(p));
    } catch (err) {
      if (ctrl.signal.aborted || !current()) return;
      failed(problem(err), (p) => hosts.showNote(`Could not look for ${host}'s profile: ${p.message}`));
    }
  }

  /** hostProfileLink opens profile p at the range, with the event counted. */
  function hostProfileLink(p: ListedProfile): string {
    return profileLink(p, state, heatAccounting?.event ?? "");
  }

  // ---- drawing ---------------------------------------------------------------------

  function showSummary() {
    if (!heat) return;
    summary.show(state, heat.total, heatAccounting, hostCount, flameTotal !== null && flameAccounting ? { total: flameTotal, profiles: flameAccounting.profiles } : null);
  }

  /** showNoMatch shows (or hides) that no profile matches the selection:
   * what was asked, in place of panels of zeros, and where the app's data
   * is (its latest and first profiles, each a button to go there). */
  function showNoMatch(on: boolean) {
    if (on) noMatch.show(state.app, selectionWords(state));
    else noMatch.hide();
    for (const e of dataPanels) e.hidden = on;
    if (on) graph.diff.hide();
  }

  function showSelection() {
    if (!heat) return;
    heatPanel.showSelection(state.range ? relRange(state.range, heat.startSecond) : null, flameTotal, explain);
    if (!state.range) showSummary();
  }

  start();
  if (state.live) showLive(); // a live permalink follows now from the start

  return {
    el,
    title: state.app ? `${state.app} · fleet` : "Fleet",
    destroy() {
      ctrl.abort();
      window.clearInterval(liveTimer);
      heatPanel.destroy();
      graph.destroy();
      timeline.destroy();
      hosts.destroy();
    },
    focus() {
      if (!state.app) (bar.el.querySelector("[data-testid=fleet-app]") as HTMLInputElement | null)?.focus();
    },
  };
}
