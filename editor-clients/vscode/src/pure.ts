// Pure helpers of the extension (no `vscode` import), unit-tested with node's test runner.

export interface HistoryEntry { version: string | null; score: number | null; status: string; summary: string }
export interface HistoryResult { workspace: string; kernel: string | null; entries: HistoryEntry[]; markdown: string; target?: string | null }
export interface MaskHalfResult { masked: string[]; candidates: string[]; best_version: string | null; seed: number; next_version: string }

/** The optimization workspace holding `filePath`: the nearest folder with kernel.py and memory/. */
export function findWorkspace(filePath: string, exists: (p: string) => boolean): string | undefined {
  let dir = filePath.replace(/\/[^/]*$/, "");
  while (dir) {
    if (exists(`${dir}/kernel.py`) && exists(`${dir}/memory`)) return dir;
    const parent = dir.replace(/\/[^/]*$/, "");
    if (parent === dir) return undefined;
    dir = parent;
  }
  return undefined;
}

/** The confirmation shown before mask-half writes anything. */
export function maskConfirmation(dry: MaskHalfResult): string | undefined {
  if (dry.masked.length === 0) return undefined;
  return `Mask ${dry.masked.join(", ")} of ${dry.candidates.length} candidates (seed ${dry.seed})? ` +
    `${dry.best_version ?? "no version"} stays as the best; next version ${dry.next_version}.`;
}

/** Status-bar text: the best recorded score and the number of runs. */
export function statusText(history: HistoryResult | undefined): string {
  if (!history || history.entries.length === 0) return "$(pulse) kernelscope: no runs";
  const scored = history.entries.filter((e) => e.score !== null && e.status !== "FAIL" && e.status !== "failed");
  if (scored.length === 0) return `$(pulse) kernelscope: ${history.entries.length} runs, none scored`;
  const best = scored.reduce((a, b) => ((b.score as number) >= (a.score as number) ? b : a));
  const target = history.target ? ` | ${history.target.split(" | ")[0]}` : "";
  return `$(pulse) best ${(best.score as number).toFixed(2)}x ${best.version ?? ""}`.trimEnd() + target;
}

/** Parameters for kernelscope.recordExperiment from the input boxes' raw strings. */
export function recordParams(workspace: string, summary: string, score: string, kernels: string): Record<string, unknown> {
  const params: Record<string, unknown> = { workspace, changeSummary: summary.trim() };
  if (score.trim() !== "") {
    const value = Number(score);
    if (!Number.isFinite(value)) throw new Error(`score must be a number, got ${score}`);
    params.score = value;
  }
  const names = kernels.split(",").map((k) => k.trim()).filter((k) => k);
  if (names.length) params.kernels = names;
  return params;
}

/** Points for the score-over-versions chart: scored entries in version order. */
export function chartPoints(history: HistoryResult): { label: string; score: number }[] {
  const number = (v: string | null) => (v && /^v\d+$/.test(v) ? Number(v.slice(1)) : Number.MAX_SAFE_INTEGER);
  return history.entries
    .filter((e) => e.score !== null)
    .sort((a, b) => number(a.version) - number(b.version))
    .map((e) => ({ label: e.version ?? "?", score: e.score as number }));
}

/** Settings only the user may set (never a workspace's .vscode/settings.json): what runs,
 * where, with which limits. Trust is not among them: it comes from `workspace.isTrusted`. */
export const USER_KEYS = ["dbUrl", "python", "agent", "executor", "rayAddress", "timeoutS", "memoryLimitMb"];
/** Settings a workspace folder may choose (how runs look, never what runs). */
export const FOLDER_KEYS = ["benchOnSave", "mode", "seeds", "debounceMs"];

/** Settings sent as initializationOptions: trust from VS Code's workspace trust only (a
 * `trusted` key in the settings is ignored); background benchmarks only when trusted. */
export function initializationOptions(settings: Record<string, unknown>, trusted: boolean): Record<string, unknown> {
  const options: Record<string, unknown> = { trusted };
  for (const key of [...USER_KEYS, ...FOLDER_KEYS]) {
    if (settings[key] !== undefined && settings[key] !== null) options[key] = settings[key];
  }
  return { kernelscope: options };
}

/** A `workspace/configuration` answer cut down to the folder keys: VS Code's default handler
 * forwards whatever a repository's .vscode/settings.json puts under `kernelscope`. */
export function folderSettingsOnly(value: unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const source = value as Record<string, unknown>;
  const kept: Record<string, unknown> = {};
  for (const key of FOLDER_KEYS) if (source[key] !== undefined) kept[key] = source[key];
  return kept;
}
