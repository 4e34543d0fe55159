// editor.js — the exercises' code editor: CodeMirror 6 (Lua) over the form's
// own textarea, which stays the (hidden) form field kept in step, so a page
// whose editor cannot load keeps the plain textarea. Modules: /static/vendor/
// via the import map. Tab indents; Escape, then Tab leaves (focus never trapped).
// It lives in a shadow root: the CSP (style-src 'self') refuses style-mod's
// <style> in a document but not a shadow root's constructable sheet. So its look
// is a CodeMirror theme here, and the label reaches it as its aria-label.
import { EditorState } from "@codemirror/state";
import {
  EditorView, drawSelection, highlightActiveLine, highlightActiveLineGutter, highlightSpecialChars, keymap, lineNumbers,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import {
  StreamLanguage, bracketMatching, defaultHighlightStyle, indentOnInput, indentUnit, syntaxHighlighting,
} from "@codemirror/language";
import { lua } from "@codemirror/legacy-modes/mode/lua";

// the site's own colours and code font (widgets.css, site.css): custom properties reach into the shadow root
const THEME = EditorView.theme({
  "&": { height: "100%", border: "1px solid var(--w-border)", borderRadius: "6px", background: "var(--w-bg)",
    fontSize: "0.82rem" },
  "&.cm-focused": { outline: "3px solid var(--w-focus)", outlineOffset: "2px" },
  ".cm-scroller": { fontFamily: "var(--font-mono)", lineHeight: "1.4", overflow: "auto" },
  ".cm-content": { caretColor: "var(--w-ink)" },
  ".cm-gutters": { background: "var(--w-soft)", color: "var(--w-muted)", borderRight: "1px solid var(--w-border)" },
  ".cm-activeLine": { background: "#f5f8fd" },
  ".cm-activeLineGutter": { background: "#e6edf8", color: "var(--w-ink)" },
  "&.cm-focused .cm-matchingBracket": { background: "#d7e6ff", outline: "1px solid var(--w-accent)" },
  "&.cm-focused .cm-nonmatchingBracket": { background: "var(--w-bad-bg)", color: "var(--w-bad)" },
});

/** Put an editor over `textarea`. */
export function enhance(textarea, label, hint) {
  const sync = EditorView.updateListener.of((update) => {
    if (update.docChanged) textarea.value = update.state.doc.toString();
  });
  const host = document.createElement("div");
  host.className = "exercise-editor";
  textarea.after(host);
  const shadow = host.attachShadow({ mode: "open" });
  const view = new EditorView({
    root: shadow,
    parent: shadow,
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        lineNumbers(), highlightActiveLineGutter(), highlightSpecialChars(), history(), drawSelection(),
        indentOnInput(), bracketMatching(), highlightActiveLine(),
        StreamLanguage.define(lua), syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        indentUnit.of("  "), EditorState.tabSize.of(2),
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        EditorView.contentAttributes.of({
          // tabindex 0: in the tab order already (contenteditable), said outright so
          // checkers see that its scrolling box holds a focusable control
          "aria-label": label.textContent.trim(), "aria-multiline": "true", tabindex: "0",
          spellcheck: "false", autocapitalize: "off", autocorrect: "off", translate: "no",
        }),
        THEME, sync,
      ],
    }),
  });
  // the label names the editor now; the textarea is the form's field only
  label.removeAttribute("for");
  label.addEventListener("click", () => view.focus());
  textarea.hidden = true;
  hint.hidden = false;
}
