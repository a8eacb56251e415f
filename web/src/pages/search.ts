// The home page: search profiles (app, host, labels, time), a sortable and
// paged results table, and uploads by drag and drop. The URL holds the
// search (app, host, label=k=v..., range or since/until, sort, dir, size,
// page), so a search can be bookmarked or shared. Above the results, a
// "fleet view" link per app listed opens that app's fleet (pages/fleet.ts)
// with the search's host and labels, over the search's time range or else
// the span of the app's profiles listed.

import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { problem, query } from "../api";
import { h, replace } from "../dom";
import { dateOf, formatCount, formatDate, parseLocalInput, profileDuration, sortedLabels, toLocalInput } from "../format";
import type { Profile } from "../gen/fleetscope/v1/profile_pb";
import { navigate, setQuery } from "../router";
import { ceilSecond, dateNanos, floorSecond, fleetPath, MAX_WINDOW_SECONDS, newFleet, NS, windowOfProfiles } from "../fleetstate";
import { formatFilters, parseFilters, PRESETS, type Filters } from "../searchquery";
import type { Page } from "./page";
import { errorState, onUnauthenticated } from "./states";
import { uploadPanel } from "./upload";

type SortCol = "app" | "host" | "start" | "duration" | "samples" | "events" | "format";

interface SearchState {
  filters: Filters;
  range: string; // a preset id, "custom" or "" (any time)
  since: string; // ISO, for custom
  until: string;
  sort: SortCol;
  dir: "asc" | "desc";
  size: number;
  page: string; // page token
}

const SIZES = [25, 50, 100];

function readState(p: URLSearchParams): SearchState {
  const labels: Record<string, string> = {};
  for (const l of p.getAll("label")) {
    const i = l.indexOf("=");
    if (i > 0) labels[l.slice(0, i)] = l.slice(i + 1);
  }
  const sort = (p.get("sort") ?? "start") as SortCol;
  const size = Number(p.get("size"));
  return {
    filters: { app: p.get("app") ?? "", host: p.get("host") ?? "", labels },
    range: p.get("range") ?? (p.get("since") || p.get("until") ? "custom" : ""),
    since: p.get("since") ?? "",
    until: p.get("until") ?? "",
    sort: ["app", "host", "start", "duration", "samples", "events", "format"].includes(sort) ? sort : "start",
    dir: p.get("dir") === "asc" ? "asc" : "desc",
    size: SIZES.includes(size) ? size : 50,
    page: p.get("page") ?? "",
  };
}

function writeState(s: SearchState): URLSearchParams {
  const p = new URLSearchParams();
  if (s.filters.app) p.set("app", s.filters.app);
  if (s.filters.host) p.set("host", s.filters.host);
  for (const k of Object.keys(s.filters.labels).sort()) p.append("label", `${k}=${s.filters.labels[k]}`);
  if (s.range && s.range !== "custom") p.set("range", s.range);
  if (s.range === "custom") {
    if (s.since) p.set("since", s.since);
    if (s.until) p.set("until", s.until);
  }
  if (s.sort !== "start" || s.dir !== "desc") {
    p.set("sort", s.sort);
    p.set("dir", s.dir);
  }
  if (s.size !== 50) p.set("size", String(s.size));
  if (s.page) p.set("page", s.page);
  return p;
}

function timeBounds(s: SearchState): { since?: Date; until?: Date } {
  const preset = PRESETS.find((p) => p.id === s.range);
  if (preset) return { since: new Date(Date.now() - preset.ms) };
  if (s.range === "custom") {
    const since = s.since ? new Date(s.since) : undefined;
    const until = s.until ? new Date(s.until) : undefined;
    return { since: since && !isNaN(+since) ? since : undefined, until: until && !isNaN(+until) ? until : undefined };
  }
  return {};
}

const COLUMNS: { id: SortCol; label: string; num?: boolean }[] = [
  { id: "app", label: "App" },
  { id: "host", label: "Host" },
  { id: "start", label: "Start" },
  { id: "duration", label: "Duration", num: true },
  { id: "samples", label: "Samples", num: true },
  { id: "events", label: "Events" },
  { id: "format", label: "Format" },
];

function sortKey(p: Profile, c: SortCol): string | number {
  switch (c) {
    case "app":
      return p.app;
    case "host":
      return p.host;
    case "start":
      return p.startTime ? Number(p.startTime.seconds) * 1e9 + p.startTime.nanos : 0;
    case "duration":
      return Number(p.durationNanos);
    case "samples":
      return Number(p.samples);
    case "events":
      return p.events.map((e) => e.name).join(",");
    case "format":
      return p.format;
  }
}

// Page tokens seen on the way to the current page, for "previous".
const tokenTrail: string[] = [];

export function searchPage(params: URLSearchParams): Page {
  let state = readState(params);
  const ctrl = new AbortController();

  const box = h("input", {
    type: "search",
    class: "search-box",
    "data-testid": "search",
    "aria-label": "Search profiles",
    placeholder: "app name, or app:NAME host:NAME key=value …",
    value: formatFilters(state.filters),
    autocomplete: "off",
    spellcheck: "false",
  });
  const boxError = h("div", { class: "field-error", role: "alert" });
  const preset = h(
    "select",
    { "data-testid": "time-range", "aria-label": "Time range" },
    h("option", { value: "" }, "Any time"),
    PRESETS.map((p) => h("option", { value: p.id }, p.label)),
    h("option", { value: "custom" }, "Custom range…"),
  );
  preset.value = state.range;
  const since = h("input", { type: "text", inputmode: "numeric", size: 16, placeholder: "YYYY-MM-DD HH:MM", spellcheck: "false", autocomplete: "off", title: "Local time, 24-hour: YYYY-MM-DD HH:MM", "aria-label": "From", "data-testid": "since" });
  const until = h("input", { type: "text", inputmode: "numeric", size: 16, placeholder: "YYYY-MM-DD HH:MM", spellcheck: "false", autocomplete: "off", title: "Local time, 24-hour: YYYY-MM-DD HH:MM", "aria-label": "Until", "data-testid": "until" });
  if (state.since) since.value = toLocalInput(new Date(state.since));
  if (state.until) until.value = toLocalInput(new Date(state.until));
  const custom = h("span", { class: "custom-range", hidden: state.range !== "custom" }, since, h("span", { class: "muted" }, "to"), until);
  preset.addEventListener("change", () => {
    custom.hidden = preset.value !== "custom";
    if (preset.value !== "custom") submit();
  });

  const submit = () => {
    const parsed = parseFilters(box.value);
    boxError.textContent = parsed.error ?? "";
    if (parsed.error) return;
    const range = preset.value;
    state = {
      ...state,
      filters: parsed.filters,
      range,
      since: range === "custom" ? (parseLocalInput(since.value)?.toISOString() ?? "") : "",
      until: range === "custom" ? (parseLocalInput(until.value)?.toISOString() ?? "") : "",
      page: "",
    };
    tokenTrail.length = 0;
    setQuery(writeState(state), true);
    load();
  };
  box.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      submit();
    }
  });
  for (const i of [since, until]) i.addEventListener("keydown", (e) => e.key === "Enter" && submit());

  const form = h(
    "form",
    {
      class: "search-form",
      role: "search",
      onsubmit: (e: Event) => {
        e.preventDefault();
        submit();
      },
    },
    h("div", { class: "search-row" }, box, preset, custom, h("button", { type: "submit", class: "primary" }, "Search")),
    boxError,
    h("div", { class: "hint" }, "A word is an app name; ", h("code", null, "host:web-1"), " a host; ", h("code", null, "env=prod"), " a label. Enter searches."),
  );

  const results = h("section", { class: "results", "aria-live": "polite", "aria-busy": "false" });
  const upload = uploadPanel(() => box.value && parseFilters(box.value).filters.app, () => load());
  const el = h(
    "div",
    { class: "page search-page" },
    h("div", { class: "page-head" }, h("h1", null, "Profiles"), h("p", { class: "muted" }, "Search your tenant's profiles; open one for its sub-second heatmap and range flame graphs.")),
    form,
    results,
    upload.el,
  );

  let lastProfiles: Profile[] = [];
  let nextToken = "";

  /** fleetLinks offers the fleet view of each app listed: the search's
   * host and labels, over its time range, or else the span of the app's
   * profiles listed. */
  function fleetLinks(): HTMLElement | null {
    const apps = [...new Set(lastProfiles.map((p) => p.app).filter(Boolean))].sort();
    if (apps.length === 0) return null;
    const t = timeBounds(state);
    const now = new Date();
    return h(
      "div",
      { class: "fleet-links", "data-testid": "fleet-links" },
      h("span", { class: "muted" }, "Fleet view: "),
      apps.map((app) => {
        let w = windowOfProfiles(
          lastProfiles.filter((p) => p.app === app),
          now,
        );
        if (t.since) {
          const to = ceilSecond(dateNanos(t.until ?? now));
          let from = floorSecond(dateNanos(t.since));
          if (to - from > BigInt(MAX_WINDOW_SECONDS) * NS) from = to - BigInt(MAX_WINDOW_SECONDS) * NS;
          if (to > from) w = { from, to };
        }
        const f = newFleet(app, w.from, w.to);
        if (state.filters.host) f.hosts = [state.filters.host];
        f.labels = Object.entries(state.filters.labels).map(([name, value]) => ({ name, value, not: false }));
        return h("a", { class: "fleet-link button", href: fleetPath(f), "data-testid": "fleet-link", "data-app": app, title: `Every host of ${app} in wall-clock time` }, `${app} ↗`);
      }),
    );
  }

  function renderTable() {
    const rows = lastProfiles.slice().sort((a, b) => {
      const ka = sortKey(a, state.sort);
      const kb = sortKey(b, state.sort);
      const c = ka < kb ? -1 : ka > kb ? 1 : 0;
      return state.dir === "asc" ? c : -c;
    });
    const head = h(
      "tr",
      null,
      COLUMNS.map((c) => {
        const active = state.sort === c.id;
        return h(
          "th",
          { scope: "col", class: c.num ? "num" : undefined, "aria-sort": active ? (state.dir === "asc" ? "ascending" : "descending") : "none" },
          h(
            "button",
            {
              type: "button",
              class: "sort",
              onclick: () => {
                state = { ...state, sort: c.id, dir: active && state.dir === "desc" ? "asc" : active ? "desc" : c.num || c.id === "start" ? "desc" : "asc" };
                setQuery(writeState(state));
                renderTable();
              },
            },
            c.label,
            h("span", { class: "sort-mark", "aria-hidden": "true" }, active ? (state.dir === "asc" ? "▲" : "▼") : ""),
          ),
        );
      }),
      h("th", { scope: "col" }, "Labels"),
    );
    const body = rows.map((p) => {
      const start = p.startTime ? dateOf(p.startTime) : null;
      const href = `/p/${encodeURIComponent(p.id)}`;
      return h(
        "tr",
        { class: "result-row", "data-profile-id": p.id, onclick: (e: MouseEvent) => !(e.target as Element).closest("a") && navigate(href) },
        h("td", null, h("a", { href }, p.app || "—")),
        h("td", null, p.host || h("span", { class: "muted" }, "—")),
        h("td", { title: start ? start.toISOString() : "" }, start ? formatDate(start) : "—", p.timeSource === "upload" ? h("span", { class: "badge", title: "placed by upload time (boot clock, no anchor)" }, "≈") : null),
        h("td", { class: "num", title: p.timed ? undefined : "no per-sample timestamps" }, profileDuration(p) ?? "—"),
        h("td", { class: "num" }, formatCount(p.samples)),
        h("td", null, p.events.map((e) => e.name).join(", ")),
        h("td", null, p.format),
        h("td", null, sortedLabels(p.labels).map(([k, v]) => h("span", { class: "chip" }, `${k}=${v}`))),
      );
    });
    const pageNo = tokenTrail.length + 1;
    const pager = h(
      "div",
      { class: "pager" },
      h("span", { class: "muted" }, `Page ${pageNo} · ${formatCount(rows.length)} profile${rows.length === 1 ? "" : "s"}${rows.length > 1 ? " (sorted within the page; the server pages newest first)" : ""}`),
      h(
        "label",
        { class: "muted" },
        "Per page ",
        h(
          "select",
          {
            onchange: (e: Event) => {
              state = { ...state, size: Number((e.target as HTMLSelectElement).value), page: "" };
              tokenTrail.length = 0;
              setQuery(writeState(state));
              load();
            },
          },
          SIZES.map((s) => h("option", { value: String(s), selected: s === state.size }, String(s))),
        ),
      ),
      h(
        "button",
        {
          type: "button",
          disabled: pageNo === 1,
          "data-testid": "prev-page",
          onclick: () => {
            state = { ...state, page: tokenTrail.pop() ?? "" };
            setQuery(writeState(state));
            load();
          },
        },
        "← Previous",
      ),
      h(
        "button",
        {
          type: "button",
          disabled: !nextToken,
          "data-testid": "next-page",
          onclick: () => {
            tokenTrail.push(state.page);
            state = { ...state, page: nextToken };
            setQuery(writeState(state));
            load();
          },
        },
        "Next →",
      ),
    );
    if (rows.length === 0) {
      const any = formatFilters(state.filters) || state.range;
      replace(
        results,
        h(
          "div",
          { class: "empty", "data-testid": "no-results" },
          h("h2", null, any ? "No profiles match" : "No profiles yet"),
          h("p", null, any ? "Try a wider time range or fewer filters." : "Drop a profile below, or upload with the CLI: ", any ? null : h("code", null, "fleetscope upload --app APP perf.txt")),
        ),
      );
      return;
    }
    replace(results, fleetLinks(), h("table", { class: "data-table", "data-testid": "results" }, h("thead", null, head), h("tbody", null, body)), pager);
  }

  async function load() {
    results.setAttribute("aria-busy", "true");
    results.classList.add("loading");
    if (!results.firstChild) replace(results, h("div", { class: "loading-note" }, h("span", { class: "spinner" }), "Searching…"));
    const t = timeBounds(state);
    try {
      const res = await query.searchProfiles(
        {
          app: state.filters.app,
          host: state.filters.host,
          labels: state.filters.labels,
          since: t.since ? timestampFromDate(t.since) : undefined,
          until: t.until ? timestampFromDate(t.until) : undefined,
          pageSize: state.size,
          pageToken: state.page,
        },
        { signal: ctrl.signal },
      );
      lastProfiles = res.profiles;
      nextToken = res.nextPageToken;
      renderTable();
    } catch (err) {
      if (ctrl.signal.aborted) return;
      const p = problem(err);
      if (p.kind === "unauthenticated") return onUnauthenticated();
      replace(results, errorState(p, load));
    } finally {
      results.setAttribute("aria-busy", "false");
      results.classList.remove("loading");
    }
  }

  load();
  return {
    el,
    title: "Profiles",
    destroy() {
      ctrl.abort();
      upload.destroy();
    },
    focus() {
      box.focus();
    },
  };
}
