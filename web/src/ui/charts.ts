// uPlot charts. uPlot draws on one canvas and handles axes, scales, zoom and resize; where a chart
// is not a line over a shared x (the tick lanes, the strip plot) its marks are drawn in a `draw`
// hook straight onto uPlot's canvas, which keeps ~5,000 ticks per lane cheap to redraw on zoom.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Lane, Marker } from '../lib/timeline';
import type { StripSeries } from '../lib/stats';
import { ACK_COLOR, GAP_FILL, MARKER_COLOR, RECEIVE_COLOR, ROLE_COLOR } from './colors';
import { formatRelative } from '../lib/time';

const FONT = '11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

/** Owns a uPlot instance sized to its container, following the container's width. */
abstract class SizedChart {
  protected plot: uPlot | null = null;
  private readonly ro: ResizeObserver;

  constructor(protected readonly el: HTMLElement) {
    this.ro = new ResizeObserver(() => {
      const w = this.width();
      if (this.plot && w > 0 && Math.abs(w - this.plot.width) > 1) this.plot.setSize({ width: w, height: this.plot.height });
    });
    this.ro.observe(el);
  }

  protected width(): number {
    return Math.max(120, Math.floor(this.el.clientWidth));
  }

  destroy(): void {
    this.ro.disconnect();
    this.plot?.destroy();
    this.plot = null;
  }
}

/** A small line of ack gaps (ms) over the last minute; x is seconds before now. */
export class SparklineChart extends SizedChart {
  constructor(el: HTMLElement, private readonly windowS = 60, private readonly height = 44) {
    super(el);
  }

  update(x: number[], y: number[]): void {
    const data: uPlot.AlignedData = [x, y];
    if (this.plot) {
      this.plot.setData(data);
      return;
    }
    this.plot = new uPlot(
      {
        width: this.width(),
        height: this.height,
        legend: { show: false },
        cursor: { show: false },
        padding: [4, 2, 2, 2],
        scales: {
          x: { time: false, range: [-this.windowS, 0] },
          y: { range: (_u, _min, max) => [0, Math.max(100, (max ?? 0) * 1.1)] },
        },
        axes: [{ show: false }, { show: false }],
        series: [{}, { stroke: ACK_COLOR, width: 1, points: { show: false }, fill: 'rgba(31,78,121,0.12)' }],
      },
      data,
      this.el,
    );
  }
}

export interface TimelineModel {
  lanes: Lane[];
  markers: Marker[];
  /** Visible x range, seconds relative to the fault. */
  range: [number, number];
  showReceive: boolean;
  xLabel: string;
}

function lowerBound(a: Float64Array, v: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * One lane per partition: a tick per ack (upper half) and per receipt (lower half), the longest
 * ack gap shaded and labelled, vertical markers for the events. Drag to zoom, double-click to reset.
 */
export class TimelineChart extends SizedChart {
  private model: TimelineModel;
  private readonly readout: HTMLElement;

  constructor(el: HTMLElement, model: TimelineModel, readout: HTMLElement) {
    super(el);
    this.model = model;
    this.readout = readout;
    this.build();
  }

  update(model: TimelineModel): void {
    const sameRange = model.range[0] === this.model.range[0] && model.range[1] === this.model.range[1];
    const sameLanes = model.lanes.length === this.model.lanes.length && model.xLabel === this.model.xLabel;
    this.model = model;
    if (!this.plot || !sameLanes) {
      this.plot?.destroy();
      this.build();
      return;
    }
    if (!sameRange) this.plot.setData([model.range.slice(), [null, null]]);
    else this.plot.redraw(false);
  }

  private laneCount(): number {
    return Math.max(1, this.model.lanes.length);
  }

  private build(): void {
    const n = this.laneCount();
    const laneH = 48;
    const topPad = 3 * 14 + 6;
    const m = () => this.model;
    const opts: uPlot.Options = {
      width: this.width(),
      height: n * laneH + topPad + 40,
      legend: { show: false },
      padding: [topPad, 12, 0, 0],
      cursor: { drag: { x: true, y: false, setScale: true }, points: { show: false }, y: false },
      scales: {
        x: { time: false },
        y: { range: [0, n] },
      },
      axes: [
        {
          label: this.model.xLabel,
          labelSize: 18,
          font: FONT,
          labelFont: FONT,
          values: (_u, splits) => splits.map((v) => (v === 0 ? '0' : `${v > 0 ? '+' : ''}${Number(v.toFixed(2))}`)),
        },
        {
          font: FONT,
          // Wide enough for the longest lane name ("orders-0 librdkafka" with client profiles).
          size: Math.max(78, 12 + 7 * Math.max(0, ...this.model.lanes.map((l) => l.key.length))),
          gap: 4,
          splits: () => m().lanes.map((_, i) => n - i - 0.5),
          values: () => m().lanes.map((l) => l.key),
          grid: { show: false },
          ticks: { show: false },
        },
      ],
      series: [{}, { scale: 'y', stroke: 'transparent', points: { show: false } }],
      hooks: {
        draw: [(u) => this.draw(u)],
        setCursor: [(u) => this.showCursor(u)],
      },
    };
    this.plot = new uPlot(opts, [this.model.range.slice(), [null, null]], this.el);
  }

  private draw(u: uPlot): void {
    const { lanes, markers, showReceive } = this.model;
    const ctx = u.ctx;
    const { left, top, width, height } = u.bbox;
    const n = this.laneCount();
    const dpr = uPlot.pxRatio;
    const xMin = u.scales.x.min ?? this.model.range[0];
    const xMax = u.scales.x.max ?? this.model.range[1];
    const yPx = (v: number) => u.valToPos(v, 'y', true);
    const xPx = (v: number) => u.valToPos(v, 'x', true);

    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();

    lanes.forEach((lane, i) => {
      const base = n - i - 1;
      // Lane separator.
      ctx.strokeStyle = '#e3e6ea';
      ctx.lineWidth = dpr;
      ctx.beginPath();
      ctx.moveTo(left, yPx(base));
      ctx.lineTo(left + width, yPx(base));
      ctx.stroke();

      // The longest ack gap, shaded, so the stall reads as an empty stretch with its length on it.
      const g = lane.longestAck;
      if (g && g.duration_s > 0) {
        const x0 = xPx(g.start_s);
        const x1 = xPx(g.end_s);
        const y0 = yPx(base + 0.98);
        const y1 = yPx(base + 0.02);
        ctx.fillStyle = GAP_FILL;
        ctx.fillRect(x0, y0, Math.max(x1 - x0, dpr), y1 - y0);
        const label = `${g.duration_s.toFixed(2)} s`;
        ctx.font = `${Math.round(12 * dpr)}px system-ui, sans-serif`;
        const tw = ctx.measureText(label).width;
        if (x1 - x0 > tw + 8 * dpr) {
          ctx.fillStyle = '#8a3200';
          ctx.textAlign = 'center';
          ctx.textBaseline = 'middle';
          ctx.fillText(label, (x0 + x1) / 2, yPx(base + 0.5));
        }
      }

      // A stall still open (a running drill): hatched-looking lighter shading up to the newest send.
      const o = lane.openAck;
      if (o && (!g || o.start_s >= g.end_s)) {
        const x0 = xPx(o.start_s);
        const x1 = xPx(o.end_s);
        ctx.fillStyle = 'rgba(213, 94, 0, 0.08)';
        ctx.fillRect(x0, yPx(base + 0.98), Math.max(x1 - x0, dpr), yPx(base + 0.02) - yPx(base + 0.98));
        ctx.strokeStyle = 'rgba(213, 94, 0, 0.6)';
        ctx.setLineDash([3 * dpr, 3 * dpr]);
        ctx.strokeRect(x0, yPx(base + 0.98), Math.max(x1 - x0, dpr), yPx(base + 0.02) - yPx(base + 0.98));
        ctx.setLineDash([]);
        const label = `open ${o.duration_s.toFixed(1)} s`;
        ctx.font = `${Math.round(12 * dpr)}px system-ui, sans-serif`;
        if (x1 - x0 > ctx.measureText(label).width + 8 * dpr) {
          ctx.fillStyle = '#8a3200';
          ctx.textAlign = 'center';
          ctx.textBaseline = 'middle';
          ctx.fillText(label, (x0 + x1) / 2, yPx(base + 0.5));
        }
      }

      const drawTicks = (xs: Float64Array, lo: number, hi: number, color: string) => {
        const y0 = yPx(base + hi);
        const y1 = yPx(base + lo);
        ctx.strokeStyle = color;
        ctx.lineWidth = dpr;
        ctx.beginPath();
        let lastPx = -Infinity;
        for (let k = lowerBound(xs, xMin); k < xs.length && xs[k]! <= xMax; k++) {
          const px = Math.round(xPx(xs[k]!));
          if (px === lastPx) continue; // ticks closer than a pixel are one line
          lastPx = px;
          ctx.moveTo(px + 0.5, y0);
          ctx.lineTo(px + 0.5, y1);
        }
        ctx.stroke();
      };
      if (showReceive) {
        drawTicks(lane.ack, 0.55, 0.92, ACK_COLOR);
        drawTicks(lane.receive, 0.1, 0.45, RECEIVE_COLOR);
      } else {
        drawTicks(lane.ack, 0.15, 0.85, ACK_COLOR);
      }
    });

    // Event markers.
    for (const mk of markers) {
      if (mk.x < xMin || mk.x > xMax) continue;
      const px = Math.round(xPx(mk.x)) + 0.5;
      ctx.strokeStyle = MARKER_COLOR[mk.category];
      ctx.lineWidth = (mk.category === 'fault' ? 2 : 1.25) * dpr;
      ctx.setLineDash(mk.category === 'fault' ? [] : [4 * dpr, 3 * dpr]);
      ctx.beginPath();
      ctx.moveTo(px, top);
      ctx.lineTo(px, top + height);
      ctx.stroke();
    }
    ctx.setLineDash([]);
    ctx.restore();

    // Marker labels above the plot, in up to three rows so neighbours do not overlap.
    ctx.save();
    ctx.font = `${Math.round(11 * dpr)}px system-ui, sans-serif`;
    ctx.textBaseline = 'bottom';
    ctx.textAlign = 'left';
    const rowEnds = [-Infinity, -Infinity, -Infinity];
    for (const mk of markers) {
      if (mk.x < xMin || mk.x > xMax) continue;
      const px = xPx(mk.x);
      const w = ctx.measureText(mk.label).width;
      let row = rowEnds.findIndex((end) => px > end + 6 * dpr);
      if (row < 0) continue;
      const x = Math.min(px + 2 * dpr, left + width - w);
      rowEnds[row] = x + w;
      ctx.fillStyle = MARKER_COLOR[mk.category];
      ctx.fillText(mk.label, x, top - (2 - row) * 14 * dpr - 4 * dpr);
    }
    ctx.restore();
  }

  private showCursor(u: uPlot): void {
    const left = u.cursor.left ?? -1;
    if (left < 0) {
      this.readout.textContent = 'Drag across the chart to zoom, double-click to reset.';
      return;
    }
    const x = u.posToVal(left, 'x');
    const near = this.model.markers.filter((m) => Math.abs(u.valToPos(m.x, 'x') - left) < 5).map((m) => m.label);
    this.readout.textContent = `t = ${formatRelative(x)}${near.length ? ` · ${near.join(', ')}` : ''}`;
  }
}

/**
 * A strip plot: per group, every run's ack stall as a dot (jittered sideways) over a summary box:
 * a line from min to max, a box from median to p95, a bar at the median.
 */
export class StripChart extends SizedChart {
  constructor(
    el: HTMLElement,
    private series: StripSeries[],
    private top: number,
    private readonly readout: HTMLElement,
    private readonly onPick: (drill: number) => void,
  ) {
    super(el);
    this.build();
  }

  update(series: StripSeries[], top: number): void {
    this.series = series;
    this.top = top;
    this.plot?.destroy();
    this.build();
  }

  private build(): void {
    const n = Math.max(1, this.series.length);
    const rotate = n > 3;
    const opts: uPlot.Options = {
      width: this.width(),
      height: 300 + (rotate ? 40 : 0),
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: { x: { time: false, range: [-0.5, n - 0.5] }, y: { range: [0, this.top] } },
      axes: [
        {
          font: FONT,
          splits: () => this.series.map((_, i) => i),
          values: () => this.series.map((s) => s.label),
          rotate: rotate ? -25 : 0,
          size: rotate ? 80 : 36,
          grid: { show: false },
        },
        { font: FONT, label: 'ack stall (s)', labelFont: FONT, labelSize: 18, size: 44 },
      ],
      series: [{}, { stroke: 'transparent', points: { show: false } }],
      hooks: { draw: [(u) => this.draw(u)], setCursor: [(u) => this.hover(u)] },
    };
    this.plot = new uPlot(opts, [[-0.5, n - 0.5], [null, null]], this.el);
    this.plot.over.addEventListener('click', () => {
      const hit = this.nearest();
      if (hit) this.onPick(hit.drill);
    });
  }

  private draw(u: uPlot): void {
    const ctx = u.ctx;
    const dpr = uPlot.pxRatio;
    const xPx = (v: number) => u.valToPos(v, 'x', true);
    const yPx = (v: number) => u.valToPos(v, 'y', true);
    ctx.save();
    this.series.forEach((s, i) => {
      const color = ROLE_COLOR[s.role] ?? '#555';
      if (s.summary) {
        const q = s.summary;
        const cx = xPx(i);
        const half = (xPx(i + 0.3) - xPx(i - 0.3)) / 2;
        ctx.strokeStyle = color;
        ctx.lineWidth = dpr;
        ctx.beginPath();
        ctx.moveTo(cx, yPx(q.min / 1e6));
        ctx.lineTo(cx, yPx(q.max / 1e6));
        ctx.stroke();
        ctx.fillStyle = `${color}33`;
        const yMed = yPx(q.median / 1e6);
        const yP95 = yPx(q.p95 / 1e6);
        ctx.fillRect(cx - half, yP95, 2 * half, Math.max(yMed - yP95, dpr));
        ctx.strokeRect(cx - half, yP95, 2 * half, Math.max(yMed - yP95, dpr));
        ctx.lineWidth = 2.5 * dpr;
        ctx.beginPath();
        ctx.moveTo(cx - half, yMed);
        ctx.lineTo(cx + half, yMed);
        ctx.stroke();
      }
      ctx.fillStyle = color;
      for (let k = 0; k < s.x.length; k++) {
        ctx.beginPath();
        ctx.arc(xPx(s.x[k]!), yPx(s.y[k]!), 3.5 * dpr, 0, 2 * Math.PI);
        ctx.fill();
      }
    });
    ctx.restore();
  }

  private nearest(): { drill: number; y: number; label: string } | null {
    const u = this.plot;
    if (!u) return null;
    const left = u.cursor.left ?? -1;
    const top = u.cursor.top ?? -1;
    if (left < 0) return null;
    let best: { drill: number; y: number; label: string; d: number } | null = null;
    for (const s of this.series) {
      for (let k = 0; k < s.x.length; k++) {
        const dx = u.valToPos(s.x[k]!, 'x') - left;
        const dy = u.valToPos(s.y[k]!, 'y') - top;
        const d = dx * dx + dy * dy;
        if (d < 64 && (!best || d < best.d)) best = { drill: s.drills[k]!, y: s.y[k]!, label: s.label, d };
      }
    }
    return best;
  }

  private hover(_u: uPlot): void {
    const hit = this.nearest();
    this.readout.textContent = hit ? `${hit.label}: drill #${hit.drill}, ${hit.y.toFixed(2)} s — click to open` : 'Hover a dot for its drill.';
    if (this.plot) this.plot.over.style.cursor = hit ? 'pointer' : 'default';
  }
}

/** The ack stall of each group over time (x: epoch seconds), one line per group. */
export class TrendChart extends SizedChart {
  constructor(el: HTMLElement, data: uPlot.AlignedData, labels: string[], colors: string[]) {
    super(el);
    this.plot = this.make(data, labels, colors);
  }

  private make(data: uPlot.AlignedData, labels: string[], colors: string[]): uPlot {
    return new uPlot(
      {
        width: this.width(),
        height: 260,
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, (max ?? 0) * 1.1)] } },
        axes: [{ font: FONT }, { font: FONT, label: 'ack stall (s)', labelFont: FONT, labelSize: 18, size: 44 }],
        series: [
          { label: 'time' },
          ...labels.map((label, i) => ({
            label,
            stroke: colors[i],
            width: 1.5,
            spanGaps: true,
            points: { show: true, size: 6, fill: colors[i] },
            value: (_u: uPlot, v: number | null) => (v === null ? '—' : `${v.toFixed(2)} s`),
          })),
        ],
      },
      data,
      this.el,
    );
  }
}
