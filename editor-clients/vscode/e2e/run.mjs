// End-to-end test in a real VS Code (code-server) driven by Debian's Chromium through
// playwright-core: open an example workspace, wait for the lens text above a kernel, run a
// palette command, see its result, save a screenshot. Writes a JSON report.
//   node run.mjs <code-server bin> <vsix> <workspace> <kernelscope cmd JSON> <db> <screenshot> <report> [scenario]
// scenario "untrusted": workspace trust on and the folder not trusted (restricted mode); after
// the lens shows, kernel.py is edited and saved, and nothing else is done (the caller checks
// that the save ran nothing).
import { chromium } from "playwright-core";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [codeServer, vsix, workspace, commandJson, db, screenshot, reportPath, scenario = "trusted"] = process.argv.slice(2);
const untrusted = scenario === "untrusted";
const report = { lenses: [], notification: null, saved: false, error: null };
const state = mkdtempSync(join(tmpdir(), "ks-code-server-"));
const extensions = join(state, "extensions");
const userData = join(state, "user-data");
mkdirSync(join(userData, "User"), { recursive: true });
writeFileSync(join(userData, "User", "settings.json"), JSON.stringify({
  "kernelscope.command": JSON.parse(commandJson),
  "kernelscope.dbUrl": db,
  "kernelscope.mode": "interpreter",
  "security.workspace.trust.enabled": untrusted,
  "security.workspace.trust.startupPrompt": "never",
  "security.workspace.trust.emptyWindow": false,
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "telemetry.telemetryLevel": "off",
  "extensions.autoUpdate": false,
  "extensions.autoCheckUpdates": false,
  "editor.codeLens": true,
}));
execFileSync(codeServer, ["--extensions-dir", extensions, "--user-data-dir", userData, "--install-extension", vsix],
  { stdio: "inherit" });

const port = await new Promise((resolve) => {
  const server = createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});
const server = spawn(codeServer, ["--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry",
  "--disable-update-check", "--extensions-dir", extensions, "--user-data-dir", userData, workspace],
  { stdio: ["ignore", "inherit", "inherit"] });

let browser;
try {
  await waitForPort(port, 60_000);
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium", headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--no-first-run", "--disable-quic"],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const payload = JSON.stringify([["openFile", `vscode-remote://127.0.0.1:${port}${workspace}/kernel.py`]]);
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}&payload=${encodeURIComponent(payload)}`);
  const lens = page.locator(".codelens-decoration", { hasText: "best " }).first();
  await lens.waitFor({ timeout: 120_000 });
  report.lenses = await page.locator(".codelens-decoration").allInnerTexts();

  if (untrusted) {
    await page.locator(".monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("\n# edited in an untrusted window\n");
    await page.keyboard.press("Control+S");
    await page.waitForTimeout(10_000);  // far past the debounce and a vector-add probe
    report.saved = true;
  } else {
    await page.keyboard.press("F1");
    await page.keyboard.type("Kernelscope: Top Experiments");
    await page.waitForTimeout(500);
    await page.keyboard.press("Enter");
    const note = page.locator(".notification-list-item", { hasText: "top experiments" }).first();
    await note.waitFor({ timeout: 60_000 });
    report.notification = await note.innerText();
  }
  await page.screenshot({ path: screenshot });
} catch (error) {
  report.error = String(error && error.stack || error);
  try { await browser?.contexts()[0]?.pages()[0]?.screenshot({ path: screenshot }); } catch {}
} finally {
  await browser?.close();
  server.kill();
  writeFileSync(reportPath, JSON.stringify(report, null, 2));
}
process.exit(report.error ? 1 : 0);

async function waitForPort(port, timeout) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (response.ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error("code-server did not start");
}
