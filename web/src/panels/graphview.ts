// A page's flame graph section: the flame graph panel (flame.ts), the top
// functions (top.ts) and the largest changes of a comparison
// (diffchanges.ts), wired together the same way on every page that shows
// a graph (pages/profileview.ts, pages/fleetview.ts), and the requests for
// its graph. The search, orientation and zoomed frame live in the page's
// state (graphstate.ts's GraphState, part of ViewState and FleetState): a
// change is recorded there through record() and drawn here; a picked
// function is searched for; the "/" key focuses the search box; the
// downloads ask the page's fetch for the graph in the format wanted.
//
// A page asks for its graph through load(): the comparison its state asks
// for, or else the graph, each drawn by the page (with show() or
// showDiff()) unless a newer load began meanwhile: an answer a newer
// request replaced is dropped, and a failure shows in the flame panel with
// Retry (reload) unless the page shows it its own way. What the graph
// covers (a profile's range, a fleet selection) and when to ask stay the
// page's. The panels are made when first used: a profile permalink's page
// draws its heatmap first, and asks for the graph before it makes them.

import { problem, type Problem } from "../api";
import { failed } from "../pages/states";
import { saveExport, saveFolded } from "../download";
import { diffLayout } from "../flame/diff";
import type { Layout } from "../flame/model";
import type { WireFlameGraph } from "../flame/wire";
import type { FlameGraphFormat } from "../enums";
import type { GetDiffFlameGraphResponse } from "../gen/fleetscope/v1/compare_pb";
import { diffMode, downloadBase, frameAt, pickFunction, zoomOf, type DiffMode, type GraphState } from "../graphstate";
import { Latest } from "../viewstate";
import { DiffPanel } from "./diffchanges";
import { FlamePanel, type DownloadFormat, type FlamePanelOptions } from "./flame";
import { TopPanel } from "./top";

export interface GraphViewOptions {
  /** The page's state now (its search, orientation, zoomed frame and a
   * comparison's normalization). */
  state: () => GraphState;
  /** Records a change of search, orientation or frame in the page's
   * state and URL (nothing is asked for again). */
  record: (change: Partial<GraphState>) => void;
  /** The page's requests' signal: once it is aborted (the page is left),
   * a load's answer or failure is no longer shown. */
  signal: AbortSignal;
  /** The graph on screen in another format (the downloads). */
  fetch: (format: FlameGraphFormat) => Promise<WireFlameGraph>;
  /** The name of the graph's folded stacks download (a profile's or a
   * fleet's foldedFilename); the other downloads are named after it. */
  filename: () => string;
  /** Whether the export formats (svg, pprof, speedscope, json) are
   * offered besides folded stacks. */
  exports: boolean;
  /** The permalink to copy. */
  link: () => string;
  /** Asks for the graph again (Retry, after a failed load or download). */
  reload: () => void;
  /** The flame panel's comparison switch (absent: none in the panel). */
  compare?: FlamePanelOptions["compare"];
  /** Says which mode the comparison on screen is drawn in (null: none
   * drawn), where the page's comparison switch is; absent: the flame
   * panel's. */
  showMode?: (m: DiffMode | null) => void;
  /** The top functions' "Heatmap" (filter to a function) and "Sandwich". */
  onFilter?: (name: string) => void;
  onSandwich?: (name: string) => void;
  onRendered?: (ms: number) => void;
}

/** GraphAsk is what a page's load() asks for and how it draws the
 * answers. current, given to the drawing, says whether this load is still
 * the latest (a drawing that waits, or asks for more, checks it again). */
export interface GraphAsk<G> {
  /** The comparison the page's state asks for (its answer null: none
   * after all); null, or absent, when it asks for none. */
  diff?: () => Promise<GetDiffFlameGraphResponse | null> | null;
  /** The graph, when no comparison is drawn. */
  graph: () => Promise<G>;
  /** Draws a comparison's answer (with showDiff). */
  drawDiff: (d: GetDiffFlameGraphResponse, current: () => boolean) => void | Promise<void>;
  /** Draws the graph's answer (with show, then showTop). */
  draw: (g: G, current: () => boolean) => void | Promise<void>;
  /** Shows a failure the page's own way (a profile not found, a range the
   * server refused) and returns true; false leaves it to the flame panel. */
  failed?: (p: Problem) => boolean;
}

/** The section's panels. */
interface Panels {
  flame: FlamePanel;
  top: TopPanel;
  diff: DiffPanel;
}

export class GraphView {
  private made: Panels | null = null;
  /** Orders the loads: only the latest one's answer is drawn. */
  private readonly req = new Latest();
  private readonly opts: GraphViewOptions;

  constructor(opts: GraphViewOptions) {
    this.opts = opts;
  }

  get flame(): FlamePanel {
    return this.panels().flame;
  }
  get top(): TopPanel {
    return this.panels().top;
  }
  get diff(): DiffPanel {
    return this.panels().diff;
  }

  /** panels makes the panels, the first time, at the state's search and
   * orientation, and starts listening for the "/" key. */
  private panels(): Panels {
    if (this.made) return this.made;
    const opts = this.opts;
    const s = opts.state();
    const flame = new FlamePanel({
      search: s.search,
      orient: s.orient,
      onSearch: (search) => {
        opts.record({ search });
        this.redraw();
      },
      onOrient: (orient) => {
        opts.record({ orient });
        this.redraw();
      },
      onZoom: (i) => this.zoomTo(i),
      link: opts.link,
      onDownloadFolded: () => this.downloadFolded(),
      onDownload: opts.exports ? (format) => this.download(format) : undefined,
      onRendered: opts.onRendered,
      compare: opts.compare,
    });
    const top = new TopPanel({
      onPick: (name) => {
        const search = pickFunction(name);
        flame.setSearch(search);
        opts.record({ search });
        this.redraw();
      },
      onFilter: opts.onFilter,
      onSandwich: opts.onSandwich,
    });
    this.made = { flame, top, diff: new DiffPanel() };
    window.addEventListener("keydown", this.onKey);
    return this.made;
  }

  destroy() {
    this.made?.flame.destroy();
    window.removeEventListener("keydown", this.onKey);
  }

  /** load asks for the page's graph as ask says, and has the page draw the
   * answer unless a newer load began meanwhile. With no comparison to
   * draw, the largest changes and the comparison's mode are hidden. A
   * failure (not the page's to show: ask.failed) shows in the flame panel,
   * with Retry, and empties the tables, which count the last graph. */
  async load<G>(ask: GraphAsk<G>): Promise<void> {
    const current = this.req.begin();
    try {
      const asked = ask.diff?.() ?? null;
      const d = asked && (await asked);
      if (asked && !current()) return;
      if (d) return await ask.drawDiff(d, current);
      this.made?.diff.hide();
      this.showMode(null);
      const g = await ask.graph();
      if (!current()) return;
      await ask.draw(g, current);
    } catch (err) {
      if (this.opts.signal.aborted || !current()) return;
      const p = problem(err);
      if (ask.failed?.(p)) return;
      failed(p, (p) => {
        this.clearTables();
        this.flame.error(p, this.opts.reload);
      });
    }
  }

  /** The graph on screen (null before the first). */
  get layout(): Layout | null {
    return this.made?.flame.layout ?? null;
  }

  /** show draws graph l at the state's zoomed frame (dropping the frame
   * from the state when l lacks it); scope says what it covers, emptyBody
   * what to say when it has no samples. The top functions wait for
   * showTop (a page's first graph goes out in a frame of its own). */
  show(l: Layout, scope: string, emptyBody: string) {
    const s = this.opts.state();
    const z = zoomOf(l, s.frame);
    if (z.frame !== s.frame) this.opts.record({ frame: z.frame });
    this.flame.show(l, z.zoom, s.search, s.orient, scope, emptyBody);
  }

  /** showDiff draws a comparison: B's shape coloured by the change, and
   * the largest changes of B (named b) against A (named a), with the top
   * functions; the comparison's mode is said (showMode). */
  showDiff(d: GetDiffFlameGraphResponse, a: string, b: string, scope: string, emptyBody: string) {
    const s = this.opts.state();
    this.showMode(diffMode(s.norm, d));
    const dl = diffLayout(d.tree, d.normalized);
    this.flame.show(dl.layout, 0, s.search, s.orient, scope, emptyBody, dl.colours);
    this.flame.canvas.dataset.totalA = String(d.totalA);
    this.flame.canvas.dataset.totalB = String(d.totalB);
    this.diff.show(a, b, Number(d.totalA), Number(d.totalB), d.normalized, d.changesBySelf, d.changesByTotal);
    this.showTop();
  }

  /** clearTables empties what was counted from the last graph (a request
   * failed: its functions and changes are not the view's). */
  clearTables() {
    this.top.clear();
    this.diff.hide();
  }

  /** showTop lists the top functions under the zoomed frame. */
  showTop() {
    const l = this.flame.layout;
    if (l) this.top.show(l, this.flame.zoomed, this.opts.state().search.trim() !== "");
  }

  /** redraw draws the graph again with the state's search and orientation. */
  redraw() {
    const s = this.opts.state();
    this.flame.redraw(s.search, s.orient);
    this.showTop();
  }

  private zoomTo(i: number) {
    const l = this.flame.layout;
    if (!l) return;
    this.opts.record({ frame: frameAt(l, i) });
    const s = this.opts.state();
    this.flame.zoom(i, s.search, s.orient);
    this.showTop();
  }

  private async download(format: DownloadFormat) {
    try {
      await saveExport(format, this.opts.fetch, this.flame.layout, downloadBase(this.opts.filename()));
    } catch (err) {
      this.downloadFailed(err);
    }
  }

  private async downloadFolded() {
    try {
      await saveFolded(this.opts.fetch, downloadBase(this.opts.filename()));
    } catch (err) {
      this.downloadFailed(err);
    }
  }

  private downloadFailed(err: unknown) {
    failed(problem(err), (p) => this.flame.error(p, this.opts.reload));
  }

  /** showMode says which mode the comparison on screen is drawn in. */
  private showMode(m: DiffMode | null) {
    if (this.opts.showMode) this.opts.showMode(m);
    else this.made?.flame.showNormMode(m);
  }

  private onKey = (e: KeyboardEvent) => {
    if (e.key === "/" && !(e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement || e.target instanceof HTMLSelectElement)) {
      e.preventDefault();
      this.flame.focusSearch();
    }
  };
}
