// Runs inside the history webview: draws the score-over-versions chart with Chart.js, failed
// versions as red crosses (at their score, else on the axis) and masked ones as grey diamonds.
import Chart from "chart.js/auto";
import type { ChartPoint } from "./pure";

const points = (window as unknown as { KERNELSCOPE_POINTS: ChartPoint[] }).KERNELSCOPE_POINTS;
const canvas = document.getElementById("chart") as HTMLCanvasElement | null;
if (canvas && points.length) {
  const scored = points.filter((p) => p.score !== null).map((p) => p.score as number);
  const floor = scored.length ? Math.min(...scored) : 0;
  const style = { pass: "circle", failed: "crossRot", masked: "rectRot" } as const;
  const colour = { pass: "#3b82f6", failed: "#dd3333", masked: "#888888" } as const;
  new Chart(canvas, {
    type: "line",
    data: {
      labels: points.map((p) => p.label),
      datasets: [
        {
          label: "score vs v0 (passed)",
          data: points.map((p) => (p.kind === "failed" ? null : p.score)),
          spanGaps: true,
          pointStyle: points.map((p) => style[p.kind]),
          pointBackgroundColor: points.map((p) => colour[p.kind]),
          pointBorderColor: points.map((p) => colour[p.kind]),
          pointRadius: 5,
        },
        {
          label: "failed",
          data: points.map((p) => (p.kind === "failed" ? p.score ?? floor : null)),
          showLine: false,
          pointStyle: "crossRot",
          pointRadius: 8,
          pointBorderWidth: 3,
          borderColor: colour.failed,
          backgroundColor: colour.failed,
        },
      ],
    },
    options: { animation: false, scales: { y: { beginAtZero: false } } },
  });
}
