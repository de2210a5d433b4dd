/**
 * How the table screen filters its rows: a column's profile in its header (null share,
 * distinct count, a histogram or its top values, each a filter when clicked) and the filter
 * bar of PostgREST's operators.
 */

import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { count } from "./api.js";
import { display } from "./grid.js";

const OPERATORS = ["eq", "neq", "gt", "gte", "lt", "lte", "like", "ilike", "in", "is"];

/**
 * A column's figures under its header: null share, distinct values, and a histogram (numbers,
 * dates) or its most frequent values (text). A bar or a value adds the filter that selects it.
 */
export function Profile({ column, figures, rows, onFilter }) {
  if (!figures) return html`<span class="muted">…</span>`;
  const share = rows > 0 ? figures.nulls / rows : 0;
  const bins = figures.histogram ?? [];
  const top = figures.top ?? [];
  const highest = Math.max(1, ...bins.map((b) => b.count));
  return html`<div class="figures">
    <span>nulls ${(share * 100).toFixed(1)}% · ≈${count(figures.approx_distinct)} distinct</span>
    ${
    bins.length > 0 &&
    html`<div class="bars" role="group" aria-label=${`Histogram of ${column.name}`}>
      ${
      bins.map((bin, i) => {
        const last = i === bins.length - 1;
        const label = `${display(bin.from)} to ${display(bin.to)}: ${count(bin.count)} rows`;
        return html`
          <button type="button" class="bar" title=${label} aria-label=${label}
            onClick=${() =>
              onFilter([`gte.${display(bin.from)}`, `${last ? "lte" : "lt"}.${display(bin.to)}`])}>
            <span style=${{
              height: `${Math.max(1, Math.round(bin.count / highest * 40))}px`,
            }}></span>
          </button>
        `;
      })
    }
    </div>`
  }
    ${
    top.length > 0 &&
    html`<ul class="top-values" aria-label=${`Most frequent values of ${column.name}`}>
      ${
      top.map((t) =>
        html`<li><button type="button" class="link"
        title=${`${display(t.value)}: ${count(t.count)} rows`}
        onClick=${() => onFilter([`eq.${display(t.value)}`])}>${
          display(t.value)
        }</button> <span class="muted">${count(t.count)}</span></li>`
      )
    }
    </ul>`
  }
  </div>`;
}

export function FilterBar({ columns, filters, onChange }) {
  const [column, setColumn] = useState(columns[0]?.name ?? "");
  const [op, setOp] = useState("eq");
  const [negate, setNegate] = useState(false);
  const [value, setValue] = useState("");
  const add = (e) => {
    e.preventDefault();
    const text = op === "is" ? value || "null" : value;
    onChange([...filters, [column, `${negate ? "not." : ""}${op}.${text}`]]);
    setValue("");
  };
  return html`
    <form class="filter-bar" role="search" aria-label="Filter rows" onSubmit=${add}>
      <ul class="chips" aria-label="Filters">${filters.map(([c, v], i) =>
        html`
          <li class="chip">
            <span>${c} ${v}</span>
            <button type="button" class="ghost" aria-label=${`Remove filter ${c} ${v}`}
              onClick=${() => onChange(filters.filter((_, j) => j !== i))}>✕</button>
          </li>
        `
      )}</ul>
      <label class="sr-only" for="filter-column">Column</label>
      <select id="filter-column" data-filter-start value=${column} onChange=${(e) =>
        setColumn(e.currentTarget.value)}>
          ${columns.map((c) => html`<option value=${c.name}>${c.name}</option>`)}
        </select>
      <label
        class="check"><input type="checkbox" checked=${negate} onChange=${(e) =>
          setNegate(e.currentTarget.checked)} /> not</label>
      <label class="sr-only" for="filter-op">Operator</label>
      <select id="filter-op" value=${op} onChange=${(e) => setOp(e.currentTarget.value)}>
          ${OPERATORS.map((o) => html`<option value=${o}>${o}</option>`)}
        </select>
      <label class="sr-only" for="filter-value">Value</label>
      <input id="filter-value" value=${value} placeholder=${op === "in"
        ? "(a,b,c)"
        : op === "is"
        ? "null, true or false"
        : "value"}
        onInput=${(e) => setValue(e.currentTarget.value)} />
      <button type="submit">Filter</button>
    </form>
  `;
}
