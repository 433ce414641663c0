// `Kernelscope: Compare Versions`: kernel.py of the two versions in VS Code's diff editor
// (read-only documents served from the comparison itself, nothing written to disk) and the
// numbers in a table webview beside it. Without both texts in git, the markdown instead.
import * as vscode from "vscode";
import { Comparison, comparisonHtml } from "./pure";

export async function showComparison(comparison: Comparison, texts: Map<string, string>): Promise<void> {
  const { a, b } = comparison;
  if (comparison.code_a !== null && comparison.code_b !== null) {
    const uri = (version: string) =>
      vscode.Uri.from({ scheme: "kernelscope-version", path: `/${version}/kernel.py`, query: comparison.workspace });
    const left = uri(a.version), right = uri(b.version);
    texts.set(left.toString(), comparison.code_a);
    texts.set(right.toString(), comparison.code_b);
    await vscode.commands.executeCommand("vscode.diff", left, right, `kernel.py ${a.version} ↔ ${b.version}`, { preview: false });
  } else {
    const doc = await vscode.workspace.openTextDocument({ language: "markdown", content: comparison.markdown });
    await vscode.window.showTextDocument(doc, { preview: false });
  }
  const panel = vscode.window.createWebviewPanel("kernelscopeCompare", `kernelscope: ${a.version} → ${b.version}`,
    { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, { enableScripts: false });
  panel.webview.html = `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline';">
<style>table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid var(--vscode-panel-border,#8884);padding:2px 8px;text-align:left}
td{font-variant-numeric:tabular-nums}</style></head><body>${comparisonHtml(comparison)}</body></html>`;
}
