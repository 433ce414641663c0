import { strict as assert } from "node:assert";
import { test } from "node:test";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Comparison, Vocabulary, chartPoints, comparisonHtml, daemonCommand, documentSelector, folderSettingsOnly, initializationOptions, isWorkspaceDir,
  missingCommands, opensWorkspace, paletteParams, parseVersionPair, questionDialog, recordParams, serialized, showAnswers, statusText, topExperiments, workspaceFor,
} from "../src/pure";

const vocabulary = JSON.parse(readFileSync("../commands.json", "utf8")) as Vocabulary;

test("workspaceFor picks the innermost workspace the server named that holds the file", () => {
  const named = [{ workspace: "/a/ws", kernel: "/a/ws/kernel.py" }, { workspace: "/a/ws/inner", kernel: "/a/ws/inner/kernel.py" }];
  assert.equal(workspaceFor("/a/ws/kernel.py", named), "/a/ws");
  assert.equal(workspaceFor("/a/ws/inner/sub/x.py", named), "/a/ws/inner");
  assert.equal(workspaceFor("/a/wsx/kernel.py", named), undefined); // a prefix of the name is not a parent
  assert.equal(workspaceFor("/b/x.py", [named[0]]), "/a/ws"); // one workspace: it, whatever the file
  assert.equal(workspaceFor(undefined, []), undefined);
});

test("isWorkspaceDir reads the server's rule: kernel.py and memory/, or a README fence", () => {
  const root = mkdtempSync(join(tmpdir(), "ks-rule-"));
  const folder = (name: string, files: Record<string, string>, dirs: string[] = []) => {
    const dir = join(root, name);
    mkdirSync(dir);
    for (const d of dirs) mkdirSync(join(dir, d));
    for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
    return dir;
  };
  const rule = vocabulary.workspaceRule;
  assert.equal(isWorkspaceDir(folder("recorded", { "kernel.py": "" }, ["memory"]), rule), true);
  assert.equal(isWorkspaceDir(folder("fresh", { "kernel.py": "", "README.md": "# op\n\n```kernelscope\n{}\n```\n" }), rule), true);
  assert.equal(isWorkspaceDir(folder("plain", { "kernel.py": "", "README.md": "```python\nx\n```\n" }), rule), false);
  assert.equal(isWorkspaceDir(folder("memory-only", {}, ["memory"]), rule), false);
  assert.equal(isWorkspaceDir(folder("memory-file", { "kernel.py": "", memory: "" }), rule), false);
});

test("a workspace's kernel.py or README opened shows a workspace; any other file does not", () => {
  const rule = vocabulary.workspaceRule;
  const ws = mkdtempSync(join(tmpdir(), "ks-opens-"));
  writeFileSync(join(ws, "kernel.py"), "");
  writeFileSync(join(ws, "README.md"), "# op\n");
  mkdirSync(join(ws, "memory"));
  writeFileSync(join(ws, "notes.md"), "");
  assert.equal(opensWorkspace(join(ws, "README.md"), rule), true);
  assert.equal(opensWorkspace(join(ws, "kernel.py"), rule), true);
  assert.equal(opensWorkspace(join(ws, "notes.md"), rule), false);
  const plain = mkdtempSync(join(tmpdir(), "ks-plain-"));
  writeFileSync(join(plain, "README.md"), "# a project\n");
  assert.equal(opensWorkspace(join(plain, "README.md"), rule), false);
});

test("the client sends Python files and a workspace's README.md (the rule's name), on disk only", () => {
  assert.deepEqual(documentSelector(vocabulary.workspaceRule), [
    { scheme: "file", language: "python" },
    { scheme: "file", pattern: "**/README.md" },
  ]);
});

/** VS Code's rule for a document filter: it matches when every field it gives matches (only the
 * `**\/<name>` patterns the selector uses are read here). */
function selects(filters: { scheme?: string; language?: string; pattern?: string }[], path: string, language: string) {
  return filters.some((f) => {
    if (f.pattern !== undefined && !f.pattern.startsWith("**/")) throw new Error(`unread pattern ${f.pattern}`);
    return (f.scheme === undefined || f.scheme === "file")
      && (f.language === undefined || f.language === language)
      && (f.pattern === undefined || path.endsWith(`/${f.pattern.slice(3)}`));
  });
}

test("a README.md is sent whatever language files.associations gives *.md, and no other Markdown file", () => {
  const selector = documentSelector(vocabulary.workspaceRule);
  for (const language of ["markdown", "plaintext", "mdx"]) { // (before: markdown only: no warnings for the others)
    assert.ok(selects(selector, "/ws/kernel_opt_add/README.md", language), language);
  }
  assert.ok(!selects(selector, "/ws/kernel_opt_add/NOTES.md", "markdown"));
  assert.ok(selects(selector, "/ws/kernel_opt_add/kernel.py", "python"));
});

test("daemon command names come from commands.json and are checked", () => {
  assert.equal(daemonCommand(vocabulary, "compare"), "kernelscope.compare");
  assert.throws(() => daemonCommand(vocabulary, "benchmarking"), /not a kernelscope command/);
  assert.deepEqual(missingCommands(vocabulary, Object.keys(vocabulary.commands)), []);
  assert.deepEqual(missingCommands(vocabulary, ["kernelscope.benchmark"]).includes("kernelscope.compare"), true);
});

test("every daemon command has a palette command and every palette command a daemon command", () => {
  const manifest = JSON.parse(readFileSync("package.json", "utf8"));
  const palette = (manifest.contributes.commands as { command: string }[]).map((c) => c.command);
  const clientOnly = ["kernelscope.client.restartServer", "kernelscope.client.showLogs"];
  const mapped = palette.filter((c) => !clientOnly.includes(c)).map((c) => c.replace(".client.", "."));
  assert.deepEqual(mapped.sort(), Object.keys(vocabulary.commands).sort());
});

test("parseVersionPair accepts 'v0 v4', 'v0..v4' and '0,4'", () => {
  assert.deepEqual(parseVersionPair("v0 v4"), ["v0", "v4"]);
  assert.deepEqual(parseVersionPair("V0..v4"), ["v0", "v4"]);
  assert.deepEqual(parseVersionPair("0,4"), ["v0", "v4"]);
  assert.match(parseVersionPair("v0") as string, /give two versions/);
  assert.match(parseVersionPair("v0 best") as string, /give two versions/);
});

test("comparisonHtml tabulates both versions and escapes what agents wrote", () => {
  const effect = (version: string, extra: object) => ({
    version, commit: null, masked: false, gate: "PASS", passed: true, score: null, vs_parent: null,
    latency_us: null, failure: null, action: null, category: null, text: "", ...extra,
  });
  const comparison: Comparison = {
    workspace: "/w", code_diff: "", code_available: false, code_a: null, code_b: null, markdown: "",
    a: effect("v0", { latency_us: 61 }),
    b: effect("v3", { gate: "FAIL", passed: false, masked: true, action: "<script>alert(1)</script>", failure: "rel_err 0.31" }),
    configs: [{ config: "n=16777216", a_latency_us: 61, b_latency_us: null, latency_ratio: null, a_speedup: null, b_speedup: null, a_passed: true, b_passed: false }],
    score_ratio: { value: 1.16, kind: "latency_ratio", versus: "v0", ci: [1.1, 1.2] },
    gate_details: { v3: ["gate FAIL", "failure: rel_err 0.31"] }, messages: ["v3: no kernel.py in git"],
  };
  const html = comparisonHtml(comparison);
  assert.match(html, /<h2>v0 &rarr; v3<\/h2>/);
  assert.match(html, /v3 vs v0: latency ratio 1.16x vs v0 \[1.10-1.20\]/);
  assert.match(html, /<tr><th>gate<\/th><td>PASS<\/td><td>FAIL<\/td><\/tr>/);
  assert.match(html, /<tr><th>masked<\/th><td>no<\/td><td>yes<\/td><\/tr>/);
  assert.match(html, /<td>n=16777216<\/td><td>61.0<\/td><td>-<\/td>/);
  assert.ok(!html.includes("<script>") && html.includes("&lt;script&gt;"));
});

test("paletteParams asks the server to confirm the commands commands.json marks, and only those", () => {
  assert.deepEqual(paletteParams(vocabulary, "kernelscope.maskHalf", { workspace: "/w" }), { workspace: "/w", confirm: true });
  assert.deepEqual(paletteParams(vocabulary, "kernelscope.restart", { workspace: "/w" }), { workspace: "/w", confirm: true });
  assert.deepEqual(paletteParams(vocabulary, "kernelscope.runIteration", { workspace: "/w" }), { workspace: "/w" });
  assert.deepEqual(paletteParams(vocabulary, "kernelscope.benchmark", { workspace: "/w" }), { workspace: "/w" });
});

test("questionDialog: the server's question is a modal with its actions, its decline the dialog's own cancel", () => {
  const actions = [{ title: "Mask & restart" }, { title: "Cancel" }];
  assert.deepEqual(questionDialog(vocabulary, { type: 2, actions }), {
    severity: "warning", modal: true,
    items: [{ title: "Mask & restart", isCloseAffordance: false }, { title: "Cancel", isCloseAffordance: true }],
  });
  assert.equal(questionDialog(vocabulary, { type: 1, actions: [{ title: "Retry" }] }).severity, "error");
  assert.equal(questionDialog(vocabulary, { type: 3, actions: [{ title: "OK" }] }).severity, "info");
  assert.equal(questionDialog(vocabulary, { type: 4, actions: null }).severity, "info");
  // nothing to pick: a notification, not a dialog
  assert.deepEqual(questionDialog(vocabulary, { type: 1 }), { severity: "error", modal: false, items: [] });
});

test("statusText shows the best passing score", () => {
  const history = { workspace: "/w", kernel: null, markdown: "", entries: [
    { version: "v0", score: 1.0, status: "PASS", summary: "" },
    { version: "v1", score: 1.4, status: "FAIL", summary: "" },
    { version: "v2", score: 1.2, status: "PASS", summary: "" },
  ] };
  assert.equal(statusText(history), "$(pulse) best 1.20x v2");
  assert.equal(statusText({ ...history, target: "target bandwidth >= 4.32TB/s | best 4043 GB/s v4" }),
    "$(pulse) best 1.20x v2 | target bandwidth >= 4.32TB/s");
  assert.equal(statusText(undefined), "$(pulse) kernelscope: no runs");
});

test("recordParams validates the score and splits kernels", () => {
  assert.deepEqual(recordParams("/w", " tried x ", "1.5", "a, b"), { workspace: "/w", changeSummary: "tried x", score: 1.5, kernels: ["a", "b"] });
  assert.deepEqual(recordParams("/w", "s", "", ""), { workspace: "/w", changeSummary: "s" });
  assert.throws(() => recordParams("/w", "s", "fast", ""), /score must be a number/);
});

test("chartPoints orders versions numerically and marks failed and masked ones", () => {
  const points = chartPoints({ workspace: "/w", kernel: null, markdown: "", entries: [
    { version: "v10", score: 2, status: "PASS", summary: "" },
    { version: "v9", score: 1.5, status: "PASS", summary: "", masked: true },
    { version: "v3", score: null, status: "FAIL", summary: "", failed: true },
    { version: "v4", score: 1.1, status: "failed", summary: "" },
    { version: "v5", score: null, status: "PASS", summary: "" },
  ] });
  assert.deepEqual(points, [
    { label: "v3", score: null, kind: "failed" },
    { label: "v4", score: 1.1, kind: "failed" },
    { label: "v9", score: 1.5, kind: "masked" },
    { label: "v10", score: 2, kind: "pass" },
  ]);
});

test("initializationOptions carry the window's trust as workspaceTrusted and drop unset settings", () => {
  assert.deepEqual(initializationOptions({ dbUrl: "/x.sqlite", python: null, mode: "auto" }, false),
    { kernelscope: { workspaceTrusted: false, dbUrl: "/x.sqlite", mode: "auto" } });
  assert.deepEqual(initializationOptions({ memoryLimitMb: 0, timeoutS: 60, agent: undefined }, true),
    { kernelscope: { workspaceTrusted: true, memoryLimitMb: 0, timeoutS: 60 } });
});

test("initializationOptions never send `trusted`: the user's list (config.toml) decides, the window can only refuse", () => {
  // Before, the window's trust went out as `trusted` and replaced the config file's list: a
  // trusted window re-benchmarked every workspace, whatever config.toml said.
  const sent = initializationOptions({ trusted: true, python: "/usr/bin/python3", seeds: 3 }, true);
  assert.deepEqual(sent, { kernelscope: { workspaceTrusted: true, python: "/usr/bin/python3", seeds: 3 } });
  assert.equal("trusted" in (sent.kernelscope as Record<string, unknown>), false);
});

test("folderSettingsOnly keeps folder keys, drops trust, interpreter, executor and unknown keys", () => {
  assert.deepEqual(folderSettingsOnly({ trusted: true, benchOnSave: true, python: "/bin/sh", rayAddress: "x:1", mode: "gpu", colour: 1 }),
    { benchOnSave: true, mode: "gpu" });
  assert.equal(folderSettingsOnly(null), null);
});

test("serialized runs a restart only after a start still under way has settled, failed or not", async () => {
  const lifecycle = serialized();
  const events: string[] = [];
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const start = lifecycle(async () => {
    events.push("start begins");
    await sleep(30);
    events.push("start fails");
    throw new Error("spawn kernelscope ENOENT");
  });
  const restart = lifecycle(async () => {
    events.push("restart");
  });
  await assert.rejects(start, /ENOENT/);
  await restart;
  assert.deepEqual(events, ["start begins", "start fails", "restart"]);
  await lifecycle(async () => { events.push("after"); });  // the queue goes on
  assert.equal(events.at(-1), "after");
});

test("a clicked lens's history and comparison are shown, other answers passed through", async () => {
  // VS Code runs a lens's command through this middleware; without it the answer was dropped
  const shown: string[] = [];
  const middleware = showAnswers(vocabulary, {
    history: (h) => shown.push(`history ${h.workspace}`),
    comparison: (c) => shown.push(`compare ${c.workspace}`),
  });
  const answers: Record<string, unknown> = {
    "kernelscope.showHistory": { workspace: "/ws", kernel: "add_kernel", entries: [], markdown: "" },
    "kernelscope.compare": { workspace: "/ws2" },
    "kernelscope.benchmark": { job_id: "j1" },
  };
  const next = async (command: string, args: unknown[]) => { assert.equal(args.length, 1); return answers[command]; };
  for (const command of Object.keys(answers)) assert.deepEqual(await middleware(command, [{ workspace: "/ws" }], next), answers[command]);
  assert.deepEqual(shown, ["history /ws", "compare /ws2"]);
});

test("workspaceFor compares the file by its resolved path (a folder opened through a link)", () => {
  const top = realpathSync(mkdtempSync(join(tmpdir(), "ks-link-")));
  for (const name of ["a", "b"]) {
    mkdirSync(join(top, "real", name), { recursive: true });
    writeFileSync(join(top, "real", name, "kernel.py"), "");
  }
  symlinkSync(join(top, "real"), join(top, "link"));
  const named = ["a", "b"].map((n) => ({ workspace: join(top, "real", n), kernel: join(top, "real", n, "kernel.py") }));
  assert.equal(workspaceFor(join(top, "link", "b", "kernel.py"), named), join(top, "real", "b"));
});

test("top experiments: when none ranks, the interpreter's runs, said so", async () => {
  const asked: boolean[] = [];
  const store = (ranked: unknown[], cpu: unknown[]) => async (includeInterpreter: boolean) => {
    asked.push(includeInterpreter);
    return includeInterpreter ? cpu : ranked;
  };
  assert.deepEqual(await topExperiments(store([{ id: "g" }], [{ id: "c" }])), ["top experiments", [{ id: "g" }]]);
  assert.deepEqual(asked, [false]);
  const [title, shown] = await topExperiments(store([], [{ id: "c" }]));
  assert.match(title, /no GPU runs; the interpreter's/);
  assert.deepEqual(shown, [{ id: "c" }]);
  assert.deepEqual(await topExperiments(store([], [])), ["top experiments", []]);
});
