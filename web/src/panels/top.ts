// The top-functions panel: a sortable table of the functions under the
// zoomed frame of a flame graph, with self and total samples and their
// shares, the first 50 shown until "Show all". Its sort order and length
// are its own; clicking a function's name is reported through onPick.

import { h, replace } from "../dom";
import { sortFunctions, topFunctions, type FunctionStat, type Layout, type SortKey } from "../flame/model";
import { formatCount, formatPercent } from "../format";

export interface TopPanelOptions {
  /** A function's name clicked (to search for it). */
  onPick: (name: string) => void;
  /** "Heatmap": filter the samples to those with this function. */
  onFilter?: (name: string) => void;
  /** "Sandwich": show its callers and callees. */
  onSandwich?: (name: string) => void;
}

export class TopPanel {
  readonly el = h("section", { class: "panel top-panel", "aria-labelledby": "top-title" });
  private sort: { key: SortKey; asc: boolean } = { key: "self", asc: false };
  private limit = 50;
  private opts: TopPanelOptions;

  constructor(opts: TopPanelOptions) {
    this.opts = opts;
  }

  /** clear empties the table (its graph failed to load: its rows would be
   * another filter's or range's). */
  clear() {
    replace(this.el);
    this.el.hidden = true;
  }

  /** show lists the functions of layout l under node zoom; searching says
   * whether a search is active (a click then replaces it). */
  show(l: Layout, zoom: number, searching: boolean) {
    this.el.hidden = false;
    const stats = sortFunctions(topFunctions(l, zoom), this.sort.key, this.sort.asc);
    const total = l.total;
    const th = (key: SortKey, label: string, num: boolean) => {
      const active = this.sort.key === key;
      return h(
        "th",
        { scope: "col", class: num ? "num" : undefined, "aria-sort": active ? (this.sort.asc ? "ascending" : "descending") : "none" },
        h(
          "button",
          {
            type: "button",
            class: "sort",
            "data-sort": key,
            onclick: () => {
              this.sort = { key, asc: active ? !this.sort.asc : key === "name" };
              this.show(l, zoom, searching);
            },
          },
          label,
          h("span", { class: "sort-mark", "aria-hidden": "true" }, active ? (this.sort.asc ? "▲" : "▼") : ""),
        ),
      );
    };
    const row = (s: FunctionStat) =>
      h(
        "tr",
        { "data-name": s.name },
        h("td", { class: "fn" }, h("button", { type: "button", class: "linkish mono", title: `Search for ${s.name}`, onclick: () => this.opts.onPick(s.name) }, s.name)),
        h("td", { class: "num" }, formatCount(s.self)),
        h("td", { class: "num bar-cell" }, h("span", { class: "bar", style: `width:${total ? (100 * s.self) / total : 0}%` }), formatPercent(s.self, total)),
        h("td", { class: "num" }, formatCount(s.total)),
        h("td", { class: "num bar-cell" }, h("span", { class: "bar total", style: `width:${total ? (100 * s.total) / total : 0}%` }), formatPercent(s.total, total)),
        this.opts.onFilter || this.opts.onSandwich
          ? h(
              "td",
              { class: "actions" },
              this.opts.onFilter
                ? h("button", { type: "button", class: "ghost small fn-heatmap", title: `Heatmap of the samples in ${s.name}`, onclick: () => this.opts.onFilter!(s.name) }, "Heatmap")
                : null,
              this.opts.onSandwich
                ? h("button", { type: "button", class: "ghost small fn-sandwich", title: `Callers and callees of ${s.name}`, onclick: () => this.opts.onSandwich!(s.name) }, "Sandwich")
                : null,
            )
          : null,
      );
    replace(
      this.el,
      h(
        "div",
        { class: "panel-head" },
        h("h2", { id: "top-title" }, "Top functions"),
        h("span", { class: "muted small" }, zoom ? `under ${l.names[l.name[zoom]]}` : "in this range", searching ? " · click a name to search for it" : " · click a name to highlight it"),
      ),
      stats.length === 0
        ? h("p", { class: "muted" }, "No functions.")
        : h(
            "table",
            { class: "data-table top-table", "data-testid": "top-functions" },
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                th("name", "Function", false),
                th("self", "Self", true),
                h("th", { class: "num", scope: "col" }, "Self %"),
                th("total", "Total", true),
                h("th", { class: "num", scope: "col" }, "Total %"),
                this.opts.onFilter || this.opts.onSandwich ? h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Actions")) : null,
              ),
            ),
            h("tbody", null, stats.slice(0, this.limit).map(row)),
          ),
      stats.length > this.limit
        ? h(
            "button",
            {
              type: "button",
              class: "ghost",
              onclick: () => {
                this.limit = stats.length;
                this.show(l, zoom, searching);
              },
            },
            `Show all ${formatCount(stats.length)} functions`,
          )
        : null,
    );
  }
}
