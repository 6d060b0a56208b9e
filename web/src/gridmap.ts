// The grid of programs as a map on a canvas: one cell per program, coloured by the caller, and a frame
// around the selected one. The cells are painted once into an offscreen image per (launch, colouring,
// size, theme); selecting another program copies that image and draws the frame, so an arrow key costs
// the same on a grid of 65536 programs as on one of 4.
//
// For tests and tools the canvas carries data-selected ("x,y,z"), data-scale (pixels per cell) and
// data-flagged: the linear ids (x + gx * (y + gy * z)) of the programs painted as findings, as
// "first:count" runs.
import { runs } from "./heatmap";

export type Pid = [number, number, number];

export interface GridPaint {
  /// Identifies what the cells show (launch, colouring, data loaded): a new key repaints them.
  key: string;
  cols: number;
  rows: number;
  grid: Pid;
  pidAt: (col: number, row: number) => Pid | null;
  cellOf: (p: Pid) => [number, number];
  /// A program's colour (CSS), and whether it is painted as a finding.
  colour: (p: Pid) => { css: string; flagged: boolean };
  selected: Pid;
  frame: string; // CSS colour of the selection frame
}

export class GridMap {
  private cache: HTMLCanvasElement = document.createElement("canvas");
  private cacheKey = "";

  constructor(readonly canvas: HTMLCanvasElement) {}

  /// Pixels per cell for a grid of cols x rows in the canvas's parent.
  scaleFor(cols: number, rows: number): number {
    const host = this.canvas.parentElement!;
    return Math.max(0.5, Math.min(24, (host.clientWidth - 4) / cols, (host.clientHeight - 4) / rows));
  }

  clear() {
    const g = this.canvas.getContext("2d")!;
    g.setTransform(1, 0, 0, 1, 0, 0);
    g.clearRect(0, 0, this.canvas.width, this.canvas.height);
    this.cacheKey = "";
  }

  draw(p: GridPaint) {
    const c = this.canvas, host = c.parentElement!;
    const dpr = window.devicePixelRatio || 1;
    const w = host.clientWidth, h = host.clientHeight;
    const s = this.scaleFor(p.cols, p.rows);
    const key = `${p.key}|${w}x${h}@${dpr}`;
    if (key !== this.cacheKey) {
      this.paintCells(p, w, h, dpr, s);
      this.cacheKey = key;
    }
    if (c.width !== w * dpr || c.height !== h * dpr) {
      c.width = w * dpr;
      c.height = h * dpr;
      c.style.width = `${w}px`;
      c.style.height = `${h}px`;
    }
    const g = c.getContext("2d")!;
    g.setTransform(1, 0, 0, 1, 0, 0);
    g.clearRect(0, 0, c.width, c.height);
    g.drawImage(this.cache, 0, 0);
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    const [sx, sy] = p.cellOf(p.selected);
    g.strokeStyle = p.frame;
    g.lineWidth = 2;
    g.strokeRect(2 + sx * s - 1, 2 + sy * s - 1, Math.max(s, 3) + 1, Math.max(s, 3) + 1);
    c.dataset.selected = p.selected.join(",");
    c.dataset.scale = String(s);
  }

  /// Every cell into the offscreen image, consecutive cells of one colour in a row as one rectangle.
  private paintCells(p: GridPaint, w: number, h: number, dpr: number, s: number) {
    const k = this.cache;
    k.width = Math.max(1, w * dpr);
    k.height = Math.max(1, h * dpr);
    const g = k.getContext("2d")!;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const gap = s > 4 ? 1 : 0;
    const size = Math.max(s - gap, 0.5);
    const flagged: number[] = [];
    for (let r = 0; r < p.rows; r++) {
      let runStart = 0, runColour = "", runLen = 0;
      const flush = () => {
        if (!runLen) return;
        g.fillStyle = runColour;
        if (gap) for (let i = 0; i < runLen; i++) g.fillRect(2 + (runStart + i) * s, 2 + r * s, size, size);
        else g.fillRect(2 + runStart * s, 2 + r * s, runLen * s, size);
        runLen = 0;
      };
      for (let x = 0; x < p.cols; x++) {
        const pid = p.pidAt(x, r);
        if (!pid) {
          flush();
          continue;
        }
        const { css, flagged: bad } = p.colour(pid);
        if (bad) flagged.push(pid[0] + p.grid[0] * (pid[1] + p.grid[1] * pid[2]));
        if (runLen && css === runColour && runStart + runLen === x) runLen++;
        else {
          flush();
          runStart = x;
          runColour = css;
          runLen = 1;
        }
      }
      flush();
    }
    this.canvas.dataset.flagged = runs(flagged);
  }
}
