// tilescope's web visualizer: every launch of a trace, the grid of programs, each program's memory
// ops, the tensor each op touched, and the Python source beside the TTIR.
import { api, ApiError, values as fetchValues, type Value, type Access, type Arg, type Finding, type Launch, type LaunchSummary, type Pid, type Program, type Programs } from "./api";
import { CodeView } from "./code";
import { GridMap } from "./gridmap";
import { KIND_COLOR, OOB_COLOR, RACE_COLOR, UNINIT_COLOR, raceElements, renderLegend, uninitElements } from "./marks";
import { Heatmap, hexRGB, mix, runs, type HeatmapModel, type Mark, type RGB } from "./heatmap";
import "./style.css";
import { npy } from "./npy";
import { elemBytes, fmtBytes, formatValue, valueAt } from "./values";
import { mountAssistant } from "./assistant";
import { NkiView, dmaSummary, drawFlows, fmtNs, isNki, type NkiProfile } from "./nki";

type TensorMode = "op" | "all" | "before" | "after";


const state = {
  launches: [] as LaunchSummary[],
  launch: null as Launch | null,
  programs: null as Programs | null,
  bytes: null as Map<string, number> | null, // per program, fetched when the map is coloured by bytes
  times: undefined as number[] | null | undefined, // ns by linear id, fetched for colouring by time (null: none)
  pid: [0, 0, 0] as Pid,
  program: null as Program | null,
  access: -1, // index into program.accesses
  dotSite: -1, // a tt.dot site shown step by step (then access is -1)
  // An N-D argument's 2-D slice; `op` is the program and op it last followed (a new selection re-centres it
  // on the op's first element; the user's own choice stands while the selection does).
  slice: null as { key: string; op: string; rows: number; cols: number; idx: number[] } | null,
  // The latest selection request: an answer to an older one (keys pressed faster than the server
  // answers) is dropped, so the page always ends on what was asked last.
  generation: 0,
  dotStep: 0,
  mode: "op" as TensorMode,
  contents: new Map<string, DataView | null>(), // "launch/arg/phase"
  sources: new Map<number, string>(),
  ttir: new Map<number, string>(),
  shownSource: -1,
  budget: null as number | null, // the trace's budget in bytes (GET /api/session)
};

// ---------------------------------------------------------------------------------------------
// Layout

const app = document.getElementById("app")!;
app.innerHTML = `
<header>
  <strong>tilescope</strong><span id="file"></span>
  <span class="spacer"></span>
  <span class="keys" id="keys">keys: ←↑→↓ program · j/k op · [ ] launch · a all programs · z/f zoom to op / whole tensor · , . dot step</span>
  <button id="theme" title="light / dark">◐</button>
</header>
<main>
  <aside class="left">
    <section><h2>Launches</h2><ul id="launches" class="list"></ul></section>
    <section class="grow"><h2>Findings</h2><ul id="findings" class="list"></ul></section>
    <section id="profile" hidden><h2>Profile <span id="profile-gpu" class="muted"></span></h2>
      <canvas id="roofline" width="236" height="120" title="roofline: attainable FLOP/s against arithmetic intensity"></canvas>
      <div id="profile-summary" class="profile-summary"></div>
      <table id="profile-lines"><thead><tr><th>line</th><th>bytes</th><th>sectors</th><th>FLOPs</th></tr></thead><tbody></tbody></table>
    </section>
  </aside>
  <section class="center">
    <div class="panel" id="grid-panel">
      <h2>Programs <span id="grid-info" class="muted one-line"></span>
        <label class="right-of">colour by <select id="color-by"><option value="findings">findings</option><option value="bytes">bytes</option><option value="time">time</option></select></label></h2>
      <div class="grid-host"><canvas id="grid" tabindex="0"></canvas></div>
      <div id="grid-legend" class="legend" hidden></div>
    </div>
    <div class="panel" id="ops-panel">
      <h2>Memory ops of program <span id="pid"></span> <span id="sampled" class="muted"></span></h2>
      <div id="no-detail" class="notice" hidden></div>
      <div class="scroll"><table id="ops"><thead><tr><th>op</th><th>line</th><th title="the Python variable of the op's value">var</th><th title="the kernel argument its lanes point into">arg</th><th title="the n-th execution of this op in this program (0: the first)">seq</th><th title="lanes the mask let through / lanes of the op">active</th><th title="active lanes outside their argument">out of bounds</th></tr></thead><tbody></tbody></table></div>
    </div>
    <div class="panel" id="nki-panel" hidden>
      <h2>NeuronCore of program <span id="nki-pid"></span> <span id="nki-info" class="muted one-line"></span>
        <span id="nki-tip" class="right-of muted one-line">hover an instruction</span></h2>
      <div class="nki-host"><canvas id="nki" title="estimated engine timeline and on-chip memory in use (click an instruction: its line)"></canvas></div>
    </div>
    <div class="panel grow" id="tensor-panel">
      <h2><span id="tensor-title">Tensor</span> <span id="slice" class="slice" hidden></span>
        <span class="right-of" id="modes">
          <button data-mode="op" title="the elements the selected op touched in the selected program">this op</button>
          <button data-mode="all" title="how many programs' accesses touched each element">all programs</button>
          <button data-mode="before" title="values before the launch">before</button>
          <button data-mode="after" title="values after the launch">after</button>
          <a id="npy" class="button" hidden download title="the argument's values as a .npy file">.npy</a>
        </span></h2>
      <div class="heat-host" id="heat-host"><span id="zoom" class="zoom"><span id="zoom-info" class="muted"></span><button id="zoom-op" title="zoom to the elements this op touched (z)">zoom to op</button>
          <button id="zoom-fit" title="the whole tensor (f)">whole tensor</button></span></div>
      <div id="dot-view" class="dot-view" hidden>
        <div class="dot-controls"><button id="dot-prev" title="previous step along K (,)">◀</button>
          <input id="dot-step" type="range" min="0" value="0" /><button id="dot-next" title="next step along K (.)">▶</button>
          <span id="dot-label" class="muted"></span></div>
        <div class="dot-tiles">
          <figure><figcaption>A</figcaption><div class="tile-host" id="dot-a"></div></figure>
          <figure><figcaption>B</figcaption><div class="tile-host" id="dot-b"></div></figure>
          <figure><figcaption>accumulator in</figcaption><div class="tile-host" id="dot-c"></div></figure>
          <figure><figcaption>result</figcaption><div class="tile-host" id="dot-d"></div></figure>
        </div>
      </div>
      <div id="legend" class="legend" hidden></div>
      <div class="under-map"><div id="hover" class="hover muted">hover an element</div>
        <canvas id="hist" class="hist" width="240" height="58" hidden title="histogram of the values (64 bins, min to max) over the colour scale"></canvas></div>
    </div>
  </section>
  <aside class="right">
    <div class="panel grow" id="py-panel"><h2>Python <span id="py-file" class="muted one-line"></span>
      <label class="right-of" title="wrap long lines at the panel's width"><input type="checkbox" id="py-wrap" /> wrap</label></h2><div class="code" id="py"></div></div>
    <div class="panel grow" id="ttir-panel"><h2><span id="ttir-title">TTIR</span> <span id="ttir-file" class="muted one-line"></span>
      <label class="right-of" title="wrap long lines at the panel's width"><input type="checkbox" id="ttir-wrap" /> wrap</label></h2><div class="code" id="ttir"></div></div>
  </aside>
</main>
<div id="error" class="error" hidden></div>`;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const heat = new Heatmap($("heat-host"));
const tiles = { a: new Heatmap($("dot-a")), b: new Heatmap($("dot-b")), c: new Heatmap($("dot-c")), d: new Heatmap($("dot-d")) };
// Long lines wrap (TTIR's are long: types and locations; at 1280 px with the assistant open a panel is
// about 330 px wide) unless the user turns it off; the choice is kept across sessions.
const wrapSaved = (k: string, dflt: boolean) => (localStorage.getItem(k) ?? (dflt ? "1" : "0")) === "1";
const py = new CodeView($("py"), "python", wrapSaved("tilescope-wrap-py", true));
const ttir = new CodeView($("ttir"), "ttir", wrapSaved("tilescope-wrap-ttir", true));
for (const [id, view, key] of [["py-wrap", py, "tilescope-wrap-py"], ["ttir-wrap", ttir, "tilescope-wrap-ttir"]] as const) {
  const box = $<HTMLInputElement>(id);
  box.checked = view.wrap;
  box.addEventListener("change", () => {
    view.setWrap(box.checked);
    localStorage.setItem(key, box.checked ? "1" : "0");
  });
}

function showError(e: unknown) {
  const el = $("error");
  el.hidden = false;
  el.textContent = e instanceof ApiError ? `${e.code}: ${e.message}` : String(e);
  setTimeout(() => (el.hidden = true), 6000);
}

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/// `text` escaped for HTML, breakable after "_", "/" and a "." that a letter follows, and between a
/// lower-case and a capital letter, besides its spaces (x_ptr wraps as x_ / ptr in a narrow table, never
/// as x_pt / r; a path at its parts; 1600..1700 and 0.5 stay whole).
function wrappable(text: string): string {
  return esc(text).replace(/([_/]|\.(?=[A-Za-z_]))(?=.)/g, "$1<wbr>").replace(/([a-z])(?=[A-Z])/g, "$1<wbr>");
}

const pidKey = (p: Pid) => p.join(",");
const base = (path: string) => path.split("/").pop() ?? path;

// ---------------------------------------------------------------------------------------------
// Launches and findings

function renderLaunches() {
  const ul = $("launches");
  ul.innerHTML = state.launches
    .map(
      (l) => `<li data-launch="${l.id}" class="${state.launch?.id === l.id ? "selected" : ""}">
        <span class="name">${l.id}. ${wrappable(l.name)}</span>
        <span class="muted">grid ${l.grid.join("×")} · ${fmtSeconds(l.seconds)}</span>
        ${l.findings ? `<span class="badge bad">${l.findings}</span>` : `<span class="badge ok">0</span>`}
        ${l.error ? `<span class="badge bad" title="${esc(l.error)}">error</span>` : ""}</li>`,
    )
    .join("");
  ul.querySelectorAll("li").forEach((li) => li.addEventListener("click", () => selectLaunch(Number(li.dataset.launch))));
}

/// A launch's wall time on tilescope (the trace's `seconds`), in s, ms or µs.
function fmtSeconds(t: number): string {
  return t >= 1 ? `${t.toFixed(2)} s` : t >= 1e-3 ? `${(t * 1e3).toFixed(1)} ms` : `${Math.round(t * 1e6)} µs`;
}

function renderFindings() {
  const ul = $("findings");
  const fs = state.launch?.findings ?? [];
  ul.innerHTML = fs.length
    ? fs
        .map(
          (f, i) => `<li data-finding="${i}"><span class="kind">${esc(f.kind)}</span>
            <span class="muted where">${wrappable(`${base(f.file)}:${f.line}`)}</span><div class="summary">${wrappable(f.summary)}</div>
            ${findingLinks(f, i)}
            ${f.hint ? `<div class="hint">${esc(f.hint)}</div>` : ""}</li>`,
        )
        .join("")
    : `<li class="muted">no findings in this launch</li>`;
  ul.querySelectorAll("li[data-finding]").forEach((li) =>
    li.addEventListener("click", () => selectFinding(state.launch!.findings[Number((li as HTMLElement).dataset.finding)])),
  );
  // A program link: that program and the op of its side (a race's other access: `other`).
  ul.querySelectorAll<HTMLElement>("a.goto").forEach((a) =>
    a.addEventListener("click", (e) => {
      e.stopPropagation();
      const f = state.launch!.findings[Number(a.dataset.finding)];
      const pid = a.dataset.pid!.split(",").map(Number) as Pid;
      selectProgram(pid, a.dataset.side === "1" && f.other ? f.other.ttir.line : f.ttir.line);
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// The profile (when the trace has one: `tilescope profile --trace`): the roofline and the hottest lines.

interface Roofline {
  arithmetic_intensity: number;
  bound: string;
  compute_seconds: number;
  memory_seconds: number;
  seconds: number;
  dram_bytes: number;
  flops: number;
  gpu: string;
  part: string;
}
interface ProfileLine {
  file: string;
  line: number;
  bytes: number;
  sectors: number;
  flops: number;
  source: string;
}

function fmtCount(n: number): string {
  const units = ["", "K", "M", "G", "T", "P"];
  let i = 0;
  while (Math.abs(n) >= 1000 && i < units.length - 1) (n /= 1000), i++;
  return `${i ? n.toFixed(1) : Math.round(n)}${units[i]}`;
}

/// A log-log roofline: the memory slope (peak bandwidth = DRAM bytes / memory time) up to the compute roof
/// (peak FLOP/s = FLOPs / compute time), and the launch at its arithmetic intensity and modelled rate.
function drawRoofline(r: Roofline) {
  const c = $<HTMLCanvasElement>("roofline");
  const g = c.getContext("2d")!;
  const css = getComputedStyle(document.documentElement);
  g.clearRect(0, 0, c.width, c.height);
  const bw = r.memory_seconds > 0 ? r.dram_bytes / r.memory_seconds : 0;
  const peak = r.compute_seconds > 0 ? r.flops / r.compute_seconds : 0;
  if (!(bw > 0 && peak > 0)) return;
  const x0 = -2, x1 = 4; // log10 FLOP/byte
  const y1 = Math.ceil(Math.log10(peak)) + 0.3, y0 = y1 - 6;
  const X = (ai: number) => ((Math.log10(ai) - x0) / (x1 - x0)) * (c.width - 10) + 5;
  const Y = (f: number) => c.height - 5 - ((Math.log10(f) - y0) / (y1 - y0)) * (c.height - 10);
  g.strokeStyle = css.getPropertyValue("--muted");
  g.beginPath();
  const ridge = peak / bw;
  g.moveTo(X(10 ** x0), Y(bw * 10 ** x0));
  g.lineTo(X(ridge), Y(peak));
  g.lineTo(X(10 ** x1), Y(peak));
  g.stroke();
  const ai = r.arithmetic_intensity;
  const rate = r.flops / r.seconds;
  g.fillStyle = r.bound === "memory" ? "#3b82f6" : "#f59e0b";
  g.beginPath();
  g.arc(X(Math.max(ai, 10 ** x0)), Y(Math.max(rate, 10 ** y0)), 4, 0, 2 * Math.PI);
  g.fill();
  g.fillStyle = css.getPropertyValue("--muted");
  g.font = "10px system-ui";
  g.fillText(`${fmtCount(peak)}FLOP/s`, c.width - 70, Y(peak) - 3);
  g.fillText(`${fmtCount(bw)}B/s`, 6, Math.min(c.height - 6, Y(bw * 10 ** x0) - 3));
}

// An NKI launch (its profile has "kind": "nki"): the estimate's summary and hottest lines on the left,
// and the selected program's engines and on-chip memory over time in the centre (nki.ts).
const nkiView = new NkiView($<HTMLCanvasElement>("nki"), $("nki-tip"), (site) => {
  // The instruction's access of an HBM tensor (else of on-chip memory) in the ops table, and its line.
  const acc = state.program?.accesses ?? [];
  const i = acc.findIndex((a) => a.site === site && a.arg >= 0);
  const j = i >= 0 ? i : acc.findIndex((a) => a.site === site);
  if (j >= 0) return selectAccess(j);
  const s = state.launch?.sites.find((x) => x.site === site);
  if (s) showSource(s.file, [s.line]);
});

// Drawn again at the panel's new width (the assistant opening, the window resized).
new ResizeObserver(() => {
  if (!$("nki-panel").hidden) drawNki();
}).observe($("nki").parentElement!);

function nkiProfile(): NkiProfile | null {
  const p = state.launch?.reports?.profile;
  return isNki(p) ? p : null;
}

function drawNki() {
  const p = nkiProfile();
  $("nki-panel").hidden = !p;
  document.body.classList.toggle("nki", !!p);  // a 1-D grid and the NeuronCore panel: the layout makes room
  if (!p) return;
  $("nki-pid").textContent = String(state.pid[0]);
  const ns = p.estimate.program_ns?.[state.pid[0]];
  $("nki-info").textContent = `${p.target} (an estimate)${ns !== undefined ? `: ${fmtNs(ns)}` : ""}`;
  nkiView.draw(p, state.pid[0]);
}

function renderNkiProfile(p: NkiProfile) {
  const panel = $("profile");
  panel.hidden = false;
  delete panel.dataset.bound;
  $("profile-gpu").textContent = `estimated on ${p.target}`;
  const canvas = $<HTMLCanvasElement>("roofline");
  canvas.title = "bytes moved between HBM, SBUF and PSUM (DMA and the engines)";
  drawFlows(canvas, p);
  const counts = Object.entries(p.engines).filter(([, e]) => e.instructions).map(([n, e]) => `${n} ${e.instructions}`);
  $("profile-summary").textContent = `${fmtNs(p.estimate.seconds * 1e9)} (the slowest program); instructions: ${counts.join(", ")}; DMA: ${dmaSummary(p) || "none"}`;
  const table = $("profile-lines");
  table.querySelector("thead")!.innerHTML = "<tr><th>line</th><th title=\"estimated time on its engines, summed over its instructions\">time</th><th>DMA</th></tr>";
  const lines = p.lines;
  const body = table.querySelector("tbody")!;
  body.innerHTML = lines
    .slice(0, 8)
    .map((x, i) => `<tr data-line="${i}" title="${esc(base(x.file))}:${x.line}: ${esc(x.source.trim())} (${x.instructions} instructions)"><td>line ${x.line}</td>
        <td>${fmtNs(x.busy_ns)}</td><td>${x.dma_bytes ? fmtBytes(x.dma_bytes) : ""}</td></tr>`)
    .join("");
  body.querySelectorAll("tr").forEach((tr) =>
    tr.addEventListener("click", () => {
      const x = lines[Number((tr as HTMLElement).dataset.line)];
      showSource(x.file, [x.line]);
    }),
  );
}

function renderProfile(l: Launch) {
  if (isNki(l.reports?.profile)) return renderNkiProfile(l.reports.profile);
  $("roofline").title = "roofline: attainable FLOP/s against arithmetic intensity";
  delete $("roofline").dataset.flows;
  $("profile-lines").querySelector("thead")!.innerHTML = "<tr><th>line</th><th>bytes</th><th>sectors</th><th>FLOPs</th></tr>";
  const p = l.reports?.profile as { roofline?: Roofline; lines?: ProfileLine[]; flops?: Record<string, number> } | undefined;
  const panel = $("profile");
  panel.hidden = !p?.roofline;
  if (!p?.roofline) return;
  const r = p.roofline;
  $("profile-gpu").textContent = `on ${r.part}`;
  drawRoofline(r);
  $("profile-summary").textContent =
    `${r.bound}-bound: at least ${(r.seconds * 1e6).toFixed(2)} µs; ${fmtCount(r.dram_bytes)}B from DRAM, ` +
    `${fmtCount(r.flops)} FLOPs, ${r.arithmetic_intensity.toFixed(1)} FLOP/byte`;
  const body = $("profile-lines").querySelector("tbody")!;
  body.innerHTML = (p.lines ?? [])
    .slice(0, 8)
    .map(
      (x, i) => `<tr data-line="${i}" title="${esc(x.source)}"><td>${esc(base(x.file))}:${x.line}</td><td>${fmtCount(x.bytes)}</td>
        <td>${fmtCount(x.sectors)}</td><td>${fmtCount(x.flops)}</td></tr>`,
    )
    .join("");
  body.querySelectorAll("tr").forEach((tr) =>
    tr.addEventListener("click", () => {
      const x = p.lines![Number((tr as HTMLElement).dataset.line)];
      showSource(x.file, [x.line]);
    }),
  );
  panel.dataset.bound = r.bound;
}

async function selectLaunch(id: number) {
  const generation = ++state.generation;
  try {
    const [launch, programs] = await Promise.all([api.launch(id), api.programs(id)]);
    if (generation !== state.generation) return;
    state.launch = launch;
    state.programs = programs;
    state.bytes = null;
    state.times = undefined;
    state.access = -1;
    renderLaunches();
    renderFindings();
    renderProfile(launch);
    const s = programs.detail_stride;
    $("grid-info").textContent = `grid ${launch.grid.join(" × ")}, ${launch.programs} programs; detail recorded for ${
      s === 0 ? "none" : s === 1 ? "all" : `1 in ${s}`
    }${s === 1 ? "" : " (the trace's budget)"}`;
    $("grid-info").title = $("grid-info").textContent;
    renderGridLegend(s, ($("color-by") as HTMLSelectElement).value);
    if (($("color-by") as HTMLSelectElement).value === "bytes") await loadBytes();
    if (($("color-by") as HTMLSelectElement).value === "time") await loadTimes();
    if (!state.ttir.has(launch.kernel_id)) state.ttir.set(launch.kernel_id, (await api.kernel(launch.kernel_id)).ttir);
    ttir.setText(state.ttir.get(launch.kernel_id)!);
    $("ttir-title").textContent = launch.language === "nki" ? "NKI instructions" : "TTIR";
    $("ttir-file").textContent = launch.name;
    $("ttir-file").title = launch.name;
    state.shownSource = -1;
    const first = launch.findings[0];
    if (first) await selectFinding(first);
    else await selectProgram([0, 0, 0]);
  } catch (e) {
    showError(e);
  }
}

/// The map's colours: by time, its scale (maxNs: the longest program; null: the trace has no times);
/// by findings, when the budget kept the detail of some programs only (stride s: 1 in s; 0: none).
function renderGridLegend(s: number, by: string, maxNs?: number | null) {
  const host = $("grid-legend");
  const item = (colour: string, text: string, title: string) =>
    `<span class="legend-item" title="${title}"><span class="swatch" style="background:${colour}"></span>${text}</span>`;
  if (by === "time") {
    host.hidden = maxNs === undefined;
    host.innerHTML =
      maxNs === null || maxNs === undefined
        ? "this trace has no program times (dropped by its budget, or written by an older tilescope)"
        : item("rgba(245,158,11,0.1)", "0", "no time") +
          item("rgba(245,158,11,1)", `${fmtSeconds(maxNs / 1e9)}: the longest program`, "wall time of each program on tilescope (CPU), not a GPU's");
    return;
  }
  host.hidden = s === 1 || by !== "findings";
  host.innerHTML =
    item("#e5484d", "finding", "a program a finding involves; its accesses are recorded") +
    item("rgba(229,72,77,0.4)", "finding, detail not kept", "a program a finding involves whose accesses the trace's budget did not keep") +
    (s > 0 ? item("rgba(59,130,246,0.45)", "detail kept", "a program whose accesses are recorded") : "") +
    item("var(--cell)", "detail not kept", "a program whose accesses the trace's budget did not keep");
}

/// A finding: its first program, the op at its site, and (for two-sided races) nothing more.
/// The programs a finding names (its first few), each a link to that program at the finding's op; for a
/// race also those of its other access, at that op.
function findingLinks(f: Finding, i: number): string {
  const link = (p: Pid, side: number) =>
    `<a class="goto" data-finding="${i}" data-side="${side}" data-pid="${p.join(",")}" title="select this program and the op">(${p.join(", ")})</a>`;
  const more = (n: number, shown: number) => (n > shown ? ` <span class="muted">+${n - shown} more</span>` : "");
  let out = `<div class="programs">programs ${f.programs.first.map((p) => link(p, 0)).join(" ")}${more(f.programs.count, f.programs.first.length)}`;
  if (f.other)
    out += `<br />other access (${esc(f.other.op)}, line ${f.other.line}): ${f.other.programs.first.map((p) => link(p, 1)).join(" ")}${more(
      f.other.programs.count,
      f.other.programs.first.length,
    )}`;
  return out + "</div>";
}

async function selectFinding(f: Finding) {
  const pid = f.programs.first[0] ?? [0, 0, 0];
  await selectProgram(pid, f.ttir.line);
}

// ---------------------------------------------------------------------------------------------
// Grid map of programs

/// Where each program sits on the map: x across and y, z down; a 1-D grid wraps into rows that fill the
/// panel (a grid of 16384 programs is a 128 x 128 square, not a line of 16384 sub-pixel cells).
function gridLayout(l: Launch) {
  const host = $("grid").parentElement!;
  const [gx, gy, gz] = l.grid;
  const wrap = gy * gz === 1 && gx > 1;
  const aspect = Math.max(0.2, host.clientWidth / Math.max(1, host.clientHeight));
  const cols = wrap ? Math.min(gx, Math.max(1, Math.ceil(Math.sqrt(gx * aspect)))) : gx;
  const rows = wrap ? Math.ceil(gx / cols) : gy * gz;
  return {
    cols,
    rows,
    cell: (p: Pid): [number, number] => (wrap ? [p[0] % cols, Math.floor(p[0] / cols)] : [p[0], p[1] + gy * p[2]]),
    pid: (c: number, r: number): Pid | null => {
      if (c < 0 || c >= cols || r < 0 || r >= rows) return null;
      if (wrap) return r * cols + c < gx ? [r * cols + c, 0, 0] : null;
      return [c, r % gy, Math.floor(r / gy)];
    },
  };
}

function sampled(l: Launch, p: Pid): boolean {
  const s = state.programs?.detail_stride ?? 0;
  return s > 0 && (p[0] + l.grid[0] * (p[1] + l.grid[1] * p[2])) % s === 0;
}

async function loadBytes() {
  const l = state.launch;
  if (!l || state.bytes) return;
  const r = await api.programs(l.id, true);
  state.bytes = new Map((r.programs ?? []).map((p) => [pidKey(p.pid), p.bytes]));
}

async function loadTimes() {
  const l = state.launch;
  if (!l || state.times !== undefined) return;
  const r = await api.programs(l.id, false, true);
  if (state.launch?.id === l.id) state.times = r.times_ns ?? null;
}

const gridMap = new GridMap($<HTMLCanvasElement>("grid"));

function drawGrid() {
  const l = state.launch;
  if (!l || !state.programs) return gridMap.clear();
  const lay = gridLayout(l);
  const by = ($("color-by") as HTMLSelectElement).value;
  const byBytes = by === "bytes" && state.bytes;
  let maxBytes = 1;
  if (byBytes) for (const b of state.bytes!.values()) maxBytes = Math.max(maxBytes, b);
  // By time: orange, darker for longer, from the trace's per-program wall times.
  const times = by === "time" ? state.times : undefined;
  const byTime = !!times;
  let maxTime = 1, hottest = -1;
  if (times) times.forEach((t, i) => t > maxTime && ((maxTime = t), (hottest = i)));
  const linear = (p: Pid) => p[0] + l.grid[0] * (p[1] + l.grid[1] * p[2]);
  const grid = $("grid");
  grid.dataset.hottest = byTime ? String(hottest) : "";
  renderGridLegend(state.programs.detail_stride, by, byTime ? maxTime : by === "time" ? null : undefined);
  const css = getComputedStyle(document.documentElement);
  const empty = css.getPropertyValue("--cell").trim();
  const programs = state.programs;
  gridMap.draw({
    key: `${l.id}|${byBytes ? "bytes" : byTime ? "time" : "findings"}|${empty}|${css.getPropertyValue("--fg").trim()}`,
    cols: lay.cols,
    rows: lay.rows,
    grid: l.grid,
    pidAt: lay.pid,
    cellOf: lay.cell,
    colour: (pid) => {
      const k = pidKey(pid);
      // A program named by a finding: red, pale when the budget kept no detail of it (no ops to show).
      if (byTime) return { css: `rgba(245,158,11,${0.1 + (0.9 * (times![linear(pid)] ?? 0)) / maxTime})`, flagged: false };
      if (!byBytes && programs.findings[k]) return { css: sampled(l, pid) ? "#e5484d" : "rgba(229,72,77,0.4)", flagged: true };
      if (byBytes && state.bytes!.has(k)) return { css: `rgba(59,130,246,${0.15 + (0.85 * state.bytes!.get(k)!) / maxBytes})`, flagged: false };
      if (!byBytes && sampled(l, pid)) return { css: "rgba(59,130,246,0.45)", flagged: false };
      return { css: empty, flagged: false };
    },
    selected: state.pid,
    frame: css.getPropertyValue("--fg").trim(),
  });
}

$<HTMLCanvasElement>("grid").addEventListener("click", (e) => {
  const l = state.launch;
  if (!l) return;
  const c = e.currentTarget as HTMLCanvasElement;
  const s = Number(c.dataset.scale);
  const r = c.getBoundingClientRect();
  const pid = gridLayout(l).pid(Math.floor((e.clientX - r.left - 2) / s), Math.floor((e.clientY - r.top - 2) / s));
  if (pid) selectProgram(pid);
});
$("color-by").addEventListener("change", async () => {
  if (($("color-by") as HTMLSelectElement).value === "bytes") await loadBytes().catch(showError);
  if (($("color-by") as HTMLSelectElement).value === "time") await loadTimes().catch(showError);
  drawGrid();
});
new ResizeObserver(drawGrid).observe($("grid").parentElement!);

// ---------------------------------------------------------------------------------------------
// A program's memory ops

function siteOf(a: Access) {
  return state.launch!.sites.find((s) => s.site === a.site)!;
}

function argOf(i: number): Arg | undefined {
  return state.launch!.args.find((a) => a.index === i);
}

async function selectProgram(pid: Pid, ttirLine?: number) {
  const l = state.launch;
  if (!l) return;
  state.pid = pid;
  drawGrid();
  drawNki();
  const ns = state.times?.[pid[0] + l.grid[0] * (pid[1] + l.grid[1] * pid[2])];
  $("pid").textContent = `(${pid.join(", ")})${ns !== undefined ? ` · ${fmtSeconds(ns / 1e9)}` : ""}`;
  const generation = ++state.generation;
  try {
    const program = await api.program(l.id, pid);
    if (generation !== state.generation) return; // a newer selection is on its way
    state.program = program;
  } catch (e) {
    showError(e);
    return;
  }
  const p = state.program;
  $("sampled").textContent = p.sampled ? "" : "(detail not kept by the trace's budget)";
  renderNoDetail(l, pid, p);
  const body = $("ops").querySelector("tbody")!;
  body.innerHTML = p.accesses
    .map((a, i) => {
      const s = siteOf(a);
      const arg = argOf(a.arg);
      const argName = arg?.name ?? (l.language === "nki" ? "(on chip)" : "(none)");
      return `<tr data-access="${i}" data-site="${a.site}" data-arg="${a.arg}">
        <td class="text" title="${esc(s.op)}"><span class="dot" style="background:${KIND_COLOR[a.kind]}"></span>${wrappable(s.op)}</td>
        <td>${s.line}</td><td class="text" title="${esc(s.var)}">${wrappable(s.var)}</td><td class="text" title="${esc(argName)}">${wrappable(argName)}</td><td>${a.seq}</td>
        <td>${a.active} / ${a.lanes}</td><td class="${a.oob ? "bad" : ""}">${a.oob || ""}</td></tr>`;
    })
    .join("");
  const dots = state.launch!.sites.filter((x) => x.dot);
  body.insertAdjacentHTML(
    "beforeend",
    dots
      .map(
        (d) => `<tr data-dot="${d.site}"><td class="text" title="${esc(d.op)}"><span class="dot" style="background:#10b981"></span>${wrappable(d.op)}</td>
        <td>${d.line}</td><td class="text" title="${esc(d.var)}">${wrappable(d.var)}</td><td colspan="4" class="muted text">M × N × K ${d.dot!.join(" × ")}: values step by step along K</td></tr>`,
      )
      .join(""),
  );
  body.querySelectorAll("tr[data-access]").forEach((tr) =>
    tr.addEventListener("click", () => selectAccess(Number((tr as HTMLElement).dataset.access))),
  );
  body.querySelectorAll("tr[data-dot]").forEach((tr) =>
    tr.addEventListener("click", () => selectDot(Number((tr as HTMLElement).dataset.dot))),
  );
  if (state.dotSite >= 0 && ttirLine === undefined && dots.some((d) => d.site === state.dotSite)) return selectDot(state.dotSite);
  // At first, an access of an argument (an NKI instruction's on-chip operands come first).
  let pick = Math.max(0, p.accesses.findIndex((a) => a.arg >= 0));
  if (ttirLine !== undefined) {
    // The op's access of an argument, where it has several (an NKI instruction's HBM operand).
    const at = (a: Access) => siteOf(a).ttir_line === ttirLine;
    const i = p.accesses.findIndex((a) => at(a) && a.arg >= 0);
    if (i >= 0 || (i === -1 && p.accesses.some(at))) pick = i >= 0 ? i : p.accesses.findIndex(at);
  } else if (state.access >= 0 && state.access < p.accesses.length) {
    pick = state.access;
  }
  await selectAccess(p.accesses.length ? pick : -1, ttirLine);
}

/// Why a program shows no memory ops although the map may colour it for a finding: the trace's budget
/// kept the per-program detail of a sample of programs only (docs/trace-format.md, "The budget"). Says
/// which sample, which findings name this program, and offers the nearest program of those findings
/// whose detail was kept.
function renderNoDetail(l: Launch, pid: Pid, p: Program) {
  const box = $("no-detail");
  box.hidden = p.sampled;
  if (p.sampled) return (box.innerHTML = "");
  const stride = state.programs?.detail_stride ?? 0;
  const d = (l.dropped?.detail ?? null) as { stride: number; programs_kept: number; programs: number } | null;
  const kept = d ? `${d.programs_kept} of ${d.programs} programs` : "";
  const sample =
    stride === 0
      ? "kept the accesses of no program of this launch"
      : `kept the accesses of 1 program in ${stride} only (those whose linear id x + gx·(y + gy·z) is a multiple of ${stride}${kept ? `: ${kept}` : ""})`;
  const mine = state.programs?.findings[pidKey(pid)] ?? [];
  const names = mine.map((i) => `${i + 1} (${esc(l.findings[i]?.kind ?? "?")})`).join(", ");
  // The nearest program (by linear id) that shares a finding with this one and has its detail.
  const lin = (q: Pid) => q[0] + l.grid[0] * (q[1] + l.grid[1] * q[2]);
  let near: Pid | null = null;
  for (const [k, fs] of Object.entries(state.programs?.findings ?? {})) {
    const q = k.split(",").map(Number) as Pid;
    if (!sampled(l, q) || !fs.some((i) => mine.includes(i))) continue;
    const dq = Math.abs(lin(q) - lin(pid)), dn = near ? Math.abs(lin(near) - lin(pid)) : Infinity;
    if (dq < dn || (dq === dn && lin(q) < lin(near!))) near = q; // a tie: the lower id
  }
  const budget = state.budget === null ? "" : ` (${fmtBytes(state.budget)}; a larger --trace-budget keeps more)`;
  box.innerHTML =
    `No memory ops are shown for program (${pid.join(", ")}) because its detail was not recorded: the trace's budget${budget} ${sample}.` +
    (mine.length ? ` The map colours it for finding${mine.length > 1 ? "s" : ""} ${names}, which involve${mine.length > 1 ? "" : "s"} it.` : "") +
    (near ? ` <button id="no-detail-go" data-pid="${near.join(",")}">show program (${near.join(", ")})</button>, which has its detail, in the same finding.` : "");
  box.dataset.stride = String(stride);
  $("no-detail-go")?.addEventListener("click", () => selectProgram(near!));
}

async function selectAccess(i: number, ttirLine?: number) {
  state.access = i;
  state.dotSite = -1;
  $("ops")
    .querySelectorAll("tbody tr")
    .forEach((tr) => tr.classList.toggle("selected", (tr as HTMLElement).dataset.access === String(i)));
  const a = i >= 0 ? state.program!.accesses[i] : null;
  const line = a ? siteOf(a).ttir_line : ttirLine;
  const site = a ? siteOf(a) : state.launch!.sites.find((s) => s.ttir_line === line);
  if (site) await showSource(site.file, [site.line]);
  ttir.highlight(line ? [line] : []);
  await renderTensor();
}

// ---------------------------------------------------------------------------------------------
// A dot, step by step along K: its A and B tiles, the accumulator going in and the result, as the
// selected program computed them (the server runs the launch again from the trace for these values).

let dotValues: { seq: number; operands: Value[]; results: Value[] }[] = [];

function numeric(v: number | string): number {
  return typeof v === "number" ? v : v === "inf" ? Infinity : v === "-inf" ? -Infinity : NaN;
}

function showTile(h: Heatmap, v: Value | undefined, name: string) {
  if (!v || !v.values) return h.show(null);
  const vals = v.values.map(numeric);
  const rows = v.shape.length >= 2 ? v.shape[v.shape.length - 2] : 1;
  const cols = v.shape.length ? v.shape[v.shape.length - 1] : 1;
  let lo = Infinity, hi = -Infinity;
  for (const x of vals) if (Number.isFinite(x)) (lo = Math.min(lo, x)), (hi = Math.max(hi, x));
  const span = hi > lo ? hi - lo : 1;
  h.show({
    elements: Math.min(vals.length, rows * cols),
    width: cols,
    cell: (o) => (Number.isFinite(vals[o]) ? ramp((vals[o] - lo) / span) : [229, 72, 77]),
    marks: new Map(),
  });
  h.onHover = (o) => {
    if (o === null || o < 0 || o >= vals.length) return;
    $("hover").textContent = `${name}[${Math.floor(o / cols)}, ${o % cols}] = ${formatValue(vals[o])} (${v.type})`;
  };
}

function renderDotStep() {
  const n = dotValues.length;
  const step = Math.min(state.dotStep, Math.max(0, n - 1));
  const e = dotValues[step];
  const slider = $<HTMLInputElement>("dot-step");
  slider.max = String(Math.max(0, n - 1));
  slider.value = String(step);
  const view = $("dot-view");
  view.dataset.steps = String(n);
  view.dataset.step = String(step);
  $("dot-label").textContent = n ? `step ${step + 1} of ${n} along K` : "this program did not run this dot";
  showTile(tiles.a, e?.operands[0], "A");
  showTile(tiles.b, e?.operands[1], "B");
  showTile(tiles.c, e?.operands[2], "acc");
  showTile(tiles.d, e?.results[0], "result");
  document.body.dataset.shown = `${state.launch!.id}/${pidKey(state.pid)}/dot${state.dotSite}/${step}`;
}

async function selectDot(site: number) {
  const l = state.launch!;
  state.access = -1;
  state.dotSite = site;
  $("ops")
    .querySelectorAll("tbody tr")
    .forEach((tr) => tr.classList.toggle("selected", (tr as HTMLElement).dataset.dot === String(site)));
  const s = l.sites.find((x) => x.site === site)!;
  await showSource(s.file, [s.line]);
  ttir.highlight([s.ttir_line]);
  $("heat-host").hidden = true;
  $("legend").hidden = true;
  $("hist").hidden = true;
  $("dot-view").hidden = false;
  $("modes").hidden = true;
  $("tensor-title").textContent = `${s.op} [${s.dot!.join(" × ")}] in program (${state.pid.join(", ")})`;
  $("dot-label").textContent = "computing (the launch runs again from the trace)...";
  try {
    const r = await fetchValues(l.id, state.pid, [site]);
    dotValues = r.sites[0]?.executions ?? [];
  } catch (e) {
    dotValues = [];
    showError(e);
  }
  renderDotStep();
}

$("dot-step").addEventListener("input", () => {
  state.dotStep = Number(($("dot-step") as HTMLInputElement).value);
  renderDotStep();
});
$("dot-prev").addEventListener("click", () => {
  state.dotStep = Math.max(0, state.dotStep - 1);
  renderDotStep();
});
$("dot-next").addEventListener("click", () => {
  state.dotStep = Math.min(dotValues.length - 1, state.dotStep + 1);
  renderDotStep();
});

// ---------------------------------------------------------------------------------------------
// Source views

async function showSource(file: string, lines: number[]) {
  const l = state.launch!;
  const src = l.sources.find((s) => s.path === file) ?? l.sources.find((s) => base(s.path) === base(file));
  if (!src) {
    if (state.shownSource !== -2) py.setText(`# ${file}: not in the trace`);
    state.shownSource = -2;
    $("py-file").textContent = file;
    $("py-file").title = file;
    return;
  }
  if (state.shownSource !== src.id) {
    if (!state.sources.has(src.id)) state.sources.set(src.id, (await api.source(src.id)).content);
    py.setText(state.sources.get(src.id)!);
    state.shownSource = src.id;
    $("py-file").textContent = src.path;
    $("py-file").title = src.path;
  }
  py.highlight(lines);
}

ttir.onLineClick = async (line) => {
  const p = state.program;
  if (!p || !state.launch) return;
  const i = p.accesses.findIndex((a) => siteOf(a).ttir_line === line);
  if (i >= 0) return selectAccess(i);
  const site = state.launch.sites.find((s) => s.ttir_line === line);
  if (site?.dot) return selectDot(site.site);
  ttir.highlight([line]);
  if (site) await showSource(site.file, [site.line]);
};

py.onLineClick = async (line) => {
  const l = state.launch, p = state.program;
  if (!l || !p) return;
  const sites = l.sites.filter((s) => s.line === line && l.sources.some((x) => x.id === state.shownSource && x.path === s.file));
  if (!sites.length) return;
  const i = p.accesses.findIndex((a) => sites.some((s) => s.site === a.site));
  if (i >= 0) await selectAccess(i);
  py.highlight([line]);
  ttir.highlight(sites.map((s) => s.ttir_line));
};

// ---------------------------------------------------------------------------------------------
// The tensor of the selected op

/// Draws the legend canvas (#hist) again in the current theme's colours (the theme toggle calls it).
let redrawLegend: (() => void) | null = null;

/// 64 bins from `lo` to `hi` over the first 2^22 elements; NaN and infinities are left out (the title
/// says how many).
function drawHistogram(values: DataView, dtype: string, elements: number, lo: number, hi: number) {
  redrawLegend = () => drawHistogram(values, dtype, elements, lo, hi);
  const c = $<HTMLCanvasElement>("hist");
  const bins = new Array(64).fill(0);
  let nonfinite = 0;
  const n = Math.min(elements, 1 << 22);
  for (let i = 0; i < n; i++) {
    const v = valueAt(values, dtype, i);
    if (!Number.isFinite(v)) nonfinite++;
    else bins[Math.min(63, Math.floor(((v - lo) / (hi > lo ? hi - lo : 1)) * 64))]++;
  }
  const g = c.getContext("2d")!;
  g.clearRect(0, 0, c.width, c.height);
  const max = Math.max(1, ...bins);
  const barH = LEGEND_TOP - 2;
  g.fillStyle = getComputedStyle(document.documentElement).getPropertyValue("--fg");
  bins.forEach((b, i) => {
    const h = (b / max) * barH;
    g.fillRect(i * (c.width / 64), LEGEND_TOP - 1 - h, c.width / 64 - 1, h);
  });
  drawScale(c, ramp, formatValue(lo), formatValue(hi), nonfinite ? `${nonfinite} NaN/inf` : "");
  c.title = `${formatValue(lo)} .. ${formatValue(hi)}; ${n} values${nonfinite ? `, ${nonfinite} NaN or infinite (not shown)` : ""}`;
  c.dataset.bins = bins.join(",");
  c.hidden = false;
}

// The colour scale under the histogram (canvas y from LEGEND_TOP): a bar of the colours, its two ends
// labelled, and a note in the middle.
const LEGEND_TOP = 34;
function drawScale(c: HTMLCanvasElement, colour: (t: number) => RGB, left: string, right: string, middle: string) {
  const g = c.getContext("2d")!;
  for (let x = 0; x < c.width; x++) {
    const [r, gr, b] = colour(x / (c.width - 1));
    g.fillStyle = `rgb(${r},${gr},${b})`;
    g.fillRect(x, LEGEND_TOP, 1, 8);
  }
  g.fillStyle = getComputedStyle(document.documentElement).getPropertyValue("--fg");
  g.font = "10px sans-serif";
  g.textBaseline = "top";
  g.textAlign = "left";
  g.fillText(left, 0, LEGEND_TOP + 10);
  g.textAlign = "right";
  g.fillText(right, c.width, LEGEND_TOP + 10);
  if (middle) {
    g.textAlign = "center";
    g.fillText(middle, c.width / 2, LEGEND_TOP + 10);
  }
}

/// The legend of the access-count view: no histogram, the scale from 1 access to `max`.
function drawCountLegend(colour: (t: number) => RGB, max: number) {
  redrawLegend = () => drawCountLegend(colour, max);
  const c = $<HTMLCanvasElement>("hist");
  c.getContext("2d")!.clearRect(0, 0, c.width, c.height);
  drawScale(c, colour, "1", `${max}`, "loads + stores per element");
  c.title = `accesses per element (loads and stores, all programs): 1 .. ${max}; untouched elements are grey`;
  c.dataset.bins = "";
  c.hidden = false;
}

/// A blue (low) to red (high) ramp for t in [0, 1].
function ramp(t: number): RGB {
  const x = Math.min(1, Math.max(0, t));
  return [Math.round(40 + 200 * x), Math.round(90 + 60 * (1 - Math.abs(2 * x - 1))), Math.round(230 - 190 * x)];
}

/// Element o's count from [count, repeat] runs (binary search over the runs' starts).
function rleLookup(runs: [number, number][]): (o: number) => number {
  const starts: number[] = [];
  let at = 0;
  for (const [, repeat] of runs) starts.push(at), (at += repeat);
  return (o) => {
    let lo = 0, hi = starts.length - 1;
    if (hi < 0 || o < 0 || o >= at) return 0;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= o) lo = mid;
      else hi = mid - 1;
    }
    return runs[lo][0];
  };
}

function layout(arg: Arg): { elements: number; width: number } {
  const n = Math.max(1, Math.floor((arg.bytes ?? 0) / elemBytes(arg.dtype ?? "f32")));
  const shape = arg.shape ?? [n], strides = arg.strides ?? [1];
  let width = shape[shape.length - 1] || 1;
  if (shape.length >= 2 && strides[strides.length - 1] === 1 && strides[strides.length - 2] > 0) width = strides[strides.length - 2];
  // A 1-D tensor of more than 64 elements wraps at the power of two nearest its square root (a square,
  // not a strip a pixel high); the hover still names the element.
  if (shape.length === 1 && n > 64) width = 2 ** Math.round(Math.log2(Math.sqrt(n)));
  return { elements: n, width: Math.max(1, width) };
}

async function contentsOf(arg: Arg, phase: "before" | "after"): Promise<DataView | null> {
  const key = `${state.launch!.id}/${arg.index}/${phase}`;
  if (!state.contents.has(key)) {
    try {
      state.contents.set(key, new DataView(await api.contents(state.launch!.id, arg.index, phase)));
    } catch {
      state.contents.set(key, null);
    }
  }
  return state.contents.get(key)!;
}

/// The position of memory offset `off` (in elements) in a tensor of `shape` and `strides`, or null when no
/// index gives it (outside the tensor, or between its strided elements). Strides are visited largest
/// first, which inverts any layout whose elements do not overlap.
function indexOf(off: number, shape: number[], strides: number[]): number[] | null {
  const order = shape.map((_, d) => d).sort((a, b) => strides[b] - strides[a]);
  const idx = new Array(shape.length).fill(0);
  let rem = off;
  for (const d of order) {
    if (strides[d] <= 0) continue;
    idx[d] = Math.floor(rem / strides[d]);
    rem -= idx[d] * strides[d];
    if (idx[d] < 0 || idx[d] >= shape[d]) return null;
  }
  return rem === 0 ? idx : null;
}

/// Slice controls for an argument of rank >= 3: which dimensions are rows and columns, and the index of
/// every other one (a slider each). `first` (an offset the op touched) picks the starting slice.
function sliceFor(arg: Arg, first: number | undefined) {
  const shape = arg.shape!, strides = arg.strides!, rank = shape.length;
  const key = `${state.launch!.id}/${arg.index}`;
  const op = `${pidKey(state.pid)}/${state.access}`;
  if (!state.slice || state.slice.key !== key)
    state.slice = { key, op: "", rows: rank - 2, cols: rank - 1, idx: new Array(rank).fill(0) };
  const sl = state.slice;
  if (sl.op !== op) {
    sl.op = op;
    const at = first !== undefined ? indexOf(first, shape, strides) : null;
    if (at) sl.idx = at;
  }
  const host = $("slice");
  host.hidden = false;
  const dimSelect = (id: string, v: number) =>
    `<select id="${id}">${shape.map((n, d) => `<option value="${d}" ${d === v ? "selected" : ""}>dim ${d} (${n})</option>`).join("")}</select>`;
  host.innerHTML =
    `rows ${dimSelect("slice-rows", sl.rows)} columns ${dimSelect("slice-cols", sl.cols)} ` +
    shape
      .map((n, d) =>
        d === sl.rows || d === sl.cols
          ? ""
          : `<label title="index of dim ${d}">[${d}] <input type="number" data-dim="${d}" min="0" max="${n - 1}" value="${sl.idx[d]}" /></label>`,
      )
      .join(" ");
  host.querySelectorAll("select").forEach((el) =>
    el.addEventListener("change", () => {
      const r = Number(($("slice-rows") as HTMLSelectElement).value), c = Number(($("slice-cols") as HTMLSelectElement).value);
      if (r !== c) (sl.rows = r), (sl.cols = c);
      renderTensor();
    }),
  );
  host.querySelectorAll("input").forEach((el) =>
    el.addEventListener("change", () => {
      const d = Number((el as HTMLInputElement).dataset.dim);
      sl.idx[d] = Math.max(0, Math.min(shape[d] - 1, Number((el as HTMLInputElement).value) || 0));
      renderTensor();
    }),
  );
  const W = shape[sl.cols];
  let base = 0;
  shape.forEach((_, d) => {
    if (d !== sl.rows && d !== sl.cols) base += sl.idx[d] * strides[d];
  });
  return {
    elements: shape[sl.rows] * W,
    width: W,
    memOf: (ci: number) => base + Math.floor(ci / W) * strides[sl.rows] + (ci % W) * strides[sl.cols],
    cellOf: (off: number) => {
      const i = indexOf(off, shape, strides);
      if (!i || shape.some((_, d) => d !== sl.rows && d !== sl.cols && i[d] !== sl.idx[d])) return null;
      return i[sl.rows] * W + i[sl.cols];
    },
    describe: (ci: number) => {
      const i = indexOf(base + Math.floor(ci / W) * strides[sl.rows] + (ci % W) * strides[sl.cols], shape, strides);
      return i ? `[${i.join(", ")}]` : "";
    },
  };
}

let lastView = "";
const loadingContents = new Set<string>();
/// The hover text of the element under the mouse again (set by the tensor view's hover; null when the
/// mouse is elsewhere): contents fetched for a hover show when they arrive.
let refreshHover: (() => void) | null = null;

/// Element o's values before and after the launch, for the hover of the op and count views: " · before
/// X · after Y". The contents are fetched on the first hover of an argument (not with every op: they may
/// be large), and named once they are here.
function phaseValues(arg: Arg, dtype: string, o: number): string {
  let out = "";
  for (const phase of ["before", "after"] as const) {
    const key = `${state.launch!.id}/${arg.index}/${phase}`;
    if (!state.contents.has(key)) {
      if (!loadingContents.has(key)) {
        loadingContents.add(key);
        contentsOf(arg, phase)
          .then(() => refreshHover?.())
          .finally(() => loadingContents.delete(key));
      }
      continue;
    }
    const v = state.contents.get(key);
    if (v && o < v.byteLength / elemBytes(dtype)) out += ` · ${phase} ${formatValue(valueAt(v, dtype, o))}`;
  }
  return out;
}

async function renderTensor() {
  $("slice").hidden = true;
  $("heat-host").hidden = false;
  $("dot-view").hidden = true;
  $("modes").hidden = false;
  const p = state.program, l = state.launch;
  const a = p && state.access >= 0 ? p.accesses[state.access] : null;
  const arg = a ? argOf(a.arg) : undefined;
  document.querySelectorAll<HTMLButtonElement>("#modes button").forEach((b) => b.classList.toggle("selected", b.dataset.mode === state.mode));
  if (!l || !a || !arg || arg.kind !== "buffer") {
    $("tensor-title").textContent = a ? "this op's lanes are in no argument" : p && !p.accesses.length ? (p.sampled ? "Tensor: this program has no recorded memory op" : "Tensor: this program's accesses were not kept by the trace's budget") : "Tensor";
    heat.show(null);
    renderLegend($("legend"), false);
    heat.canvas.dataset.uninit = "";
    heat.canvas.dataset.race = "";
    if (l) document.body.dataset.shown = `${l.id}/${pidKey(state.pid)}/${state.access}/${state.mode}`;
    return;
  }
  const dtype = arg.dtype ?? "f32";
  const { elements, width } = layout(arg);
  $("tensor-title").textContent = `${arg.name}: ${dtype}[${(arg.shape ?? []).join(" × ")}] strides [${(arg.strides ?? []).join(", ")}]`;
  const marks = new Map<number, Mark>();
  $("npy").hidden = true;
  $("hist").hidden = true;
  let cell: (o: number) => RGB | null = () => null;
  const bg = hexRGB(getComputedStyle(document.documentElement).getPropertyValue("--cell"));
  let counts: { loads: (o: number) => number; stores: (o: number) => number } | null = null;
  let values: DataView | null = null;
  let uninit = new Set<number>(), raced = new Set<number>();
  if (state.mode === "op" || state.mode === "all") {
    for (const [first, count] of a.runs) for (let o = first; o < first + count; o++) marks.set(o, { color: KIND_COLOR[a.kind] });
    for (const [first, count] of a.oob_runs) for (let o = first; o < first + Math.min(count, 65536); o++) marks.set(o, { color: OOB_COLOR, ring: true });
    raced = raceElements(l, p!, a, siteOf(a), arg);
    for (const o of raced) marks.set(o, { color: RACE_COLOR, ring: true });
    uninit = uninitElements(l, p!, a, siteOf(a), arg);
    for (const o of uninit) marks.set(o, { color: UNINIT_COLOR, ring: true });
  }
  if (state.mode === "all") {
    try {
      const c = await api.counts(l.id, arg.index);
      counts = { loads: rleLookup(c.loads), stores: rleLookup(c.stores) };
    } catch (e) {
      showError(e);
    }
    if (counts) {
      const c = counts;
      let max = 1;
      for (let o = 0; o < elements; o += Math.max(1, Math.floor(elements / 65536))) max = Math.max(max, c.loads(o) + c.stores(o));
      const green = (t: number) => mix(bg, [16, 185, 129], Math.min(1, 0.15 + 0.85 * t));
      cell = (o) => {
        const n = c.loads(o) + c.stores(o);
        return n ? green(n / max) : null;
      };
      drawCountLegend((t) => green(Math.max(1 / max, t)), max);
      marks.clear();
    }
  } else if (state.mode === "before" || state.mode === "after") {
    values = await contentsOf(arg, state.mode);
    if (values) {
      let lo = Infinity, hi = -Infinity;
      for (let i = 0; i < elements && i < 1 << 22; i++) {
        const v = valueAt(values, dtype, i);
        if (Number.isFinite(v)) (lo = Math.min(lo, v)), (hi = Math.max(hi, v));
      }
      const span = hi > lo ? hi - lo : 1;
      cell = (o) => {
        const v = valueAt(values, dtype, o);
        if (Number.isNaN(v)) return [229, 72, 77];
        return ramp((v - lo) / span);
      };
      drawHistogram(values, dtype, elements, lo, hi);
      const link = $<HTMLAnchorElement>("npy");
      if (link.href.startsWith("blob:")) URL.revokeObjectURL(link.href);
      const shape = arg.shape && arg.shape.reduce((x, y) => x * y, 1) * elemBytes(dtype) === values.byteLength ? arg.shape : [elements];
      link.href = URL.createObjectURL(npy(values.buffer as ArrayBuffer, dtype, shape));
      link.download = `${arg.name}-launch${l.id}-${state.mode}.npy`;
      link.hidden = false;
    } else {
      $("tensor-title").textContent += " (no stored contents: dropped by the trace's budget)";
    }
  }
  let model: HeatmapModel = { elements, width, cell, marks };
  let describe = (o: number) =>
    (arg.shape ?? []).length <= 1 ? `element ${o}` : `row ${Math.floor(o / width)}, column ${((o % width) + width) % width}`;
  let memOf = (o: number) => o;
  let outside = 0;
  if ((arg.shape?.length ?? 0) >= 3 && arg.strides?.length === arg.shape!.length) {
    // An N-D argument: a 2-D slice of it; cells are slice positions, mapped to memory offsets.
    const sl = sliceFor(arg, [...marks.keys()].find((o) => o >= 0 && o < elements));
    const sliceMarks = new Map<number, Mark>();
    for (const [o, m] of marks) {
      const ci = o >= 0 && o < elements ? sl.cellOf(o) : null;
      if (ci !== null) sliceMarks.set(ci, m);
      else if (o < 0 || o >= elements) outside++;
    }
    const memCell = cell;
    model = { elements: sl.elements, width: sl.width, cell: (ci) => memCell(sl.memOf(ci)), marks: sliceMarks };
    describe = (ci) => `index ${sl.describe(ci)}`;
    memOf = sl.memOf;
    if (outside) $("tensor-title").textContent += ` · ${outside} out-of-bounds element(s) of this op, outside every slice`;
  }
  // The same op's tensor in another mode keeps the zoom and pan the user had (or the op's focus).
  const viewKey = `${l.id}/${pidKey(state.pid)}/${state.access}/${model.width}/${model.elements}/${JSON.stringify(state.slice?.idx ?? null)}`;
  heat.show(model, viewKey === lastView);
  lastView = viewKey;
  // For tests and tools: the op's elements read before written, and those at which it raced, as runs.
  heat.canvas.dataset.uninit = state.mode === "op" ? runs(uninit) : "";
  heat.canvas.dataset.race = state.mode === "op" ? runs(raced) : "";
  renderLegend($("legend"), state.mode === "op");
  // What is on screen, for tests and benchmarks: launch / program / op / mode.
  document.body.dataset.shown = `${l.id}/${pidKey(state.pid)}/${state.access}/${state.mode}`;
  const hover = (ci: number | null): void => {
    refreshHover = ci === null ? null : () => hover(ci);
    if (ci === null) return void ($("hover").textContent = "hover an element");
    const o = memOf(ci);
    const where = o < 0 || o >= elements ? " (outside the tensor)" : "";
    let text = `element ${o}${where}: ${describe(ci)}`;
    if (uninit.has(o) && state.mode === "op") text += ` · read by this ${a.kind} before anything wrote it (uninitialized)`;
    else if (raced.has(o) && state.mode === "op") text += ` · touched by this ${a.kind} and, unordered, by the racing access (data race)`;
    else if (model.marks.has(ci)) text += ` · touched by this ${a.kind}`;
    if (counts && o >= 0 && o < elements) text += ` · loads ${counts.loads(o)}, stores ${counts.stores(o)}`;
    if (values) text += ` · value ${formatValue(valueAt(values, dtype, o))}`;
    else if (o >= 0 && o < elements) text += phaseValues(arg, dtype, o);
    $("hover").textContent = text;
  };
  heat.onHover = hover;
  heat.onClick = async (ci) => {
    const o = memOf(ci);
    if (o < 0 || o >= elements) return;
    try {
      const r = await api.element(l.id, arg.index, o);
      const who = r.accesses.slice(0, 12).map((x) => `(${x.pid.join(",")}) ${x.kind}`).join(", ");
      $("hover").textContent = `element ${o}: recorded accesses by ${r.accesses.length}${r.more ? "+" : ""}: ${who}`;
    } catch (e) {
      showError(e);
    }
  };
}

// Whether the op's marked elements are all on screen: "64 of 320 marked in view" when some are not.
heat.onView = (inView, marked) => {
  $("zoom-info").textContent = marked && inView < marked ? `${inView} of ${marked} marked in view` : "";
};
$("zoom-op").addEventListener("click", () => heat.focusMarks());
$("zoom-fit").addEventListener("click", () => heat.fit());

document.querySelectorAll<HTMLButtonElement>("#modes button").forEach((b) =>
  b.addEventListener("click", () => {
    state.mode = b.dataset.mode as TensorMode;
    renderTensor();
  }),
);

// ---------------------------------------------------------------------------------------------
// Keys, theme, start

document.addEventListener("keydown", (e) => {
  const l = state.launch;
  if (!l || (e.target as HTMLElement).closest(".cm-editor, select")) return;
  const [x, y, z] = state.pid;
  const lay = gridLayout(l);
  const [cx, cy] = lay.cell(state.pid);
  const moves: Record<string, Pid> = {
    ArrowLeft: [Math.max(0, x - 1), y, z],
    ArrowRight: [Math.min(l.grid[0] - 1, x + 1), y, z],
    ArrowUp: lay.pid(cx, cy - 1) ?? state.pid,
    ArrowDown: lay.pid(cx, cy + 1) ?? state.pid,
  };
  if (moves[e.key]) {
    e.preventDefault();
    selectProgram(moves[e.key]);
  } else if ((e.key === "j" || e.key === "k") && state.program?.accesses.length) {
    const n = state.program.accesses.length;
    selectAccess((state.access + (e.key === "j" ? 1 : n - 1)) % n);
  } else if (e.key === "[" || e.key === "]") {
    const i = state.launches.findIndex((x2) => x2.id === l.id) + (e.key === "]" ? 1 : -1);
    if (i >= 0 && i < state.launches.length) selectLaunch(state.launches[i].id);
  } else if ((e.key === "," || e.key === ".") && state.dotSite >= 0) {
    state.dotStep = Math.max(0, Math.min(dotValues.length - 1, state.dotStep + (e.key === "." ? 1 : -1)));
    renderDotStep();
  } else if (e.key === "z") {
    heat.focusMarks();
  } else if (e.key === "f") {
    heat.fit();
  } else if (e.key === "a") {
    state.mode = state.mode === "all" ? "op" : "all";
    renderTensor();
  }
});

const savedTheme = localStorage.getItem("tilescope-theme");
if (savedTheme) document.documentElement.dataset.theme = savedTheme;
$("theme").addEventListener("click", () => {
  const dark = document.documentElement.dataset.theme
    ? document.documentElement.dataset.theme !== "dark"
    : !window.matchMedia("(prefers-color-scheme: dark)").matches;
  document.documentElement.dataset.theme = dark ? "dark" : "light";
  localStorage.setItem("tilescope-theme", document.documentElement.dataset.theme);
  drawGrid();
  heat.draw();
  if (redrawLegend && !$<HTMLCanvasElement>("hist").hidden) redrawLegend();
});

// The assistant panel (assistant.ts): what is selected, and how its citations select ops, lines and programs.
mountAssistant({
  selection: () => {
    const l = state.launch;
    if (!l) return null;
    const op = state.dotSite >= 0 ? state.dotSite : state.program && state.access >= 0 ? state.program.accesses[state.access]?.site : null;
    return { launch: l.id, program: state.pid, op: op ?? null };
  },
  launch: () => state.launch,
  selectOp: async (site) => {
    const s = state.launch?.sites.find((x) => x.site === site);
    if (!s) return;
    if (s.dot) return selectDot(site);
    const i = state.program?.accesses.findIndex((a) => a.site === site) ?? -1;
    if (i >= 0) return selectAccess(i);
    ttir.highlight([s.ttir_line]); // an op this program did not run: its lines
    await showSource(s.file, [s.line]);
  },
  selectProgram: (pid) => selectProgram(pid),
  selectLine: async (line) => {
    const l = state.launch;
    if (!l || !l.sites.length) return;
    const sites = l.sites.filter((s) => s.line === line && s.file === l.sites[0].file);
    const i = state.program?.accesses.findIndex((a) => sites.some((s) => s.site === a.site)) ?? -1;
    if (i >= 0) await selectAccess(i);
    await showSource(l.sites[0].file, [line]);
    ttir.highlight(sites.map((s) => s.ttir_line));
  },
  selectFinding: async (i) => {
    const f = state.launch?.findings[i];
    if (f) await selectFinding(f);
  },
});

(async () => {
  try {
    const [session, launches] = await Promise.all([api.session(), api.launches()]);
    state.budget = session.budget;
    $("file").textContent = `${session.file} · ${session.launches} launch(es)`;
    $("file").title = $("file").textContent;
    $("keys").title = $("keys").textContent;
    document.title = `tilescope · ${session.file}`;
    state.launches = launches;
    renderLaunches();
    const first = launches.find((l) => l.findings > 0) ?? launches[0];
    if (first) await selectLaunch(first.id);
    document.body.dataset.ready = "1";
  } catch (e) {
    showError(e);
  }
})();
