/**
 * The table screen's view as its URL holds it (schema, table, order, columns, filters, which
 * end it reads from) and the records call that gives its rows.
 */

import { hrefOf } from "./view_state.js";

const FILTER_PREFIX = "f.";

/** A column name as `select=` and `order=` take it: quoted when it needs to be. */
export function quoteName(name) {
  return /^[A-Za-z_][A-Za-z0-9_ ]*$/.test(name) && name.trim() === name
    ? name
    : `"${name.replaceAll('"', '""')}"`;
}

/** The keys of an `order=` text: [{name, rest}] where rest is ".desc.nullslast" or "". */
export function parseOrder(text) {
  const keys = [];
  let i = 0;
  while (i < text.length) {
    let name = "";
    if (text[i] === '"') {
      i++;
      while (i < text.length) {
        if (text[i] === '"' && text[i + 1] === '"') {
          name += '"';
          i += 2;
        } else if (text[i] === '"') {
          i++;
          break;
        } else name += text[i++];
      }
    } else {
      while (i < text.length && text[i] !== "." && text[i] !== ",") name += text[i++];
    }
    let rest = "";
    while (i < text.length && text[i] !== ",") rest += text[i++];
    i++;
    keys.push({ name, rest });
  }
  return keys;
}

export function orderText(keys) {
  return keys.map((k) => `${quoteName(k.name)}${k.rest}`).join(",");
}

/** The same order read from its other end. */
export function reversedOrder(text) {
  return orderText(
    parseOrder(text).map(({ name, rest }) => {
      const words = rest.split(".").filter(Boolean);
      const direction = words.includes("desc") ? "asc" : "desc";
      const nulls = words.includes("nullsfirst")
        ? ".nullslast"
        : words.includes("nullslast")
        ? ".nullsfirst"
        : "";
      return { name, rest: `.${direction}${nulls}` };
    }),
  );
}

/** The view the URL describes. */
export function viewOf(params) {
  const filters = [];
  for (const [key, value] of params) {
    if (key.startsWith(FILTER_PREFIX)) filters.push([key.slice(FILTER_PREFIX.length), value]);
  }
  return {
    schema: params.get("schema") || "public",
    table: params.get("table") ?? "",
    order: params.get("order") ?? "",
    select: params.get("select") ?? "",
    end: params.get("end") === "1",
    profile: params.get("profile") === "1",
    filters,
  };
}

/** The URL of a view. */
export function hrefOfView(view) {
  return hrefOf("table", [
    ["schema", view.schema],
    ["table", view.table],
    ["order", view.order],
    ["select", view.select],
    ["end", view.end ? "1" : ""],
    ["profile", view.profile ? "1" : ""],
    ...view.filters.map(([column, value]) => [`${FILTER_PREFIX}${column}`, value]),
  ]);
}

/** The parameters of the records call that gives the view's rows, before paging. */
export function readParams(view, keys) {
  let order = view.order;
  if (view.end) {
    order = order
      ? reversedOrder(order)
      : keys.length > 0
      ? orderText(keys.map((name) => ({ name, rest: ".desc" })))
      : "";
  }
  return [["schema", view.schema], ["select", view.select], ["order", order], ...view.filters];
}
