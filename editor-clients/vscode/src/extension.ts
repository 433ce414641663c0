// kernelscope for VS Code: starts `kernelscope serve`, restarts it when settings or trust
// change, puts every daemon command in the palette, shows best-vs-target in the status bar
// and the history in a webview. All logic lives in the server.
import { dirname } from "node:path";
import * as vscode from "vscode";
import { ExecuteCommandRequest, LanguageClient, LanguageClientOptions, ServerOptions, ShowMessageRequest } from "vscode-languageclient/node";
import vocabularyJson from "../../commands.json";
import {
  Comparison, FOLDER_KEYS, HistoryResult, USER_KEYS, Vocabulary, WorkspaceInfo, daemonCommand, documentSelector,
  folderSettingsOnly, initializationOptions, isWorkspaceDir, missingCommands, opensWorkspace, paletteParams, parseVersionPair, questionDialog,
  recordParams, serialized, showAnswers, statusText, topExperiments, workspaceFor,
} from "./pure";
import { showHistoryPanel } from "./history";
import { showComparison } from "./compare";

/** Command names, job kinds, request and notification methods: the server's own list. */
const vocabulary = vocabularyJson as Vocabulary & { notifications: Record<string, string>; requests: Record<string, string> };
const command = (name: string) => daemonCommand(vocabulary, name);

let client: LanguageClient | undefined;
/** Starts, restarts and stops of the client, one at a time. */
const lifecycle = serialized();
let output: vscode.LogOutputChannel;
let status: vscode.StatusBarItem;
/** kernel.py of compared versions, served read-only to the diff editor. */
const versionTexts = new Map<string, string>();

/** The user's own value of a setting (user settings, else the default): never a workspace's,
 * whatever scope VS Code applies (settings that decide what runs are the user's alone). */
function userValue<T>(config: vscode.WorkspaceConfiguration, key: string): T | undefined {
  const inspected = config.inspect<T>(key);
  return inspected?.globalValue ?? inspected?.defaultValue;
}

function settings(): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration("kernelscope");
  const values: Record<string, unknown> = {
    command: userValue<string[]>(config, "command") ?? ["kernelscope", "serve"],
  };
  for (const key of USER_KEYS) values[key] = userValue(config, key);
  for (const key of FOLDER_KEYS) values[key] = config.get(key);
  return values;
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  const current = settings();
  const [command, ...args] = current.command as string[];
  const serverOptions: ServerOptions = { command, args };
  const clientOptions: LanguageClientOptions = {
    documentSelector: documentSelector(vocabulary.workspaceRule),
    outputChannel: output,
    // Background benchmarks run kernel.py: never in a restricted window (the daemon also
    // requires the workspace in the user's `trusted` list).
    initializationOptions: initializationOptions(current, vscode.workspace.isTrusted),
    middleware: {
      // a clicked lens's history or comparison is shown (the client would drop the answer)
      executeCommand: showAnswers(vocabulary, {
        history: (history) => showHistoryPanel(context, history),
        comparison: (comparison) => showComparison(comparison, versionTexts),
      }),
      workspace: {
        // Folder answers carry folder keys only (the server ignores the rest anyway).
        configuration: async (params, token, next) => {
          const answer = await next(params, token);
          return Array.isArray(answer) ? answer.map(folderSettingsOnly) : answer;
        },
      },
    },
  };
  client = new LanguageClient("kernelscope", "kernelscope", serverOptions, clientOptions);
  output.info(`starting the daemon: ${JSON.stringify(current.command)}`);
  client.onNotification(vocabulary.notifications.jobFinished, (params: { kind: string; error?: string; cancelled?: boolean; background?: boolean }) => {
    const outcome = params.error ?? (params.cancelled ? "cancelled" : "done");
    output.info(`${params.kind}: ${outcome}`);
    // background probes speak through lenses and diagnostics, not pop-ups
    if (!params.background) vscode.window.showInformationMessage(`kernelscope ${params.kind}: ${outcome}`);
    void updateStatus();
  });
  // the server's question (mask-half, restart) in a modal dialog, not vscode-languageclient's
  // notification; a handler set before start() replaces the default one (on every restart too)
  client.onRequest(ShowMessageRequest.type, async (params) => {
    const { severity, modal, items } = questionDialog(vocabulary, params);
    const show = { error: vscode.window.showErrorMessage, warning: vscode.window.showWarningMessage, info: vscode.window.showInformationMessage }[severity];
    const picked = await show(params.message, { modal }, ...items);
    return picked ? params.actions?.[items.indexOf(picked)] ?? null : null;
  });
  try {
    await client.start();
  } catch (error) {
    // vscode-languageclient has said "couldn't create connection"; say what was run and what to set
    const reason = error instanceof Error ? error.message : String(error);
    output.error(`could not start the daemon with ${JSON.stringify(current.command)}: ${reason}. ` +
      "Set kernelscope.command in your user settings (e.g. [\"/path/to/venv/bin/kernelscope\", \"serve\"]).");
    client = undefined;
    return;
  }
  // a daemon older or newer than this extension: say which commands will not work
  const missing = missingCommands(vocabulary, client.initializeResult?.capabilities.executeCommandProvider?.commands);
  if (missing.length) output.warn(`the daemon does not offer ${missing.join(", ")}: update kernelscope or this extension`);
  void updateStatus();
}

/** Stop the running client, if one runs (one that failed to start has nothing to stop). */
async function stopClient(): Promise<void> {
  const previous = client;
  client = undefined;
  if (previous?.isRunning()) {
    try {
      await previous.stop();
    } catch (error) {
      output.warn(`stopping the daemon: ${(error as Error).message}`);
    }
  }
}

/** Whether the daemon is wanted in this window: an optimization workspace was seen in it (or
 * the user asked for a restart). A window of other Python projects never starts it. */
let wanted = false;

/** Whether this window's folders hold an optimization workspace, by the server's rule. */
async function windowHasWorkspace(): Promise<boolean> {
  const rule = vocabulary.workspaceRule;
  const found = await vscode.workspace.findFiles(`**/${rule.files[0]}`, "**/{node_modules,.git}/**", 500);
  return found.some((uri) => uri.scheme === "file" && isWorkspaceDir(dirname(uri.fsPath), rule));
}

/** Start the daemon the first time `found` says a workspace is here (at activation, a folder
 * added, a workspace's kernel.py or README opened: an agent may create a workspace after the window opened). */
async function startWhenWanted(context: vscode.ExtensionContext, found: () => boolean | Promise<boolean>): Promise<void> {
  if (wanted || !(await found()) || wanted) return;
  wanted = true;
  await lifecycle(() => startClient(context));
}

/** After a settings or trust change, or on request; queued behind a start still under way. */
function restartClient(context: vscode.ExtensionContext): Promise<void> {
  if (!wanted) return Promise.resolve(); // no workspace here: nothing runs, nothing to restart
  return lifecycle(async () => {
    await stopClient();
    await startClient(context);
  });
}

/** The workspace of the active file, as the server sees workspaces (it reads README machine
 * blocks, SOL-ExecBench and KernelBench layouts: a client guessing from files would miss some). */
async function activeWorkspace(): Promise<string | undefined> {
  if (!client) return undefined;
  let workspaces: WorkspaceInfo[] = [];
  try {
    const answer = await client.sendRequest<{ workspaces: WorkspaceInfo[] }>(vocabulary.requests.workspaces, {});
    workspaces = answer?.workspaces ?? [];
  } catch (error) {
    output.warn(`${vocabulary.requests.workspaces}: ${(error as Error).message}`);
  }
  const editor = vscode.window.activeTextEditor?.document.uri;
  return workspaceFor(editor?.scheme === "file" ? editor.fsPath : undefined, workspaces);
}

async function daemon<T>(command: string, params: Record<string, unknown>): Promise<T | undefined> {
  if (!client) {
    vscode.window.showErrorMessage("kernelscope: the server is not running");
    return undefined;
  }
  try {
    return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [params] })) as T;
  } catch (error) {
    vscode.window.showErrorMessage(`kernelscope: ${(error as Error).message}`);
    return undefined;
  }
}

async function updateStatus(): Promise<void> {
  const workspace = await activeWorkspace();
  if (!workspace) {
    status.hide();
    return;
  }
  const history = await daemon<HistoryResult>(command("showHistory"), { workspace });
  status.text = statusText(history);
  status.tooltip = `kernelscope: ${history?.target ?? "best recorded score"} (click for the history)`;
  status.show();
}

function withWorkspace(run: (workspace: string, ...args: unknown[]) => Promise<unknown>): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    const workspace = await activeWorkspace();
    if (!workspace) {
      vscode.window.showWarningMessage("kernelscope: open a file inside an optimization workspace (the server found none here)");
      return;
    }
    await run(workspace, ...args);
  };
}

/** Two versions to compare: given as arguments, else picked from the workspace's history. */
async function pickVersions(workspace: string, a: unknown, b: unknown): Promise<[string, string] | undefined> {
  if (typeof a === "string" && typeof b === "string") {
    const pair = parseVersionPair(`${a} ${b}`);
    if (typeof pair === "string") vscode.window.showErrorMessage(`kernelscope: ${pair}`);
    return typeof pair === "string" ? undefined : pair;
  }
  const history = await daemon<HistoryResult>(command("showHistory"), { workspace });
  const seen = new Map<string, vscode.QuickPickItem>();
  for (const entry of history?.entries ?? []) {
    if (!entry.version || seen.has(entry.version)) continue;
    const score = entry.score === null ? "no score" : `${entry.score.toFixed(2)}x`;
    seen.set(entry.version, { label: entry.version, description: `${entry.status}${entry.masked ? " (masked)" : ""} · ${score}`, detail: entry.summary });
  }
  const items = [...seen.values()].sort((x, y) => Number(x.label.slice(1)) - Number(y.label.slice(1)));
  const from = await vscode.window.showQuickPick(items, { title: "kernelscope: compare", placeHolder: "from version" });
  if (!from) return undefined;
  const to = await vscode.window.showQuickPick(items.filter((i) => i.label !== from.label), { title: `kernelscope: compare ${from.label} with`, placeHolder: "to version" });
  return to ? [from.label, to.label] : undefined;
}

async function showResult(title: string, result: unknown): Promise<void> {
  if (result === undefined) return;
  output.info(`${title}: ${JSON.stringify(result)}`);
  if ((result as { declined?: boolean } | null)?.declined) return; // the person said no: nothing to tell them
  vscode.window.showInformationMessage(`${title}: ${JSON.stringify(result).slice(0, 300)}`);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("kernelscope", { log: true });
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  status.command = "kernelscope.client.showHistory";
  context.subscriptions.push(output, status);

  context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider("kernelscope-version", {
    provideTextDocumentContent: (uri) => versionTexts.get(uri.toString()) ?? "",
  }));
  const register = (name: string, run: (...args: unknown[]) => Promise<unknown>) =>
    context.subscriptions.push(vscode.commands.registerCommand(name, run));

  register("kernelscope.client.restartServer", () => {
    wanted = true; // asked for by name: started even where no workspace was seen
    return restartClient(context);
  });
  register("kernelscope.client.showLogs", async () => output.show());
  register("kernelscope.client.unmask", withWorkspace(async (workspace) => {
    const versions = await vscode.window.showInputBox({ prompt: "Versions to unmask, e.g. v2 v5" });
    if (!versions) return;
    await showResult("unmask", await daemon(command("unmask"), { workspace, versions: versions.split(/[\s,]+/).filter(Boolean) }));
  }));
  register("kernelscope.client.recordExperiment", withWorkspace(async (workspace) => {
    const summary = await vscode.window.showInputBox({ prompt: "Change summary (one line, at most 80 characters)", validateInput: (v) => (v.length > 80 ? "at most 80 characters" : undefined) });
    if (summary === undefined) return;
    const score = await vscode.window.showInputBox({ prompt: "Score (speedup vs baseline; empty if none)" });
    if (score === undefined) return;
    const kernels = await vscode.window.showInputBox({ prompt: "Kernels (comma-separated function names)" });
    if (kernels === undefined) return;
    let params: Record<string, unknown>;
    try {
      params = recordParams(workspace, summary, score, kernels);
    } catch (error) {
      vscode.window.showErrorMessage(`kernelscope: ${(error as Error).message}`);
      return;
    }
    await showResult("recorded", await daemon(command("recordExperiment"), params));
  }));
  // a palette command on this workspace; mask-half and restart: the server asks first (its
  // question, what is masked and kept; commands.json's `confirm`)
  const palette = (name: string, title = name) =>
    register(`kernelscope.client.${name}`, withWorkspace(async (workspace) =>
      showResult(title, await daemon(command(name), paletteParams(vocabulary, command(name), { workspace })))));
  palette("maskHalf", "mask-half");
  for (const name of ["runIteration", "restart", "benchmark", "cancel"]) palette(name);
  register("kernelscope.client.topExperiments", withWorkspace(async (workspace) =>
    showResult(...await topExperiments((includeInterpreter) =>
      daemon(command("topExperiments"), { workspace, maxResults: 10, includeInterpreter })))));
  register("kernelscope.client.showHistory", withWorkspace(async (workspace) => {
    const history = await daemon<HistoryResult>(command("showHistory"), { workspace });
    if (history) showHistoryPanel(context, history);
  }));
  register("kernelscope.client.compare", withWorkspace(async (workspace, a, b) => {
    const pair = await pickVersions(workspace, a, b);
    if (!pair) return;
    const comparison = await daemon<Comparison>(command("compare"), { workspace, versionA: pair[0], versionB: pair[1] });
    if (comparison) await showComparison(comparison, versionTexts);
  }));

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration("kernelscope")) return;
      output.info("kernelscope settings changed: restarting the daemon");
      void restartClient(context);
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restartClient(context)),
    vscode.window.onDidChangeActiveTextEditor(() => void updateStatus()),
    vscode.workspace.onDidChangeWorkspaceFolders(() => void startWhenWanted(context, windowHasWorkspace)),
    vscode.workspace.onDidOpenTextDocument((document) => void startWhenWanted(context, () =>
      document.uri.scheme === "file" && opensWorkspace(document.uri.fsPath, vocabulary.workspaceRule))),
  );
  await startWhenWanted(context, windowHasWorkspace);
  if (!wanted) output.info("no optimization workspace in this window: the daemon starts once one is opened");
}

export async function deactivate(): Promise<void> {
  await lifecycle(stopClient);
}
