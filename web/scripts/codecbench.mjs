// The dashboard's wire decoders against protobuf-es on the benchmark
// profile's answers (docs/architecture.md, "Wire codecs"). Run by
// web/scripts/codecbench.sh, which writes the answers first:
//
//   node scripts/codecbench.mjs ANSWERS_DIR [RUNS] [ANSWER]
//
// Bundles scripts/codecbench-entry.ts (esbuild, vite's) and runs it in a
// fresh Node process per measurement, the decoders interleaved: "cold" is
// a process's first decode (a page's first answer: nothing warmed up),
// "warm" the median of the next 40. The hand-written flame decoder is run
// twice: with WebAssembly (flame/tree.wat, as in the browser) and without
// (the JavaScript it falls back to). Medians of RUNS (default 9) processes.

import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const web = join(dirname(fileURLToPath(import.meta.url)), "..");
const [dir, runsArg, only] = process.argv.slice(2);
if (!dir) throw new Error("usage: node scripts/codecbench.mjs ANSWERS_DIR [RUNS]");
const runs = Number(runsArg) || 9;
const tmp = mkdtempSync(join(tmpdir(), "codecbench-"));
const entry = join(tmp, "entry.mjs");
await build({ entryPoints: [join(web, "scripts/codecbench-entry.ts")], bundle: true, platform: "node", format: "esm", outfile: entry, logLevel: "error" });

const answers = [
  ["flame-tree", "flame"],
  ["fleet-flame", "fleet-flame"],
  ["heatmap-60s", "heatmap"],
  ["heatmap-10min", "heatmap"],
  ["fleet-heatmap-10min", "fleet-heatmap"],
];
// [label, decoder, node flags]: no WebAssembly is the JavaScript fallback.
const variants = (kind) =>
  kind.endsWith("flame")
    ? [
        ["hand (wasm)", "hand", []],
        ["hand (js)", "hand", ["--noexpose_wasm"]],
        ["protobuf-es", "es", []],
      ]
    : [
        ["hand", "hand", []],
        ["protobuf-es", "es", []],
      ];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
};
const ms = (x) => x.toFixed(2).padStart(8);

console.log(`answer               decoder        cold ms   warm ms   (median of ${runs} processes)`);
for (const [name, kind] of answers.filter(([name]) => !only || name === only)) {
  const vs = variants(kind);
  const got = vs.map(() => ({ first: [], warm: [] }));
  for (let r = 0; r < runs; r++)
    vs.forEach(([, decoder, flags], i) => {
      const out = JSON.parse(execFileSync(process.execPath, [...flags, entry, join(dir, `${name}.pb`), kind, decoder], { encoding: "utf8" }));
      got[i].first.push(out.first);
      got[i].warm.push(out.warm);
    });
  const es = got[vs.length - 1];
  vs.forEach(([label], i) => {
    const ratio = i < vs.length - 1 ? `  protobuf-es / this: cold ${(median(es.first) / median(got[i].first)).toFixed(1)}x, warm ${(median(es.warm) / median(got[i].warm)).toFixed(1)}x` : "";
    const js = label === "hand (wasm)" ? `; JavaScript / this: cold ${(median(got[1].first) / median(got[0].first)).toFixed(1)}x, warm ${(median(got[1].warm) / median(got[0].warm)).toFixed(1)}x` : "";
    console.log(`${name.padEnd(20)} ${label.padEnd(12)} ${ms(median(got[i].first))}  ${ms(median(got[i].warm))}${ratio}${js}`);
  });
}
rmSync(tmp, { recursive: true });
