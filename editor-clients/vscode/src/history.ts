// The history webview: a score-over-versions chart (Chart.js, bundled into dist/webview.js)
// and the experiments table. Nothing is loaded from the network (strict CSP).
import * as vscode from "vscode";
import { HistoryResult, chartPoints, escapeHtml as escape } from "./pure";

export function showHistoryPanel(context: vscode.ExtensionContext, history: HistoryResult): void {
  const panel = vscode.window.createWebviewPanel("kernelscopeHistory", `kernelscope: ${history.kernel ?? "history"}`,
    vscode.ViewColumn.Beside, { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(context.extensionUri, "dist")] });
  const script = panel.webview.asWebviewUri(vscode.Uri.joinPath(context.extensionUri, "dist", "webview.js"));
  const nonce = Math.random().toString(36).slice(2);
  const rows = history.entries.map((e) =>
    `<tr><td>${escape(e.version ?? "-")}</td><td>${e.score === null ? "-" : e.score.toFixed(3) + "x"}</td>` +
    `<td>${escape(e.status)}${e.masked ? " (masked)" : ""}</td><td>${escape(e.summary)}</td></tr>`).join("");
  panel.webview.html = `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${panel.webview.cspSource}; style-src 'unsafe-inline'; script-src 'nonce-${nonce}';">
</head><body><h2>${escape(history.workspace)}</h2><canvas id="chart" height="120"></canvas>
<p>&#9679; passed &nbsp; <span style="color:#d33">&#10006; failed</span> &nbsp; <span style="color:#888">&#9670; masked</span></p>
<table><thead><tr><th>version</th><th>score</th><th>status</th><th>summary</th></tr></thead><tbody>${rows}</tbody></table>
<script nonce="${nonce}">window.KERNELSCOPE_POINTS = ${JSON.stringify(chartPoints(history))};</script>
<script nonce="${nonce}" src="${script}"></script></body></html>`;
}

