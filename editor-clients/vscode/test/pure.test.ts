import { strict as assert } from "node:assert";
import { test } from "node:test";
import { chartPoints, findWorkspace, folderSettingsOnly, initializationOptions, maskConfirmation, recordParams, statusText } from "../src/pure";

test("findWorkspace walks up to kernel.py + memory/", () => {
  const present = new Set(["/a/ws/kernel.py", "/a/ws/memory"]);
  assert.equal(findWorkspace("/a/ws/kernel.py", (p) => present.has(p)), "/a/ws");
  assert.equal(findWorkspace("/a/ws/sub/x.py", (p) => present.has(p)), "/a/ws");
  assert.equal(findWorkspace("/b/x.py", (p) => present.has(p)), undefined);
});

test("maskConfirmation names the versions, the seed and the kept best", () => {
  const text = maskConfirmation({ masked: ["v2"], candidates: ["v1", "v2", "v3"], best_version: "v4", seed: 7, next_version: "v5" });
  assert.match(text as string, /Mask v2 of 3 candidates \(seed 7\)\? v4 stays as the best; next version v5/);
  assert.equal(maskConfirmation({ masked: [], candidates: ["v1"], best_version: "v2", seed: 1, next_version: "v3" }), undefined);
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

test("chartPoints orders versions numerically and skips unscored", () => {
  const points = chartPoints({ workspace: "/w", kernel: null, markdown: "", entries: [
    { version: "v10", score: 2, status: "PASS", summary: "" },
    { version: "v9", score: 1.5, status: "PASS", summary: "" },
    { version: "v3", score: null, status: "FAIL", summary: "" },
  ] });
  assert.deepEqual(points.map((p) => p.label), ["v9", "v10"]);
});

test("initializationOptions carry trust and drop unset settings", () => {
  assert.deepEqual(initializationOptions({ dbUrl: "/x.sqlite", python: null, mode: "auto" }, false),
    { kernelscope: { trusted: false, dbUrl: "/x.sqlite", mode: "auto" } });
  assert.deepEqual(initializationOptions({ memoryLimitMb: 0, timeoutS: 60, agent: undefined }, true),
    { kernelscope: { trusted: true, memoryLimitMb: 0, timeoutS: 60 } });
});

test("initializationOptions take trust from workspace trust only", () => {
  assert.deepEqual(initializationOptions({ trusted: true, python: "/usr/bin/python3", seeds: 3 }, false),
    { kernelscope: { trusted: false, python: "/usr/bin/python3", seeds: 3 } });
});

test("folderSettingsOnly keeps folder keys, drops trust, interpreter, executor and unknown keys", () => {
  assert.deepEqual(folderSettingsOnly({ trusted: true, benchOnSave: true, python: "/bin/sh", rayAddress: "x:1", mode: "gpu", colour: 1 }),
    { benchOnSave: true, mode: "gpu" });
  assert.equal(folderSettingsOnly(null), null);
});
