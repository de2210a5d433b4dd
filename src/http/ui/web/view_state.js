/**
 * Every view is a URL: the screen is the path (`/ui/table`), its state the query string,
 * so a reload or a shared link restores it. Nothing secret goes here: never the token.
 */

import { useEffect, useState } from "preact/hooks";

export const BASE = "/ui";

/** The screen and the parameters of the current URL. */
export function currentView() {
  const rest = location.pathname.slice(BASE.length).replace(/^\/+|\/+$/g, "");
  return { screen: rest || "tables", params: new URLSearchParams(location.search) };
}

/** The href of a screen with `params` (an object, or [name, value] pairs). */
export function hrefOf(screen, params = []) {
  const search = new URLSearchParams();
  const pairs = Array.isArray(params) ? params : Object.entries(params);
  for (const [k, v] of pairs) if (v !== undefined && v !== null && v !== "") search.append(k, v);
  const query = search.toString();
  return `${BASE}/${screen}${query ? `?${query}` : ""}`;
}

const EVENT = "ui-navigate";

/** Goes to `href` inside the page: pushed on the history unless `replace`. */
export function navigate(href, { replace = false } = {}) {
  if (href === `${location.pathname}${location.search}`) return;
  if (replace) history.replaceState(null, "", href);
  else history.pushState(null, "", href);
  dispatchEvent(new Event(EVENT));
}

/** The current view, updated when the URL changes (links, back and forward). */
export function useView() {
  const [view, setView] = useState(currentView);
  useEffect(() => {
    const update = () => setView(currentView());
    addEventListener("popstate", update);
    addEventListener(EVENT, update);
    return () => {
      removeEventListener("popstate", update);
      removeEventListener(EVENT, update);
    };
  }, []);
  return view;
}

/** Follows in-page links (`<a href="/ui/...">`) without reloading the page. */
export function followLinks(event) {
  if (event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = event.target.closest?.("a[href]");
  if (!link || link.target || link.hasAttribute("download")) return;
  const url = new URL(link.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(BASE)) return;
  event.preventDefault();
  navigate(`${url.pathname}${url.search}`);
}
