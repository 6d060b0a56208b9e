// A read-only code view (CodeMirror 6) whose highlighted lines the app sets, and which reports clicks
// on a line. Long lines wrap (CodeMirror's lineWrapping) or scroll sideways, as setWrap says. The panel
// element carries data-lines (the highlighted line numbers, comma-separated) and data-wrap ("1" when
// lines wrap) for tests and tools.
import { python } from "@codemirror/lang-python";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { Compartment, EditorState, RangeSetBuilder, StateEffect, StateField, type Extension } from "@codemirror/state";
import { Decoration, EditorView, lineNumbers, type DecorationSet } from "@codemirror/view";
import { tags } from "@lezer/highlight";

const setLines = StateEffect.define<number[]>();

const highlighted = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(deco, tr) {
    for (const e of tr.effects)
      if (e.is(setLines)) {
        const b = new RangeSetBuilder<Decoration>();
        for (const n of [...new Set(e.value)].sort((a, c) => a - c))
          if (n >= 1 && n <= tr.state.doc.lines) b.add(tr.state.doc.line(n).from, tr.state.doc.line(n).from, Decoration.line({ class: "cm-hl" }));
        return b.finish();
      }
    return deco.map(tr.changes);
  },
  provide: (f) => EditorView.decorations.from(f),
});

const style = HighlightStyle.define([
  { tag: tags.keyword, color: "var(--kw)" },
  { tag: [tags.string, tags.special(tags.string)], color: "var(--str)" },
  { tag: tags.comment, color: "var(--comment)", fontStyle: "italic" },
  { tag: [tags.number, tags.bool], color: "var(--num)" },
  { tag: [tags.function(tags.variableName), tags.definition(tags.variableName)], color: "var(--fn)" },
]);

export class CodeView {
  private view: EditorView;
  private wrapping = new Compartment();
  onLineClick: (line: number) => void = () => {};

  constructor(private panel: HTMLElement, language: "python" | "ttir", wrap = false) {
    const ext: Extension[] = [
      lineNumbers(),
      this.wrapping.of(wrap ? EditorView.lineWrapping : []),
      EditorState.readOnly.of(true),
      EditorView.editable.of(false),
      highlighted,
      syntaxHighlighting(style),
      EditorView.domEventHandlers({
        mousedown: (e, view) => {
          const pos = view.posAtCoords({ x: e.clientX, y: e.clientY });
          if (pos !== null) this.onLineClick(view.state.doc.lineAt(pos).number);
        },
      }),
    ];
    if (language === "python") ext.push(python());
    this.view = new EditorView({ state: EditorState.create({ doc: "", extensions: ext }), parent: panel });
    panel.dataset.wrap = wrap ? "1" : "";
  }

  get wrap(): boolean {
    return this.panel.dataset.wrap === "1";
  }

  /// Wrap long lines at the panel's width (true) or let them scroll sideways.
  setWrap(on: boolean) {
    this.view.dispatch({ effects: this.wrapping.reconfigure(on ? EditorView.lineWrapping : []) });
    this.panel.dataset.wrap = on ? "1" : "";
  }

  setText(text: string) {
    this.view.dispatch({ changes: { from: 0, to: this.view.state.doc.length, insert: text }, effects: setLines.of([]) });
    this.panel.dataset.lines = "";
  }

  /// Highlight `lines` (1-based) and scroll the first into view.
  highlight(lines: number[]) {
    const doc = this.view.state.doc;
    const valid = lines.filter((n) => n >= 1 && n <= doc.lines);
    const effects: StateEffect<unknown>[] = [setLines.of(valid)];
    if (valid.length) effects.push(EditorView.scrollIntoView(doc.line(Math.min(...valid)).from, { y: "center" }));
    this.view.dispatch({ effects });
    this.panel.dataset.lines = [...new Set(valid)].sort((a, b) => a - b).join(",");
  }
}
