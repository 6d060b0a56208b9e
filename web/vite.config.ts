// The visualizer's build: one index.html and hashed assets in dist/, relative URLs, nothing from a CDN.
import { defineConfig } from "vite";

export default defineConfig({
  base: "./",
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 2000 },
});
