// The flame graph panel: the flame graph canvas (flame/view.ts) with its
// total, search box and matched share, orientation switch, downloads
// (folded stacks, and svg, pprof, speedscope, json), the comparison
// switch (the selection against the rest of the profile or a pinned
// baseline range, raw or normalized), copy-link button, and the zoom
// breadcrumb. It draws the
// layout, zoom, search and orientation it is given; what the user asks for
// (a search, an orientation, a zoom, a link, a download) goes to a callback
// and comes back through show() or redraw() once the owner has recorded it.

import type { Problem } from "../api";
import { h, replace, debounce } from "../dom";
import { ancestors, type Layout } from "../flame/model";
import { FlameView, type Orientation } from "../flame/view";
import { formatCount, formatPercent } from "../format";
import { emptyState, errorState, loadingState } from "../pages/states";
import type { Compare } from "../viewstate";

/** The formats of the download menu. */
export type DownloadFormat = "svg" | "pprof" | "speedscope" | "json";

export interface FlamePanelOptions {
  /** The search box's text and the orientation, initially. */
  search: string;
  orient: Orientation;
  /** The search box's text, on Enter, Escape (cleared) or a pause in typing. */
  onSearch: (search: string) => void;
  onOrient: (o: Orientation) => void;
  /** A frame clicked (in the graph or the breadcrumb); 0 is the root. */
  onZoom: (node: number) => void;
  /** The permalink to copy. */
  link: () => string;
  /** Downloads the graph as folded stacks (the button is disabled meanwhile). */
  onDownloadFolded: () => Promise<void>;
  /** Downloads the graph in an export format. */
  onDownload?: (format: DownloadFormat) => Promise<void>;
  /** The comparison switch (absent: no comparisons here). */
  compare?: {
    onCompare: (cmp: Compare) => void;
    /** Pin the selection as the baseline. */
    onPin: () => void;
    /** Normalize (true), raw counts (false), or automatic (null). */
    onNormalize: (norm: boolean | null) => void;
  };
  /** After each drawing, with the milliseconds it took (for the bench). */
  onRendered?: (ms: number) => void;
}

export class FlamePanel {
  readonly el: HTMLElement;
  private view: FlameView;
  private box = h("div", { class: "flame-box" }, loadingState("flame graph", 200));
  private totalEl = h("span", { class: "flame-total", "data-testid": "flame-total" });
  private searchBox: HTMLInputElement;
  private matched = h("span", { class: "matched off", "data-testid": "matched", "aria-live": "polite" });
  private orientBtns: HTMLButtonElement[];
  private breadcrumb = h("nav", { class: "breadcrumb", "aria-label": "Zoomed frame", "data-testid": "breadcrumb" });
  private resetBtn: HTMLButtonElement;
  private copyBtn: HTMLButtonElement;
  private scope = "";
  private colours: string[] | null = null;
  private compareSel: HTMLSelectElement | null = null;
  private pinBtn: HTMLButtonElement | null = null;
  private normBox: HTMLInputElement | null = null;
  private normMode = h("span", { class: "norm-mode muted small", "data-testid": "diff-mode", "aria-live": "polite" });
  private normAuto: HTMLButtonElement | null = null;
  private opts: FlamePanelOptions;

  constructor(opts: FlamePanelOptions) {
    this.opts = opts;
    this.view = new FlameView({ onZoom: opts.onZoom, onRendered: opts.onRendered });
    this.searchBox = h("input", {
      type: "search",
      class: "flame-search",
      placeholder: "Search functions (text or /regex/)",
      "aria-label": "Search functions",
      "data-testid": "flame-search",
      value: opts.search,
      spellcheck: "false",
    });
    this.orientBtns = (["icicle", "flame"] as Orientation[]).map((o) =>
      h(
        "button",
        { type: "button", class: "seg", "data-testid": `orient-${o}`, title: o === "icicle" ? "Root at the top" : "Root at the bottom", onclick: () => opts.onOrient(o) },
        o === "icicle" ? "Icicle" : "Flame",
      ),
    );
    this.copyBtn = h("button", { type: "button", class: "primary", "data-testid": "copy-link", onclick: () => void this.copyLink() }, "Copy link");
    const foldedBtn = h("button", { type: "button", class: "ghost", "data-testid": "download-folded", title: "Download this range as folded stacks" }, "Folded ↓");
    foldedBtn.addEventListener("click", async () => {
      foldedBtn.disabled = true;
      try {
        await opts.onDownloadFolded();
      } finally {
        foldedBtn.disabled = false;
      }
    });
    let downloadSel: HTMLSelectElement | null = null;
    if (opts.onDownload) {
      const onDownload = opts.onDownload;
      const sel = h(
        "select",
        { class: "download-menu", "data-testid": "download", "aria-label": "Download this flame graph as", title: "Download this flame graph" },
        h("option", { value: "" }, "Download…"),
        h("option", { value: "svg" }, "SVG (interactive)"),
        h("option", { value: "pprof" }, "pprof (go tool pprof)"),
        h("option", { value: "speedscope" }, "speedscope"),
        h("option", { value: "json" }, "JSON tree"),
      );
      sel.addEventListener("change", async () => {
        const f = sel.value as DownloadFormat;
        if (!f) return;
        sel.disabled = true;
        try {
          await onDownload(f);
        } finally {
          sel.disabled = false;
          sel.value = "";
        }
      });
      downloadSel = sel;
    }
    let compareBox: HTMLElement | null = null;
    if (opts.compare) {
      const c = opts.compare;
      this.compareSel = h(
        "select",
        { "data-testid": "compare", "aria-label": "Compare the selection with" },
        h("option", { value: "" }, "No comparison"),
        h("option", { value: "rest" }, "Selection vs rest of profile"),
        h("option", { value: "base" }, "Selection vs pinned range"),
        h("option", { value: "spans", hidden: true }, "Slow requests (> p95) vs the rest"),
      );
      this.compareSel.addEventListener("change", () => c.onCompare(this.compareSel!.value as Compare));
      this.pinBtn = h("button", { type: "button", class: "ghost", "data-testid": "pin-baseline", title: "Pin the selected range as the baseline to compare other ranges with", onclick: () => c.onPin() }, "Pin as baseline");
      this.normBox = h("input", { type: "checkbox", "data-testid": "diff-normalize" });
      this.normBox.addEventListener("change", () => c.onNormalize(this.normBox!.checked));
      this.normAuto = h(
        "button",
        { type: "button", class: "ghost small", "data-testid": "diff-normalize-auto", hidden: true, title: "Normalize when the totals differ more than twofold", onclick: () => c.onNormalize(null) },
        "Automatic",
      );
      compareBox = h(
        "div",
        { class: "compare-controls" },
        this.compareSel,
        this.pinBtn,
        h("label", { class: "check", title: "Scale the baseline to the selection's total" }, this.normBox, " Normalize"),
        this.normAuto,
        this.normMode,
      );
    }
    this.setOrient(opts.orient);
    this.resetBtn = h("button", { type: "button", class: "ghost", "data-testid": "reset-zoom", disabled: true, onclick: () => opts.onZoom(0) }, "Reset zoom");

    this.el = h(
      "section",
      { class: "panel flame-panel", "aria-labelledby": "flame-title" },
      h(
        "div",
        { class: "panel-head" },
        h("h2", { id: "flame-title" }, "Flame graph"),
        this.totalEl,
        h(
          "div",
          { class: "controls" },
          h("div", { class: "search-wrap" }, this.searchBox, this.matched),
          h("div", { class: "segmented", role: "group", "aria-label": "Orientation" }, this.orientBtns),
          foldedBtn,
          downloadSel,
          this.copyBtn,
        ),
      ),
      compareBox,
      h("div", { class: "crumb-row" }, this.breadcrumb, this.resetBtn),
      this.box,
    );

    const search = () => opts.onSearch(this.searchBox.value);
    this.searchBox.addEventListener("input", debounce(search, 120));
    this.searchBox.addEventListener("keydown", (e) => {
      if (e.key === "Enter") search();
      if (e.key === "Escape") {
        this.searchBox.value = "";
        search();
      }
    });
  }

  destroy() {
    this.view.destroy();
  }

  /** layout is the graph shown (null before the first). */
  get layout(): Layout | null {
    return this.view.current;
  }

  /** zoomed is the zoomed frame's node (0: the root). */
  get zoomed(): number {
    return this.view.zoomed;
  }

  /** The drawing's canvas (its data-* attributes carry what was drawn). */
  get canvas(): HTMLCanvasElement {
    return this.view.canvas;
  }

  /** loading greys out the graph while the next one is on its way (a
   * placeholder when there is none yet). */
  loading() {
    this.box.classList.add("stale");
    if (!this.view.current) replace(this.box, loadingState("flame graph", 200));
  }

  /** show draws layout l zoomed to node zoom; scope says what it covers
   * ("whole profile", a range). An empty graph shows emptyBody instead.
   * colours, when given, colours each node (a differential graph). */
  show(l: Layout, zoom: number, search: string, orient: Orientation, scope: string, emptyBody: string, colours: string[] | null = null) {
    this.scope = scope;
    this.colours = colours;
    this.canvas.dataset.diff = colours ? "1" : "";
    this.setOrient(orient);
    this.box.classList.remove("stale");
    if (l.total === 0) {
      this.view.set(l, 0, search, orient, this.colours);
      replace(this.box, emptyState("No samples in this range", emptyBody, "no-samples"), h("div", { hidden: true }, this.view.el));
    } else {
      if (this.view.el.parentElement !== this.box) replace(this.box, this.view.el);
      this.view.set(l, zoom, search, orient, this.colours);
    }
    this.renderChrome(search);
  }

  /** redraw draws the current graph again with a search and orientation,
   * keeping the zoom. */
  redraw(search: string, orient: Orientation) {
    this.setOrient(orient);
    const l = this.view.current;
    if (!l) return;
    this.view.set(l, l.n ? this.view.zoomed : 0, search, orient, this.colours);
    this.renderChrome(search);
  }

  /** zoom draws the current graph zoomed to node i. */
  zoom(i: number, search: string, orient: Orientation) {
    const l = this.view.current;
    if (!l) return;
    this.view.set(l, i, search, orient, this.colours);
    this.renderChrome(search);
  }

  /** setCompare shows the comparison state: cmp, whether a baseline is
   * pinned (and which), normalized. */
  setCompare(cmp: Compare, pinned: string | null, norm: boolean | null) {
    if (!this.compareSel || !this.pinBtn || !this.normBox) return;
    this.compareSel.value = cmp;
    (this.compareSel.options[2] as HTMLOptionElement).disabled = pinned === null;
    this.pinBtn.title = pinned ? `Baseline pinned: ${pinned}. Click to pin the selected range instead.` : "Pin the selected range as the baseline to compare other ranges with";
    this.pinBtn.dataset.pinned = pinned ?? "";
    if (norm !== null) this.normBox.checked = norm;
    this.normBox.disabled = cmp === "";
    if (this.normAuto) this.normAuto.hidden = norm === null || cmp === "";
    if (cmp === "") this.showNormMode(null);
  }

  /** showNormMode says which mode the comparison on screen is drawn in
   * (null: no comparison), and ticks Normalize when it is normalized. */
  showNormMode(m: { mode: string; text: string; normalized: boolean } | null) {
    this.normMode.textContent = m ? m.text : "";
    this.normMode.dataset.mode = m ? m.mode : "";
    if (m && this.normBox) this.normBox.checked = m.normalized;
  }

  /** enableSpans offers "slow requests vs the rest" (the profile has spans). */
  enableSpans() {
    if (this.compareSel) (this.compareSel.options[3] as HTMLOptionElement).hidden = false;
  }

  /** setSearch puts text in the search box (the owner then searches for it). */
  setSearch(text: string) {
    this.searchBox.value = text;
  }

  focusSearch() {
    this.searchBox.focus();
  }

  /** error shows a failed request, with Retry when that can help; the
   * last graph's numbers (its total, zoom, matched share) go with it. */
  error(p: Problem, retry: () => void) {
    this.box.classList.remove("stale");
    replace(this.box, errorState(p, retry));
    this.clearChrome();
  }

  /** badRange says the server refused the range, offering the whole profile. */
  badRange(p: Problem, onWhole: () => void) {
    this.box.classList.remove("stale");
    replace(this.box, errorState(p, undefined, "Cannot show this range"), h("button", { type: "button", class: "ghost", onclick: onWhole }, "Show the whole profile"));
    this.clearChrome();
  }

  /** clearChrome empties what describes a graph no longer shown. */
  private clearChrome() {
    replace(this.totalEl);
    delete this.totalEl.dataset.total;
    replace(this.breadcrumb);
    this.resetBtn.disabled = true;
    this.matched.classList.add("off");
    this.matched.textContent = "";
    delete this.matched.dataset.samples;
    this.showNormMode(null);
  }

  // renderChrome writes what surrounds the canvas: the total, the
  // breadcrumb of the zoomed frame, the matched share.
  private renderChrome(search: string) {
    const l = this.view.current;
    if (!l) return;
    this.totalEl.dataset.total = String(l.total);
    replace(this.totalEl, h("b", null, formatCount(l.total)), ` samples · ${this.scope}`);
    const zoom = this.view.zoomed;
    const chain = l.n ? ancestors(l, zoom) : [];
    replace(
      this.breadcrumb,
      chain.map((i, k) =>
        k === chain.length - 1
          ? h("span", { class: "crumb current", "aria-current": "true", title: l.names[l.name[i]] }, l.names[l.name[i]])
          : [h("button", { type: "button", class: "crumb", title: l.names[l.name[i]], onclick: () => this.opts.onZoom(i) }, l.names[l.name[i]]), h("span", { class: "sep", "aria-hidden": "true" }, "›")],
      ),
    );
    this.resetBtn.disabled = zoom === 0;
    const m = this.matched;
    if (search.trim()) {
      const n = this.view.matched();
      m.dataset.samples = String(n);
      m.dataset.percent = l.total ? ((100 * n) / l.total).toFixed(2) : "0";
      m.textContent = `Matched ${formatPercent(n, l.total)} · ${formatCount(n)} samples`;
      m.classList.remove("off");
    } else {
      // (its room kept: the row does not wrap when a search starts)
      m.classList.add("off");
      m.textContent = "";
      delete m.dataset.samples;
    }
  }

  private setOrient(o: Orientation) {
    for (const b of this.orientBtns) b.setAttribute("aria-pressed", String(b.dataset.testid === `orient-${o}`));
  }

  private async copyLink() {
    const url = this.opts.link();
    const btn = this.copyBtn;
    btn.dataset.link = url;
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
    btn.textContent = ok ? "Copied ✓" : "Copy failed";
    setTimeout(() => (btn.textContent = "Copy link"), 1800);
  }
}
