// Vite builds src/ into dist/, which the Go package embeds. The build is
// deterministic (content-hashed names, no timestamps, no absolute paths), so
// scripts/test.sh can check that a fresh build reproduces the committed dist.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: false,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 1024,
  },
  server: {
    // `npm run dev` proxies the API to a local fleetscope server.
    proxy: {
      "/fleetscope.v1.": { target: (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env.FLEETSCOPE_URL ?? "http://127.0.0.1:8080", changeOrigin: true },
    },
  },
});
