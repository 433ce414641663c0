// kernelscope for VS Code: starts `kernelscope serve`, restarts it when settings or trust
// change, puts every daemon command in the palette, shows best-vs-target in the status bar
// and the history in a webview. All logic lives in the server.
import * as fs from "fs";
import * as vscode from "vscode";
import { ExecuteCommandRequest, LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";
import { FOLDER_KEYS, HistoryResult, MaskHalfResult, USER_KEYS, findWorkspace, folderSettingsOnly, initializationOptions, maskConfirmation, recordParams, statusText } from "./pure";
import { showHistoryPanel } from "./history";

let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel;
let status: vscode.StatusBarItem;

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
    documentSelector: [{ scheme: "file", language: "python" }],
    outputChannel: output,
    // Background benchmarks run kernel.py: only in trusted workspaces.
    initializationOptions: initializationOptions(current, vscode.workspace.isTrusted),
    middleware: {
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
  client.onNotification("kernelscope/jobFinished", (params: { kind: string; error?: string; cancelled?: boolean; background?: boolean }) => {
    const outcome = params.error ?? (params.cancelled ? "cancelled" : "done");
    output.info(`${params.kind}: ${outcome}`);
    // background probes speak through lenses and diagnostics, not pop-ups
    if (!params.background) vscode.window.showInformationMessage(`kernelscope ${params.kind}: ${outcome}`);
    void updateStatus();
  });
  await client.start();
  context.subscriptions.push({ dispose: () => void client?.stop() });
  void updateStatus();
}

async function restartClient(context: vscode.ExtensionContext): Promise<void> {
  if (client) await client.stop();
  await startClient(context);
}

function activeWorkspace(): string | undefined {
  const file = vscode.window.activeTextEditor?.document.uri.fsPath;
  if (file) {
    const found = findWorkspace(file, (p) => fs.existsSync(p));
    if (found) return found;
  }
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    const root = folder.uri.fsPath;
    if (fs.existsSync(`${root}/kernel.py`) && fs.existsSync(`${root}/memory`)) return root;
  }
  return undefined;
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
  const workspace = activeWorkspace();
  if (!workspace) {
    status.hide();
    return;
  }
  const history = await daemon<HistoryResult>("kernelscope.showHistory", { workspace });
  status.text = statusText(history);
  status.tooltip = `kernelscope: ${history?.target ?? "best recorded score"} (click for the history)`;
  status.show();
}

function withWorkspace(run: (workspace: string) => Promise<unknown>): () => Promise<void> {
  return async () => {
    const workspace = activeWorkspace();
    if (!workspace) {
      vscode.window.showWarningMessage("kernelscope: open a file inside an optimization workspace (kernel.py + memory/)");
      return;
    }
    await run(workspace);
  };
}

async function showResult(title: string, result: unknown): Promise<void> {
  if (result === undefined) return;
  output.info(`${title}: ${JSON.stringify(result)}`);
  vscode.window.showInformationMessage(`${title}: ${JSON.stringify(result).slice(0, 300)}`);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("kernelscope", { log: true });
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  status.command = "kernelscope.client.showHistory";
  context.subscriptions.push(output, status);
  const register = (name: string, run: () => Promise<unknown>) =>
    context.subscriptions.push(vscode.commands.registerCommand(name, run));

  register("kernelscope.client.restartServer", () => restartClient(context));
  register("kernelscope.client.showLogs", async () => output.show());
  register("kernelscope.client.maskHalf", withWorkspace(async (workspace) => {
    const dry = await daemon<MaskHalfResult>("kernelscope.maskHalf", { workspace, dryRun: true });
    if (!dry) return;
    const question = maskConfirmation(dry);
    if (!question) {
      vscode.window.showInformationMessage("kernelscope: nothing to mask (fewer than two candidates)");
      return;
    }
    if ((await vscode.window.showWarningMessage(question, { modal: true }, "Mask")) !== "Mask") return;
    await showResult("mask-half", await daemon("kernelscope.maskHalf", { workspace, seed: dry.seed }));
  }));
  register("kernelscope.client.unmask", withWorkspace(async (workspace) => {
    const versions = await vscode.window.showInputBox({ prompt: "Versions to unmask, e.g. v2 v5" });
    if (!versions) return;
    await showResult("unmask", await daemon("kernelscope.unmask", { workspace, versions: versions.split(/[\s,]+/).filter(Boolean) }));
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
    await showResult("recorded", await daemon("kernelscope.recordExperiment", params));
  }));
  const job = (name: string, command: string) =>
    register(name, withWorkspace(async (workspace) => showResult(command, await daemon(command, { workspace }))));
  job("kernelscope.client.runIteration", "kernelscope.runIteration");
  job("kernelscope.client.restart", "kernelscope.restart");
  job("kernelscope.client.benchmark", "kernelscope.benchmark");
  job("kernelscope.client.cancel", "kernelscope.cancel");
  register("kernelscope.client.topExperiments", withWorkspace(async (workspace) =>
    showResult("top experiments", await daemon("kernelscope.topExperiments", { workspace, maxResults: 10 }))));
  register("kernelscope.client.showHistory", withWorkspace(async (workspace) => {
    const history = await daemon<HistoryResult>("kernelscope.showHistory", { workspace });
    if (history) showHistoryPanel(context, history);
  }));

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("kernelscope")) void restartClient(context);
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restartClient(context)),
    vscode.window.onDidChangeActiveTextEditor(() => void updateStatus()),
  );
  await startClient(context);
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
