// Vite builds src/ into dist/, which the Go package embeds. The build is
// deterministic (content-hashed names, no timestamps, no absolute paths), so
// scripts/test.sh can check that a fresh build reproduces the committed dist.
//
// Two builds, run one after the other by scripts/build.sh into the same dist:
//   vite build                the app (index.html → src/main.ts)
//   vite build --mode bench   the flame graph benchmark page
//                             (_bench/flame.html → src/bench.ts), added to dist
//                             without emptying it; the app never loads it
import { defineConfig } from "vite";

export default defineConfig(({ mode }) => ({
  base: "/",
  build: {
    outDir: "dist",
    emptyOutDir: mode !== "bench",
    assetsDir: "assets",
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: false,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 1024,
    rollupOptions: mode === "bench" ? { input: { bench: "_bench/flame.html" } } : undefined,
  },
  server: {
    // `npm run dev` proxies the API to a local fleetscope server.
    proxy: {
      "/fleetscope.v1.": { target: (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env.FLEETSCOPE_URL ?? "http://127.0.0.1:8080", changeOrigin: true },
    },
  },
}));
