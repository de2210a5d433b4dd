/**
 * A chart of a query result, loaded when asked for: bar, line, scatter or histogram, drawn as
 * SVG elements (text as text, nothing evaluated), downloadable as SVG or PNG.
 */

import { html } from "htm/preact";
import { useRef, useState } from "preact/hooks";
import { display } from "./grid.js";

const KINDS = ["bar", "line", "scatter", "histogram"];
const W = 720;
const H = 360;
const M = { top: 16, right: 16, bottom: 48, left: 64 };
const BINS = 20;
const COLOR = "#2563eb";

/** A value as a number for an axis: numbers, numeric text, and dates as their time. */
function numberOf(value) {
  if (typeof value === "number") return value;
  if (typeof value === "string") {
    if (value.trim() !== "" && !Number.isNaN(Number(value))) return Number(value);
    if (/^\d{4}-\d{2}-\d{2}/.test(value)) return Date.parse(value);
  }
  if (typeof value === "boolean") return value ? 1 : 0;
  return NaN;
}

function ticks(min, max, n = 5) {
  if (min === max) return [min];
  return Array.from({ length: n + 1 }, (_, i) => min + (max - min) * i / n);
}

function short(v) {
  if (Math.abs(v) >= 1e6 || (Math.abs(v) < 1e-3 && v !== 0)) return v.toExponential(2);
  return Number.isInteger(v) ? String(v) : v.toFixed(2);
}

function scale(min, max, from, to) {
  const span = max - min || 1;
  return (v) => from + (v - min) / span * (to - from);
}

/** The marks of the chart: [{x, y, w, h, label}] bars or points, and the axes' ranges. */
function layout(kind, rows, x, y) {
  const innerW = W - M.left - M.right;
  const innerH = H - M.top - M.bottom;
  if (kind === "histogram") {
    const values = rows.map((r) => numberOf(r[x])).filter(Number.isFinite);
    if (values.length === 0) return { empty: "No numeric values in this column." };
    const min = Math.min(...values);
    const max = Math.max(...values);
    const width = (max - min) / BINS || 1;
    const counts = new Array(BINS).fill(0);
    for (const v of values) counts[Math.min(BINS - 1, Math.floor((v - min) / width))]++;
    const top = Math.max(...counts);
    const sy = scale(0, top, innerH, 0);
    return {
      bars: counts.map((c, i) => ({
        x: i * innerW / BINS,
        w: innerW / BINS - 1,
        y: sy(c),
        h: innerH - sy(c),
        label: `${short(min + i * width)}–${short(min + (i + 1) * width)}: ${c}`,
      })),
      xTicks: ticks(min, max).map((v) => ({ at: scale(min, max, 0, innerW)(v), text: short(v) })),
      yTicks: ticks(0, top).map((v) => ({ at: sy(v), text: short(v) })),
    };
  }
  const ys = rows.map((r) => numberOf(r[y]));
  if (kind === "bar") {
    const shown = rows.slice(0, 60);
    const values = shown.map((r) => numberOf(r[y])).filter(Number.isFinite);
    if (values.length === 0) return { empty: "No numeric values in the y column." };
    const low = Math.min(0, ...values);
    const high = Math.max(0, ...values);
    const sy = scale(low, high, innerH, 0);
    const band = innerW / shown.length;
    return {
      bars: shown.map((r, i) => {
        const v = numberOf(r[y]);
        const top = Number.isFinite(v) ? sy(Math.max(0, v)) : sy(0);
        const bottom = Number.isFinite(v) ? sy(Math.min(0, v)) : sy(0);
        return {
          x: i * band + band * 0.1,
          w: band * 0.8,
          y: top,
          h: bottom - top,
          label: `${display(r[x])}: ${display(r[y])}`,
        };
      }),
      xTicks: shown.length <= 12
        ? shown.map((r, i) => ({ at: i * band + band / 2, text: display(r[x]).slice(0, 12) }))
        : [],
      yTicks: ticks(low, high).map((v) => ({ at: sy(v), text: short(v) })),
    };
  }
  const xs = rows.map((r) => numberOf(r[x]));
  const points = xs.map((vx, i) => [vx, ys[i], rows[i]]).filter(([a, b]) =>
    Number.isFinite(a) && Number.isFinite(b)
  );
  if (points.length === 0) return { empty: "No rows with numbers in both columns." };
  if (kind === "line") points.sort((a, b) => a[0] - b[0]);
  const [x0, x1] = [Math.min(...points.map((p) => p[0])), Math.max(...points.map((p) => p[0]))];
  const [y0, y1] = [Math.min(...points.map((p) => p[1])), Math.max(...points.map((p) => p[1]))];
  const sx = scale(x0, x1, 0, innerW);
  const sy = scale(y0, y1, innerH, 0);
  return {
    points: points.map(([a, b, r]) => ({
      x: sx(a),
      y: sy(b),
      label: `${display(r[x])}, ${display(r[y])}`,
    })),
    xTicks: ticks(x0, x1).map((v) => ({ at: sx(v), text: short(v) })),
    yTicks: ticks(y0, y1).map((v) => ({ at: sy(v), text: short(v) })),
  };
}

function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function Chart({ columns, rows, kind, x, y, onChange }) {
  const svg = useRef();
  const [note, setNote] = useState("");
  const names = columns.map((c) => c.name);
  const chosenKind = KINDS.includes(kind) ? kind : "bar";
  const xName = names.includes(x) ? x : names[0] ?? "";
  const yName = names.includes(y) ? y : names[1] ?? names[0] ?? "";
  const plot = layout(chosenKind, rows, xName, yName);
  const title = chosenKind === "histogram" ? `Histogram of ${xName}` : `${yName} by ${xName}`;

  const svgText = () => new XMLSerializer().serializeToString(svg.current);
  const asPng = () => {
    const image = new Image();
    const url = URL.createObjectURL(new Blob([svgText()], { type: "image/svg+xml" }));
    image.onload = () => {
      const canvas = document.createElement("canvas");
      canvas.width = W * 2;
      canvas.height = H * 2;
      const context = canvas.getContext("2d");
      context.fillStyle = "#ffffff";
      context.fillRect(0, 0, canvas.width, canvas.height);
      context.drawImage(image, 0, 0, canvas.width, canvas.height);
      URL.revokeObjectURL(url);
      canvas.toBlob(
        (blob) => blob ? download(blob, "chart.png") : setNote("The PNG could not be made."),
        "image/png",
      );
    };
    image.onerror = () => setNote("The PNG could not be made.");
    image.src = url;
  };

  return html`<section class="chart" aria-label="Chart of the result">
    <div class="toolbar">
      <label for="chart-kind">Chart</label>
      <select id="chart-kind" value=${chosenKind} onChange=${(e) =>
    onChange({ chart: e.currentTarget.value })}>
        ${KINDS.map((k) => html`<option value=${k}>${k}</option>`)}
      </select>
      <label for="chart-x">${chosenKind === "histogram" ? "Values" : "x"}</label>
      <select id="chart-x" value=${xName} onChange=${(e) => onChange({ x: e.currentTarget.value })}>
        ${names.map((n) => html`<option value=${n}>${n}</option>`)}
      </select>
      ${
    chosenKind !== "histogram" && html`
      <label for="chart-y">y</label>
      <select id="chart-y" value=${yName} onChange=${(e) => onChange({ y: e.currentTarget.value })}>
                ${names.map((n) => html`<option value=${n}>${n}</option>`)}
              </select>
    `
  }
      <span class="spacer"></span>
      <button type="button" onClick=${() =>
    download(new Blob([svgText()], { type: "image/svg+xml" }), "chart.svg")}>Download SVG</button>
      <button type="button" onClick=${asPng}>Download PNG</button>
      <span role="status">${note}</span>
    </div>
    ${
    plot.empty ? html`<p class="note" role="note">${plot.empty}</p>` : html`
      <svg ref=${svg} xmlns="http://www.w3.org/2000/svg"
        viewBox=${`0 0 ${W} ${H}`} width=${W} height=${H} role="img" aria-label=${title}
        class="chart-svg" font-family="sans-serif" font-size="12">
        <title>${title}</title>
        <rect width=${W} height=${H} fill="#ffffff" />
        <g transform=${`translate(${M.left},${M.top})`}>
              ${(plot.yTicks ?? []).map((t) =>
                html`
                  <g>
                    <line x1="0" x2=${W - M.left - M.right} y1=${t.at} y2=${t
                      .at} stroke="#e5e7eb" />
                    <text x="-6" y=${t.at + 4} text-anchor="end" fill="#374151">${t.text}</text>
                  </g>
                `
              )}
              ${(plot.xTicks ?? []).map((t) =>
                html`<text x=${t.at} y=${
                  H - M.top - M.bottom + 18
                } text-anchor="middle" fill="#374151">${t.text}</text>`
              )}
              ${(plot.bars ?? []).map((b) =>
                html`
                  <rect x=${b.x} y=${b.y} width=${Math.max(0, b.w)} height=${Math.max(
                    0,
                    b.h,
                  )} fill=${COLOR}>
                    <title>${b.label}</title>
                  </rect>
                `
              )}
              ${chosenKind === "line" && plot.points &&
                html`<polyline fill="none" stroke=${COLOR} stroke-width="2" points=${
                  plot.points.map((p) => `${p.x},${p.y}`).join(" ")
                } />`}
              ${chosenKind === "scatter" && plot.points && plot.points.map((p) =>
                html`
                  <circle cx=${p.x} cy=${p.y} r="3" fill=${COLOR}>
                    <title>${p.label}</title>
                  </circle>
                `
              )}
              <text x=${(W - M.left - M.right) / 2} y=${H - M.top -
                12} text-anchor="middle" fill="#111827">${chosenKind === "histogram"
                ? xName
                : `${xName} →`}</text>
            </g>
      </svg>
    `
  }
  </section>`;
}
