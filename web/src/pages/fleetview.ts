// The fleet view (/fleet?app=...&from=...&to=...; pages/fleet.ts opens
// it): every profile of an app in wall-clock time. The selection bar
// (panels/fleetbar.ts) chooses the app, hosts, labels, window, event and
// idle; below it the accounting (panels/accounting.ts: how many profiles
// the answers count, which they left out and why), the timeline
// (panels/timeline.ts: samples per column; drag to zoom the window), the
// fleet heatmap (panels/heatmap.ts in wall-clock time: drag-select a
// range, zoom to it for finer columns), the host strip (panels/hosts.ts:
// click a host to narrow to it, or open its profile at the range) and the
// merged flame graph of the range (or of the whole window) with its top
// functions. The selected cells' sum is checked against the flame graph's
// total, as on the profile page. A filter bar (panels/filter.ts) keeps the
// samples with (or without) a function; the comparison switch
// (panels/fleetcompare.ts) draws a differential flame graph of the range:
// a host against the rest of the fleet, or label against label, or the
// same range earlier; the flame graph downloads as svg, pprof, speedscope
// or json. "Live" follows now: every second the window slides to end at
// the present (new columns come in on the right, the other panels
// follow); a selected range pauses the sliding, and its flame graph keeps
// counting what arrives in it; clearing the range resumes. "Share…"
// (pages/sharelinks.ts) makes a link that works without a key.
//
// As the profile view (pages/profileview.ts) is composed over viewstate.ts,
// this one is composed over fleetstate.ts, the view's state: the URL, the
// rules for changing it, the requests it implies and what is said of the
// answers, pure and unit-tested. A change of the selection (window, hosts,
// labels, event, idle, rows) is a new history entry and asks again; a
// range, zoomed frame, search or orientation replaces the current entry.
// A panel reports what the user did; the view records it in the state,
// asks for the answers and hands them to the panels. Answers to requests
// that a newer one replaced are dropped. The flame graph, top functions
// and largest changes, and the requests for the graph, are
// panels/graphview.ts, as on the profile view.

import { compare, fleet, getFleetFlameGraph, getFleetHeatmap, problem, query, rpcAsked, type Problem } from "../api";
import { h, replace } from "../dom";
import { FlameGraphFormat } from "../enums";
import { askDiff } from "../flame/diff";
import { layoutOf, type WireFlameGraph } from "../flame/wire";
import {
  absRange,
  accountingWords,
  compared,
  compareHost,
  compareShift,
  diffNeedsHosts,
  diffWords,
  emptyHeatmapWords,
  eventNames,
  eventsSearch,
  filterFunctions,
  flameDiffersFromCells,
  flameRequest,
  flameWaitsForHeatmap,
  flameWords,
  fleetDiffRequest,
  fleetDiffSides,
  fleetPath,
  foldedFilename,
  heatmapHint,
  heatmapRequest,
  hostProfile,
  hostProfilesSearch,
  hostsRequest,
  leftOutData,
  liveStatus,
  liveTick,
  matchesNothing,
  narrowToHost,
  profileLink,
  rangeOrWindow,
  rangeTimelineRequest,
  selectionOf,
  selectionWords,
  shownRange,
  startColumn,
  timelineRequest,
  timelineZoom,
  toggleLive,
  untimedWords,
  withCountedEvent,
  withWindow,
  writeFleet,
  zoomBack,
  zoomIn,
  zoomOut,
  type AbsRange,
  type Accounting,
  type FleetState,
} from "../fleetstate";
import { formatWallRange } from "../format";
import type { GetDiffFlameGraphResponse } from "../gen/fleetscope/v1/compare_pb";
import type { GetFleetHostsResponse, GetFleetTimelineResponse } from "../gen/fleetscope/v1/fleet_pb";
import type { WireFleetHeatmap, WireAccounting } from "../heatmap/wire";
import { fleetHeatmapOf, type Heatmap } from "../heatmap/model";
import { AccountingPanel } from "../panels/accounting";
import { FilterPanel } from "../panels/filter";
import { FleetBar } from "../panels/fleetbar";
import { FleetComparePanel } from "../panels/fleetcompare";
import { GraphView } from "../panels/graphview";
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

export class FleetView implements Page {
  readonly el: HTMLElement;
  readonly title: string;
  private state: FleetState;
  private readonly ctrl = new AbortController();
  // Each kind of request is ordered: an answer a newer one replaced is
  // dropped (the flame graph's are the GraphView's).
  private readonly heatReq = new Latest();
  private readonly hostsReq = new Latest();
  private readonly timeReq = new Latest();
  private readonly hostProfileReq = new Latest();
  /** Counts the selections asked for (askAll): the host strip, timeline and
   * events asked later are only a selection's still shown. */
  private asked = 0;
  private liveTimer = 0;

  // ---- the answers on screen ----
  private heat: Heatmap | null = null;
  private heatAccounting: Accounting | undefined;
  private hostCount: number | null = null;
  private flameTotal: number | null = null;
  private flameAccounting: Accounting | undefined;
  /** Why the flame graph's total differs from the cells, when known. */
  private explain: string | undefined;
  /** The selection's hosts, as the host strip lists them. */
  private hostNames: string[] = [];

  // ---- the panels ----
  private readonly bar: FleetBar;
  private readonly summary = new AccountingPanel();
  private readonly timeline: TimelinePanel;
  private readonly heatPanel: HeatmapPanel;
  private readonly hosts: HostsPanel;
  private readonly filterBar: FilterPanel;
  private readonly cmpPanel: FleetComparePanel;
  private readonly graph: GraphView;
  /** What the merged flame graph counted (or a comparison's two ranges). */
  private readonly flameAcc = h("div", { class: "muted small flame-accounting", "data-testid": "flame-accounting" });
  private readonly noMatch: NoMatchPanel;
  private readonly liveBtn = h("button", { type: "button", class: "ghost", "data-testid": "fleet-live", "aria-pressed": "false", title: "Follow now: the window slides to the present every second" }, "Live");
  private readonly heading = h("h1", null);
  private readonly back = h("a", { class: "back", href: "/" }, "← Profiles");
  private readonly body: HTMLElement;
  /** The panels under the selection bar, in order. */
  private readonly panels: HTMLElement[];
  /** The panels of data, hidden while no profile matches. */
  private readonly dataPanels: HTMLElement[];

  constructor(state: FleetState) {
    this.state = state;
    this.title = state.app ? `${state.app} · fleet` : "Fleet";
    this.bar = new FleetBar({
      onApply: (v) => this.change({ ...withWindow(this.state, v.from, v.to), app: v.app, hosts: v.hosts, labels: v.labels, event: v.event, idle: v.idle }),
      onZoomOut: () => this.change(zoomOut(this.state)),
      onZoomBack: (i) => this.change(zoomBack(this.state, i)),
      onShift: (id) => this.compareWith(compareShift(this.state, id)),
    });
    this.timeline = new TimelinePanel({ onZoom: (r) => this.zoomTimeline(r) });
    this.heatPanel = this.heatmapPanel();
    this.hosts = new HostsPanel({
      onNarrow: (host) => this.change(narrowToHost(this.state, host)),
      onProfile: (host) => void this.openHostProfile(host),
      onAllHosts: () => this.change({ ...this.state, hosts: [] }),
      onCompare: (host) => this.compareWith(compareHost(this.state, host)),
    });
    this.filterBar = new FilterPanel({ onFunctions: (fn, xfn) => this.change(filterFunctions(this.state, fn, xfn)) });
    this.cmpPanel = new FleetComparePanel({ onChange: (c) => this.compareWith(compared(this.state, c)) });
    this.graph = this.graphView();
    const flame = this.graph.flame;
    flame.el.querySelector(".panel-head")?.after(this.flameAcc, this.cmpPanel.el);
    this.noMatch = new NoMatchPanel({
      search: (req) => query.searchProfiles(req, { signal: this.ctrl.signal }),
      onWindow: (from, to) => this.change(withWindow({ ...this.state, zooms: [] }, from, to)),
      signal: this.ctrl.signal,
    });
    this.liveBtn.addEventListener("click", () => this.switchLive());
    const { button: shareBtn, panel: shared } = this.sharing();
    this.panels = [this.filterBar.el, this.summary.el, this.noMatch.el, this.timeline.el, this.heatPanel.el, this.hosts.el, flame.el, this.graph.diff.el, this.graph.top.el];
    this.dataPanels = [this.timeline.el, this.heatPanel.el, this.hosts.el, flame.el, this.graph.top.el];
    this.body = h("div", { class: "fleet-body" }, this.panels);
    this.el = h(
      "div",
      { class: "page fleet-page" },
      h("header", { class: "profile-head" }, this.back, h("div", { class: "title-row" }, this.heading, h("div", { class: "page-actions" }, this.liveBtn, shareBtn))),
      this.bar.el,
      shared.el,
      this.body,
    );
  }

  /** heatmapPanel is the fleet heatmap: wall-clock columns summed over the
   * hosts, whose time axis the timeline and the host strip share. */
  private heatmapPanel(): HeatmapPanel {
    const s = this.state;
    return new HeatmapPanel({
      rows: s.rows,
      idle: s.idle,
      wallClock: true,
      // One time axis: the timeline and the host strip draw each column at
      // the heatmap's pixels, the host names in its gutter.
      axisLeft: FLEET_GUTTER,
      onAxis: (a) => {
        this.timeline.align(a);
        this.hosts.align(a);
      },
      eventAndIdle: false,
      hint: heatmapHint,
      whole: { label: "Whole window", hint: "no range selected. Click a cell or drag across cells for the merged flame graph of that range." },
      selectionActions: () => [
        h(
          "button",
          { type: "button", class: "ghost small", "data-testid": "zoom-in", title: "Make the selection's seconds the window (finer columns)", onclick: () => this.state.range && this.change(zoomIn(this.state, this.state.range)) },
          "Zoom to selection",
        ),
      ],
      // r is of the heatmap on screen, which stays while the next loads (a
      // live view asks for one every second): not of `heat`, null meanwhile
      onSelect: (r) => {
        const on = this.heatPanel.shown;
        this.select(r && on ? absRange(r, on.startSecond) : null);
      },
      onClear: () => {
        this.heatPanel.clearSelection();
        this.select(null);
      },
      onEvent: () => {},
      onRows: (rows) => this.change({ ...this.state, rows }),
      onIdle: () => {},
    });
  }

  /** graphView is the merged flame graph, its top functions and a
   * comparison's largest changes, with the comparison's mode said in the
   * comparison switch. */
  private graphView(): GraphView {
    return new GraphView({
      state: () => this.state,
      record: (c) => this.record({ ...this.state, ...c }),
      signal: this.ctrl.signal,
      fetch: async (f) => (await getFleetFlameGraph(flameRequest(this.counted(), f), this.ctrl.signal)).graph,
      filename: () => foldedFilename(this.state),
      exports: true,
      link: () => location.origin + fleetPath(this.state),
      reload: () => void this.loadFlame(),
      showMode: (m) => this.cmpPanel.showMode(m),
      onFilter: (name) => this.change(filterFunctions(this.state, functionRegex(name))),
    });
  }

  /** sharing is the Share button and panel: a link to the range (or
   * window) of the selection, with the event counted. */
  private sharing() {
    return shareLinks({
      signal: this.ctrl.signal,
      title: "Make a link to this fleet view that works without an API key",
      mine: (l) => l.fleet?.app === this.state.app,
      request: (ttl) => {
        const r = rangeOrWindow(this.state);
        return { fleet: selectionOf(this.counted(), r.start, r.end), ttlSeconds: BigInt(ttl) };
      },
      subject: (panel) => {
        const r = rangeOrWindow(this.state);
        panel.setFleetSubject(this.state.app, formatWallRange(r.start, r.end));
      },
    });
  }

  /** start asks for everything the selection shows; a live view (a live
   * permalink) follows now from the start. */
  start() {
    this.askAll();
    if (this.state.live) this.showLive();
  }

  destroy() {
    this.ctrl.abort();
    window.clearInterval(this.liveTimer);
    this.heatPanel.destroy();
    this.graph.destroy();
    this.timeline.destroy();
    this.hosts.destroy();
  }

  focus() {
    if (!this.state.app) (this.bar.el.querySelector("[data-testid=fleet-app]") as HTMLInputElement | null)?.focus();
  }

  // ---- changes ---------------------------------------------------------------------

  /** record keeps a change of range or flame view in the URL (no new entry). */
  private record(next: FleetState) {
    this.state = next;
    setQuery(writeFleet(next));
  }

  /** change moves to a new selection: a new history entry, and every answer again. */
  private change(next: FleetState) {
    this.state = next;
    setQuery(writeFleet(next), true);
    this.askAll();
  }

  /** compareWith draws view next's comparison (or none) of the range. */
  private compareWith(next: FleetState) {
    this.record(next);
    this.cmpPanel.show(this.state, this.hostNames);
    this.bar.setShift(this.state);
    void this.loadFlame();
  }

  /** select makes r the range (null: the whole window). */
  private select(r: AbsRange | null) {
    this.record({ ...this.state, range: r });
    if (this.state.live) this.showLive();
    this.timeline.setSelection(r);
    this.hosts.setSelection(r);
    this.showSelection();
    void this.loadFlame();
  }

  /** zoomTimeline makes a drag across the timeline the window. */
  private zoomTimeline(r: AbsRange) {
    const next = timelineZoom(this.state, r);
    if (next) this.change(next);
  }

  /** counted is the view with the event the heatmap counts named (when
   * none is chosen), so that a range's flame graph counts the same one. */
  private counted(): FleetState {
    return withCountedEvent(this.state, this.heatAccounting?.event);
  }

  // ---- live ------------------------------------------------------------------------

  /** switchLive starts or stops following now. */
  private switchLive() {
    this.record(toggleLive(this.state));
    this.showLive();
    if (this.state.live) this.tick();
  }

  /** showLive says whether the view follows now, or is paused on a range. */
  private showLive() {
    const live = liveStatus(this.state);
    this.liveBtn.setAttribute("aria-pressed", String(this.state.live));
    this.liveBtn.dataset.state = live.state;
    this.liveBtn.textContent = live.label;
    window.clearInterval(this.liveTimer);
    if (this.state.live) this.liveTimer = window.setInterval(() => this.tick(), 1000);
  }

  /** tick moves a live view to now: the whole view without a range; with
   * one, only the range's flame graph (and heatmap), the window kept. */
  private tick() {
    if (this.ctrl.signal.aborted) return;
    const t = liveTick(this.state, new Date());
    if (t.kind === "refresh") {
      void this.loadHeatmap();
      void this.loadFlame();
    } else if (t.kind === "move") {
      this.record(t.next);
      this.askAll();
    }
  }

  // ---- asking ----------------------------------------------------------------------

  /** askAll asks for everything the selection shows. The heatmap and the
   * whole window's merged flame graph come first, asked at once (neither
   * needs the generated code: a permalink's were asked by index.html
   * before the code loaded); a range's flame graph waits for the heatmap
   * unless the event is named. The host strip, timeline and the events
   * offered use the generated clients: the first time, their code
   * (src/rpc.ts, ~30 ms to evaluate) loads once the heatmap and flame
   * graph are drawn (at most 0.5 s later), not in their way. */
  private askAll() {
    this.showHead();
    this.bar.set(this.state);
    this.filterBar.show(this.state);
    this.cmpPanel.show(this.state, this.hostNames);
    if (!this.state.app) {
      replace(this.body, emptyState("Choose an app", "Type an app's name above and press Enter to see its fleet: every host's profiles in wall-clock time.", "no-app"));
      return;
    }
    if (this.body.firstChild !== this.filterBar.el) replace(this.body, this.panels);
    this.showNoMatch(false);
    this.heat = null;
    this.heatAccounting = undefined;
    this.hostCount = null;
    this.flameTotal = null;
    this.explain = undefined;
    this.graph.flame.loading(); // the graph on screen is of the old selection
    const heatDone = this.loadHeatmap();
    // (Asked at once, a flame graph is drawn after the heatmap: the heatmap first.)
    const flameDone = !flameWaitsForHeatmap(this.state) ? this.loadFlame(heatDone) : heatDone.finally(() => !this.ctrl.signal.aborted && this.loadFlame());
    this.hosts.loading();
    this.timeline.loading();
    const n = ++this.asked;
    if (rpcAsked()) this.askRest(n);
    else void Promise.race([Promise.allSettled([heatDone, flameDone]), new Promise((r) => setTimeout(r, 500))]).then(() => this.askRest(n));
  }

  /** askRest asks for the host strip, the timeline and the events offered
   * of the nth selection asked for, if it is still the one shown (a newer
   * one asks for its own). */
  private askRest(n: number) {
    if (this.ctrl.signal.aborted || n !== this.asked) return;
    void this.loadHosts();
    void this.loadTimeline();
    void this.loadEvents();
  }

  /** latest asks for one kind of answer (req orders them) and shows it, or
   * its failure, unless a newer request of that kind began meanwhile or
   * the view was left. */
  private async latest<T>(req: Latest, ask: () => Promise<T>, show: (res: T) => void, fail: (p: Problem) => void) {
    const current = req.begin();
    try {
      const res = await ask();
      if (current()) show(res);
    } catch (err) {
      if (this.ctrl.signal.aborted || !current()) return;
      failed(problem(err), fail);
    }
  }

  private loadHeatmap(): Promise<void> {
    this.heatPanel.loading();
    return this.latest(
      this.heatReq,
      () => getFleetHeatmap(heatmapRequest(this.state), this.ctrl.signal),
      (res) => this.showHeatmap(res),
      (p) => {
        this.heatPanel.error(p, () => void this.loadHeatmap());
        this.summary.error(p.kind === "invalid" ? p.message : "");
      },
    );
  }

  private loadHosts(): Promise<void> {
    this.hosts.loading();
    return this.latest(
      this.hostsReq,
      () => fleet.getFleetHosts(hostsRequest(this.state), { signal: this.ctrl.signal }),
      (res) => this.showHosts(res),
      (p) => this.hosts.error(p, () => void this.loadHosts()),
    );
  }

  private loadTimeline(): Promise<void> {
    this.timeline.loading();
    return this.latest(
      this.timeReq,
      () => fleet.getFleetTimeline(timelineRequest(this.state), { signal: this.ctrl.signal }),
      (res) => this.showTimeline(res),
      (p) => this.timeline.error(p, () => void this.loadTimeline()),
    );
  }

  /** loadEvents offers the events of the app's profiles in the window. */
  private async loadEvents() {
    try {
      const res = await query.searchProfiles(eventsSearch(this.state), { signal: this.ctrl.signal });
      this.bar.setEvents(eventNames(res.profiles));
    } catch {
      // only suggestions: the field still takes any name
    }
  }

  /** loadFlame asks for the range's (or window's) flame graph, or its
   * comparison (GraphView's load: an answer a newer request replaced is
   * dropped); drawn once after has settled (the heatmap asked with it). */
  private loadFlame(after?: Promise<unknown>): Promise<void> {
    this.flameTotal = null;
    this.explain = undefined;
    this.flameAccounting = undefined;
    this.flameAcc.textContent = "";
    this.graph.flame.loading();
    this.showSelection();
    return this.graph.load({
      diff: () => this.comparison(),
      graph: () => getFleetFlameGraph(flameRequest(this.counted(), FlameGraphFormat.TREE), this.ctrl.signal, after),
      drawDiff: (d) => this.showDiff(d),
      draw: (res, current) => this.showFlame(res, current),
    });
  }

  /** comparison asks for the comparison the view asks for; null when it
   * asks for none. A host against the rest of the fleet needs the
   * selection's hosts: asked for first when the host strip has not
   * answered yet. */
  private comparison(): Promise<GetDiffFlameGraphResponse | null> | null {
    const s = this.counted();
    if (!diffNeedsHosts(this.state, this.hostNames)) return this.comparisonOf(s, this.hostNames);
    return this.hostsOfSelection().then((hosts) => this.comparisonOf(s, hosts));
  }

  /** comparisonOf asks for view s's comparison, hosts being the
   * selection's (null: there is nothing to compare). */
  private comparisonOf(s: FleetState, hosts: string[]): Promise<GetDiffFlameGraphResponse> | null {
    const sides = fleetDiffSides(s, hosts);
    if (!sides) return null;
    return askDiff(this.state.norm, (normalize) => compare.getDiffFlameGraph(fleetDiffRequest(sides, normalize), { signal: this.ctrl.signal }));
  }

  /** hostsOfSelection asks for the selection's hosts (for "the rest of the
   * fleet") when the host strip has not answered yet. */
  private async hostsOfSelection(): Promise<string[]> {
    const res = await fleet.getFleetHosts(hostsRequest(this.state), { signal: this.ctrl.signal });
    this.hostNames = res.hosts.map((x) => x.host);
    return this.hostNames;
  }

  /** explainDifference: when a range's merged flame graph totals more than
   * its cells, profiles without per-sample times that lie wholly inside the
   * range may be why (they enter flame graphs, never heatmaps). The
   * range's timeline counts its timed profiles; the rest of the flame
   * graph's profiles are untimed ones. */
  private async explainDifference(current: () => boolean) {
    const r = this.state.range;
    const flame = this.flameAccounting;
    if (!r || !this.heat || this.flameTotal === null || !flame || !flameDiffersFromCells(this.state, this.heat, this.flameTotal)) return;
    try {
      const res = await fleet.getFleetTimeline(rangeTimelineRequest(this.counted(), r), { signal: this.ctrl.signal });
      if (!current()) return;
      const words = untimedWords(flame.profiles, res.accounting?.profiles ?? 0);
      if (!words) return;
      this.explain = words;
      this.showSelection();
    } catch {
      // the difference stays shown without an explanation
    }
  }

  // ---- a host's profile ------------------------------------------------------------

  /** openHostProfile finds host's profile holding samples of the range (or
   * the window) and opens it at that range: the one covering the range's
   * start when several do (fleetstate's hostProfile). */
  private async openHostProfile(host: string) {
    const r = rangeOrWindow(this.state);
    const where = formatWallRange(r.start, r.end);
    this.hosts.showNote(`Looking for ${host}'s profile of ${where}…`);
    await this.latest(
      this.hostProfileReq,
      () => query.searchProfiles(hostProfilesSearch(this.state, host, r), { signal: this.ctrl.signal }),
      (res) => {
        const p = hostProfile(res.profiles, host, this.state.labels, r);
        if (!p) return this.hosts.showNote(`${host} has no profile with per-sample times in ${where}.`);
        navigate(profileLink(p, this.state, this.heatAccounting?.event ?? ""));
      },
      (p) => this.hosts.showNote(`Could not look for ${host}'s profile: ${p.message}`),
    );
  }

  // ---- drawing ---------------------------------------------------------------------

  private showHead() {
    const app = this.state.app;
    this.heading.textContent = "";
    this.heading.append(app || "Fleet", h("span", { class: "host" }, app ? " · fleet" : ""));
    this.back.href = app ? `/?app=${encodeURIComponent(app)}` : "/";
    document.title = `${app || "Fleet"} · fleet · fleetscope`;
  }

  private showHeatmap(res: WireFleetHeatmap) {
    const heat = fleetHeatmapOf(res);
    this.heat = heat;
    this.heatAccounting = res.accounting;
    this.bar.setCounted(res.accounting?.event ?? "");
    if (matchesNothing(res.accounting)) {
      this.showNoMatch(true);
      this.showSummary();
      return;
    }
    this.heatPanel.show(heat, shownRange(this.state, heat.startSecond), this.state.idle, emptyHeatmapWords(this.state, res.accounting?.profiles ?? 0));
    // a long window may have its samples far to the right: show where they start
    const col = startColumn(this.state, heat);
    if (col !== null) this.heatPanel.scrollToColumn(col);
    this.showSummary();
    this.showSelection();
  }

  private showHosts(res: GetFleetHostsResponse) {
    this.hostCount = res.hosts.length;
    this.hostNames = res.hosts.map((x) => x.host);
    this.cmpPanel.show(this.state, this.hostNames);
    this.hosts.show(
      {
        startSecond: Number(res.startSecond),
        secondsPerColumn: Number(res.secondsPerColumn),
        columns: res.hosts[0]?.columns.length ?? 0,
        hosts: res.hosts.map((x) => ({ host: x.host, total: Number(x.total), columns: x.columns.map(Number) })),
      },
      this.state.range,
      this.state.hosts.length > 0,
    );
    this.showSummary();
  }

  private showTimeline(res: GetFleetTimelineResponse) {
    this.timeline.show(
      { startSecond: Number(res.startSecond), secondsPerColumn: Number(res.secondsPerColumn), columns: res.totals.length, totals: res.totals.map(Number) },
      this.state.range,
    );
  }

  /** showFlame draws the merged flame graph and what it counted, then
   * checks it against the cells (explainDifference). */
  private showFlame(res: { graph: WireFlameGraph; accounting: WireAccounting }, current: () => boolean) {
    this.flameTotal = res.graph.total;
    this.flameAccounting = res.accounting;
    const words = flameWords(this.state);
    this.graph.show(layoutOf(res.graph), words.scope, words.empty);
    this.flameAcc.dataset.profiles = String(res.accounting.profiles);
    this.flameAcc.dataset.leftOut = leftOutData(res.accounting);
    this.flameAcc.textContent = `merged from ${accountingWords(res.accounting)}`;
    this.graph.showTop();
    this.showSelection();
    this.showSummary();
    void this.explainDifference(current);
  }

  /** showDiff draws a comparison of the range: B's shape coloured by the
   * change, and the largest changes. */
  private showDiff(d: GetDiffFlameGraphResponse) {
    const w = diffWords(this.state);
    this.flameTotal = null; // B is part of the selection: its total is not the cells'
    this.flameAcc.textContent = w.sides;
    this.graph.showDiff(d, w.a, w.b, w.scope, w.empty);
    this.showSelection();
  }

  private showSummary() {
    if (!this.heat) return;
    const flame = this.flameTotal !== null && this.flameAccounting ? { total: this.flameTotal, profiles: this.flameAccounting.profiles } : null;
    this.summary.show(this.state, this.heat.total, this.heatAccounting, this.hostCount, flame);
  }

  /** showNoMatch shows (or hides) that no profile matches the selection:
   * what was asked, in place of panels of zeros, and where the app's data
   * is (its latest and first profiles, each a button to go there). */
  private showNoMatch(on: boolean) {
    if (on) this.noMatch.show(this.state.app, selectionWords(this.state));
    else this.noMatch.hide();
    for (const e of this.dataPanels) e.hidden = on;
    if (on) this.graph.diff.hide();
  }

  private showSelection() {
    if (!this.heat) return;
    this.heatPanel.showSelection(shownRange(this.state, this.heat.startSecond), this.flameTotal, this.explain);
    if (!this.state.range) this.showSummary();
  }
}
