// The home page's search box: one line of text for the API's exact filters.
//   checkout                 app = checkout
//   app:checkout host:web-1  app and host
//   env=prod region=eu       labels (all must match)
// Values may be quoted ("a b"). Time is chosen beside the box.

export interface Filters {
  app: string;
  host: string;
  labels: Record<string, string>;
}

function tokens(s: string): string[] {
  const out: string[] = [];
  const re = /(\S*?)"((?:[^"\\]|\\.)*)"|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(s))) {
    if (m[3] !== undefined) out.push(m[3]);
    else out.push(m[1] + m[2].replace(/\\(.)/g, "$1"));
  }
  return out;
}

/** parseFilters reads the search box. Unknown "key:" prefixes are taken as
 * part of an app name; a second bare word is an error. */
export function parseFilters(text: string): { filters: Filters; error?: string } {
  const f: Filters = { app: "", host: "", labels: {} };
  for (const t of tokens(text)) {
    const kv = /^([^=:]+)=(.*)$/.exec(t);
    if (/^app:/.test(t)) f.app = t.slice(4);
    else if (/^host:/.test(t)) f.host = t.slice(5);
    else if (kv) f.labels[kv[1]] = kv[2];
    else if (!f.app) f.app = t;
    else return { filters: f, error: `"${t}": one app name at most; use host:NAME or key=value` };
  }
  return { filters: f };
}

function quote(s: string): string {
  return /[\s"]/.test(s) || s === "" ? `"${s.replace(/(["\\])/g, "\\$1")}"` : s;
}

/** formatFilters writes filters back as search box text. */
export function formatFilters(f: Filters): string {
  const parts: string[] = [];
  if (f.app) parts.push(/[:=]/.test(f.app) ? `app:${quote(f.app)}` : quote(f.app));
  if (f.host) parts.push(`host:${quote(f.host)}`);
  for (const k of Object.keys(f.labels).sort()) parts.push(`${k}=${quote(f.labels[k])}`);
  return parts.join(" ");
}

/** Presets for the time filter: profiles overlapping the last so long. */
export const PRESETS: { id: string; label: string; ms: number }[] = [
  { id: "15m", label: "Last 15 minutes", ms: 15 * 60e3 },
  { id: "1h", label: "Last hour", ms: 3600e3 },
  { id: "6h", label: "Last 6 hours", ms: 6 * 3600e3 },
  { id: "24h", label: "Last 24 hours", ms: 24 * 3600e3 },
  { id: "7d", label: "Last 7 days", ms: 7 * 24 * 3600e3 },
  { id: "30d", label: "Last 30 days", ms: 30 * 24 * 3600e3 },
];
