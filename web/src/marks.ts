// What the tensor map marks for the selected op, and its legend: the elements the op touched (by kind),
// the out-of-bounds ones, the elements it read before anything wrote them (uninitialized-read findings)
// and those at which it raced with another program's access (or another lane's: data-race and
// intra-program-race findings), both from the program's finding records: GET .../programs/{x}/{y}/{z}
// `findings`.
import type { Access, Arg, Launch, Program, Site } from "./api";

export const KIND_COLOR: Record<string, string> = { load: "#3b82f6", store: "#f59e0b", atomic: "#a855f7" };
export const OOB_COLOR = "#e5484d";
/// Read before anything wrote it: a colour none of the kinds above uses (magenta).
export const UNINIT_COLOR = "#d946ef";
/// Raced: touched by this op and by the racing access of another program (or lane), cyan.
export const RACE_COLOR = "#06b6d4";

/// The elements (offsets into `arg`) that access `a` of program `p` read before anything wrote them: the
/// runs of p's uninitialized-read findings at a's op (same TTIR position), buffer and execution.
export function uninitElements(l: Launch, p: Program, a: Access, site: Site, arg: Arg): Set<number> {
  const out = new Set<number>();
  for (const r of p.findings ?? []) {
    const f = l.findings[r.finding];
    if (!f || f.kind !== "uninitialized-read" || r.side !== 0) continue;
    if (f.ttir.line !== site.ttir_line || f.ttir.col !== site.ttir_col) continue;
    if (f.buffer && f.buffer.name !== arg.name) continue;
    if (r.seq >= 0 && r.seq !== a.seq) continue;
    for (const [first, n] of r.runs) for (let o = first; o < first + n; o++) out.add(o);
  }
  return out;
}

/// The elements (offsets into `arg`) at which access `a` of program `p` raced: the runs of p's race
/// findings whose side is a's op (same TTIR position) and buffer, that a touched (a race's runs cover
/// every execution of the op in p).
export function raceElements(l: Launch, p: Program, a: Access, site: Site, arg: Arg): Set<number> {
  const raced = new Set<number>();
  for (const r of p.findings ?? []) {
    const f = l.findings[r.finding];
    if (!f || (f.kind !== "data-race" && f.kind !== "intra-program-race")) continue;
    const side = r.side === 1 ? f.other : f;
    if (!side || side.ttir.line !== site.ttir_line || side.ttir.col !== site.ttir_col) continue;
    if (f.buffer && f.buffer.name !== arg.name) continue;
    for (const [first, n] of r.runs) for (let o = first; o < first + n; o++) raced.add(o);
  }
  const out = new Set<number>();
  if (!raced.size) return out;
  for (const [first, n] of a.runs) for (let o = first; o < first + n; o++) if (raced.has(o)) out.add(o);
  return out;
}

/// The legend of the "this op" view into `host`: one swatch per colour the map can show.
export function renderLegend(host: HTMLElement, show: boolean) {
  host.hidden = !show;
  if (!show || host.childElementCount) return;
  const item = (colour: string, text: string, title: string) =>
    `<span class="legend-item" title="${title}"><span class="swatch" style="background:${colour}"></span>${text}</span>`;
  host.innerHTML =
    item(KIND_COLOR.load, "load", "elements this op loaded in this program") +
    item(KIND_COLOR.store, "store", "elements this op stored") +
    item(KIND_COLOR.atomic, "atomic", "elements this atomic op read and wrote") +
    item(OOB_COLOR, "out of bounds", "lanes outside the tensor, drawn past its edge") +
    item(UNINIT_COLOR, "read before written", "elements this op read before anything wrote them (uninitialized-read)") +
    item(RACE_COLOR, "raced", "elements this op touched that the racing access of another program (or lane) touched too, unordered (data-race, intra-program-race)");
}
