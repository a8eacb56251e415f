// Writes NAME.gz beside each built asset worth compressing (web.go serves
// it to clients that accept gzip). zlib at level 9 with no file name and a
// zero mtime in the header: the same input always gives the same bytes.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { constants, gzipSync } from "node:zlib";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: compress.mjs DIST_DIR");
  process.exit(2);
}
const assets = join(dir, "assets");
for (const name of readdirSync(assets).sort()) {
  if (!/\.(js|css|svg|json|txt)$/.test(name)) continue;
  const file = join(assets, name);
  const data = readFileSync(file);
  if (data.length < 1024) continue;
  const gz = gzipSync(data, { level: constants.Z_BEST_COMPRESSION });
  gz[9] = 3; // header OS byte: Unix, whatever the platform
  if (gz.length < data.length * 0.9) writeFileSync(`${file}.gz`, gz);
}
