#!/usr/bin/env node
// Reads a file with speedscope's own importer, the one its app runs (the
// release bundle of the speedscope npm package, a devDependency), and
// prints what it imported as JSON: each profile's name, total weight and
// samples in Time Order (its flame chart's order), each as
// [frames root first joined by ";", weight]. speedscope merges a sample
// into the one before when their stacks are the same, adding the weights.
//
//   node web/scripts/speedscope-import.mjs FILE
//
// The bundle is a browser app: run in a node:vm context without a DOM, it
// defines its importers and then stops where it would mount the app; the
// hook below keeps a reference to importProfileGroupFromText.
import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const file = process.argv[2];
if (!file) {
  console.error("usage: speedscope-import.mjs FILE");
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "package.json"));
const dir = path.join(path.dirname(require.resolve("speedscope/package.json")), "dist", "release");
const bundle = fs.readdirSync(dir).find((f) => /^speedscope-.*\.js$/.test(f));
let src = fs.readFileSync(path.join(dir, bundle), "utf8");
const m = src.match(/async function (\w+)\(t,e\)\{return\(await (\w+)\)\.importProfileGroupFromText\(t,e\)\}/);
if (!m) {
  console.error(`speedscope-import: importProfileGroupFromText not found in ${bundle}`);
  process.exit(1);
}
src = src.replace(m[0], `${m[0]};globalThis.__importText=${m[1]};`);

const stub = new Proxy(function () {}, {
  get: (_, k) => (k === Symbol.toPrimitive ? () => "" : stub),
  apply: () => stub,
  construct: () => stub,
});
const ctx = { console: { log() {}, warn() {}, error() {}, info() {} }, setTimeout, clearTimeout, TextDecoder, TextEncoder, atob, btoa, URL };
Object.assign(ctx, { window: ctx, self: ctx, document: stub, navigator: { userAgent: "node" }, location: { hash: "", search: "", href: "" }, addEventListener() {} });
vm.createContext(ctx);
try {
  vm.runInContext(src, ctx);
} catch {
  // the app's mount, past the importers
}
if (typeof ctx.__importText !== "function") {
  console.error("speedscope-import: the bundle did not define its importer");
  process.exit(1);
}
const group = await ctx.__importText(path.basename(file), fs.readFileSync(file, "utf8"));
if (!group) {
  console.error("speedscope-import: speedscope could not import " + file);
  process.exit(1);
}
const out = { name: group.name, profiles: [] };
for (const p of group.profiles) {
  const samples = p.samples.map((node, i) => {
    const names = [];
    for (let n = node; n && n.parent; n = n.parent) names.push(n.frame.name);
    return [names.reverse().join(";"), p.weights[i]];
  });
  out.profiles.push({ name: p.getName(), unit: p.getWeightUnit(), totalWeight: p.getTotalWeight(), samples });
}
process.stdout.write(JSON.stringify(out) + "\n");
