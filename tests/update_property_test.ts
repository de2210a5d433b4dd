/**
 * Random sequences of updates against a table with rows, checked after every step against
 * a small in-memory model of what the table should be: its rows, its column ids, its
 * definition, and whether each request should have been refused.
 */
import assert from "node:assert/strict";
// deno-lint-ignore no-import-prefix -- a tool of tests, kept out of the import map (deno.dev.lock)
import fc from "npm:fast-check@^4.10.2";
import { ENGINE } from "./helpers/engine.ts";
import { ok, TestServer } from "./helpers/server.ts";

type Type = "INTEGER" | "BIGINT" | "VARCHAR";
type Value = number | string | null;

interface ModelColumn {
  id: number;
  name: string;
  type: Type;
  nullable: boolean;
  default: string | null;
}

interface Model {
  name: string;
  columns: ModelColumn[];
  /** Each row's values by column id. */
  rows: Map<number, Value>[];
  nextId: number;
  /** Column ids that carry a one-column unique constraint. */
  unique: number[];
}

const NAMES = ["a", "b", "c", "A", "Long Name", "ünï"];
const TYPES: Type[] = ["INTEGER", "BIGINT", "VARCHAR"];
const TEXTS = ["1", "22", "-5", "abc", "x"];

const value = fc.oneof(
  fc.constant(null),
  fc.integer({ min: -50, max: 50 }),
  fc.constantFrom(...TEXTS),
);
const defaultText = fc.oneof(
  fc.constant(null),
  fc.integer({ min: 0, max: 9 }).map(String),
  fc.constantFrom("'7'", "'v'"),
);

type Op =
  | { kind: "rename"; pick: number; name: string }
  /** A rename sent with the constraints as read before it, as an edited GET response is. */
  | { kind: "renameAsRead"; pick: number; name: string }
  /** A column dropped and a new one of its name added in the same request. */
  | { kind: "replace"; pick: number }
  | { kind: "add"; name: string; type: Type; default: string | null; nullable: boolean }
  | { kind: "drop"; pick: number }
  | { kind: "reorder"; keys: number[] }
  | { kind: "retype"; pick: number; type: Type }
  | { kind: "nullable"; pick: number; nullable: boolean }
  | { kind: "default"; pick: number; default: string | null }
  | { kind: "unique"; pick: number; on: boolean }
  | { kind: "renameTable" }
  | { kind: "insert"; values: Value[][] };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("rename"), pick: fc.nat(), name: fc.constantFrom(...NAMES) }),
  fc.record({
    kind: fc.constant("renameAsRead"),
    pick: fc.nat(),
    name: fc.constantFrom(...NAMES),
  }),
  fc.record({ kind: fc.constant("replace"), pick: fc.nat() }),
  fc.record({
    kind: fc.constant("add"),
    name: fc.constantFrom(...NAMES),
    type: fc.constantFrom(...TYPES),
    default: defaultText,
    nullable: fc.boolean(),
  }),
  fc.record({ kind: fc.constant("drop"), pick: fc.nat() }),
  fc.record({ kind: fc.constant("reorder"), keys: fc.array(fc.nat(), { minLength: 8 }) }),
  fc.record({ kind: fc.constant("retype"), pick: fc.nat(), type: fc.constantFrom(...TYPES) }),
  fc.record({ kind: fc.constant("nullable"), pick: fc.nat(), nullable: fc.boolean() }),
  fc.record({ kind: fc.constant("default"), pick: fc.nat(), default: defaultText }),
  fc.record({ kind: fc.constant("unique"), pick: fc.nat(), on: fc.boolean() }),
  fc.record({ kind: fc.constant("renameTable") }),
  fc.record({
    kind: fc.constant("insert"),
    values: fc.array(fc.array(value, { maxLength: 8 }), { minLength: 1, maxLength: 3 }),
  }),
) as fc.Arbitrary<Op>;

/** DuckDB's cast of a value to `type`, or undefined when the cast fails. */
function cast(v: Value, type: Type): Value | undefined {
  if (v === null) return null;
  if (type === "VARCHAR") return String(v);
  const text = String(v);
  if (!/^-?\d+$/.test(text)) return undefined;
  const n = Number(text);
  if (type === "INTEGER" && Math.abs(n) > 2 ** 31 - 1) return undefined;
  return n;
}

/** The value a default expression gives for `type`, or undefined when it does not fit. */
function defaultValue(text: string | null, type: Type): Value | undefined {
  if (text === null) return null;
  return cast(text.startsWith("'") ? text.slice(1, -1) : Number(text), type);
}

function hasDuplicates(model: Model, id: number): boolean {
  const seen = new Set<string>();
  for (const row of model.rows) {
    const v = row.get(id) ?? null;
    if (v === null) continue;
    if (seen.has(String(v))) return true;
    seen.add(String(v));
  }
  return false;
}

function pick<T>(list: readonly T[], n: number): T | undefined {
  return list.length === 0 ? undefined : list[n % list.length];
}

/** The request for `op` and the model after it; `next` undefined means a refusal. */
function plan(model: Model, op: Op): { request?: unknown; records?: unknown[]; next?: Model } {
  const next: Model = structuredClone(model);
  const wire = (columns: ModelColumn[]) =>
    columns.map((c) => ({
      id: c.id,
      name: c.name,
      type: c.type,
      default: c.default,
      is_nullable: c.nullable,
    }));
  const taken = (name: string, except?: number) =>
    next.columns.some((c) => c.id !== except && c.name.toLowerCase() === name.toLowerCase());
  const keys = (ids: number[]) =>
    ids.map((id) => ({ columns: [next.columns.find((c) => c.id === id)!.name] }));
  switch (op.kind) {
    case "rename": {
      const column = pick(next.columns, op.pick);
      if (!column) return {};
      const refused = taken(op.name, column.id);
      column.name = op.name;
      return { request: { columns: wire(next.columns) }, next: refused ? undefined : next };
    }
    case "renameAsRead": {
      const column = pick(next.columns, op.pick);
      if (!column) return {};
      const unique = keys(next.unique);
      const refused = taken(op.name, column.id);
      column.name = op.name;
      return {
        request: { columns: wire(next.columns), constraints: { unique } },
        next: refused ? undefined : next,
      };
    }
    case "replace": {
      const column = pick(next.columns, op.pick);
      if (!column) return {};
      const kept = wire(next.columns.filter((c) => c !== column));
      return { request: { columns: [...kept, { name: column.name, type: column.type }] } };
    }
    case "add": {
      const filled = defaultValue(op.default, op.type);
      const refused = taken(op.name) || filled === undefined ||
        (!op.nullable && filled === null && next.rows.length > 0);
      const request = {
        columns: [...wire(next.columns), {
          name: op.name,
          type: op.type,
          default: op.default,
          is_nullable: op.nullable,
        }],
      };
      if (refused) return { request };
      next.columns.push({
        id: next.nextId,
        name: op.name,
        type: op.type,
        nullable: op.nullable,
        default: op.default,
      });
      for (const row of next.rows) row.set(next.nextId, filled ?? null);
      next.nextId++;
      return { request, next };
    }
    case "drop": {
      const column = pick(next.columns, op.pick);
      if (!column) return {};
      next.columns = next.columns.filter((c) => c !== column);
      next.unique = next.unique.filter((id) => id !== column.id);
      for (const row of next.rows) row.delete(column.id);
      return { request: { columns: wire(next.columns) }, next };
    }
    case "reorder": {
      const keyed = next.columns.map((c, i) => ({
        c,
        key: op.keys[i % op.keys.length]! + i / 100,
      }));
      next.columns = keyed.sort((x, y) => x.key - y.key).map((k) => k.c);
      return { request: { columns: wire(next.columns) }, next };
    }
    case "retype": {
      const column = pick(next.columns, op.pick);
      if (!column) return {};
      const values = next.rows.map((row) => cast(row.get(column.id) ?? null, op.type));
      const refused = values.some((v) => v === undefined) ||
        (op.type !== column.type && defaultValue(column.default, op.type) === undefined);
      column.type = op.type;
      next.rows.forEach((row, i) => row.set(column.id, values[i] ?? null));
      const uniqueBroken = next.unique.includes(column.id) && hasDuplicates(next, column.id);
      return {
        request: { columns: wire(next.columns) },
        next: refused || uniqueBroken ? undefined : next,
      };
    }
    case "nullable": {
      const column = pick(next.columns, op.pick);
      if (!column) return {};
      column.nullable = op.nullable;
      const refused = !op.nullable &&
        next.rows.some((row) => (row.get(column.id) ?? null) === null);
      return { request: { columns: wire(next.columns) }, next: refused ? undefined : next };
    }
    case "default": {
      const column = pick(next.columns, op.pick);
      if (!column) return {};
      column.default = op.default;
      const refused = defaultValue(op.default, column.type) === undefined;
      return { request: { columns: wire(next.columns) }, next: refused ? undefined : next };
    }
    case "unique": {
      const column = pick(next.columns, op.pick);
      if (!column) return {};
      next.unique = next.unique.filter((id) => id !== column.id);
      if (op.on) next.unique.push(column.id);
      const refused = op.on && hasDuplicates(next, column.id);
      return {
        request: { constraints: { unique: keys(next.unique) } },
        next: refused ? undefined : next,
      };
    }
    case "renameTable": {
      next.name = next.name.endsWith("_x") ? next.name.slice(0, -2) : `${next.name}_x`;
      return { request: { name: next.name }, next };
    }
    case "insert": {
      if (next.columns.length === 0) return {};
      const rows = op.values.map((values) =>
        new Map(next.columns.map((c, i) => [c.id, values[i % Math.max(values.length, 1)] ?? null]))
      );
      // The body carries the values as generated; the model holds them as cast.
      const records = rows.map((row) =>
        Object.fromEntries(next.columns.map((c) => [c.name, row.get(c.id) ?? null]))
      );
      let refused = false;
      for (const row of rows) {
        for (const c of next.columns) {
          const v = cast(row.get(c.id) ?? null, c.type);
          if (v === undefined || (v === null && !c.nullable)) refused = true;
          row.set(c.id, v ?? null);
        }
      }
      next.rows.push(...rows);
      if (next.unique.some((id) => hasDuplicates(next, id))) refused = true;
      return { records, next: refused ? undefined : next };
    }
  }
}

/** A type as responses name it: PostgreSQL's canonical name on PostgreSQL. */
const shown: (type: Type) => string = ENGINE === "postgres"
  ? (type) => ({ INTEGER: "integer", BIGINT: "bigint", VARCHAR: "character varying" })[type]
  : (type) => type;

/**
 * A default as responses render it: as sent on DuckDB; on PostgreSQL as its catalog prints
 * it, where a string literal is folded into an integer, and otherwise kept with a cast to the
 * column's own type, which responses leave out.
 */
function shownDefault(text: string | null, type: Type): string | null {
  if (ENGINE === "duckdb" || text === null || !text.startsWith("'")) return text;
  return type === "INTEGER" ? text.slice(1, -1) : text;
}

/** Asserts the table the service holds is the table the model holds. */
async function sameAsModel(server: TestServer, model: Model): Promise<void> {
  const { table } = ok(await server.request("GET", `table/${model.name}`));
  assert.deepEqual(
    table.columns.map((c: { id: number; name: string; type: string; is_nullable: boolean }) => ({
      id: c.id,
      name: c.name,
      type: c.type,
      nullable: c.is_nullable,
    })),
    model.columns.map((c) => ({
      id: c.id,
      name: c.name,
      type: shown(c.type),
      nullable: c.nullable,
    })),
  );
  const defaults = table.columns.map((c: { default: string | null }) => c.default);
  assert.deepEqual(defaults, model.columns.map((c) => shownDefault(c.default, c.type)));
  const unique = table.constraints.unique.map((k: { columns: string[] }) =>
    table.columns.find((c: { name: string }) => c.name === k.columns[0]).id
  ).sort();
  assert.deepEqual(unique, [...model.unique].sort());
  const { records } = ok(
    await server.request("GET", `table/${model.name}/records?limit=10000`),
  );
  assert.deepEqual(
    records,
    model.rows.map((row) => Object.fromEntries(model.columns.map((c) => [c.name, row.get(c.id)]))),
  );
}

Deno.test("PUT /table/{name} keeps rows, ids and definition equal to a model over random updates", async () => {
  const server = await TestServer.start();
  let run = 0;
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(value, { minLength: 3, maxLength: 3 }), { maxLength: 5 }),
        fc.array(op, { minLength: 1, maxLength: 8 }),
        async (initial, ops) => {
          let model: Model = {
            name: `t${run++}`,
            columns: [
              { id: 1, name: "a", type: "INTEGER", nullable: true, default: null },
              { id: 2, name: "b", type: "VARCHAR", nullable: true, default: null },
              { id: 3, name: "c", type: "BIGINT", nullable: true, default: null },
            ],
            rows: [],
            nextId: 4,
            unique: [],
          };
          ok(
            await server.request("POST", `table/${model.name}`, {
              body: {
                table: {
                  columns: model.columns.map((c) => ({ name: c.name, type: c.type })),
                },
              },
            }),
          );
          const seed = plan(model, { kind: "insert", values: initial });
          if (initial.length > 0 && seed.next) {
            ok(await server.request("POST", `table/${model.name}/records`, { body: seed.records }));
            model = seed.next;
          }
          for (const step of ops) {
            const { request, records, next } = plan(model, step);
            if (request === undefined && records === undefined) continue;
            const answer = records
              ? await server.request("POST", `table/${model.name}/records`, { body: records })
              : await server.request("PUT", `table/${model.name}`, { body: { table: request } });
            const expected = next ? 200 : "a refusal";
            const got = answer.status === 200 ? 200 : "a refusal";
            assert.equal(
              got,
              expected,
              `${JSON.stringify(step)} on ${JSON.stringify(model.columns)}: ${answer.text}`,
            );
            if (next) model = next;
            else assert.ok([409, 422].includes(answer.status), answer.text);
            await sameAsModel(server, model);
          }
          ok(await server.request("DELETE", `table/${model.name}`));
        },
      ),
      // PROPERTY_RUNS raises the count for a deeper local run; CI keeps it quick.
      { numRuns: Number(Deno.env.get("PROPERTY_RUNS") ?? 40) },
    );
  } finally {
    await server.dispose();
  }
});
