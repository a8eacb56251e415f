// A page's flame graph section: the flame graph panel (flame.ts), the top
// functions (top.ts) and the largest changes of a comparison
// (diffchanges.ts), wired together the same way on every page that shows
// a graph (pages/profileview.ts, pages/fleet.ts). The search, orientation
// and zoomed frame live in the page's state (graphstate.ts's GraphState,
// part of ViewState and FleetState): a change is recorded there through
// record() and drawn here; a picked function is searched for; the "/" key
// focuses the search box; the downloads ask the page's fetch for the graph
// in the format wanted. What to draw, and when, stays the page's: it asks
// for the graph (a profile's range, a fleet selection) and hands it to
// show() or showDiff().

import { problem } from "../api";
import { failed } from "../pages/states";
import { saveExport, saveFolded } from "../download";
import { diffLayout } from "../flame/diff";
import type { Layout } from "../flame/model";
import type { WireFlameGraph } from "../flame/wire";
import type { FlameGraphFormat } from "../enums";
import type { GetDiffFlameGraphResponse } from "../gen/fleetscope/v1/compare_pb";
import { downloadBase, frameAt, pickFunction, zoomOf, type GraphState } from "../graphstate";
import { DiffPanel } from "./diffchanges";
import { FlamePanel, type DownloadFormat, type FlamePanelOptions } from "./flame";
import { TopPanel } from "./top";

export interface GraphViewOptions {
  /** The page's state now (its search, orientation and zoomed frame). */
  state: () => GraphState;
  /** Records a change of search, orientation or frame in the page's
   * state and URL (nothing is asked for again). */
  record: (change: Partial<GraphState>) => void;
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
  /** Asks for the graph again (a failed download's Retry). */
  reload: () => void;
  /** The flame panel's comparison switch (absent: none in the panel). */
  compare?: FlamePanelOptions["compare"];
  /** The top functions' "Heatmap" (filter to a function) and "Sandwich". */
  onFilter?: (name: string) => void;
  onSandwich?: (name: string) => void;
  onRendered?: (ms: number) => void;
}

export class GraphView {
  readonly flame: FlamePanel;
  readonly top: TopPanel;
  readonly diff = new DiffPanel();
  private readonly opts: GraphViewOptions;

  constructor(opts: GraphViewOptions) {
    this.opts = opts;
    const s = opts.state();
    this.flame = new FlamePanel({
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
    this.top = new TopPanel({
      onPick: (name) => {
        const search = pickFunction(name);
        this.flame.setSearch(search);
        opts.record({ search });
        this.redraw();
      },
      onFilter: opts.onFilter,
      onSandwich: opts.onSandwich,
    });
    window.addEventListener("keydown", this.onKey);
  }

  destroy() {
    this.flame.destroy();
    window.removeEventListener("keydown", this.onKey);
  }

  /** The graph on screen (null before the first). */
  get layout(): Layout | null {
    return this.flame.layout;
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
   * functions. */
  showDiff(d: GetDiffFlameGraphResponse, a: string, b: string, scope: string, emptyBody: string) {
    const s = this.opts.state();
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

  private onKey = (e: KeyboardEvent) => {
    if (e.key === "/" && !(e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement || e.target instanceof HTMLSelectElement)) {
      e.preventDefault();
      this.flame.focusSearch();
    }
  };
}
