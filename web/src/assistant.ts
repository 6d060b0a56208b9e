// The assistant panel: "Analyze" (a first-pass bug summary) and follow-up questions about what is
// selected in the views, answered by the configured LLM through the server (src/cli/assist_web.cpp:
// POST /api/assist/chat streams Server-Sent Events). Citations in the answers ("op 24", "finding 1",
// "line 31", "program (3, 0, 0)") are links that select that op, finding, line or program in the views.
// The conversation is the server's (kept for the session: a reload shows it again).
//
// For tests and tools: #assistant[data-running], each turn .turn[data-role][data-state] (streaming, done,
// stopped, error) with data-deltas (the number of streamed pieces it got), links a.cite[data-cite], and
// .model-mismatch when the server answered as another model than the one asked for.
import "./assistant.css";
import type { Finding, Pid, Site } from "./api";

export interface AssistantHooks {
  /// What the views show now; null before a launch is loaded.
  selection(): { launch: number; program: Pid; op: number | null } | null;
  launch(): { grid: Pid; sites: Site[]; findings: Finding[] } | null;
  selectOp(site: number): Promise<void>;
  selectProgram(pid: Pid): Promise<void>;
  selectLine(line: number): Promise<void>;
  selectFinding(index: number): Promise<void>;
}

interface Evidence {
  id: string;
  kind: string;
  summary: string;
  line: number;
  file: string;
  op?: number;
  program?: Pid;
  elements?: [number, number];
}

interface Turn {
  role: "user" | "assistant";
  content: string;
  state?: "streaming" | "done" | "stopped" | "error";
  selection?: { launch: number; program: Pid | null; op: number | null };
  evidence?: Evidence[];
  cited?: string[];
  error?: { kind: string; message: string };
  finish_reason?: string;
  model?: string;
  requested_model?: string;
  /// The server answered as another model than the one asked for (llama.cpp's server ignores the name).
  model_mismatch?: boolean;
}

interface Settings {
  error: string | null;
  base_url: { value: string; source: string };
  model: { value: string; source: string };
  api_key: { set: boolean; sent: boolean; source: string };
  key_withheld: boolean;
  web: { base_url: string | null; model: string | null; api_key: boolean };
}

const esc = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
const base = (p: string) => p.split("/").pop() ?? p;

async function json<T>(path: string, init?: RequestInit): Promise<T> {
  const r = await fetch(path, { credentials: "same-origin", ...init });
  const body = await r.json().catch(() => null);
  if (!r.ok) throw new Error(body?.error ? `${body.error.code}: ${body.error.message}` : `${r.status} ${r.statusText}`);
  return body as T;
}

export function mountAssistant(hooks: AssistantHooks) {
  const toggle = document.createElement("button");
  toggle.id = "assist-toggle";
  toggle.textContent = "Assistant";
  toggle.title = "ask the LLM about this trace";
  document.querySelector("header")?.insertBefore(toggle, document.getElementById("theme"));

  const panel = document.createElement("aside");
  panel.id = "assistant";
  panel.hidden = true;
  panel.innerHTML = `
    <div class="assist-bar"><strong>Assistant</strong>
      <button id="assist-analyze" title="a first-pass summary of the launch's bugs">Analyze</button>
      <button id="assist-stop" disabled title="stop the answer">Stop</button>
      <button id="assist-new" title="start a new conversation">New</button>
      <span class="spacer"></span>
      <button id="assist-settings-toggle" title="the LLM server for this session">⚙</button>
      <button id="assist-close" title="close">×</button></div>
    <form id="assist-settings" hidden autocomplete="off">
      <label>base URL <input name="base_url" placeholder="http://127.0.0.1:8080/v1" /></label>
      <label>model <input name="model" placeholder="(the first the server lists)" /></label>
      <label>API key <input name="api_key" type="password" placeholder="not set" /></label>
      <div class="muted" id="assist-settings-info"></div>
      <div><button type="submit">Save for this session</button> <button type="button" id="assist-settings-reset">Use my configuration</button></div>
    </form>
    <div id="assist-turns" class="assist-turns"></div>
    <div class="assist-ask">
      <div id="assist-about" class="muted"></div>
      <textarea id="assist-question" rows="3" maxlength="8000" placeholder="Ask about the selected op and program (Ctrl+Enter sends)"></textarea>
      <button id="assist-send">Send</button>
    </div>`;
  document.body.appendChild(panel);
  const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
  const turnsEl = $("assist-turns");

  let turns: Turn[] = [];
  let controller: AbortController | null = null;
  let loaded = false;

  const setRunning = (on: boolean) => {
    panel.dataset.running = on ? "1" : "0";
    $<HTMLButtonElement>("assist-stop").disabled = !on;
    $<HTMLButtonElement>("assist-send").disabled = on;
    $<HTMLButtonElement>("assist-analyze").disabled = on;
  };
  setRunning(false);

  const about = () => {
    const s = hooks.selection();
    $("assist-about").textContent = s
      ? `about launch ${s.launch} · program (${s.program.join(", ")})${s.op !== null ? ` · op ${s.op}` : ""}`
      : "";
  };

  // Citations: ids the trace has become links; anything else stays text.
  function linkify(text: string): string {
    const l = hooks.launch();
    const sites = new Set((l?.sites ?? []).map((s) => s.site));
    const lines = new Set((l?.sites ?? []).map((s) => s.line));
    const nFindings = l?.findings.length ?? 0;
    const grid = l?.grid ?? [0, 0, 0];
    const inGrid = (p: number[]) => p.every((v, i) => v < grid[i]);
    const re =
      /\b(op)\s+(\d+)\b|\b(finding)\s+(\d+)\b|\b([\w.-]+\.py):(\d+)\b|\b(line)s?\s+(\d+)\b|\b(program)s?\s*(?:\(\s*)?(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?\s*\)?|\((\d+),\s*(\d+),\s*(\d+)\)/gi;
    let out = "";
    let at = 0;
    for (const m of text.matchAll(re)) {
      let cite: string | null = null;
      if (m[1] && sites.has(Number(m[2]))) cite = `op ${Number(m[2])}`;
      else if (m[3] && Number(m[4]) >= 1 && Number(m[4]) <= nFindings) cite = `finding ${Number(m[4])}`;
      else if (m[5] && lines.has(Number(m[6]))) cite = `line ${Number(m[6])}`;
      else if (m[7] && lines.has(Number(m[8]))) cite = `line ${Number(m[8])}`;
      else if (m[9]) {
        const p = [Number(m[10]), Number(m[11] ?? 0), Number(m[12] ?? 0)];
        if (inGrid(p)) cite = `program ${p.join(",")}`;
      } else if (m[13]) {
        const p = [Number(m[13]), Number(m[14]), Number(m[15])];
        if (inGrid(p)) cite = `program ${p.join(",")}`;
      }
      if (!cite) continue;
      out += esc(text.slice(at, m.index)) + `<a href="#" class="cite" data-cite="${cite}">${esc(m[0])}</a>`;
      at = m.index! + m[0].length;
    }
    return out + esc(text.slice(at));
  }

  function evidenceHtml(ev: Evidence[]): string {
    if (!ev.length) return "";
    const rows = ev.map((e) => {
      const parts = [`<a href="#" class="cite" data-cite="${e.id}">${esc(e.id)}</a> <span class="kind">${esc(e.kind)}</span>`];
      if (e.op !== undefined) parts.push(`<a href="#" class="cite" data-cite="op ${e.op}">op ${e.op}</a>`);
      parts.push(`<a href="#" class="cite" data-cite="line ${e.line}">${esc(base(e.file))}:${e.line}</a>`);
      if (e.program) parts.push(`<a href="#" class="cite" data-cite="program ${e.program.join(",")}">program (${e.program.join(", ")})</a>`);
      if (e.elements) parts.push(`elements ${e.elements[0]}${e.elements[1] !== e.elements[0] ? `..${e.elements[1]}` : ""}`);
      return `<li>${parts.join(" · ")}</li>`;
    });
    return `<div class="evidence"><div class="muted">the trace's findings:</div><ul>${rows.join("")}</ul></div>`;
  }

  function turnHtml(t: Turn, i: number): string {
    const sel = t.selection;
    const where = sel ? `launch ${sel.launch}${sel.program ? ` · program (${sel.program.join(", ")})` : ""}${sel.op !== null ? ` · op ${sel.op}` : ""}` : "";
    const note =
      t.state === "stopped" ? `<div class="muted">stopped</div>` :
      t.state === "error" ? `<div class="assist-error">${esc(t.error?.kind ?? "error")}: ${esc(t.error?.message ?? "")}</div>` :
      t.finish_reason === "length" ? `<div class="muted">cut at the answer's length limit</div>` : "";
    const mismatch = t.model_mismatch
      ? `<div class="muted model-mismatch" title="the server ignored the model setting">answered by model ${esc(t.model ?? "")}, not ${esc(t.requested_model ?? "")} as asked</div>`
      : "";
    const body = t.role === "user" ? esc(t.content) : linkify(t.content);
    return `<div class="turn" data-turn="${i}" data-role="${t.role}" data-state="${t.state ?? ""}">
      ${t.role === "user" ? `<div class="muted">${esc(where)}</div>` : ""}
      ${t.evidence ? evidenceHtml(t.evidence) : ""}<div class="text">${body}</div>${note}${mismatch}</div>`;
  }

  function render() {
    turnsEl.innerHTML = turns.length
      ? turns.map(turnHtml).join("")
      : `<div class="muted">Analyze summarises the launch's bugs; then ask about the selected op and program.</div>`;
    turnsEl.scrollTop = turnsEl.scrollHeight;
  }

  // One turn's text while it streams: only that turn is redrawn, at most once a frame.
  let frame = 0;
  function renderTurn(i: number) {
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      const el = turnsEl.querySelector(`.turn[data-turn="${i}"]`);
      if (!el) return render();
      const t = turns[i];
      (el.querySelector(".text") as HTMLElement).innerHTML = linkify(t.content);
      turnsEl.scrollTop = turnsEl.scrollHeight;
    });
  }

  turnsEl.addEventListener("click", async (e) => {
    const a = (e.target as HTMLElement).closest("a.cite") as HTMLElement | null;
    if (!a) return;
    e.preventDefault();
    const [kind, value] = a.dataset.cite!.split(" ");
    if (kind === "op") await hooks.selectOp(Number(value));
    else if (kind === "finding") await hooks.selectFinding(Number(value) - 1);
    else if (kind === "line") await hooks.selectLine(Number(value));
    else if (kind === "program") await hooks.selectProgram(value.split(",").map(Number) as Pid);
    about();
  });

  async function load() {
    const c = await json<{ turns: Turn[]; running: boolean }>("/api/assist/conversation");
    turns = c.turns;
    render();
    if (c.running) {
      // An answer from before a reload is still streaming elsewhere: show it when it ends.
      setRunning(true);
      setTimeout(() => load().catch(() => undefined), 1000);
    } else {
      setRunning(false);
    }
  }

  async function ask(question: string | null) {
    const s = hooks.selection();
    if (!s) return;
    controller = new AbortController();
    setRunning(true);
    const user: Turn = { role: "user", content: question ?? "Analyze", selection: { ...s } };
    const answer: Turn = { role: "assistant", content: "", state: "streaming" };
    turns.push(user, answer);
    const i = turns.length - 1;
    render();
    let deltas = 0;
    const el = () => turnsEl.querySelector(`.turn[data-turn="${i}"]`) as HTMLElement | null;
    try {
      const r = await fetch("/api/assist/chat", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ question: question ?? undefined, launch: s.launch, program: s.program, op: s.op }),
        signal: controller.signal,
      });
      if (!r.ok) {
        const j = await r.json().catch(() => null);
        throw Object.assign(new Error(j?.error?.message ?? `${r.status}`), { kind: j?.error?.code ?? "error" });
      }
      const reader = r.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let end: number;
        while ((end = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          let event = "message", data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("event:")) event = line.slice(6).trim();
            else if (line.startsWith("data:")) data += line.slice(5).trim();
          }
          if (!data) continue; // a keep-alive comment
          const d = JSON.parse(data);
          if (event === "start") {
            user.selection = d.selection;
            answer.evidence = d.evidence?.length ? d.evidence : undefined;
            render();
          } else if (event === "delta") {
            answer.content += d.text;
            deltas++;
            el()?.setAttribute("data-deltas", String(deltas));
            renderTurn(i);
          } else if (event === "done") {
            answer.state = d.stopped ? "stopped" : "done";
            answer.cited = d.cited;
            answer.finish_reason = d.finish_reason;
            answer.model = d.model;
            answer.requested_model = d.requested_model;
            answer.model_mismatch = d.model_mismatch;
          } else if (event === "error") {
            answer.state = "error";
            answer.error = { kind: d.kind, message: d.message };
          }
        }
      }
      if (answer.state === "streaming") answer.state = "stopped";
    } catch (e) {
      if (controller?.signal.aborted) answer.state = "stopped";
      else {
        answer.state = "error";
        answer.error = { kind: (e as { kind?: string }).kind ?? "error", message: String((e as Error).message ?? e) };
      }
    } finally {
      controller = null;
      if (frame) cancelAnimationFrame(frame), (frame = 0);
      render();
      el()?.setAttribute("data-deltas", String(deltas));
      setRunning(false);
    }
  }

  async function stop() {
    await fetch("/api/assist/stop", { method: "POST", credentials: "same-origin" }).catch(() => undefined);
    controller?.abort();
  }

  async function loadSettings() {
    const s = await json<Settings>("/api/assist/settings");
    const f = $<HTMLFormElement>("assist-settings");
    (f.elements.namedItem("base_url") as HTMLInputElement).value = s.web.base_url ?? "";
    (f.elements.namedItem("base_url") as HTMLInputElement).placeholder = s.base_url.value;
    (f.elements.namedItem("model") as HTMLInputElement).value = s.web.model ?? "";
    (f.elements.namedItem("model") as HTMLInputElement).placeholder = s.model.value || "(the first the server lists)";
    const key = f.elements.namedItem("api_key") as HTMLInputElement;
    key.value = "";
    key.placeholder = s.api_key.set ? `set (${s.api_key.source})` : "not set";
    $("assist-settings-info").textContent =
      `now: ${s.base_url.value} (${s.base_url.source})` +
      (s.key_withheld ? " · your configured key is not sent to a base URL set here: enter a key too" : "") +
      (s.error ? ` · ${s.error}` : "");
    f.dataset.keySet = s.api_key.set ? "1" : "0";
  }

  async function saveSettings(body: Record<string, string | null>) {
    try {
      await json<Settings>("/api/assist/settings", {
        method: "PUT",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      await loadSettings();
    } catch (e) {
      $("assist-settings-info").textContent = String((e as Error).message);
    }
  }

  $("assist-settings").addEventListener("submit", (e) => {
    e.preventDefault();
    const f = e.currentTarget as HTMLFormElement;
    const v = (n: string) => (f.elements.namedItem(n) as HTMLInputElement).value.trim();
    const body: Record<string, string | null> = { base_url: v("base_url") || null, model: v("model") || null };
    if (v("api_key")) body.api_key = v("api_key"); // an empty field keeps the key as it is
    saveSettings(body);
  });
  $("assist-settings-reset").addEventListener("click", () => saveSettings({ base_url: null, model: null, api_key: null }));
  $("assist-settings-toggle").addEventListener("click", () => {
    const f = $("assist-settings");
    f.hidden = !f.hidden;
    if (!f.hidden) loadSettings().catch((e) => ($("assist-settings-info").textContent = String(e)));
  });

  const open = async (show: boolean) => {
    panel.hidden = !show;
    document.body.classList.toggle("assistant-open", show);
    toggle.classList.toggle("selected", show);
    window.dispatchEvent(new Event("resize")); // the views re-measure
    if (show) {
      about();
      if (!loaded) {
        loaded = true;
        await load().catch((e) => (turnsEl.textContent = String(e)));
      }
    }
  };
  toggle.addEventListener("click", () => open(panel.hidden === true));
  $("assist-close").addEventListener("click", () => open(false));
  $("assist-analyze").addEventListener("click", () => ask(null));
  $("assist-stop").addEventListener("click", () => stop());
  $("assist-new").addEventListener("click", async () => {
    await stop();
    await json("/api/assist/conversation", { method: "DELETE" }).catch(() => undefined);
    turns = [];
    render();
  });
  const send = () => {
    const q = $<HTMLTextAreaElement>("assist-question");
    const text = q.value.trim();
    if (!text || controller) return;
    q.value = "";
    ask(text);
  };
  $("assist-send").addEventListener("click", send);
  $("assist-question").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) send();
  });
  // The views' keys (j, k, arrows, a) are not for the panel's text fields.
  panel.addEventListener("keydown", (e) => {
    if ((e.target as HTMLElement).closest("input, textarea")) e.stopPropagation();
  });
  // The selection line follows the views.
  setInterval(() => !panel.hidden && about(), 500);
}
