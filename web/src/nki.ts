// An NKI launch's NeuronCore view, from its profile (README "NKI profile"; the trace stores it with every
// NKI launch): for the selected program, the estimated timeline of each engine (Tensor, Vector, Scalar,
// GpSimd, and the DMA queues) and the SBUF / PSUM bytes per partition in use over the same time; for the
// launch, the DMA traffic between HBM, SBUF and PSUM.
//
// For tests and tools the canvas carries data-program (the program drawn), data-bars (instructions drawn)
// and data-sbuf-peak / data-psum-peak (bytes per partition).

import { fmtBytes } from "./values";

export interface NkiProfile {
  kind: "nki";
  target: string;
  programs: number;
  engines: Record<string, { instructions: number; busy_ns: number; utilization: number }>;
  dma: Record<string, { transfers: number; read_bytes: number; written_bytes: number }>;
  /// Bytes read from a memory into another (or the same) by any engine: "hbm_to_sbuf", "sbuf_to_psum", ...
  flows: Record<string, number>;
  estimate: { seconds: number; program_ns: number[]; sbuf_bytes_per_partition: number; psum_bytes_per_partition: number };
  sites: { op: string; file: string; line: number; col: number }[];
  timeline: { columns: string[]; stride: number; rows: [number, string, number, number, number, number][] };
  memory: { program: number; points: [number, number, number][]; sbuf_peak: number; psum_peak: number }[];
  lines: { file: string; line: number; source: string; busy_ns: number; instructions: number; dma_bytes: number }[];
  allocations: { program: number; name: string; space: string; bytes_per_partition: number; start_ns: number; end_ns: number; file: string; line: number }[];
}

export const ENGINES = ["tensor", "vector", "scalar", "gpsimd", "dma"] as const;
export const ENGINE_COLOR: Record<string, string> = {
  tensor: "#8b5cf6", vector: "#10b981", scalar: "#f59e0b", gpsimd: "#ec4899", dma: "#3b82f6",
};
const SBUF_COLOR = "#0ea5e9", PSUM_COLOR = "#f97316";

export function isNki(p: unknown): p is NkiProfile {
  return !!p && typeof p === "object" && (p as { kind?: unknown }).kind === "nki";
}

export function fmtNs(ns: number): string {
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  if (ns >= 1e3) return `${(ns / 1e3).toFixed(2)} µs`;
  return `${ns.toFixed(0)} ns`;
}

/// "HBM → SBUF 75.0 KiB in 3 · SBUF → HBM 75.0 KiB in 3": the launch's DMA traffic by direction.
export function dmaSummary(p: NkiProfile): string {
  return Object.entries(p.dma)
    .map(([dir, d]) => `${dir.replace("_to_", " → ").toUpperCase()} ${fmtBytes(Math.max(d.read_bytes, d.written_bytes))} in ${d.transfers}`)
    .join(" · ");
}

interface Bar {
  x0: number; x1: number; y0: number; y1: number; site: number; engine: string; start: number; end: number;
}

export class NkiView {
  private bars: Bar[] = [];
  private profile: NkiProfile | null = null;

  constructor(
    readonly canvas: HTMLCanvasElement,
    readonly tip: HTMLElement,
    readonly onSite: (site: number) => void,
  ) {
    canvas.addEventListener("mousemove", (e) => {
      const b = this.barAt(e);
      if (!b || !this.profile) {
        tip.textContent = "hover an instruction";
        return;
      }
      const s = this.profile.sites[b.site];
      tip.textContent = `${s ? s.op.replace("nki.isa.", "nisa.") : "?"} · line ${s?.line ?? "?"} · ${b.engine} · ` +
        `${fmtNs(b.start)} – ${fmtNs(b.end)} (${fmtNs(b.end - b.start)})`;
    });
    canvas.addEventListener("click", (e) => {
      const b = this.barAt(e);
      if (b) onSite(b.site);
    });
  }

  private barAt(e: MouseEvent): Bar | null {
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    let best: Bar | null = null;
    for (const b of this.bars)
      if (y >= b.y0 && y <= b.y1 && x >= b.x0 - 1 && x <= Math.max(b.x1, b.x0 + 2) + 1) best = b;
    return best;
  }

  /// Draws program `program` of `p`; says so on the canvas when its timeline is not listed (the report
  /// lists every stride-th program).
  draw(p: NkiProfile, program: number) {
    this.profile = p;
    const c = this.canvas, host = c.parentElement!;
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(200, host.clientWidth), h = Math.max(120, host.clientHeight);
    c.width = w * dpr;
    c.height = h * dpr;
    c.style.width = `${w}px`;
    c.style.height = `${h}px`;
    const g = c.getContext("2d")!;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const css = getComputedStyle(document.documentElement);
    const muted = css.getPropertyValue("--muted") || "#888";
    const fg = css.getPropertyValue("--fg") || "#000";
    g.font = "11px system-ui";
    this.bars = [];
    c.dataset.program = String(program);
    const rows = p.timeline.rows.filter((r) => r[0] === program);
    const mem = p.memory.find((m) => m.program === program);
    c.dataset.bars = String(rows.length);
    c.dataset.sbufPeak = String(mem?.sbuf_peak ?? "");
    c.dataset.psumPeak = String(mem?.psum_peak ?? "");
    if (!rows.length) {
      g.fillStyle = muted;
      const s = p.timeline.stride;
      g.fillText(
        s === 0 ? "the report lists no timeline (program 0 alone has too many instructions)"
          : `program ${program} is not listed: the report keeps every ${s}th program's timeline`,
        8, 20);
      return;
    }
    const left = 52, right = 8;
    const end = Math.max(...rows.map((r) => r[5]), 1);
    const X = (ns: number) => left + (ns / end) * (w - left - right);
    // Engines: one lane each (the DMA lane's transfers overlap on their 16 queues: drawn translucent).
    const gantt = Math.round(h * 0.58), lane = (gantt - 16) / ENGINES.length;
    ENGINES.forEach((e, i) => {
      const y = 4 + i * lane;
      g.fillStyle = muted;
      g.fillText(e, 4, y + lane / 2 + 4);
      g.fillStyle = ENGINE_COLOR[e];
      g.globalAlpha = e === "dma" ? 0.45 : 0.85;
      for (const r of rows) {
        if (r[1] !== e) continue;
        const bh = lane - 3, y0 = y + 1, x0 = X(r[4]), x1 = X(r[5]);
        g.fillRect(x0, y0, Math.max(1, x1 - x0 - 0.5), bh - 1);
        this.bars.push({ x0, x1, y0, y1: y0 + bh, site: r[3], engine: e, start: r[4], end: r[5] });
      }
      g.globalAlpha = 1;
    });
    // Time axis.
    g.fillStyle = muted;
    g.fillText("0", left, gantt + 2);
    const endLabel = fmtNs(end);
    g.fillText(endLabel, w - right - g.measureText(endLabel).width, gantt + 2);
    // SBUF / PSUM bytes per partition in use, as steps over the same time axis.
    if (!mem) return;
    const top = gantt + 10, bottom = h - 14;
    const peak = Math.max(mem.sbuf_peak, mem.psum_peak, 1);
    const Y = (b: number) => bottom - (b / peak) * (bottom - top);
    g.strokeStyle = muted;
    g.globalAlpha = 0.4;
    g.beginPath();
    g.moveTo(left, bottom + 0.5);
    g.lineTo(w - right, bottom + 0.5);
    g.stroke();
    g.globalAlpha = 1;
    for (const [k, colour] of [[1, SBUF_COLOR], [2, PSUM_COLOR]] as const) {
      g.strokeStyle = colour;
      g.lineWidth = 1.5;
      g.beginPath();
      let prev = 0;
      g.moveTo(X(0), Y(0));
      for (const pt of mem.points) {
        g.lineTo(X(pt[0]), Y(prev));
        g.lineTo(X(pt[0]), Y(pt[k]));
        prev = pt[k];
      }
      g.lineTo(X(end), Y(prev));
      g.stroke();
    }
    g.lineWidth = 1;
    g.fillStyle = fg;
    g.fillText("on chip", 4, top + 8);
    g.fillStyle = SBUF_COLOR;
    const sb = `SBUF peak ${fmtBytes(mem.sbuf_peak)} of ${fmtBytes(p.estimate.sbuf_bytes_per_partition)}`;
    g.fillText(sb, left, h - 2);
    g.fillStyle = PSUM_COLOR;
    g.fillText(`PSUM peak ${fmtBytes(mem.psum_peak)} of ${fmtBytes(p.estimate.psum_bytes_per_partition)} per partition`,
      left + g.measureText(sb).width + 14, h - 2);
  }
}

/// The launch's traffic between HBM, SBUF and PSUM (`flows`) on `c`: a box per memory, an arrow per
/// direction labelled with its bytes, and under each box the bytes its engines moved within it. For tests
/// the canvas carries data-flows ("hbm_to_sbuf=76800,...", sorted).
export function drawFlows(c: HTMLCanvasElement, p: NkiProfile) {
  const g = c.getContext("2d")!;
  const css = getComputedStyle(document.documentElement);
  const fg = css.getPropertyValue("--fg") || "#000", muted = css.getPropertyValue("--muted") || "#888";
  g.clearRect(0, 0, c.width, c.height);
  c.dataset.flows = Object.entries(p.flows).sort().map(([k, v]) => `${k}=${v}`).join(",");
  const names = ["hbm", "sbuf", "psum"], w = c.width, bw = 52, bh = 26, y = 44;
  const x = names.map((_, i) => 6 + i * ((w - 12 - bw) / 2));
  g.font = "10px system-ui";
  g.textAlign = "center";
  names.forEach((n, i) => {
    g.strokeStyle = muted;
    g.strokeRect(x[i] + 0.5, y + 0.5, bw, bh);
    g.fillStyle = fg;
    g.fillText(n.toUpperCase(), x[i] + bw / 2, y + bh / 2 + 4);
    const within = p.flows[`${n}_to_${n}`];
    if (within) {
      g.fillStyle = muted;
      g.fillText(`within ${fmtBytes(within)}`, x[i] + bw / 2, y + bh + 14);
    }
  });
  const arrow = (from: number, to: number, lane: number, label: string) => {
    const x0 = from < to ? x[from] + bw : x[from], x1 = from < to ? x[to] : x[to] + bw;
    const yy = lane < 0 ? y + 7 : y + bh - 7;
    g.strokeStyle = ENGINE_COLOR.dma;
    g.fillStyle = ENGINE_COLOR.dma;
    g.beginPath();
    g.moveTo(x0, yy);
    g.lineTo(x1, yy);
    g.stroke();
    const d = from < to ? -5 : 5;
    g.beginPath();
    g.moveTo(x1, yy);
    g.lineTo(x1 + d, yy - 3);
    g.lineTo(x1 + d, yy + 3);
    g.fill();
    g.fillStyle = fg;
    g.fillText(label, (x0 + x1) / 2, lane < 0 ? y - 4 - (Math.abs(to - from) > 1 ? 12 : 0) : y + bh + 26);
  };
  for (let a = 0; a < 3; a++)
    for (let b = 0; b < 3; b++) {
      const v = p.flows[`${names[a]}_to_${names[b]}`];
      if (a !== b && v) arrow(a, b, a < b ? -1 : 1, fmtBytes(v));
    }
  g.textAlign = "start";
}
