// End-to-end test in a real VS Code (code-server) driven by Debian's Chromium through
// playwright-core: open an example workspace, wait for the lens text above a kernel, run a
// palette command, see its result, save a screenshot; then, as an agent does, rewrite kernel.py
// on disk while it is open (the kernel moves down 3 lines): code-server reloads it, the lens
// must follow the kernel, and an edit + save must re-benchmark (the `last probe:` lens shows the
// verdict on the saved text). Writes a JSON report.
//   node run.mjs <code-server bin> <vsix> <workspace> <kernelscope cmd JSON> <db> <screenshot> <report> [scenario]
// scenario "untrusted": workspace trust on and the folder not trusted (restricted mode); after
// the lens shows, kernel.py is edited and saved, and nothing else is done (the caller checks
// that the save ran nothing).
// scenario "hints": a workspace with a git history (KS_LAUNCH_LINE, 0-based, is the launch line;
// KS_V0_KERNEL a file holding v0's kernel.py; KS_SHOTS a folder for the README's screenshots):
// blame in the hover on the launch line, the values already tried as inlay hints there, Compare
// Versions v0 -> v4 (diff editor + table webview), and v0's code written over kernel.py by an
// agent: the Problems panel says "identical to v0" and no benchmark runs.
// scenario "plain": <workspace> is a Python project that is no optimization workspace; its
// foo.py is opened and left open a while (did the daemon start? KS_STARTED_MARK says); then the
// workspace KS_LATE_WS names is copied into it, as an agent creates one, and its kernel.py opened
// (Quick Open): the lenses must come (the daemon starts then).
// scenario "confirm": the daemon's question before a mask (KS_AGENT, the user's agent setting):
// the "Mask half & restart" lens clicked, the dialog's Cancel pressed; Mask Half from the palette
// dismissed with Escape; the server restarted (Kernelscope: Restart Server); Mask Half again, Mask
// pressed. Each dialog's text and buttons, the memory/ files after the no answers and after the
// Mask, and the notifications go in the report.
// scenario "readme": the workspace's README.md is opened (not kernel.py) with a stop condition
// kernelscope cannot check on line KS_README_LINE (0-based; "4,32TB/s"): the Problems panel
// shows kernelscope's warning on that line; the comma is then made a point in the buffer (no
// save): the warnings go. What the editor drew above the README's lines goes in the report.
import { chromium } from "playwright-core";
import { spawn, execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [codeServer, vsix, workspace, commandJson, db, screenshot, reportPath, scenario = "trusted"] = process.argv.slice(2);
const untrusted = scenario === "untrusted";
const report = {
  lenses: [], notification: null, saved: false, error: null,
  kernelLensLine: null, rewrittenLensLine: null, lensesAfterRewrite: [], probeLens: null,
  hover: null, launchLineText: null, tabs: [], diffEditor: false, diffText: null, compareTable: null,
  problems: null, problemsAfterFix: null, readmeLenses: null, lensesAfterIdentical: [], hintTooltip: null, historyTab: null, plainOpened: false, daemonBeforeWorkspace: null,
  questions: [], memoryAfterNo: null, notesAfterNo: null, maskNote: null, memoryAfterMask: null, restartNote: null,
};
const hints = scenario === "hints";
const state = mkdtempSync(join(tmpdir(), "ks-code-server-"));
const extensions = join(state, "extensions");
const userData = join(state, "user-data");
// code-server's config file lives with the rest of this run's state, never in the user's home
const config = join(state, "config.yaml");
mkdirSync(join(userData, "User"), { recursive: true });
// No setting that a newer code-server migrates (4.139 rewrites "extensions.autoUpdate": false as
// "off"). Runs with that rewrite, on a loaded machine, sometimes left the extension host with
// the defaults and no change event (the daemon command not found); the rewrite is the suspect.
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
  "extensions.autoCheckUpdates": false,
  "editor.codeLens": true,
  ...(process.env.KS_AGENT ? { "kernelscope.agent": process.env.KS_AGENT } : {}),
}));
execFileSync(codeServer, ["--config", config, "--extensions-dir", extensions, "--user-data-dir", userData, "--install-extension", vsix],
  { stdio: "inherit" });

const port = await new Promise((resolve) => {
  const server = createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});
const server = spawn(codeServer, ["--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry",
  "--disable-update-check", "--config", config, "--extensions-dir", extensions, "--user-data-dir", userData, workspace],
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
  const plain = scenario === "plain";
  const readme = scenario === "readme";
  const opened = plain ? "foo.py" : readme ? "README.md" : "kernel.py";
  const payload = JSON.stringify([["openFile", `vscode-remote://127.0.0.1:${port}${workspace}/${opened}`]]);
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}&payload=${encodeURIComponent(payload)}`);
  if (plain) {
    await page.locator(".view-lines", { hasText: "plain python" }).first().waitFor({ timeout: 120_000 });
    report.plainOpened = true;
    await page.waitForTimeout(15_000);  // far past an extension's activation and a daemon's start
    // the daemon command of this scenario creates KS_STARTED_MARK when it runs
    report.daemonBeforeWorkspace = existsSync(process.env.KS_STARTED_MARK);
    cpSync(process.env.KS_LATE_WS, `${workspace}/kernel_opt_late`, { recursive: true });
    await page.keyboard.press("Control+P");
    await page.keyboard.type("kernel_opt_late/kernel.py");
    await page.locator(".quick-input-widget .monaco-list-row", { hasText: "kernel.py" }).first().waitFor({ timeout: 60_000 });
    await page.keyboard.press("Enter");
  }
  if (readme) {
    await readmeScenario(page);
  } else {
    const lens = page.locator(".codelens-decoration", { hasText: "best " }).first();
    await lens.waitFor({ timeout: 120_000 });
    report.lenses = await page.locator(".codelens-decoration").allInnerTexts();
  }

  if (plain || readme) {
    // the lenses came: the daemon started for the workspace made after the window opened
  } else if (hints) {
    await hintsScenario(page);
  } else if (scenario === "confirm") {
    await confirmScenario(page);
  } else if (scenario === "restart") {
    await restartScenario(page);
  } else if (untrusted) {
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
    await page.screenshot({ path: screenshot });

    // An agent rewrites kernel.py on disk: three lines above the kernel, a new file renamed
    // over the old one. The editor is not dirty, so code-server reloads it by itself.
    report.kernelLensLine = await lensLine(page, "best ");
    const kernel = `${workspace}/kernel.py`;
    writeFileSync(`${kernel}.tmp`, "# rewritten by an agent, line 1\n# line 2\n# line 3\n" + readFileSync(kernel, "utf8"));
    renameSync(`${kernel}.tmp`, kernel);
    await page.locator(".view-lines", { hasText: "rewritten by an agent" }).first().waitFor({ timeout: 60_000 });
    report.rewrittenLensLine = await poll(60_000, async () => {
      const line = await lensLine(page, "best ");
      return line !== null && line !== report.kernelLensLine ? line : null;
    });
    report.lensesAfterRewrite = await page.locator(".codelens-decoration").allInnerTexts();

    // An edit that breaks the kernel, saved: the background probe runs the saved text.
    await page.locator(".monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("\nraise RuntimeError('edited in VS Code')\n");
    await page.keyboard.press("Control+S");
    report.saved = true;
    report.probeLens = await poll(120_000, async () => {
      const texts = await page.locator(".codelens-decoration").allInnerTexts();
      const probe = texts.find((t) => t.startsWith("last probe: FAIL") && !t.split(" | ")[0].includes("stale"));
      return probe ?? null;
    });

    // The history lens clicked, as a user does: the daemon's answer to kernelscope.showHistory
    // opens the history panel (the executeCommand middleware), not nothing.
    await page.locator(".codelens-decoration a", { hasText: "latest " }).first().click();  // the kernel's lens
    report.historyTab = await poll(60_000, async () => {
      const tabs = await page.locator(".tab").allInnerTexts();
      return tabs.find((t) => t.includes("kernelscope: add_kernel")) ?? null;
    });
    report.tabs = await page.locator(".tab").allInnerTexts();
  }
  if (untrusted) await page.screenshot({ path: screenshot });
} catch (error) {
  report.error = String(error && error.stack || error);
  try { await browser?.contexts()[0]?.pages()[0]?.screenshot({ path: screenshot }); } catch {}
} finally {
  await browser?.close();
  server.kill();
  writeFileSync(reportPath, JSON.stringify(report, null, 2));
}
process.exit(report.error ? 1 : 0);

async function hintsScenario(page) {
  const launch = Number(process.env.KS_LAUNCH_LINE);
  const shots = process.env.KS_SHOTS;
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+G");
  await page.keyboard.type(String(launch + 1));
  await page.keyboard.press("Enter");
  await page.keyboard.press("End");
  // the values already tried are drawn as inlay hints inside the launch line
  report.launchLineText = await poll(60_000, async () => {
    const lines = await page.locator(".view-line", { hasText: "add_kernel[grid]" }).allInnerTexts();
    return lines.find((t) => t.includes("tried")) ?? null;
  });
  // pointing at the hint shows its table (the daemon sends it on inlayHint/resolve)
  report.hintTooltip = await poll(30_000, async () => {
    const hint = page.locator(".view-line span", { hasText: /^\s*tried/ }).last();
    if (!(await hint.count())) return null;
    await page.mouse.move(0, 0);
    await hint.hover({ position: { x: 20, y: 5 } });
    await page.waitForTimeout(1_500);
    const tip = page.locator(".monaco-hover-content", { hasText: "versions" }).first();
    return (await tip.count()) ? await tip.innerText() : null;
  });
  await page.mouse.move(0, 0);
  await page.keyboard.press("Escape");
  await page.keyboard.press("Home");
  // asked again every few seconds: a hover asked while the history is still being read (a
  // loaded CI machine) shows no blame, and VS Code does not ask again by itself
  let asked = 0;
  report.hover = await poll(60_000, async () => {
    const hover = page.locator(".monaco-hover-content", { hasText: "introduced in" }).first();
    if (await hover.count()) return await hover.innerText();
    if (Date.now() - asked > 4_000) {
      await page.keyboard.press("Escape");
      await page.keyboard.press("Control+K");
      await page.keyboard.press("Control+I");
      asked = Date.now();
    }
    return null;
  });
  if (shots) await page.screenshot({ path: `${shots}/vscode-hints.png` });
  await page.keyboard.press("Escape");

  await page.keyboard.press("F1");
  await page.keyboard.type("Kernelscope: Compare Versions");
  await page.waitForTimeout(500);
  await page.keyboard.press("Enter");
  for (const version of ["v0", "v4"]) {
    await page.locator(".quick-input-widget .monaco-list-row", { hasText: version }).first().waitFor({ timeout: 30_000 });
    await page.keyboard.type(version);
    await page.waitForTimeout(300);
    await page.keyboard.press("Enter");
  }
  await page.locator(".tab", { hasText: "kernelscope: v0 → v4" }).first().waitFor({ timeout: 60_000 });
  report.tabs = await page.locator(".tab").allInnerTexts();
  report.diffEditor = (await page.locator(".monaco-diff-editor").count()) > 0;
  report.diffText = await poll(30_000, async () => {
    const text = (await page.locator(".monaco-diff-editor").allInnerTexts()).join("\n");
    return text.includes("BLOCK_SIZE=1024") && text.includes("num_warps=8") ? text : null;
  });
  report.compareTable = await poll(30_000, async () => {
    for (const frame of page.frames()) {
      try {
        const text = await frame.evaluate(() => document.body?.innerText ?? "");
        if (text.includes("v0 → v4") && text.includes("latency")) return text;
      } catch {}
    }
    return null;
  });
  if (shots) await page.screenshot({ path: `${shots}/vscode-compare.png` });

  // back to kernel.py; an agent writes v0's code over it: kernelscope says so, benchmarks nothing
  await page.locator(".tab", { hasText: /^\s*kernel\.py\s*$/ }).first().click();
  const kernel = `${workspace}/kernel.py`;
  writeFileSync(`${kernel}.tmp`, readFileSync(process.env.KS_V0_KERNEL, "utf8"));
  renameSync(`${kernel}.tmp`, kernel);
  await page.keyboard.press("Control+Shift+M");
  report.problems = await poll(60_000, async () => {
    const text = (await page.locator(".markers-panel").allInnerTexts()).join("\n");
    return text.includes("identical to v0") ? text : null;
  });
  await page.waitForTimeout(8_000);  // a benchmark, had one started, would have shown by now
  report.lensesAfterIdentical = await page.locator(".codelens-decoration").allInnerTexts();
}

async function readmeScenario(page) {
  const line = Number(process.env.KS_README_LINE);
  await page.locator(".view-lines", { hasText: "Stop Conditions" }).first().waitFor({ timeout: 120_000 });
  await page.keyboard.press("Control+Shift+M");
  const markers = async () => (await page.locator(".markers-panel").allInnerTexts()).join("\n");
  report.problems = await poll(120_000, async () => {
    const text = await markers();
    return text.includes("decimal comma") ? text : null;
  });
  await page.screenshot({ path: screenshot });
  report.readmeLenses = await page.locator(".codelens-decoration").allInnerTexts();
  // the comma made a point where it stands, in the buffer: the end of the line, back over "32TB/s"
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+G");
  await page.keyboard.type(String(line + 1));
  await page.keyboard.press("Enter");
  await page.keyboard.press("End");
  for (let i = 0; i < "32TB/s".length; i++) await page.keyboard.press("ArrowLeft");
  await page.keyboard.press("Backspace");
  await page.keyboard.type(".");
  report.problemsAfterFix = await poll(60_000, async () => {
    const text = await markers();
    return text.includes("kernelscope") ? null : text;
  });
}

async function confirmScenario(page) {
  await page.locator(".codelens-decoration a", { hasText: "Mask half & restart" }).first().click();
  report.questions.push(await answerDialog(page, "Cancel"));
  await askToMask(page);
  report.questions.push(await answerDialog(page, "Escape"));
  await page.waitForTimeout(3_000);  // a job or a mask, had one started, would have said so by now
  report.memoryAfterNo = memoryTexts();
  report.notesAfterNo = await page.locator(".notification-list-item").allInnerTexts();
  // a restarted client (a new LanguageClient) asks the same way
  await runCommand(page, "Kernelscope: Restart Server");
  await askToMask(page);
  report.questions.push(await answerDialog(page, "Mask"));
  const note = page.locator(".notification-list-item", { hasText: "mask-half:" }).first();
  await note.waitFor({ timeout: 60_000 });
  report.maskNote = await note.innerText();
  report.memoryAfterMask = memoryTexts();
}

async function restartScenario(page) {
  await page.locator(".codelens-decoration a", { hasText: "Mask half & restart" }).first().click();
  report.questions.push(await answerDialog(page, "Mask & restart"));
  // the job's end (the agent exited): "kernelscope restart: done" or its error
  const note = page.locator(".notification-list-item", { hasText: "kernelscope restart:" }).first();
  await note.waitFor({ timeout: 120_000 });
  report.restartNote = await note.innerText();
  report.memoryAfterMask = memoryTexts();
}

async function runCommand(page, title) {
  await page.keyboard.press("F1");
  await page.keyboard.type(title);
  await page.waitForTimeout(500);
  await page.keyboard.press("Enter");
}

/** Mask Half from the palette, until its dialog shows (a client still stopping says it found
 * no workspace: its notifications cleared, asked again). */
async function askToMask(page) {
  const dialog = page.locator(".monaco-dialog-box");
  const refused = page.locator(".notification-list-item", { hasText: /not running|open a file inside/ });
  for (let attempt = 0; attempt < 5; attempt++) {
    await runCommand(page, "Kernelscope: Mask Half of the Memory");
    const seen = await poll(30_000, async () => (await dialog.count()) ? true : (await refused.count()) ? false : null);
    if (seen) return;
    if (seen === null) break;
    await runCommand(page, "Notifications: Clear All Notifications");
    await page.waitForTimeout(2_000);
  }
  throw new Error("no dialog after Kernelscope: Mask Half of the Memory");
}

/** The modal dialog's message, buttons and focused button (the one Enter presses), then
 * `answer` given: a button's label, or Escape. */
async function answerDialog(page, answer) {
  const dialog = page.locator(".monaco-dialog-box").first();
  await dialog.waitFor({ timeout: 60_000 });
  const message = (await dialog.locator(".dialog-message-container").innerText()).trim();  // text, or detail alone
  const buttons = await dialog.locator(".dialog-buttons .monaco-button").allInnerTexts();
  const focused = await poll(5_000, () => page.evaluate(() =>
    document.activeElement?.closest(".monaco-dialog-box .dialog-buttons") ? document.activeElement.innerText.trim() : null));
  if (answer === "Escape") await page.keyboard.press("Escape");
  else await dialog.getByRole("button", { name: answer, exact: true }).click();
  await dialog.waitFor({ state: "detached", timeout: 30_000 });
  return { message, buttons: buttons.map((b) => b.trim()).filter(Boolean), focused, answer };
}

/** memory/'s files as they are now: name -> text. */
function memoryTexts() {
  const folder = `${workspace}/memory`;
  return Object.fromEntries(readdirSync(folder).sort().map((name) => [name, readFileSync(`${folder}/${name}`, "utf8")]));
}

/** The editor line (1-based) just below the lens whose text starts with `prefix`, or null. */
async function lensLine(page, prefix) {
  return page.evaluate((prefix) => {
    const lens = [...document.querySelectorAll(".codelens-decoration")].find((e) => e.innerText.startsWith(prefix));
    if (!lens) return null;
    const bottom = lens.getBoundingClientRect().bottom;
    const below = [...document.querySelectorAll(".margin-view-overlays .line-numbers")]
      .map((e) => ({ line: Number(e.textContent), top: e.getBoundingClientRect().top }))
      .filter((e) => e.top >= bottom - 2)
      .sort((a, b) => a.top - b.top);
    return below.length ? below[0].line : null;
  }, prefix);
}

/** The first non-null value of `probe` within `timeout` ms, else null. */
async function poll(timeout, probe) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== null && value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 250));
  }
  return null;
}

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
