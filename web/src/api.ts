// The JSON API of `tilescope view` (src/cli/view.cpp, src/trace/query.cpp). Same-origin requests: the
// session cookie set from the URL's token authorizes them.

export type Pid = [number, number, number];

export interface Session {
  file: string;
  version: number;
  launches: number;
  kernels: number;
  budget: number;
  used: number;
}

export interface LaunchSummary {
  id: number;
  name: string;
  kernel: number;
  grid: Pid;
  programs: number;
  seconds: number;
  started: number;
  findings: number;
  kinds: Record<string, number>;
  error: string | null;
  detail_stride: number;
  dropped: Record<string, unknown>;
  /// "ttir", or "nki" for an NKI kernel (its text is the instruction listing; not replayable).
  language: string;
}

export interface Arg {
  index: number;
  name: string;
  kind: "buffer" | "scalar" | "none";
  dtype?: string;
  shape?: number[];
  strides?: number[];
  bytes?: number;
  value?: number | string;
}

export interface SiteStats {
  executions: number;
  lanes: number;
  active: number;
  oob: number;
  bytes: number;
}

export interface Site {
  site: number;
  op: string;
  ttir_line: number;
  ttir_col: number;
  file: string;
  line: number;
  col: number;
  var: string;
  inlined_from: string[];
  dot: [number, number, number] | null;
  stats?: SiteStats;
}

export interface FindingSite {
  op: string;
  file: string;
  line: number;
  col: number;
  var: string;
  ttir: { file: string; line: number; col: number };
}

export interface Finding extends FindingSite {
  kind: string;
  summary: string;
  programs: { count: number; first: Pid[]; last: Pid | null };
  lanes: { count: number; first: number[] };
  buffer: { name: string; dtype: string; shape: number[]; numel: number } | null;
  offsets: { min: number; max: number; elements_before: number; elements_past: number } | null;
  hint: string;
  race: string | null;
  other: (FindingSite & { programs: { count: number; first: Pid[] } }) | null;
}

export interface Launch extends Omit<LaunchSummary, "findings"> {
  kernel_id: number;
  args: Arg[];
  specialization: Record<string, unknown>;
  stack: string[];
  sites: Site[];
  findings: Finding[];
  reports: Record<string, unknown>;
  sources: { id: number; path: string }[];
}

export interface Programs {
  /// Programs whose linear id x + gx * (y + gy * z) is a multiple of it have recorded detail (0: none).
  detail_stride: number;
  findings: Record<string, number[]>;
  /// Only with ?bytes=1.
  programs?: { pid: Pid; accesses: number; bytes: number }[];
  /// Only with ?time=1: every program's wall time (ns) by linear id, null when the trace has none.
  times_ns?: number[] | null;
}

export interface Access {
  site: number;
  seq: number;
  arg: number;
  kind: "load" | "store" | "atomic";
  lanes: number;
  active: number;
  oob: number;
  runs: [number, number][]; // in-bounds element offsets, as (first, count) runs
  oob_runs: [number, number][]; // out-of-bounds ones (below 0 or past the argument's end)
}

/// What a program did in a finding that records every program (races, uninitialized reads; the trace's
/// finding_programs): `finding` indexes Launch.findings; `side` 1 is a race's second access; `seq` the
/// op's execution in this program (-1: any); `runs` the elements it read before anything wrote them.
export interface FindingProgram {
  finding: number;
  side: number;
  seq: number;
  runs: [number, number][];
}

export interface Program {
  pid: Pid;
  sampled: boolean;
  findings: FindingProgram[];
  accesses: Access[];
  loops: { site: number; executions: number; trips: number }[];
}

/// Per-element counts, run-length encoded: [count, repeat] pairs from element 0.
export interface Counts {
  elements: number;
  loads: [number, number][];
  stores: [number, number][];
}

export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
  ) {
    super(message);
  }
}

/// Requests in flight, on <body data-busy> (tests and tools wait for 0 before reading the page).
let busy = 0;
function track<T>(p: Promise<T>): Promise<T> {
  document.body.dataset.busy = String(++busy);
  return p.finally(() => (document.body.dataset.busy = String(--busy)));
}

async function get<T>(path: string): Promise<T> {
  return track(getNow<T>(path));
}

async function getNow<T>(path: string): Promise<T> {
  const r = await fetch(path, { credentials: "same-origin" });
  if (!r.ok) {
    let code = "error";
    let message = `${r.status} ${r.statusText}`;
    try {
      const j = await r.json();
      code = j.error?.code ?? code;
      message = j.error?.message ?? message;
    } catch {
      /* not JSON: keep the status line */
    }
    throw new ApiError(r.status, code, message);
  }
  return (await r.json()) as T;
}

async function bytes(path: string): Promise<ArrayBuffer> {
  return track(
    (async () => {
      const r = await fetch(path, { credentials: "same-origin" });
      if (!r.ok) throw new ApiError(r.status, "not_found", `${r.status}`);
      return r.arrayBuffer();
    })(),
  );
}

export const api = {
  session: () => get<Session>("/api/session"),
  launches: () => get<LaunchSummary[]>("/api/launches"),
  launch: (id: number) => get<Launch>(`/api/launches/${id}`),
  programs: (id: number, bytes = false, time = false) =>
    get<Programs>(`/api/launches/${id}/programs${bytes ? "?bytes=1" : time ? "?time=1" : ""}`),
  program: (id: number, p: Pid) => get<Program>(`/api/launches/${id}/programs/${p[0]}/${p[1]}/${p[2]}`),
  counts: (id: number, arg: number) => get<Counts>(`/api/launches/${id}/args/${arg}/counts`),
  element: (id: number, arg: number, e: number) =>
    get<{ accesses: { pid: Pid; site: number; seq: number; kind: string }[]; more: boolean }>(
      `/api/launches/${id}/args/${arg}/elements/${e}`,
    ),
  contents: (id: number, arg: number, phase: "before" | "after") =>
    bytes(`/api/launches/${id}/args/${arg}/contents/${phase}`),
  source: (id: number) => get<{ id: number; path: string; content: string }>(`/api/sources/${id}`),
  kernel: (id: number) => get<{ id: number; name: string; ttir_file: string; ttir: string }>(`/api/kernels/${id}`),
};

/// One value an op used or made (GET .../values): values row-major, floats as numbers or "nan" / "inf" /
/// "-inf", null for pointers.
export interface Value {
  type: string;
  shape: number[];
  dtype: string;
  values: (number | string)[] | null;
  truncated: boolean;
}

export interface SiteValues {
  site: number;
  op: string;
  executions: { seq: number; operands: Value[]; results: Value[] }[];
  more: boolean;
}

export const values = (id: number, p: Pid, sites: number[]) =>
  get<{ pid: Pid; sites: SiteValues[] }>(`/api/launches/${id}/programs/${p[0]}/${p[1]}/${p[2]}/values?sites=${sites.join(",")}`);
