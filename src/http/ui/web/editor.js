/**
 * The SQL editor, loaded when the SQL screen opens: CodeMirror 6 with SQL highlighting and
 * completion of keywords and of the tables and columns the token can see.
 */

import { EditorState, Prec } from "@codemirror/state";
import { EditorView, keymap, placeholder } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { autocompletion, closeBrackets, completionKeymap } from "@codemirror/autocomplete";
import { bracketMatching, syntaxHighlighting } from "@codemirror/language";
import { classHighlighter } from "@lezer/highlight";
import { PostgreSQL, sql } from "@codemirror/lang-sql";

/** The page's colours (its CSS variables, which reach into the shadow root) for each theme. */
const THEME = EditorView.theme({
  "&": { backgroundColor: "var(--bg)", color: "var(--fg)", minHeight: "140px", fontSize: "14px" },
  "&.cm-focused": { outline: "2px solid var(--accent)" },
  ".cm-content": {
    caretColor: "var(--fg)",
    fontFamily: "ui-monospace, Menlo, Consolas, monospace",
  },
  ".cm-cursor": { borderLeftColor: "var(--fg)" },
  ".cm-placeholder": { color: "var(--muted)" },
  ".cm-tooltip": {
    backgroundColor: "var(--panel)",
    color: "var(--fg)",
    border: "1px solid var(--line)",
  },
  ".cm-tooltip-autocomplete ul li[aria-selected]": {
    backgroundColor: "var(--accent)",
    color: "var(--accent-fg)",
  },
  ".cm-completionDetail": { color: "inherit" },
  ".cm-completionMatchedText": { textDecoration: "underline" },
});

/**
 * An editor in `parent` holding `doc`. `schema` is `{schema: {table: [column, …]}}`;
 * Ctrl/Cmd+Enter calls `onRun` with the text.
 */
export function createEditor(parent, { doc, schema, defaultSchema, label, onRun, onChange }) {
  // Inside a shadow root CodeMirror's styles go into a constructed style sheet, which the
  // page's policy (style-src 'self', no inline styles) allows; in the document it would
  // write a <style> element, which the policy refuses. The editor's own colours come from a
  // file of the service, linked inside the shadow root.
  const root = parent.shadowRoot ?? parent.attachShadow({ mode: "open" });
  const sheet = document.createElement("link");
  sheet.rel = "stylesheet";
  sheet.href = new URL("./editor.css", import.meta.url).pathname;
  const host = document.createElement("div");
  root.replaceChildren(sheet, host);
  const run = (view) => {
    onRun(view.state.doc.toString());
    return true;
  };
  return new EditorView({
    parent: host,
    root,
    state: EditorState.create({
      doc,
      extensions: [
        Prec.highest(keymap.of([{ key: "Mod-Enter", run }])),
        history(),
        closeBrackets(),
        bracketMatching(),
        autocompletion({ activateOnTyping: true }),
        keymap.of([...completionKeymap, ...defaultKeymap, ...historyKeymap]),
        sql({ dialect: PostgreSQL, schema, defaultSchema, upperCaseKeywords: true }),
        // Classes rather than colours: the style sheet colours them for each theme.
        syntaxHighlighting(classHighlighter),
        EditorView.lineWrapping,
        THEME,
        placeholder("SELECT … (Ctrl+Enter runs it)"),
        EditorView.contentAttributes.of({ "aria-label": label, "aria-multiline": "true" }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) onChange(update.state.doc.toString());
        }),
      ],
    }),
  });
}
