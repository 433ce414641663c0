// Bundles the extension (node), the history webview (browser, Chart.js included: nothing is
// loaded from the network) and, with --tests, the unit tests of the pure modules.
import { build } from "esbuild";

const tests = process.argv.includes("--tests");
await build({
  entryPoints: ["src/extension.ts"], bundle: true, platform: "node", format: "cjs",
  external: ["vscode"], outfile: "dist/extension.js", target: "node18", sourcemap: true,
});
await build({
  entryPoints: ["src/webview.ts"], bundle: true, platform: "browser", format: "iife",
  outfile: "dist/webview.js", target: "es2020",
});
if (tests) {
  await build({
    entryPoints: ["test/pure.test.ts"], bundle: true, platform: "node", format: "cjs",
    outfile: "dist-test/pure.test.js", target: "node18",
  });
}
