/**
 * The frame around every screen: the sign-in gate, the navigation, the theme toggle, and the
 * screen the URL names.
 */

import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { onSignedOut } from "./api.js";
import { expiryOf, forgetToken, savedToken, scopesOf } from "./session.js";
import { SignIn } from "./sign_in.js";
import { TablesScreen } from "./tables.js";
import { TableScreen } from "./table.js";
import { SqlScreen } from "./sql.js";
import { TemplatesScreen } from "./templates.js";
import { ImportScreen } from "./import.js";
import { followLinks, hrefOf, useView } from "./view_state.js";

const THEME_KEY = "table-service-theme";
const THEMES = ["system", "light", "dark"];

function applyTheme(theme) {
  if (theme === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}

const SCREENS = {
  tables: { title: "Tables", component: TablesScreen },
  table: { title: "Table", component: TableScreen },
  sql: { title: "SQL", component: SqlScreen },
  templates: { title: "Templates", component: TemplatesScreen },
  import: { title: "Import", component: ImportScreen },
};

export function App() {
  const view = useView();
  const [token, setToken] = useState(savedToken);
  const [signedOut, setSignedOut] = useState(undefined);
  const [theme, setTheme] = useState(() => localStorage.getItem(THEME_KEY) ?? "system");

  useEffect(() => applyTheme(theme), [theme]);
  useEffect(() =>
    onSignedOut((message) => {
      setSignedOut(message);
      setToken(undefined);
    }), []);
  useEffect(() => {
    const expires = token ? expiryOf(token) : undefined;
    if (expires === undefined) return;
    const timer = setTimeout(() => {
      forgetToken();
      setSignedOut("The token has expired: paste a new one.");
      setToken(undefined);
    }, Math.max(0, Math.min(expires - Date.now(), 2 ** 31 - 1)));
    return () => clearTimeout(timer);
  }, [token]);
  useEffect(() => {
    // "/" goes to the filter bar (or the screen's first field), unless typing already.
    const onKey = (event) => {
      if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
      const target = event.target;
      if (target.closest?.("input, textarea, select, [contenteditable=true], dialog")) return;
      const bar = document.querySelector("[data-filter-start]");
      if (bar) {
        event.preventDefault();
        bar.focus();
      }
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, []);

  const nextTheme = THEMES[(THEMES.indexOf(theme) + 1) % THEMES.length];
  const toggleTheme = () => {
    localStorage.setItem(THEME_KEY, nextTheme);
    applyTheme(nextTheme);
    setTheme(nextTheme);
  };
  const screen = SCREENS[view.screen];
  useEffect(() => {
    document.title = `${screen?.title ?? "Not found"} · Table service`;
  }, [screen]);

  const scopes = token ? scopesOf(token) : new Set();
  const signOut = () => {
    forgetToken();
    setSignedOut(undefined);
    setToken(undefined);
  };
  const Screen = screen?.component;
  return html`
    <div class="shell" onClick=${followLinks}>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
          <a class="brand" href=${hrefOf("tables")}>Table service</a>
          ${token && html`<nav aria-label="Screens">
        <a href=${hrefOf("tables")} aria-current=${
            view.screen === "tables" || view.screen === "table" ? "page" : undefined
          }>Tables</a>
        <a href=${hrefOf("sql")} aria-current=${view.screen === "sql" ? "page" : undefined}>SQL</a>
        ${
            scopes.has("templates:read") &&
            html`<a href=${hrefOf("templates")} aria-current=${
              view.screen === "templates" ? "page" : undefined
            }>Templates</a>`
          }
        ${
            scopes.has("tables:write") &&
            html`<a href=${hrefOf("import")} aria-current=${
              view.screen === "import" ? "page" : undefined
            }>Import</a>`
          }
      </nav>`}
          <span class="spacer"></span>
          <button type="button" class="ghost" onClick=${toggleTheme} data-theme-toggle
            aria-label=${`Theme: ${theme}. Switch to ${nextTheme}`}>${theme === "dark"
              ? "☾"
              : theme === "light"
              ? "☀"
              : "◐"} ${theme}</button>
          ${token && html`<button type="button" class="ghost" onClick=${signOut}>Sign out</button>`}
        </header>
      <main id="main" tabindex="-1">
          ${!token
            ? html`<${SignIn} notice=${signedOut} onSignedIn=${(t) => {
              setSignedOut(undefined);
              setToken(t);
            }} />`
            : Screen
            ? html`<${Screen} params=${view.params} scopes=${scopes} />`
            : html`<p>No such screen. <a href=${hrefOf("tables")}>See the tables</a>.</p>`}
        </main>
    </div>
  `;
}
