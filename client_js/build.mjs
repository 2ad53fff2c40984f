// Build script: bundles src/main.js into dist/app.js and copies the static page and styles.
// Everything the page needs ends up in dist/; nothing is loaded from the network.
import { build } from "esbuild";
import { copyFile, mkdir, rm } from "node:fs/promises";

const watch = process.argv.includes("--dev");
await rm("dist", { recursive: true, force: true });
await mkdir("dist", { recursive: true });
await build({
  entryPoints: ["src/main.js"],
  bundle: true,
  format: "esm",
  target: ["es2020"],
  outfile: "dist/app.js",
  minify: !watch,
  sourcemap: true,
  legalComments: "none",
});
await copyFile("index.html", "dist/index.html");
await copyFile("src/style.css", "dist/style.css");
await copyFile("favicon.svg", "dist/favicon.svg");
await copyFile("clock.svg", "dist/clock.svg");
// The page is served with a Content-Security-Policy of 'self' only (no inline script or style,
// no data: URLs): everything it uses must be a file of dist/.
console.log("built dist/app.js, dist/index.html, dist/style.css, dist/favicon.svg, dist/clock.svg");
