// Downloads of a flame graph: folded stacks, or an export format the
// server writes (svg, pprof, speedscope) or the page builds (a JSON tree
// of the graph on screen), saved under a name that says what it holds.

import { h } from "./dom";
import { jsonTree, type Layout } from "./flame/model";
import type { WireFlameGraph } from "./flame/wire";
import { FlameGraphFormat } from "./enums";
import type { DownloadFormat } from "./panels/flame";

/** EXPORTS are the server's export formats of the download menu. */
const EXPORTS = {
  svg: { format: FlameGraphFormat.SVG, type: "image/svg+xml", ext: "svg" },
  pprof: { format: FlameGraphFormat.PPROF, type: "application/octet-stream", ext: "pb.gz" },
  speedscope: { format: FlameGraphFormat.SPEEDSCOPE, type: "application/json", ext: "speedscope.json" },
};

/** save hands blob to the browser as a download named name. */
export function save(blob: Blob, name: string) {
  const a = h("a", { href: URL.createObjectURL(blob), download: name });
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

/** saveFolded downloads the folded stacks of a flame graph as base.folded. */
export async function saveFolded(fetch: (format: FlameGraphFormat) => Promise<WireFlameGraph>, base: string) {
  const res = await fetch(FlameGraphFormat.FOLDED);
  save(new Blob([res.folded], { type: "text/plain" }), `${base}.folded`);
}

/** saveExport downloads a flame graph in format: the server's file for an
 * export format (fetched), else the JSON tree of layout l. */
export async function saveExport(format: DownloadFormat, fetch: (format: FlameGraphFormat) => Promise<WireFlameGraph>, l: Layout | null, base: string) {
  if (format === "json") {
    if (l) save(new Blob([JSON.stringify(jsonTree(l))], { type: "application/json" }), `${base}.json`);
    return;
  }
  const e = EXPORTS[format];
  const res = await fetch(e.format);
  save(new Blob([(res.export ?? new Uint8Array()) as BlobPart], { type: e.type }), `${base}.${e.ext}`);
}
