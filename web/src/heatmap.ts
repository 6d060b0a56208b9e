// A tensor as a 2-D grid of cells on a canvas: element offset o sits at row floor(o / width), column
// o % width (the argument's memory in its dtype's units: for a contiguous tensor, row-major indices).
// Offsets outside [0, elements) are drawn past the tensor's edge (rows above or below it), so
// out-of-bounds lanes show where they fell. Zoom with the wheel, pan by dragging, hover for a cell.
//
// When the whole tensor would put cells under READABLE_CELL pixels (a 4 x 4096 argument is 0.1 px a
// cell), showing a model with marks zooms to them instead (focusMarks): all of them across the canvas
// when their cells are MIN_SPAN_CELL pixels or more (under RING_UNDER pixels, marks with `ring` get a
// READABLE_CELL ring, so that a lone out-of-bounds cell is not missed), else the out-of-bounds lanes nearest the tensor, with
// the marks around them; the wheel still zooms out, fit() shows it whole.
//
// For tests and tools the canvas element carries what it shows: data-marked (the marked offsets as
// "first:count" runs, sorted), data-outside (the marked offsets outside the tensor, as runs), data-scale
// (CSS pixels per cell), data-origin ("x,y": where the cell of row 0, column 0 is drawn; rows of
// out-of-bounds lanes before the tensor come above it, data-above of them), data-in-view (how many marked
// cells are on screen).

export interface Mark {
  color: string;
  /// Drawn with a ring of READABLE_CELL pixels when cells are under RING_UNDER (a finding's element).
  ring?: boolean;
}

/// An opaque colour, 0-255 per channel.
export type RGB = [number, number, number];

export function hexRGB(hex: string): RGB {
  const h = hex.trim().replace("#", "");
  const n = parseInt(h.length === 3 ? h.replace(/./g, "$&$&") : h.slice(0, 6), 16);
  return Number.isNaN(n) ? [221, 221, 221] : [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/// `fg` over `bg` with opacity `a` (0..1).
export function mix(bg: RGB, fg: RGB, a: number): RGB {
  return [bg[0] + (fg[0] - bg[0]) * a, bg[1] + (fg[1] - bg[1]) * a, bg[2] + (fg[2] - bg[2]) * a];
}

export interface HeatmapModel {
  elements: number;
  width: number;
  /// Per-element colour, or null for the background. Called once per screen pixel of the tensor when
  /// zoomed out (a cell smaller than a pixel is sampled), once per cell when zoomed in.
  cell: (offset: number) => RGB | null;
  /// Marked offsets (touched by the selected op), each with its colour; may lie outside the tensor.
  marks: Map<number, Mark>;
}

/// Sorted offsets as "first:count" runs, comma-separated (the canvas's data attributes).
export function runs(offsets: Iterable<number>): string {
  const s = [...offsets].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < s.length; ) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    out.push(`${s[i]}:${j - i + 1}`);
    i = j + 1;
  }
  return out.join(",");
}

/// CSS pixels per cell under which cells are too small to see or hover one by one.
export const READABLE_CELL = 8;
/// The smallest cells at which an op's marks are shown all at once (a row of 100 elements across a
/// 340 px panel is 3.4 px a cell); under it they are zoomed to FOCUS_CELL.
export const MIN_SPAN_CELL = 2;
/// Cells under this many pixels draw their ringed marks with a ring (a 3 px cell is easy to miss).
const RING_UNDER = 6;
/// The size an op's marks are zoomed to when they do not all fit at MIN_SPAN_CELL or more.
const FOCUS_CELL = 14;

/// The start of a window of `v` cells that shows cell `a` and as much of [lo, hi) as it can.
function windowStart(lo: number, hi: number, a: number, v: number): number {
  if (hi - lo <= v) return (lo + hi - v) / 2;
  return Math.min(a, Math.max(a + 1 - v, lo));
}

export class Heatmap {
  readonly canvas: HTMLCanvasElement;
  private model: HeatmapModel | null = null;
  private scale = 8; // pixels per cell
  private ox = 0; // pan offset, pixels
  private oy = 0;
  private drag: { x: number; y: number; ox: number; oy: number } | null = null;
  // The view show() / fit() / focusMarks() chose, redone when the canvas is resized; null once the user
  // zoomed or panned (their view stays).
  private auto: "show" | "fit" | "focus" | null = null;
  onHover: (offset: number | null, ev: MouseEvent) => void = () => {};
  onClick: (offset: number) => void = () => {};
  /// After each drawing: how many of the marked cells are on screen, of how many.
  onView: (inView: number, marked: number) => void = () => {};

  constructor(parent: HTMLElement) {
    this.canvas = document.createElement("canvas");
    this.canvas.className = "heatmap";
    this.canvas.tabIndex = 0;
    parent.appendChild(this.canvas);
    new ResizeObserver(() => {
      if (this.auto === "show") this.autoView();
      else if (this.auto === "fit") this.fit();
      else if (this.auto === "focus") this.focusMarks();
      else this.draw();
    }).observe(parent);
    this.canvas.addEventListener("wheel", (e) => {
      e.preventDefault();
      const f = e.deltaY < 0 ? 1.25 : 0.8;
      const r = this.canvas.getBoundingClientRect();
      const mx = e.clientX - r.left, my = e.clientY - r.top;
      this.ox = mx - (mx - this.ox) * f;
      this.oy = my - (my - this.oy) * f;
      this.scale = Math.min(64, Math.max(0.05, this.scale * f));
      this.auto = null;
      this.draw();
    });
    this.canvas.addEventListener("mousedown", (e) => (this.drag = { x: e.clientX, y: e.clientY, ox: this.ox, oy: this.oy }));
    window.addEventListener("mouseup", (e) => {
      if (this.drag && Math.abs(e.clientX - this.drag.x) + Math.abs(e.clientY - this.drag.y) < 3) {
        const o = this.offsetAt(e);
        if (o !== null) this.onClick(o);
      }
      this.drag = null;
    });
    this.canvas.addEventListener("mousemove", (e) => {
      if (this.drag) {
        this.ox = this.drag.ox + e.clientX - this.drag.x;
        this.oy = this.drag.oy + e.clientY - this.drag.y;
        this.auto = null;
        this.draw();
      }
      this.onHover(this.offsetAt(e), e);
    });
    this.canvas.addEventListener("mouseleave", (e) => this.onHover(null, e));
  }

  private rowsAbove(): number {
    if (!this.model) return 0;
    let min = 0;
    for (const o of this.model.marks.keys()) min = Math.min(min, o);
    return min < 0 ? Math.ceil(-min / this.model.width) : 0;
  }

  offsetAt(e: MouseEvent): number | null {
    if (!this.model) return null;
    const r = this.canvas.getBoundingClientRect();
    const col = Math.floor((e.clientX - r.left - this.ox) / this.scale);
    const row = Math.floor((e.clientY - r.top - this.oy) / this.scale) - this.rowsAbove();
    if (col < 0 || col >= this.model.width) return null;
    return row * this.model.width + col;
  }

  /// Show `model`: fitted to the canvas, or zoomed to its marks when the fitted cells are too small. With
  /// `keepView` (the same tensor in another colouring) the zoom and pan stay as they are.
  show(model: HeatmapModel | null, keepView = false) {
    const same = keepView && model && this.model && model.width === this.model.width && model.elements === this.model.elements;
    this.model = model;
    const marked = model ? [...model.marks.keys()] : [];
    this.canvas.dataset.marked = runs(marked);
    this.canvas.dataset.outside = model ? runs(marked.filter((o) => o < 0 || o >= model.elements)) : "";
    if (same) return this.draw();
    this.autoView();
  }

  private autoView() {
    this.fit(false);
    if (this.scale < READABLE_CELL && this.focusMarks()) {
      this.auto = "show";
      return;
    }
    this.auto = "show";
    this.draw();
  }

  /// The whole tensor (and the out-of-bounds rows past its edges) in the canvas.
  fit(redraw = true) {
    this.auto = "fit";
    const m = this.model;
    const w = this.canvas.parentElement!.clientWidth, h = this.canvas.parentElement!.clientHeight;
    if (m && w && h) {
      const rows = Math.ceil(m.elements / m.width) + 2 * this.rowsAbove() + 1;
      this.scale = Math.max(0.05, Math.min(32, (w - 8) / m.width, (h - 8) / Math.max(rows, 1)));
      this.ox = 4;
      this.oy = 4;
    }
    if (redraw || !m || !w || !h) this.draw();
  }

  /// Zoom and pan to the marked cells: all of them when they fit at MIN_SPAN_CELL pixels or more (at most
  /// 32), else FOCUS_CELL pixels around the out-of-bounds mark nearest the tensor (the first mark when
  /// none is outside), with as many of the marks near it as the canvas holds. False without marks.
  focusMarks(): boolean {
    const m = this.model;
    const w = this.canvas.parentElement!.clientWidth, h = this.canvas.parentElement!.clientHeight;
    if (!m || !m.marks.size || !w || !h) return false;
    const above = this.rowsAbove();
    const cellOf = (o: number): [number, number] => [((o % m.width) + m.width) % m.width, Math.floor(o / m.width) + above];
    let before = -Infinity, past = Infinity, first = Infinity;
    let c0 = Infinity, c1 = -Infinity, r0 = Infinity, r1 = -Infinity;
    for (const o of m.marks.keys()) {
      if (o < 0) before = Math.max(before, o);
      else if (o >= m.elements) past = Math.min(past, o);
      first = Math.min(first, o);
      const [c, r] = cellOf(o);
      (c0 = Math.min(c0, c)), (c1 = Math.max(c1, c + 1)), (r0 = Math.min(r0, r)), (r1 = Math.max(r1, r + 1));
    }
    const fits = Math.min(32, (w - 8) / (c1 - c0), (h - 8) / (r1 - r0));
    let s = fits;
    if (fits < MIN_SPAN_CELL) {
      s = FOCUS_CELL;
      const [ac, ar] = cellOf(past < Infinity ? past : before > -Infinity ? before : first);
      const vw = (w - 8) / s, vh = (h - 8) / s;
      (c0 = Infinity), (c1 = -Infinity), (r0 = Infinity), (r1 = -Infinity);
      for (const o of m.marks.keys()) {
        const [c, r] = cellOf(o);
        if (Math.abs(c - ac) >= vw || Math.abs(r - ar) >= vh) continue;
        (c0 = Math.min(c0, c)), (c1 = Math.max(c1, c + 1)), (r0 = Math.min(r0, r)), (r1 = Math.max(r1, r + 1));
      }
      c0 = windowStart(c0, c1, ac, vw);
      r0 = windowStart(r0, r1, ar, vh);
      (c1 = c0 + vw), (r1 = r0 + vh);
    }
    this.scale = s;
    this.auto = "focus";
    this.ox = Math.round(w / 2 - ((c0 + c1) / 2) * s);
    this.oy = Math.round(h / 2 - ((r0 + r1) / 2) * s);
    this.draw();
    return true;
  }

  draw() {
    const c = this.canvas, p = c.parentElement!;
    const dpr = window.devicePixelRatio || 1;
    c.width = Math.max(1, p.clientWidth * dpr);
    c.height = Math.max(1, p.clientHeight * dpr);
    c.style.width = `${p.clientWidth}px`;
    c.style.height = `${p.clientHeight}px`;
    const g = c.getContext("2d")!;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, p.clientWidth, p.clientHeight);
    const m = this.model;
    c.dataset.scale = m ? String(this.scale) : "";
    c.dataset.origin = m ? `${this.ox},${this.oy + this.rowsAbove() * this.scale}` : "";
    c.dataset.above = m ? String(this.rowsAbove()) : "";
    if (!m) return this.onView(0, 0);
    const s = this.scale, above = this.rowsAbove();
    const rows = Math.ceil(m.elements / m.width);
    // Visible cell range only: large tensors draw in time proportional to the view.
    const c0 = Math.max(0, Math.floor(-this.ox / s)), c1 = Math.min(m.width, Math.ceil((p.clientWidth - this.ox) / s));
    const r0 = Math.max(0, Math.floor(-this.oy / s) - above), r1 = Math.min(rows, Math.ceil((p.clientHeight - this.oy) / s) - above);
    const style = getComputedStyle(document.documentElement);
    const bg = hexRGB(style.getPropertyValue("--cell") || "#ddd");
    // The cells, pixel by pixel into an image (device pixels): the cost follows the view, not the tensor.
    const x0 = Math.max(0, Math.floor(this.ox + c0 * s)), x1 = Math.min(p.clientWidth, Math.ceil(this.ox + c1 * s));
    const y0 = Math.max(0, Math.floor(this.oy + (r0 + above) * s));
    const y1 = Math.min(p.clientHeight, Math.ceil(this.oy + (Math.min(r1, rows) + above) * s));
    if (x1 > x0 && y1 > y0) {
      const w = Math.ceil((x1 - x0) * dpr), h = Math.ceil((y1 - y0) * dpr);
      const img = g.createImageData(w, h);
      const px = img.data;
      const colOf = new Int32Array(w);
      for (let i = 0; i < w; i++) colOf[i] = Math.floor((x0 + i / dpr - this.ox) / s);
      for (let j = 0; j < h; j++) {
        const r = Math.floor((y0 + j / dpr - this.oy) / s) - above;
        for (let i = 0; i < w; i++) {
          const col = colOf[i];
          const k = 4 * (j * w + i);
          const o = r * m.width + col;
          if (r < 0 || r >= rows || col < 0 || col >= m.width || o >= m.elements) continue; // transparent
          const rgb = m.cell(o) ?? bg;
          px[k] = rgb[0];
          px[k + 1] = rgb[1];
          px[k + 2] = rgb[2];
          px[k + 3] = 255;
        }
      }
      g.setTransform(1, 0, 0, 1, 0, 0);
      g.putImageData(img, Math.floor(x0 * dpr), Math.floor(y0 * dpr));
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
    }
    let inView = 0;
    for (const [o, mark] of m.marks) {
      const r = Math.floor(o / m.width), col = ((o % m.width) + m.width) % m.width;
      const x = this.ox + col * s, y = this.oy + (r + above) * s;
      g.fillStyle = o < 0 || o >= m.elements ? "#e5484d" : mark.color;
      g.fillRect(x, y, Math.max(s, 1), Math.max(s, 1));
      if (mark.ring && s < RING_UNDER) {
        const r = READABLE_CELL / 2 + 1;
        g.strokeStyle = g.fillStyle;
        g.lineWidth = 1.5;
        g.strokeRect(x + s / 2 - r, y + s / 2 - r, 2 * r, 2 * r);
      }
      if (x + s > 0 && x < p.clientWidth && y + s > 0 && y < p.clientHeight) inView++;
    }
    c.dataset.inView = String(inView);
    this.onView(inView, m.marks.size);
    // The tensor's edge.
    g.strokeStyle = style.getPropertyValue("--fg").trim() || "#000";
    g.lineWidth = 1;
    g.strokeRect(this.ox - 0.5, this.oy + above * s - 0.5, m.width * s + 1, rows * s + 1);
    if (s >= 6) {
      g.strokeStyle = style.getPropertyValue("--grid").trim() || "rgba(0,0,0,.1)";
      g.beginPath();
      for (let col = c0; col <= c1; col++) {
        g.moveTo(this.ox + col * s, this.oy + (r0 + above) * s);
        g.lineTo(this.ox + col * s, this.oy + (r1 + above) * s);
      }
      for (let r = r0; r <= r1; r++) {
        g.moveTo(this.ox + c0 * s, this.oy + (r + above) * s);
        g.lineTo(this.ox + c1 * s, this.oy + (r + above) * s);
      }
      g.stroke();
    }
  }
}
