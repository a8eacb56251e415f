// A profile's view: the header, filter bar, heatmap, thread view, flame
// graph (plain or differential), largest changes, sandwich and
// top-functions panels (src/panels) composed over one source of data, with the view state
// (src/viewstate.ts) and the requests it implies. A panel reports what the
// user did; the view records it in the state and the URL, asks the source
// for what it needs, and hands the answers to the panels. Answers to
// requests that a newer one has replaced are dropped. The flame graph,
// top functions and largest changes, and the requests for the graph, are
// panels/graphview.ts, as on the fleet view (pages/fleetview.ts).
//
// Two pages use it: the profile page (/p/ID, the owner's API with the
// user's key, ranges chosen on the heatmap) and the shared page (/s/TOKEN,
// read-only: the range and event are the link's).

import { problem, type Problem } from "../api";
import { h, replace } from "../dom";
import { layoutOf, type WireFlameGraph } from "../flame/wire";
import type { GetDiffFlameGraphResponse } from "../gen/fleetscope/v1/compare_pb";
import { FlameGraphFormat } from "../enums";
import { formatTimeRange } from "../format";
import type { GetHeatmapSeriesResponse, GetSpansResponse } from "../gen/fleetscope/v1/query_pb";
import type { Profile } from "../gen/fleetscope/v1/profile_pb";
import type { Heatmap } from "../heatmap/model";
import { FilterPanel } from "../panels/filter";
import type { FlamePanel } from "../panels/flame";
import { GraphView } from "../panels/graphview";
import { HeaderPanel } from "../panels/header";
import type { ColumnAxis } from "../heatmap/view";
import { HeatmapPanel } from "../panels/heatmap";
import { SandwichPanel } from "../panels/sandwich";
import { SeriesPanel } from "../panels/series";
import { SpansPanel } from "../panels/spans";
import { perf } from "../perf";
import { chooseEvent, foldedFilename, functionRegex, Latest, wholeProfile, type Axis, type ViewState } from "../viewstate";
import { failed } from "./states";

/** Source is where a view's data comes from. */
export interface Source {
  heatmap(v: ViewState, signal: AbortSignal): Promise<Heatmap>;
  /** Whether view v's heatmap is already on its way (index.html's
   * prefetch): then the view asks for the rest once it is drawn. */
  prefetched?(v: ViewState): boolean;
  flame(v: ViewState, format: FlameGraphFormat, signal: AbortSignal): Promise<WireFlameGraph>;
  /** The URL that opens view v (the permalink). */
  permalink(v: ViewState): string;
  /** Records view v in the address bar. */
  record(v: ViewState): void;
  /** What to show instead of the view when a request finds nothing (the
   * profile was deleted, the link revoked). */
  notFound(): HTMLElement;
  /** The thread view's series (absent: no thread view, no filters). */
  series?(v: ViewState, signal: AbortSignal): Promise<GetHeatmapSeriesResponse>;
  /** The comparison of view v (absent: no comparisons); null when v asks
   * for none. */
  diff?(v: ViewState, signal: AbortSignal): Promise<GetDiffFlameGraphResponse | null>;
  /** The profile's spans from entry/return probes (absent: no spans panel). */
  spans?(signal: AbortSignal): Promise<GetSpansResponse>;
}

export interface ProfileViewOptions {
  source: Source;
  view: ViewState;
  /** The range and event cannot change (a shared view). */
  readOnly: boolean;
  /** Elements between the header and the heatmap (the share panel). */
  extras?: HTMLElement[];
  /** The header's actions (the Share button). */
  actions?: HTMLElement;
  /** After each change of the view. */
  onChange?: (v: ViewState) => void;
}

/** The panels under the heatmap (the graph's are the GraphView's). */
interface LowerPanels {
  flame: FlamePanel;
  series: SeriesPanel;
  sandwich: SandwichPanel;
  spans: SpansPanel;
}

/** hasProbes says whether a profile's events hold an entry/return probe
 * pair, named as perf names them (F and F__return): the spans' source. */
export function hasProbes(events: { name: string }[]): boolean {
  const names = new Set(events.map((e) => e.name));
  return events.some((e) => names.has(`${e.name}__return`));
}

/** nextFrame resolves in the first task after the next frame is painted. */
const nextFrame = () => new Promise<void>((r) => requestAnimationFrame(() => setTimeout(r)));
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class ProfileView {
  readonly el: HTMLElement;
  private _view: ViewState;
  private profile: Profile | null = null;
  private flameTotal: number | null = null; // the shown flame graph's total, once it has arrived
  private readonly ctrl = new AbortController();
  private readonly heatReq = new Latest();
  private readonly src: Source;
  private readonly opts: ProfileViewOptions;
  private readonly header: HeaderPanel;
  private readonly heat: HeatmapPanel;
  private readonly filter: FilterPanel | null;
  /** The flame graph, top functions and largest changes, and the
   * requests for the graph; its panels are made with the others under
   * the heatmap (lower). */
  private readonly graph: GraphView;
  /** Whether this is the owner's API: filters and the thread view. */
  private readonly owner: boolean;
  private readonly seriesReq = new Latest();
  /** The panels under the heatmap, made when first needed (lower): a
   * permalink's page draws its heatmap first and makes them while the
   * flame graph is on its way. */
  private lowerPanels: LowerPanels | null = null;
  /** Whether they have joined the page (attachBelow), and the frame a
   * flame graph waits for (start). */
  private belowAttached = false;
  private attached: Promise<void> = Promise.resolve();
  /** Where the heatmap's columns are (the thread view draws its strips there). */
  private axis: ColumnAxis | null = null;
  /** The spans were asked for before the profile's facts came. */
  private spansWanted = false;

  constructor(opts: ProfileViewOptions) {
    this.opts = opts;
    this.src = opts.source;
    this._view = opts.view;
    const v = opts.view;
    this.header = new HeaderPanel({ shared: opts.readOnly, actions: opts.actions });
    this.heat = new HeatmapPanel({
      rows: v.rows,
      idle: v.idle,
      readOnly: opts.readOnly,
      onSelect: (range) => {
        this.update({ ...this._view, range }); // the zoomed frame stays if the new range has it
        this.showSelection();
        void this.loadFlame();
      },
      onClear: () => {
        this.heat.clearSelection();
        this.selectWhole();
      },
      onEvent: (event) => {
        this.update(chooseEvent(this._view, event, this.profile?.defaultEvent ?? ""));
        void this.loadHeatmap();
        void this.loadSeries();
        void this.loadFlame();
      },
      onRows: (rows) => {
        this.update({ ...this._view, rows });
        void this.loadHeatmap();
      },
      onIdle: (idle) => {
        this.update({ ...this._view, idle });
        void this.loadHeatmap();
        void this.loadSeries();
        void this.loadFlame();
      },
      onDrawn: (ms) => perf.heatmapDrawn(ms),
      // the thread view's strips draw each second at the heatmap's pixels
      onAxis: (a) => {
        this.axis = a;
        this.lowerPanels?.series.align(a);
      },
    });
    this.owner = !opts.readOnly && this.src.series !== undefined;
    this.filter = this.owner
      ? new FilterPanel({
          onFunctions: (fn, xfn) => this.setFunctions(fn, xfn),
          onClearThreads: () => this.setFilter({ ...this._view, pids: [], tids: [], cpus: [] }),
          onAxis: (axis) => {
            this.update({ ...this._view, axis });
            this.filter?.show(this._view);
            void this.loadSeries();
          },
        })
      : null;
    this.filter?.show(v);
    this.heat.showBaseline(v.cmp === "base" ? v.base : null);
    this.graph = this.graphView();
    this.el = h("div", { class: "page profile-page" }, this.header.el, opts.extras ?? [], this.filter?.el ?? null, this.heat.el);
  }

  /** graphView is the view's flame graph section (its panels are made by lower). */
  private graphView(): GraphView {
    const opts = this.opts;
    return new GraphView({
      state: () => this._view,
      record: (change) => this.update({ ...this._view, ...change }),
      signal: this.ctrl.signal,
      fetch: (f) => this.src.flame(this._view, f, this.ctrl.signal),
      filename: () => foldedFilename(this.profile?.app, this._view),
      exports: !opts.readOnly,
      link: () => this.src.permalink(this._view),
      reload: () => void this.loadFlame(),
      onRendered: (ms) => perf.flameRendered(ms),
      compare: this.src.diff
        ? {
            onCompare: (cmp) => {
              this.update({ ...this._view, cmp, frame: "" });
              void this.loadFlame();
            },
            onPin: () => {
              if (!this._view.range) return;
              this.update({ ...this._view, base: { ...this._view.range }, cmp: "base", frame: "" }); // a copy: the heatmap may reuse its range
              void this.loadFlame();
            },
            onNormalize: (norm) => {
              this.update({ ...this._view, norm });
              void this.loadFlame();
            },
          }
        : undefined,
      onFilter: this.owner ? (name) => this.setFunctions(functionRegex(name), "") : undefined,
      onSandwich: (name) => {
        this.update({ ...this._view, sw: name });
        this.showSandwich();
      },
    });
  }

  /** lower makes the panels under the heatmap, once, showing the view as
   * it is: a flame graph on its way, its comparison. */
  private lower(): LowerPanels {
    if (this.lowerPanels) return this.lowerPanels;
    const flame = this.graph.flame;
    const series = new SeriesPanel({ onPick: (axis, key) => this.pickSeries(axis, key) });
    series.align(this.axis);
    const sandwich = new SandwichPanel({
      onClose: () => {
        this.update({ ...this._view, sw: "" });
        sandwich.hide();
      },
    });
    const spansPanel = new SpansPanel({
      onCondition: (spans) => {
        spansPanel.condition(spans);
        this.setFilter({ ...this._view, spans });
      },
      onSlowVsRest: () => {
        this.update({ ...this._view, cmp: "spans", frame: "" });
        void this.loadFlame();
      },
    });
    this.lowerPanels = { flame, series, sandwich, spans: spansPanel };
    this.flameLoading();
    return this.lowerPanels;
  }

  /** flameLoading shows in the flame panel that the view's graph is on its
   * way, with the comparison it asks for. */
  private flameLoading() {
    const v = this._view;
    this.flame.setCompare(v.cmp, v.base ? formatTimeRange(v.base) : null, v.norm);
    this.flame.loading();
  }

  private get flame(): FlamePanel {
    return this.lower().flame;
  }
  private get series(): SeriesPanel {
    return this.lower().series;
  }
  private get sandwich(): SandwichPanel {
    return this.lower().sandwich;
  }
  private get spans(): SpansPanel {
    return this.lower().spans;
  }

  get view(): ViewState {
    return this._view;
  }

  /** The profile, once setProfile has given it. */
  get current(): Profile | null {
    return this.profile;
  }

  /** attachBelow adds the panels under the heatmap to the page, once (not
   * after the view ended: a profile not found shows only that). */
  private attachBelow() {
    if (this.ctrl.signal.aborted || this.belowAttached) return;
    this.belowAttached = true;
    const l = this.lower();
    this.el.append(l.series.el, l.spans.el, l.flame.el, this.graph.diff.el, l.sandwich.el, this.graph.top.el);
  }

  /** start asks for the heatmap, the flame graph, the thread view and the
   * spans. The flame graph of a range is cheap and comes along; the whole
   * profile's costs the server a pass over every sample, so it waits until
   * the heatmap is up, not to slow what the user looks at first.
   *
   * When the heatmap was prefetched (a permalink opened), the first page
   * is only the heatmap and what is above it; the flame graph is asked for
   * at once and shown after the frame that shows the heatmap, with the
   * panels under it. The other requests (the thread view, the spans, and
   * the profile's facts, which the caller asks for when the promise
   * settles) wait for the flame graph too, for at most half a second: they
   * load the RPC code (src/rpc.ts), whose evaluation holds the main thread
   * for tens of milliseconds and would delay reading the flame graph. */
  start(): Promise<void> {
    const first = this.src.prefetched?.(this._view) ?? false;
    const heatDone = this.loadHeatmap();
    const live = () => !this.ctrl.signal.aborted;
    const painted = first ? heatDone.then(nextFrame) : Promise.resolve();
    // The panels under the heatmap (nothing above it moves) join the page
    // with the flame graph (or its error), or 0.4 s after the heatmap's
    // frame if it is slower: one layout for both, and none while the flame
    // graph's answer is read.
    void (first ? painted.then(() => sleep(400)) : painted).then(() => this.attachBelow());
    // They are made in the task after that frame, while the flame graph
    // is on its way: made with the page, ~4 ms before the heatmap was
    // drawn, for elements not shown until then.
    if (first) void painted.then(() => live() && this.lower());
    this.attached = painted;
    const flameDone = this._view.range && !first ? this.loadFlame() : heatDone.then(() => (live() ? this.loadFlame() : undefined));
    const rest = first ? Promise.race([flameDone, painted.then(() => sleep(500))]) : Promise.resolve();
    void rest.then(() => {
      if (!live()) return;
      void this.loadSeries();
      void this.loadSpans();
    });
    this.showSelection();
    return rest;
  }

  destroy() {
    this.ctrl.abort();
    this.heat.destroy();
    this.graph.destroy();
    this.lowerPanels?.sandwich.destroy();
  }

  /** setProfile shows the profile's facts and events. */
  setProfile(p: Profile) {
    this.profile = p;
    if (this.spansWanted) {
      this.spansWanted = false;
      void this.loadSpans();
    }
    this.header.show(p);
    this.heat.setEvents(p.events, p.defaultEvent, this._view.event);
    if (!p.timed) this.heat.untimed();
  }

  /** profileFailed shows that the profile's facts could not be read. */
  profileFailed(err: unknown, retry: () => void) {
    if (this.ctrl.signal.aborted) return;
    const p = problem(err);
    if (p.kind === "notfound") this.notFound();
    else failed(p, (p) => this.header.error(p, retry));
  }

  // ---- loading -----------------------------------------------------------------

  private notFound() {
    this.ctrl.abort();
    replace(this.el, this.src.notFound());
  }

  private async loadHeatmap() {
    const current = this.heatReq.begin();
    this.heat.loading();
    try {
      const d = await this.src.heatmap(this._view, this.ctrl.signal);
      if (!current()) return;
      perf.mark("heatmap-response");
      this.heat.show(d, this._view.range, this._view.idle);
      this.showSelection();
    } catch (err) {
      if (this.ctrl.signal.aborted || !current()) return;
      const p = problem(err);
      if (p.kind === "invalid" && this.profile && !this.profile.timed) return; // said already
      if (p.kind === "notfound") return this.notFound();
      failed(p, (p) => this.heat.error(p, () => void this.loadHeatmap()));
    }
  }

  /** loadFlame asks for the view's flame graph, or its comparison
   * (GraphView's load: an answer a newer request replaced is dropped),
   * drawn once the panels under the heatmap have joined the page. */
  private loadFlame(): Promise<void> {
    this.flameTotal = null;
    const v0 = this._view;
    if (this.lowerPanels) this.flameLoading(); // (panels made later show it when made)
    this.showSelection();
    const t0 = performance.now();
    const diff = this.src.diff;
    return this.graph.load({
      diff: diff ? () => diff(v0, this.ctrl.signal) : undefined,
      graph: () => this.src.flame(this._view, FlameGraphFormat.TREE, this.ctrl.signal),
      drawDiff: async (d, current) => {
        await this.attached;
        if (!current()) return;
        this.attachBelow();
        this.showDiff(d);
      },
      draw: (res, current) => this.drawFlame(res, t0, current),
      failed: (p) => this.flameFailed(p),
    });
  }

  /** drawFlame draws flame graph res, asked for at t0, once the panels
   * under the heatmap have joined the page (the heatmap's frame, when it
   * came first), then its top functions and sandwich. */
  private async drawFlame(res: WireFlameGraph, t0: number, current: () => boolean) {
    const t1 = performance.now();
    await this.attached; // (the heatmap's frame, when it came first)
    if (!current()) return;
    this.attachBelow();
    const tl = performance.now();
    const l = layoutOf(res);
    const t2 = performance.now();
    this.flameTotal = Number(res.total);
    const v = this._view;
    const r = v.range;
    const firstGraph = !this.flame.layout; // no tables under it yet, so none stale
    this.graph.show(
      l,
      r ? formatTimeRange(r) : "whole profile",
      !r
        ? "This profile has no samples for this event."
        : this.opts.readOnly
          ? `Nothing ran (that is not idle) in ${formatTimeRange(r)}.${v.idle ? "" : " Tick “Include idle” to see idle samples."}`
          : `Nothing ran (that is not idle) in ${formatTimeRange(r)}. Choose other cells in the heatmap${v.idle ? "" : ", or include idle samples"}.`,
    );
    perf.flameLoaded({ nodes: l.n, fetchMs: t1 - t0, wasm: res.layout != null, decodeMs: t2 - tl, renderMs: Number(this.flame.canvas.dataset.renderMs), askedAtMs: t0, drawnAtMs: performance.now() });
    this.showSelection();
    if (firstGraph) {
      // The page's first graph goes out in its own frame; the tables
      // under it (the top functions of a whole profile's 141k nodes
      // take 15-50 ms here) come in the next.
      await nextFrame();
      if (!current()) return;
    }
    this.graph.showTop();
    this.showSandwich();
  }

  /** flameFailed shows a failed flame graph request the profile view's
   * own way, when it has one: the profile not found, or a range the
   * server refused (offering the whole profile). Otherwise the flame panel
   * shows it (GraphView's load). */
  private flameFailed(p: Problem): boolean {
    if (p.kind === "notfound") {
      this.notFound();
      return true;
    }
    this.attachBelow(); // the error shows in the flame panel
    this.sandwich.hide(); // what was counted from the last graph is not this view's
    if (p.kind !== "invalid" || !this._view.range || this.opts.readOnly || this._view.fn || this._view.xfn) return false;
    this.graph.clearTables();
    this.flame.badRange(p, () => {
      this.heat.clearSelection();
      this.selectWhole();
    });
    return true;
  }

  /** showDiff draws a comparison: B's shape coloured by the change, and
   * the largest changes. */
  private showDiff(d: GetDiffFlameGraphResponse) {
    const v = this._view;
    const r = v.range;
    const where = r ? formatTimeRange(r) : "the whole profile";
    const sel = v.cmp === "spans" ? `the requests slower than p95, ${where}` : where;
    const base = v.cmp === "rest" ? "the rest of the profile" : v.cmp === "spans" ? "the requests not slower than p95" : v.base ? formatTimeRange(v.base) : "";
    this.flameTotal = Number(d.totalB);
    this.graph.showDiff(d, base, sel, `${sel} against ${base}`, `Nothing ran (that is not idle) in ${sel}.`);
    this.showSandwich();
    this.showSelection();
  }

  private async loadSpans() {
    if (!this.src.spans) return;
    // Only a profile with entry/return probes has spans (asking of another
    // was a 400 on every profile page): known once its facts are.
    if (!this.profile) {
      this.spansWanted = true;
      return;
    }
    if (!hasProbes(this.profile.events)) return this.spans.hide();
    try {
      const res = await this.src.spans(this.ctrl.signal);
      if (res.spans > 0n) this.flame.enableSpans();
      this.spans.show(res, this._view.spans);
    } catch {
      this.spans.hide(); // no entry/return probes in this profile
    }
  }

  private async loadSeries() {
    const v = this._view;
    if (!this.src.series || v.axis === "offset") {
      this.seriesReq.begin();
      this.series.hide();
      return;
    }
    const current = this.seriesReq.begin();
    this.series.loading(v.axis);
    try {
      const res = await this.src.series(v, this.ctrl.signal);
      if (current()) this.series.show(v.axis, res);
    } catch (err) {
      if (this.ctrl.signal.aborted || !current()) return;
      failed(problem(err), (p) => this.series.error(v.axis, p, () => void this.loadSeries()));
    }
  }

  /** pickSeries narrows the filter to a thread view row's CPU, thread or process. */
  private pickSeries(axis: Axis, key: string) {
    const n = Number(key.split("/").pop());
    if (!Number.isInteger(n)) return;
    const v = this._view;
    this.setFilter({
      ...v,
      cpus: axis === "cpu" ? [n] : v.cpus,
      tids: axis === "thread" ? [n] : v.tids,
      pids: axis === "process" ? [n] : v.pids,
    });
  }

  private setFunctions(fn: string, xfn: string) {
    this.setFilter({ ...this._view, fn, xfn });
  }

  /** setFilter applies view next's filters: everything counted again. */
  private setFilter(next: ViewState) {
    this.update({ ...next, frame: "" });
    this.filter?.show(this._view);
    void this.loadHeatmap();
    void this.loadSeries();
    void this.loadFlame();
  }

  private showSandwich() {
    const l = this.flame.layout;
    if (!this._view.sw || !l) return this.sandwich.hide();
    this.sandwich.show(l, this._view.sw);
  }

  // ---- changes -------------------------------------------------------------------

  /** update records a new view in the URL (without drawing anything). */
  private update(next: ViewState) {
    this._view = next;
    this.heat.showBaseline(next.cmp === "base" ? next.base : null);
    this.src.record(next);
    this.opts.onChange?.(next);
  }

  private selectWhole() {
    this.update(wholeProfile(this._view));
    void this.loadFlame();
  }

  private showSelection() {
    this.heat.showSelection(this._view.range, this.flameTotal);
  }
}
