/**
 * Many clients at once for a while: inserts into shared tables, `replace` uploads, `PUT`
 * updates (with `If-Match`, retried on 409) and reads, then a count of every 5xx and of
 * every acknowledged row or column that is missing.
 *
 * @module
 */

import { type Answer, ok, seededRandom, type TestServer } from "../helpers/server.ts";

/** What the clients did and what the end state lacked. */
export interface ConcurrencyReport {
  readonly clients: number;
  readonly seconds: number;
  readonly requests: number;
  /** Acknowledged (200) requests per kind of work. */
  readonly acknowledged: Record<Kind, number>;
  /** PUTs answered 409 because another update came first (each then retried). */
  readonly editConflicts: number;
  readonly serverErrors: number;
  /** Acknowledged rows missing at the end. */
  readonly lostRows: number;
  /** Columns added by an acknowledged PUT and missing at the end. */
  readonly lostColumns: number;
  readonly failures: string[];
}

type Kind = "insert" | "replace" | "update" | "read";

const SHARED = ["shared_a", "shared_b"] as const;

/**
 * Runs `clients` clients against `server` for `seconds`, then checks the end state: every
 * acknowledged row and column is there, no row is there that a refused request sent, and
 * the replaced table holds exactly one acknowledged upload. Given several instances of the
 * service on one database, the clients spread over them, each read-then-`PUT` crosses from
 * one instance to another, and the end state is read through the last instance.
 */
export async function runConcurrency(
  server: TestServer | readonly TestServer[],
  options: { clients?: number; seconds?: number; seed?: number } = {},
): Promise<ConcurrencyReport> {
  const servers: readonly TestServer[] = Array.isArray(server) ? server : [server];
  const first = servers[0]!;
  const last = servers[servers.length - 1]!;
  const clients = options.clients ?? 16;
  const seconds = options.seconds ?? 10;
  const seed = options.seed ?? 1;
  const failures: string[] = [];
  const acknowledged: Record<Kind, number> = { insert: 0, replace: 0, update: 0, read: 0 };
  let requests = 0;
  let serverErrors = 0;
  let editConflicts = 0;
  /** Row ids per table: acknowledged, and those whose fate is unknown (no answer). */
  const rows = new Map(
    SHARED.map((t) => [t, { acked: new Set<number>(), unknown: new Set<number>() }]),
  );
  const addedColumns = new Map(SHARED.map((t) => [t, new Set<string>()]));
  /** Tag and row count of each acknowledged replace upload, and of unknown ones. */
  const uploads: { tag: string; count: number; acked: boolean }[] = [];

  for (const table of SHARED) {
    ok(
      await first.request("POST", `table/${table}`, {
        body: {
          table: {
            columns: [
              { name: "id", type: "bigint" },
              { name: "client", type: "integer" },
              { name: "note", type: "varchar" },
            ],
            constraints: { primary_key: { columns: ["id"] } },
          },
        },
      }),
    );
  }
  ok(
    await first.request("POST", "table/swap/upload/json", { body: { data: [{ tag: "start" }] } }),
  );
  uploads.push({ tag: "start", count: 1, acked: true });

  const send = async (
    via: TestServer,
    kind: Kind,
    method: string,
    path: string,
    body?: unknown,
  ) => {
    requests++;
    let answer: Answer;
    try {
      answer = await via.request(method, path, body === undefined ? {} : { body });
    } catch (error) {
      failures.push(`${method} ${path}: no answer (${error})`);
      return undefined;
    }
    if (answer.status >= 500) {
      serverErrors++;
      failures.push(`${method} ${path}: ${answer.status} ${answer.text.slice(0, 200)}`);
    } else if (answer.status === 200) acknowledged[kind]++;
    return answer;
  };

  const deadline = Date.now() + seconds * 1000;
  const client = async (n: number) => {
    const via = servers[n % servers.length]!;
    const next = seededRandom(seed * 1000 + n);
    let counter = 0;
    while (Date.now() < deadline) {
      const choice = next();
      const table = SHARED[Math.floor(next() * SHARED.length)]!;
      counter++;
      if (choice < 0.45) {
        const ids = Array.from(
          { length: 1 + Math.floor(next() * 20) },
          (_, i) => (n + 1) * 10_000_000 + counter * 100 + i,
        );
        const answer = await send(
          via,
          "insert",
          "POST",
          `table/${table}/records`,
          ids.map((id) => ({ id, client: n, note: `c${n}` })),
        );
        const record = rows.get(table)!;
        if (answer?.status === 200) ids.forEach((id) => record.acked.add(id));
        else if (answer === undefined) ids.forEach((id) => record.unknown.add(id));
        else failures.push(`insert into ${table}: ${answer.status} ${answer.text.slice(0, 200)}`);
      } else if (choice < 0.6) {
        const tag = `c${n}-${counter}`;
        const count = 1 + Math.floor(next() * 200);
        const answer = await send(
          via,
          "replace",
          "POST",
          "table/swap/upload/json?if_exists=replace",
          {
            data: Array.from({ length: count }, () => ({ tag })),
          },
        );
        if (answer?.status === 200 || answer === undefined) {
          uploads.push({ tag, count, acked: answer !== undefined });
        } else failures.push(`replace: ${answer.status} ${answer.text.slice(0, 200)}`);
      } else if (choice < 0.75) {
        // Add a column to the definition as read; on 409 someone else came first: read again.
        const column = `x_${n}_${counter}`;
        for (let attempt = 0; attempt < 20; attempt++) {
          // Read through one instance and change through the next: the tag must hold across.
          const reader = servers[(n + attempt) % servers.length]!;
          const writer = servers[(n + attempt + 1) % servers.length]!;
          const read = await send(reader, "read", "GET", `table/${table}`);
          if (read?.status !== 200) break;
          const current = read.body.table;
          const columns = [...current.columns, { name: column, type: "varchar" }];
          // Now and then the new column goes first, which rebuilds the table.
          if (next() < 0.2) columns.unshift(columns.pop());
          requests++;
          const answer = await writer.request("PUT", `table/${table}`, {
            body: { table: { columns } },
            headers: { "if-match": read.headers.get("etag") ?? "" },
          });
          if (answer.status === 409 && answer.body?.error?.type === "edit_conflict") {
            editConflicts++;
            continue;
          }
          if (answer.status === 200) {
            acknowledged.update++;
            addedColumns.get(table)!.add(column);
          } else {
            if (answer.status >= 500) serverErrors++;
            failures.push(`PUT ${table}: ${answer.status} ${answer.text.slice(0, 200)}`);
          }
          break;
        }
      } else {
        const reads: [string, string][] = [
          ["GET", `table/${table}/records?limit=50`],
          ["GET", `table/${table}`],
          ["GET", "table?verbose=true"],
          ["GET", "table/swap/records/csv"],
        ];
        const [method, path] = reads[Math.floor(next() * reads.length)]!;
        const answer = await send(via, "read", method, path);
        if (answer && answer.status !== 200) {
          failures.push(`${method} ${path}: ${answer.status} ${answer.text.slice(0, 200)}`);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, n) => client(n)));

  let lostRows = 0;
  let lostColumns = 0;
  for (const table of SHARED) {
    const present = new Set<number>();
    for (let offset = 0;; offset += 10_000) {
      const page = ok(
        await last.request("GET", `table/${table}/records?limit=10000&offset=${offset}`),
      );
      for (const record of page.records) present.add(Number(record.id));
      if (page.records.length < 10_000) break;
    }
    const { acked, unknown } = rows.get(table)!;
    const lost = [...acked].filter((id) => !present.has(id));
    lostRows += lost.length;
    if (lost.length > 0) failures.push(`${table}: ${lost.length} acknowledged rows are missing`);
    const phantom = [...present].filter((id) => !acked.has(id) && !unknown.has(id));
    if (phantom.length > 0) failures.push(`${table}: ${phantom.length} rows nobody acknowledged`);
    const { table: definition } = ok(await last.request("GET", `table/${table}`));
    const names = new Set(definition.columns.map((c: { name: string }) => c.name));
    const missing = [...addedColumns.get(table)!].filter((c) => !names.has(c));
    lostColumns += missing.length;
    if (missing.length > 0) failures.push(`${table}: added columns missing: ${missing.join(", ")}`);
  }
  const swapped = ok(await last.request("GET", "table/swap/records?limit=10000")).records as {
    tag: string;
  }[];
  const tags = new Set(swapped.map((r) => r.tag));
  const upload = uploads.find((u) => tags.size === 1 && tags.has(u.tag));
  if (!upload || upload.count !== swapped.length) {
    failures.push(
      `swap holds ${swapped.length} rows of tags ${[...tags].join(", ")}: no one upload`,
    );
  }
  return {
    clients,
    seconds,
    requests,
    acknowledged,
    editConflicts,
    serverErrors,
    lostRows,
    lostColumns,
    failures,
  };
}
