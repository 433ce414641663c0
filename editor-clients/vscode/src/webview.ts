// Runs inside the history webview: draws the score-over-versions chart with Chart.js.
import Chart from "chart.js/auto";

const points = (window as unknown as { KERNELSCOPE_POINTS: { label: string; score: number }[] }).KERNELSCOPE_POINTS;
const canvas = document.getElementById("chart") as HTMLCanvasElement | null;
if (canvas && points.length) {
  new Chart(canvas, {
    type: "line",
    data: { labels: points.map((p) => p.label), datasets: [{ label: "speedup vs v0", data: points.map((p) => p.score) }] },
    options: { animation: false, scales: { y: { beginAtZero: false } } },
  });
}
