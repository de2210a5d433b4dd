/**
 * A virtual grid over rows read page by page: only the rows in view are in the page, so a
 * table of millions opens as fast as one of ten. Keyboard: arrows, Page Up/Down, Home/End
 * move the active cell; Enter edits it (where the table allows), Esc cancels; Space selects
 * the row (in the selection column).
 */

import { html } from "htm/preact";
import { useEffect, useLayoutEffect, useReducer, useRef, useState } from "preact/hooks";
import {
  elementScroll,
  observeElementOffset,
  observeElementRect,
  Virtualizer,
} from "@tanstack/virtual-core";

const ROW = 32;
const WIDTH = 180;
const SELECT_WIDTH = 44;
const PROFILE_HEIGHT = 150;
let grids = 0;

/** A value as text: null as NULL, nested values as JSON. Never HTML. */
export function display(value) {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

export function Grid({
  label,
  columns,
  rows,
  hasMore = false,
  loading = false,
  onNeedMore,
  sort = {},
  onSort,
  editable = false,
  onEdit,
  selection,
  onToggle,
  profiles,
  renderProfile,
}) {
  const scrollRef = useRef();
  const id = useRef(`grid-${++grids}`);
  const [, rerender] = useReducer((n) => n + 1, 0);
  const [active, setActive] = useState({ r: 0, c: 0 });
  const [editing, setEditing] = useState(undefined);
  const selectable = selection !== undefined;
  const minC = selectable ? -1 : 0;
  const header = profiles ? ROW + PROFILE_HEIGHT : ROW;
  const width = columns.length * WIDTH + (selectable ? SELECT_WIDTH : 0);

  const options = {
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW,
    scrollToFn: elementScroll,
    observeElementRect,
    observeElementOffset,
    onChange: () => rerender(),
    overscan: 10,
    scrollMargin: header,
    scrollPaddingStart: header,
  };
  const virtual = useRef();
  if (!virtual.current) virtual.current = new Virtualizer(options);
  virtual.current.setOptions(options);
  useLayoutEffect(() => virtual.current._didMount(), []);
  useLayoutEffect(() => virtual.current._willUpdate());

  const items = virtual.current.getVirtualItems();
  useEffect(() => {
    const last = items[items.length - 1];
    if (hasMore && !loading && (last === undefined || last.index >= rows.length - 40)) {
      onNeedMore?.();
    }
  });
  useEffect(() => {
    if (active.r >= rows.length && rows.length > 0) setActive({ r: rows.length - 1, c: active.c });
  }, [rows.length]);

  // Row -1 is the header: with sorting, the keyboard reaches it, and Enter there sorts.
  const cellId = (r, c) => `${id.current}-${r < 0 ? "h" : r}-${c < 0 ? "s" : c}`;
  const firstRow = onSort ? -1 : 0;
  const move = (r, c) => {
    const row = Math.max(firstRow, Math.min(rows.length - 1, r));
    const col = Math.max(minC, Math.min(columns.length - 1, c));
    setActive({ r: row, c: col });
    if (row >= 0) virtual.current.scrollToIndex(row, { align: "auto" });
    // Once drawn, the cell is brought into view sideways too (only when moved by the keyboard:
    // the page itself must not jump to the grid when it opens).
    requestAnimationFrame(() =>
      document.getElementById(cellId(row, col))?.scrollIntoView({
        block: "nearest",
        inline: "nearest",
      })
    );
  };
  const page = Math.max(1, Math.floor((scrollRef.current?.clientHeight ?? 400) / ROW) - 2);

  const onKeyDown = (event) => {
    if (editing) return;
    const { r, c } = active;
    const keys = {
      ArrowDown: () => move(r + 1, c),
      ArrowUp: () => move(r - 1, c),
      ArrowRight: () => move(r, c + 1),
      ArrowLeft: () => move(r, c - 1),
      PageDown: () => move(r + page, c),
      PageUp: () => move(r - page, c),
      Home: () => event.ctrlKey ? move(0, minC) : move(r, minC),
      End: () =>
        event.ctrlKey ? move(rows.length - 1, columns.length - 1) : move(r, columns.length - 1),
      Enter: () => {
        if (r < 0 && c >= 0) onSort(columns[c].name);
        else if (c >= 0 && editable && rows[r]) {
          setEditing({ r, c, text: editText(rows[r][columns[c].name]) });
        }
      },
      " ": () => {
        if (c < 0 && selectable && rows[r]) onToggle(r);
      },
    };
    const action = keys[event.key];
    if (action && (rows.length > 0 || active.r < 0)) {
      event.preventDefault();
      action();
    }
  };

  const commit = async () => {
    const edit = editing;
    setEditing(undefined);
    scrollRef.current?.focus();
    if (edit) await onEdit(edit.r, columns[edit.c].name, edit.text);
  };

  const activeRendered = active.r < 0 || items.some((i) => i.index === active.r);
  return html`
    <div class="grid" ref=${scrollRef} role="grid" tabindex="0" aria-label=${label}
      id=${id.current}
      aria-rowcount=${hasMore ? -1 : rows.length + 1} aria-colcount=${columns.length +
        (selectable ? 1 : 0)}
      aria-activedescendant=${activeRendered && rows.length > 0
        ? cellId(active.r, active.c)
        : undefined}
      onKeyDown=${onKeyDown}>
        <div role="rowgroup" class="grid-head" style=${{
          width: `${width}px`,
          height: `${header}px`,
        }}>
          <div role="row" aria-rowindex="1" class="grid-row head">
            ${selectable &&
              html`
                <div role="columnheader" id=${cellId(-1, -1)}
                  class="cell select"><span class="sr-only">Selected</span></div>
              `}
            ${columns.map((column, c) => {
              const direction = sort[column.name];
              return html`
                <div role="columnheader" id=${cellId(-1, c)}
                  class=${`cell${active.r === -1 && active.c === c ? " active" : ""}`}
                  aria-colindex=${c + 1 + (selectable ? 1 : 0)}
                  aria-sort=${direction === "asc"
                    ? "ascending"
                    : direction === "desc"
                    ? "descending"
                    : undefined}>
                            ${onSort
                              ? html`
                                <button type="button" class="sort" tabindex="-1" title=${`${column.name} (${column.type}): sort`}
                                  onClick=${() => onSort(column.name)}>
                                  <span class="name">${column.name}</span>
                                  <span class="type">${column.type}</span>
                                  <span class="arrow" aria-hidden="true">${direction === "asc"
                                    ? "▲"
                                    : direction === "desc"
                                    ? "▼"
                                    : ""}</span>
                                </button>
                              `
                              : html`
                                <span
                                  class="label"><span class="name">${column
                                    .name}</span> <span class="type">${column.type}</span></span>
                              `}
                            ${profiles &&
                              html`<div class="profile">${
                                renderProfile(column, profiles[column.name])
                              }</div>`}
                          </div>
              `;
            })}
          </div>
        </div>
        <div role="rowgroup" class="grid-body" style=${{
          height: `${virtual.current.getTotalSize()}px`,
          width: `${width}px`,
        }}>
          ${items.map((item) => {
            const row = rows[item.index];
            const r = item.index;
            if (!row) return null;
            return html`
              <div role="row" class="grid-row" key=${item.key} aria-rowindex=${r + 2}
                aria-selected=${selectable ? Boolean(selection.has(r)) : undefined}
                style=${{ transform: `translateY(${item.start - header}px)` }}>
                        ${selectable && html`
                          <div role="gridcell" class=${`cell select${
                            active.r === r && active.c === -1 ? " active" : ""
                          }`} id=${cellId(r, -1)}>
                            <input type="checkbox" tabindex="-1" aria-label=${`Select row ${
                              r + 1
                            }`} checked=${selection.has(r)}
                              onChange=${() => onToggle(r)} />
                          </div>
                        `}
                        ${columns.map((column, c) => {
                          const value = row[column.name];
                          const isActive = active.r === r && active.c === c;
                          const isEditing = editing && editing.r === r && editing.c === c;
                          return html`
                            <div role="gridcell" id=${cellId(r, c)} aria-colindex=${c + 1 +
                              (selectable ? 1 : 0)}
                              class=${`cell${value === null ? " null" : ""}${
                                isActive ? " active" : ""
                              }`}
                              onClick=${() => setActive({ r, c })}
                              onDblClick=${() =>
                                editable && setEditing({ r, c, text: editText(value) })}>
                                          ${isEditing
                                            ? html`
                                              <${CellEditor} edit=${editing} label=${`New value of ${column.name}, row ${
                                                r + 1
                                              }`}
                                                onChange=${(text) =>
                                                  setEditing({ ...editing, text })}
                                                onCommit=${commit}
                                                onCancel=${() => {
                                                  setEditing(undefined);
                                                  scrollRef.current?.focus();
                                                }} />
                                            `
                                            : display(value)}
                                        </div>
                          `;
                        })}
                      </div>
            `;
          })}
        </div>
        ${rows.length === 0 && !loading && !hasMore &&
          html`<p class="empty" role="note">No rows.</p>`}
      </div>
  `;
}

/** The text a cell is edited as: null as the empty text. */
function editText(value) {
  return value === null || value === undefined ? "" : display(value);
}

function CellEditor({ edit, label, onChange, onCommit, onCancel }) {
  const ref = useRef();
  useEffect(() => {
    ref.current?.focus();
    ref.current?.select();
  }, []);
  return html`
    <input ref=${ref} class="cell-editor" aria-label=${label} value=${edit.text}
      onInput=${(e) => onChange(e.currentTarget.value)}
      onKeyDown=${(e) => {
        e.stopPropagation();
        if (e.key === "Enter") {
          e.preventDefault();
          onCommit();
        } else if (e.key === "Escape") {
          e.preventDefault();
          onCancel();
        }
      }}
      onBlur=${onCancel} />
  `;
}
