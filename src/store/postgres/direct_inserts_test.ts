import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import type { TableRef } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import { freshDatabase, postgresTest } from "../../../tests/helpers/postgres.ts";
import { rowsInParts } from "../../../tests/helpers/rows.ts";
import { openStaging } from "../duckdb/mod.ts";
import type { OnConflict } from "../store.ts";
import type { StoreContext } from "./context.ts";
import { Database, type Session } from "./database.ts";
import { INSERTION_COLUMN } from "./ddl.ts";
import { quoteIdent } from "./sql.ts";
import { copyRows, directRows, insertDirect, plainMapping } from "./direct_inserts.ts";
import { describeTables } from "./metadata_describe.ts";
import { reservingInsertions } from "./insertion_values.ts";
import { openPostgresStore, type PostgresStore } from "./postgres_store.ts";
import { insert, insertRecords } from "./records.ts";
import { existingTable } from "./tables.ts";
import { KnownDescriptions } from "./descriptions.ts";

/** Values sent, one per row, into a column of each type, and whether each goes straight in. */
const CASES: readonly { type: string; direct: readonly string[]; staged: readonly string[] }[] = [
  { type: "boolean", direct: ["true", "false", "null"], staged: ['"true"', '"t"', "1", "0", "2"] },
  {
    type: "integer",
    direct: ["1", "-5", "0", "-0", "2147483647"],
    staged: ["1.0", "1.5", "2.5", "-2.5", "1e2", '"12"', "2147483648", "true"],
  },
  {
    type: "double precision",
    direct: [
      "1.5",
      "0.1",
      "3",
      "-0.5",
      "1e-7",
      "1E300",
      "12.345",
      "9007199254740993",
      "0.30000000000000004",
      "2.2250738585072014e-308",
      "5e-324",
      "123456789012345678901234567890",
    ],
    staged: ["-0", "-0.0", "-0e3", "1e400", '"1.5"', "true", '"NaN"'],
  },
  { type: "real", direct: [], staged: ["1.5", "0.1", "3.4028235e38"] },
  { type: "smallint", direct: ["32767"], staged: ["32768", "-32769"] },
  {
    type: "bigint",
    direct: ["9007199254740993", "-9223372036854775808"],
    staged: ["9223372036854775808", "1.5"],
  },
  {
    type: "text",
    direct: ['"a"', '""', '"with \\"quote\\"\\n and \\\\"', '"üñí😀 \\u00e9"', '" padded "'],
    staged: ["1", "1.50", "true", '{"a": 1}', "[1, 2]", '"\\u0000"'],
  },
  { type: "varchar(3)", direct: ['"abc"'], staged: ['"abcd"', "12"] },
  {
    type: "date",
    direct: ['"2024-02-29"', '"0001-01-01"', '"9999-12-31"'],
    staged: ['"2023-02-29"', '"2024-1-1"', '"0000-01-01"', '"2024-01-01T00:00:00"', "20240101"],
  },
  {
    type: "timestamp",
    direct: ['"2024-01-01T10:00:00"', '"2024-01-01 10:00:00.123456"', '"2024-01-01T23:59:59.5"'],
    staged: [
      '"2024-01-01T10:00:00.1234567"',
      '"2024-01-01T10:00:00+05:00"',
      '"2024-01-01T24:00:00"',
      '"2024-01-01T23:59:60"',
      '"2024-13-01T00:00:00"',
    ],
  },
  {
    type: "timestamptz",
    direct: [
      '"2024-01-01T10:00:00Z"',
      '"2024-01-01T10:00:00+05:30"',
      '"2024-01-01 10:00:00.25-15:59"',
    ],
    staged: ['"2024-01-01T10:00:00+16:00"', '"2024-01-01T10:00:00"', '"2024-01-01T10:00:00z"'],
  },
  {
    type: "uuid",
    direct: ['"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"', '"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"'],
    staged: ['"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}"', '"a0eebc999c0b4ef8bb6d6bb9bd380a11"'],
  },
  { type: "numeric(6,2)", direct: [], staged: ["1.5", "1.005", '"2.5"'] },
];

interface Bench {
  readonly store: PostgresStore;
  readonly context: StoreContext;
  readonly dir: string;
}

/** A store, and a context of its own on the same database for the two ways of inserting. */
async function withBench(url: string, work: (bench: Bench) => Promise<void>) {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "pgdirect-" }));
  const store = await openPostgresStore({ url, spoolDir: dir });
  const database = await Database.open({ url, maxConnections: 4 });
  const staging = await openStaging({ spoolDir: dir, tempDir: dir });
  try {
    await work({
      store,
      context: {
        database,
        staging,
        spoolDir: dir,
        readTimeoutMs: 10_000,
        descriptions: new KnownDescriptions(),
      },
      dir,
    });
  } finally {
    await staging.close();
    await database.close();
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

function arriving(dir: string, body: string) {
  return rowsInParts(new Blob([body]).stream(), dir);
}

/** Creates `ref` in the bench's store with `columns` (name and type), keyed by `key` when given. */
function createTable(bench: Bench, ref: TableRef, columns: [string, string][], key?: string) {
  return bench.store.tables.create(
    planTable(ref, {
      columns: columns.map(([name, type]) => ({ name, type })),
      ...(key ? { constraints: { primary_key: { columns: [key] } } } : {}),
    }),
    { ifNotExists: false },
  );
}

/** `ref`'s description, as `session` reads it. */
async function described(session: Session, ref: TableRef) {
  return (await describeTables(session, [await existingTable(session, ref)]))[0]!;
}

/** Inserts `rows` the staging's way only. */
function insertStaged(
  context: StoreContext,
  ref: TableRef,
  rows: ReturnType<typeof arriving>,
  onConflict: OnConflict,
) {
  return insert(context, ref, () => rows.whole(), onConflict);
}

/** What an insert did: the column's values as PostgreSQL prints them, or the error's parts. */
type Outcome = { stored: (string | null)[] } | {
  status: number;
  message: string;
  details?: unknown;
};

async function outcome(bench: Bench, ref: TableRef, insert: () => Promise<unknown>) {
  try {
    await insert();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return { status: error.status, message: error.message, details: error.details };
  }
  const rows = await bench.context.database.withSession((s) =>
    s.rows(`SELECT v::text AS v FROM "${ref.schema}"."t" ORDER BY id`)
  );
  return { stored: rows.map((r) => r.v as string | null) };
}

/**
 * Tries `body` on each straight way alone (one statement, COPY), each in a savepoint rolled
 * back: the column's values it stored, or undefined when it did not take the rows.
 */
async function straightWays(bench: Bench, ref: TableRef, body: string, onConflict: OnConflict) {
  const small = (await arriving(bench.dir, body).inMemory())!;
  const stored: Record<"statement" | "copy", (string | null)[] | undefined> = {
    statement: undefined,
    copy: undefined,
  };
  await bench.context.database.transaction(async (session) => {
    const table = await described(session, ref);
    const ways = {
      statement: async () => {
        const direct = await directRows(table, small, small.bytes);
        if (!direct) throw new Error("Not direct");
        await insertDirect(session, table, direct, onConflict);
      },
      copy: async () => {
        const mapping = await plainMapping(table, small);
        if (!mapping) throw new Error("Not plain");
        await copyRows(session, table, mapping, [small.bytes], () => small.rows);
      },
    };
    for (const [way, run] of Object.entries(ways)) {
      await session.run("SAVEPOINT straight");
      if (await run().then(() => true, () => false)) {
        const rows = await session.rows(
          `SELECT v::text AS v FROM "${ref.schema}"."t" ORDER BY id`,
        );
        stored[way as keyof typeof stored] = rows.map((r) => r.v as string | null);
      }
      await session.run("ROLLBACK TO SAVEPOINT straight");
    }
  });
  return stored;
}

/** Tries `body` on the direct path alone, in a transaction rolled back: whether it took it. */
async function takenDirectly(bench: Bench, ref: TableRef, body: string, onConflict: OnConflict) {
  return (await straightWays(bench, ref, body, onConflict)).statement !== undefined;
}

await postgresTest("Direct inserts", async (t, server) => {
  const url = await freshDatabase(server);
  await withBench(url, async (bench) => {
    await t.step(
      "a body past 10,000 rows is copied in as it is, or staged when a value is not plain",
      async () => {
        const ref = { schema: "public", name: "big" };
        await createTable(bench, ref, [["id", "integer"], ["name", "text"]], "id");
        const rows = (from: number, count: number, last = "") =>
          Array.from({ length: count }, (_, i) => `{"id": ${from + i}, "name": "n\\t${i}"}`)
            .join(",") + last;
        // In one part: the whole body is copied once it has arrived.
        const plain = rowsInParts(new Blob([`[${rows(0, 12_000)}]`]).stream(), bench.dir, 1 << 30);
        assert.deepEqual((await insertRecords(bench.context, ref, plain, "fail")).inserted, 12_000);
        await plain.discard();
        // The last row's 40000.4 is no plain integer: the staging takes it, rounded.
        const mixed = `[${rows(20_000, 12_000, ', {"id": 40000.4, "name": null}')}]`;
        assert.deepEqual(
          (await insertRecords(bench.context, ref, arriving(bench.dir, mixed), "fail")).inserted,
          12_001,
        );
        const [row] = await bench.context.database.withSession((s) =>
          s.rows(
            `SELECT count(*)::int AS n, max(name) FILTER (WHERE id = 11999) AS name,
             count(*) FILTER (WHERE id = 40000)::int AS rounded FROM public.big`,
          )
        );
        assert.deepEqual(row, { n: 24_001, name: "n\t11999", rounded: 1 });
        // Each load's rows in the order sent, by the values reserved for them or the staging's.
        const [unordered] = await bench.context.database.withSession((s) =>
          s.rows(
            `SELECT count(*)::int AS n FROM (SELECT id, lag(id) OVER (ORDER BY ${
              quoteIdent(INSERTION_COLUMN)
            }) AS before FROM public.big) AS o WHERE before >= id`,
          )
        );
        assert.deepEqual(unordered, { n: 0 });
      },
    );

    await t.step(
      "a body of many parts is copied while it arrives, in the order sent, between other inserts",
      async () => {
        const ref = { schema: "public", name: "streamed" };
        await createTable(bench, ref, [["n", "integer"]]);
        const { database } = bench.context;
        const rowsOf = (from: number, count: number) =>
          Array.from({ length: count }, (_, i) => `{"n": ${from + i}}`).join(",");
        // The body's last rows wait until the COPY is seen running: it began before the end.
        let release!: () => void;
        const released = new Promise<void>((resolve) => release = resolve);
        const head = new TextEncoder().encode(`[${rowsOf(0, 4000)},`);
        const tail = new TextEncoder().encode(`${rowsOf(4000, 1000)}]`);
        const body = new ReadableStream<Uint8Array>({
          async start(controller) {
            for (let at = 0; at < head.length; at += 1000) {
              controller.enqueue(head.slice(at, at + 1000));
            }
            await released;
            controller.enqueue(tail);
            controller.close();
          },
        });
        const insertSmall = (text: string) =>
          insertRecords(bench.context, ref, arriving(bench.dir, text), "fail");
        await insertSmall(`[{"n": -1}]`);
        const spooled = rowsInParts(body, bench.dir);
        const loading = insertRecords(bench.context, ref, spooled, "fail");
        let copying: string | undefined;
        for (let tries = 0; !copying && tries < 200; tries++) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          const [row] = await database.withSession((s) =>
            s.rows(`SELECT query FROM pg_stat_activity
              WHERE query LIKE 'COPY "public"."streamed"%' AND state = 'active'`)
          );
          copying = row?.query as string | undefined;
        }
        // Another insert meanwhile takes its insertion value past the reserved ones.
        await insertSmall(`[{"n": -2}]`);
        release();
        assert.equal((await loading).inserted, 5000);
        await spooled.discard();
        assert.ok(copying, "the COPY ran while the body was still arriving");
        // The rows bring their insertion values, reserved a part at a time.
        assert.ok(copying.includes(quoteIdent(INSERTION_COLUMN)), copying);
        await insertSmall(`[{"n": -3}]`);
        const order = await database.withSession((s) =>
          s.rows(`SELECT n FROM public.streamed ORDER BY U&"\\0001order"`)
        );
        const ns = order.map((r) => r.n as number);
        assert.deepEqual(ns.filter((n) => n >= 0), Array.from({ length: 5000 }, (_, i) => i));
        assert.deepEqual([ns[0], ns.at(-1)], [-1, -3]);
        // The parts read before it took their values first, the parts after it later.
        const between = ns.indexOf(-2);
        assert.ok(between > 1 && between < 5001, `the insert meanwhile is at ${between}`);
        const [sequence] = await database.withSession((s) =>
          s.rows(
            `SELECT increment_by::int AS step FROM pg_sequences WHERE sequencename LIKE 'streamed%'`,
          )
        );
        assert.deepEqual(sequence, { step: 1 });

        // A value PostgreSQL refuses in a later part: the copy is let go, and the answer
        // names the row of the whole body.
        const refused = `[${rowsOf(0, 4500)}, {"n": 2147483648}, ${rowsOf(0, 10)}]`;
        const error = await insertRecords(bench.context, ref, arriving(bench.dir, refused), "fail")
          .then(() => undefined, (e) => e);
        assert.ok(error instanceof ApiError, String(error));
        assert.equal(error.status, 422);
        assert.deepEqual(error.details?.map((d) => d.row), [4500]);
        const [count] = await database.withSession((s) =>
          s.rows(`SELECT count(*)::int AS n FROM public.streamed`)
        );
        assert.deepEqual(count, { n: 5003 });
        assert.equal(database.openTransactions, 0);
      },
    );

    await t.step(
      "insertion values are reserved apart, and not at all while an open transaction drew one",
      async () => {
        const ref = { schema: "public", name: "reserved" };
        await createTable(bench, ref, [["n", "integer"]]);
        const { database } = bench.context;
        const reserve = (count: number) =>
          database.transaction(async (session) => {
            const table = await described(session, ref);
            const insertions = await reservingInsertions(database, session, table, count);
            return insertions && Array.from({ length: count }, () => insertions.next());
          });
        let drawn!: () => void;
        const hasDrawn = new Promise<void>((resolve) => drawn = resolve);
        let release!: () => void;
        const held = database.transaction(async (session) => {
          await session.run(`INSERT INTO public.reserved (n) VALUES (1)`);
          drawn();
          await new Promise<void>((resolve) => release = resolve);
        });
        await hasDrawn;
        try {
          assert.equal(await reserve(3), undefined, "the copy draws its own values meanwhile");
        } finally {
          release();
          await held;
        }
        const values = await reserve(3);
        assert.ok(values);
        assert.deepEqual(values, [values[0]!, values[0]! + 1, values[0]! + 2]);
        // The sequence goes on past the block, by one at a time.
        await insertRecords(
          bench.context,
          ref,
          arriving(bench.dir, `[{"n": 2}, {"n": 3}]`),
          "fail",
        );
        const after = await database.withSession((s) =>
          s.rows(`SELECT ${quoteIdent(INSERTION_COLUMN)}::int AS at FROM public.reserved
            WHERE n > 1 ORDER BY n`)
        );
        assert.deepEqual(after.map((r) => r.at), [values[2]! + 1, values[2]! + 2]);
      },
    );

    await t.step(
      "with commit, a direct insert commits in its own round trip, or leaves nothing",
      async () => {
        const ref = { schema: "public", name: "fused" };
        await createTable(bench, ref, [["n", "integer"], ["s", "text"]]);
        const { database } = bench.context;
        const attempt = (body: string) =>
          database.transaction(async (session) => {
            const table = await described(session, ref);
            const small = (await arriving(bench.dir, body).inMemory())!;
            const direct = (await directRows(table, small, small.bytes))!;
            return await insertDirect(session, table, direct, "fail", true);
          });
        assert.deepEqual(await attempt(`[{"n": 1, "s": "it's \\\\ here"}, {"n": 2}]`), {
          inserted: 2,
        });
        // 2^31 is a plain integer that PostgreSQL refuses: nothing of the body stays.
        await assert.rejects(attempt(`[{"n": 3}, {"n": 2147483648}]`));
        assert.equal(database.openTransactions, 0);
        const rows = await database.withSession((s) =>
          s.rows(`SELECT n, s FROM public.fused ORDER BY n`)
        );
        assert.deepEqual(rows, [{ n: 1, s: "it's \\ here" }, { n: 2, s: null }]);
      },
    );

    await t.step(
      "skip and update: the direct path counts and keeps the rows the staging keeps",
      async () => {
        for (const onConflict of ["skip", "update"] as const) {
          const outcomes = [];
          for (const schema of [`direct_${onConflict}`, `staged_${onConflict}`]) {
            await bench.store.schemas.create(schema);
            const ref = { schema, name: "t" };
            await createTable(bench, ref, [["id", "integer"], ["v", "text"]], "id");
            await insertStaged(
              bench.context,
              ref,
              arriving(bench.dir, '[{"id": 1, "v": "old"}, {"id": 2, "v": "old"}]'),
              "fail",
            );
            const body = '[{"id": 2, "v": "a"}, {"id": 3, "v": "b"}, {"id": 3, "v": "c"}, ' +
              '{"id": 4, "v": "e"}]';
            if (schema.startsWith("direct")) {
              assert.equal(await takenDirectly(bench, ref, body, onConflict), true);
            }
            let counts: unknown;
            const stored = await outcome(bench, ref, async () => {
              counts = schema.startsWith("direct")
                ? await insertRecords(bench.context, ref, arriving(bench.dir, body), onConflict)
                : await insertStaged(
                  bench.context,
                  ref,
                  arriving(bench.dir, body),
                  onConflict,
                );
            });
            const { table: _, ...rest } = counts as Record<string, unknown>;
            outcomes.push({ stored, counts: rest });
          }
          assert.deepEqual(outcomes[0], outcomes[1], onConflict);
        }
      },
    );

    for (const { type, direct, staged } of CASES) {
      await t.step(
        `${type}: the direct path takes exactly the plain values, storing what the staging stores`,
        async () => {
          for (const schema of ["direct_", "staged_"]) {
            await bench.store.schemas.create(`${schema}${type.replace(/\W/g, "_")}`).catch(
              () => {},
            );
          }
          for (const value of [...direct, ...staged]) {
            const refs = ["direct_", "staged_"].map((s) => ({
              schema: `${s}${type.replace(/\W/g, "_")}`,
              name: "t",
            }));
            for (const ref of refs) {
              await bench.store.tables.drop(ref).catch(() => {});
              await createTable(bench, ref, [["id", "serial"], ["v", type]], "id");
            }
            // Two rows, so that row numbers in errors are the second row's.
            const body = `[{"v": null}, {"v": ${value}}]`;
            const ways = await straightWays(bench, refs[0]!, body, "fail");
            const viaDirect = await outcome(
              bench,
              refs[0]!,
              () => insertRecords(bench.context, refs[0]!, arriving(bench.dir, body), "fail"),
            );
            const viaStaging = await outcome(
              bench,
              refs[1]!,
              () =>
                insertStaged(
                  bench.context,
                  refs[1]!,
                  arriving(bench.dir, body),
                  "fail",
                ),
            );
            assert.deepEqual(viaDirect, viaStaging, `${type} ${value}`);
            for (const [way, stored] of Object.entries(ways)) {
              // Taken exactly when plain, and then stored as the staging stores it.
              assert.deepEqual(
                stored,
                direct.includes(value) ? (viaStaging as { stored: unknown }).stored : undefined,
                `${type} ${value} by ${way}`,
              );
            }
          }
        },
      );
    }
  });
});
