/**
 * The PostgreSQL database: a pool of connections from `DATABASE_URL`, sessions (one
 * connection for one unit of work) and transactions on them; every error a session throws
 * is answered as {@link engineError} says.
 *
 * @module
 */

import { pipeline } from "node:stream/promises";
// @ts-types="@types/pg"
import pg from "pg";
// @ts-types="@types/pg-copy-streams"
import { from as copyFrom } from "pg-copy-streams";
import { ApiError } from "../../errors.ts";
import { Lru } from "../../lru.ts";
import type { Logger } from "../../log.ts";
import { explained } from "./engine_errors.ts";
import { escapedLiteral } from "./sql.ts";

/** How to reach the database. */
export interface DatabaseOptions {
  /** A `postgres://` or `postgresql://` URL, as `DATABASE_URL` gives it. */
  readonly url: string;
  /** Most connections held at once; 10 unless told. */
  readonly maxConnections?: number;
  /** How long a unit of work waits for a free connection before it is 503; 10 s unless told. */
  readonly connectionWaitMs?: number;
  /** Where failures of idle connections are reported. */
  readonly logger?: Logger;
}

/** A value bound to a `$n` parameter. */
export type Param = string | number | bigint | boolean | null | readonly unknown[];

/**
 * A statement each connection prepares once under its name, which PostgreSQL plans once for
 * any parameters after a few runs: for the metadata reads of every request, whose planning
 * (a join over the catalog) costs several times their run. Its text must never vary.
 */
export interface Prepared {
  readonly name: string;
  readonly text: string;
}

/** A statement's text, or a {@link Prepared} one. */
export type Statement = string | Prepared;

/** One connection, held for one unit of work. */
export interface Session {
  /** The rows of one statement, its `$n` parameters bound to `params`. */
  rows(sql: Statement, params?: readonly Param[]): Promise<Record<string, unknown>[]>;
  /** Runs one statement; answers the number of rows it touched. */
  run(sql: Statement, params?: readonly Param[]): Promise<number>;
  /** `values` as one parameter: node-postgres binds an array as PostgreSQL's array text. */
  list(values: readonly (string | number)[]): Param;
  /**
   * The rows of one statement as arrays of PostgreSQL's own text of each value (null for
   * NULL), unparsed, and its result's fields with their type oids: for rendering values
   * exactly as the server wrote them (a timestamp's microseconds, a numeric's digits).
   */
  texts(sql: string, params?: readonly Param[]): Promise<TextResult>;
  /** Runs one `COPY … FROM STDIN` fed with `bytes`; answers the number of rows it copied. */
  copyIn(sql: string, bytes: AsyncIterable<Uint8Array>): Promise<number>;
  /**
   * Runs `sql` (as in {@link batch}) and commits the session's transaction in the same
   * round trip; answers the rows it gave and the number it touched. When it fails the
   * transaction is left to roll back.
   */
  runAndCommit(sql: Batched): Promise<{ rows: Record<string, unknown>[]; count: number }>;
  /**
   * Runs `statements` (text without parameters, or a prepared statement with its arguments,
   * written as escaped literals) as one simple query, one round trip; answers each one's
   * rows. A prepared statement is prepared by SQL on the connection the first time.
   */
  batch(statements: readonly Batched[]): Promise<Record<string, unknown>[][]>;
}

/** A statement of a {@link Session.batch}. */
export type Batched = string | { readonly prepared: Prepared; readonly args: readonly string[] };

/** Longest a call of {@link Database.aside} runs. */
const ASIDE_MS = 10_000;

/** The statements each connection has prepared by SQL (`PREPARE`), by name. */
const PREPARED_BY_SQL = new WeakMap<pg.PoolClient, Lru<string, true>>();
/**
 * Most statements a connection keeps prepared by SQL: the few every request runs, and inserts
 * of the tables written to most (a name per statement text).
 */
const MOST_PREPARED_BY_SQL = 64;

/** A result as {@link Session.texts} gives it. */
export interface TextResult {
  readonly fields: readonly { name: string; typeId: number; typeModifier: number }[];
  readonly rows: readonly (readonly (string | null)[])[];
}

/** Keeps every value as the server's text. */
const AS_TEXT = { getTypeParser: () => (value: string) => value };

/** The pool and the count of open transactions. */
export class Database {
  readonly #pool: pg.Pool;
  readonly #options: DatabaseOptions;
  #transactions = 0;
  /** The connection of {@link aside}, once it has been asked for. */
  #aside: Promise<pg.Client> | undefined;
  /** The last {@link aside} call, which the next one waits for. */
  #asideDone: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(pool: pg.Pool, options: DatabaseOptions) {
    this.#pool = pool;
    this.#options = options;
  }

  /** Opens the pool and checks that one connection can be had. */
  static async open(options: DatabaseOptions): Promise<Database> {
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.maxConnections ?? 10,
      connectionTimeoutMillis: options.connectionWaitMs ?? 10_000,
      application_name: "table-service",
    });
    // An idle connection the server closes must not take the process down.
    pool.on("error", (error) => {
      options.logger?.log("warn", "an idle database connection failed", { error: error.message });
    });
    const database = new Database(pool, options);
    try {
      await database.withSession((session) => session.run("SELECT 1"));
    } catch (error) {
      await pool.end().catch(() => {});
      throw error;
    }
    return database;
  }

  /** Transactions open at this moment. */
  get openTransactions(): number {
    return this.#transactions;
  }

  /**
   * Counts a transaction opened outside {@link transaction} (a stream's, held past any
   * callback) among {@link openTransactions}; the answer uncounts it, once however often it
   * is called.
   */
  countTransaction(): () => void {
    this.#transactions++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#transactions--;
    };
  }

  /**
   * Runs `work` on one connection of the pool, returned to it afterwards; a connection whose
   * work failed otherwise than with the server's answer or the contract's (a lost connection,
   * a bug), or that is still inside a transaction, is thrown away rather than reused.
   */
  withSession<T>(work: (session: Session) => Promise<T>): Promise<T> {
    return this.#withClient((client) => work(sessionOf(client)));
  }

  async #withClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw explained(error);
    }
    let broken: Error | undefined;
    try {
      return await work(client);
    } catch (error) {
      // An ApiError is thrown between statements (a table not found, a conflict): the
      // connection is as sound as after the server's own error, and opening another costs
      // more than the request.
      const answered = error instanceof ApiError ||
        (error instanceof Error && "code" in error && /^[0-9A-Z]{5}$/.test(String(error.code)));
      // Otherwise the connection may be in any state.
      if (error instanceof Error && !answered) broken = error;
      throw explained(error);
    } finally {
      client.release(broken ?? leftInTransaction(client));
    }
  }

  /**
   * Runs `work` in one transaction on one connection: committed when it returns, rolled
   * back when it throws. The `openingStatements` (locks, a check) run first, in the same
   * round trip as the `BEGIN` and the work's first statement when it can go there.
   */
  transaction<T>(
    work: (session: Session) => Promise<T>,
    openingStatements: readonly Batched[] = [],
  ): Promise<T> {
    return this.#withClient(async (client) => {
      // BEGIN goes with the first statement (see sessionOf): a round trip fewer.
      const opening = { open: false, with: openingStatements };
      const session = sessionOf(client, opening);
      this.#transactions++;
      try {
        const result = await work(session);
        if (opening.open) await session.run("COMMIT");
        return result;
      } catch (error) {
        if (opening.open) await session.run("ROLLBACK").catch(() => {});
        throw error;
      } finally {
        this.#transactions--;
      }
    });
  }

  /**
   * Runs `statements` as one simple query (so in one transaction of their own) on a
   * connection outside the pool, one call at a time: for what a transaction that holds locks
   * needs committed apart from it. Taking a second connection from the pool instead could
   * wait forever for one held by its own locks' waiters. A lock the statements wait
   * `lockWaitMs` for fails them (55P03), and so does a call that takes 10 s.
   */
  aside(
    statements: readonly string[],
    lockWaitMs: number,
  ): Promise<Record<string, unknown>[][]> {
    const run = this.#asideDone.then(async () => {
      if (this.#closed) throw new Error("The database is closed");
      const connecting = this.#aside ??= this.#asideClient();
      try {
        const client = await connecting;
        const limits = [
          `SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockWaitMs))}`,
          `SET LOCAL statement_timeout = ${ASIDE_MS}`,
        ];
        const results = await client.query(
          [...limits, ...statements].join(";\n"),
        ) as unknown as pg.QueryResult[];
        return results.slice(limits.length).map((r) => r.rows);
      } catch (error) {
        // But for a lock not had in time, the connection is let go: a server that ended it
        // (57P01) or a lost socket says so only later, and a new one costs a few ms.
        if (!(error instanceof Error && "code" in error && error.code === "55P03")) {
          if (this.#aside === connecting) this.#aside = undefined;
          connecting.then((client) => client.end()).catch(() => {});
        }
        throw explained(error);
      }
    });
    this.#asideDone = run.catch(() => {});
    return run;
  }

  #asideClient(): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: this.#options.url,
      application_name: "table-service",
      connectionTimeoutMillis: this.#options.connectionWaitMs ?? 10_000,
      query_timeout: ASIDE_MS + 1_000,
      keepAlive: true,
    });
    const connecting = client.connect().then(() => client);
    // A connection the server closes is opened anew by the next call.
    client.on("error", () => {
      if (this.#aside === connecting) this.#aside = undefined;
    });
    return connecting;
  }

  /** Whether a connection can be had and answers. */
  async usable(): Promise<boolean> {
    try {
      await this.withSession((session) => session.run("SELECT 1"));
      return true;
    } catch {
      return false;
    }
  }

  /** Closes every connection; waits for those in use to be returned. */
  async close(): Promise<void> {
    // The work still running may need the connection aside until it gives its own back.
    await this.#pool.end();
    this.#closed = true;
    const aside = await this.#aside?.catch(() => undefined);
    this.#aside = undefined;
    await aside?.end().catch(() => {});
  }
}

/**
 * Why `client` may not go back to the pool: a transaction still open on it (a ROLLBACK that
 * failed, work that returned before ending what it began) would hand its uncommitted changes
 * and its locks to the next unit of work, whose COMMIT would make them permanent. Thrown away,
 * the connection's transaction is rolled back by the server.
 */
function leftInTransaction(client: pg.PoolClient): Error | undefined {
  // pg ≥ 8.14 keeps the status of the last ReadyForQuery: I idle, T in a transaction, E failed.
  const status = (client as { getTransactionStatus?: () => string | null })
    .getTransactionStatus?.();
  return status === "T" || status === "E"
    ? new Error("The connection was given back inside a transaction")
    : undefined;
}

/**
 * Every transaction's start: read committed whatever the database's default, so that each
 * statement after its locks sees what committed before it got them (a description's check
 * above all; docs/decisions.md). A transaction that wants one snapshot says so first.
 */
const BEGIN = "BEGIN ISOLATION LEVEL READ COMMITTED";

/** A transaction a session is to begin before its first statement, with statements of its own. */
interface Opening {
  open: boolean;
  /** Statements that go with the `BEGIN`, before the session's first one. */
  readonly with: readonly Batched[];
}

/**
 * A session on `client`. With `opening`, a transaction is to begin before the first
 * statement: the `BEGIN` and the opening's statements go with that statement when it is text
 * without parameters (one simple query, one round trip), else before it.
 */
function sessionOf(client: pg.PoolClient, opening?: Opening): Session {
  // The texts of `statements`; a prepared statement is prepared by SQL on the connection the
  // first time, outside any transaction it may be in: a prepared statement is the session's.
  const texts = async (statements: readonly Batched[]) => {
    const prepared = PREPARED_BY_SQL.get(client) ?? new Lru<string, true>(MOST_PREPARED_BY_SQL);
    PREPARED_BY_SQL.set(client, prepared);
    const sent: string[] = [];
    for (const statement of statements) {
      if (typeof statement === "string") {
        sent.push(statement);
        continue;
      }
      // Its own name: node-postgres prepares `prepared.name` by the protocol and keeps count.
      const name = `sql_${statement.prepared.name}`;
      if (!prepared.get(name)) {
        await client.query(`PREPARE ${name} AS ${statement.prepared.text}`);
        const [forgotten] = prepared.set(name, true) ?? [];
        if (forgotten) await client.query(`DEALLOCATE ${forgotten}`);
      }
      sent.push(`EXECUTE ${name}(${statement.args.map(escapedLiteral).join(", ")})`);
    }
    return sent;
  };
  // `statements` as one simple query, after the BEGIN and the opening's statements while the
  // transaction is still to begin; answers the results of `statements`.
  const simple = async (statements: readonly Batched[]) => {
    const head = opening && !opening.open ? [BEGIN, ...await texts(opening.with)] : [];
    const sent = [...head, ...await texts(statements)];
    if (opening) opening.open = true;
    if (sent.length === 0) return [];
    const results = await client.query(sent.join(";\n")) as unknown as
      | pg.QueryResult
      | pg.QueryResult[];
    return (Array.isArray(results) ? results : [results]).slice(head.length);
  };
  const begin = async (sql?: Statement, params?: readonly Param[]) => {
    if (!opening || opening.open) return undefined;
    if (typeof sql === "string" && params?.length === 0) return (await simple([sql]))[0]!;
    await simple([]);
    return undefined;
  };
  const query = async (sql: Statement, params: readonly Param[]) =>
    await begin(sql, params) ??
      await client.query(
        typeof sql === "string"
          ? { text: sql, values: params as unknown[] }
          : { name: sql.name, text: sql.text, values: params as unknown[] },
      );
  return {
    async rows(sql, params = []) {
      return (await query(sql, params)).rows;
    },
    async run(sql, params = []) {
      return (await query(sql, params)).rowCount ?? 0;
    },
    list: (values) => values,
    async texts(sql, params = []) {
      await begin();
      const result = await client.query<(string | null)[]>({
        text: sql,
        values: params as unknown[],
        rowMode: "array",
        types: AS_TEXT,
      });
      return {
        fields: result.fields.map((f) => ({
          name: f.name,
          typeId: f.dataTypeID,
          typeModifier: f.dataTypeModifier,
        })),
        rows: result.rows,
      };
    },
    async batch(statements) {
      return (await simple(statements)).map((r) => r.rows);
    },
    async runAndCommit(sql) {
      const [result] = await simple([sql, "COMMIT"]);
      if (opening) opening.open = false;
      return { rows: result!.rows, count: result!.rowCount ?? 0 };
    },
    async copyIn(sql, bytes) {
      await begin();
      const copy = client.query(copyFrom(sql));
      await pipeline(bytes, copy);
      return Number(copy.rowCount);
    },
  };
}

/**
 * `session`, in its open transaction, with each statement in a savepoint of its own, so that
 * one that fails (a probe: a default that is no value of its type) leaves the transaction
 * usable. A transaction that holds locks probes this way rather than on a second connection:
 * waiting for one from a pool its own lock's waiters have filled would never end.
 */
export function probing(session: Session): Session {
  const saved = async <T>(statement: () => Promise<T>): Promise<T> => {
    await session.run("SAVEPOINT probe");
    try {
      const result = await statement();
      await session.run("RELEASE SAVEPOINT probe");
      return result;
    } catch (error) {
      await session.run("ROLLBACK TO SAVEPOINT probe");
      throw error;
    }
  };
  return {
    rows: (sql, params) => saved(() => session.rows(sql, params)),
    run: (sql, params) => saved(() => session.run(sql, params)),
    list: (values) => session.list(values),
    texts: (sql, params) => saved(() => session.texts(sql, params)),
    copyIn: (sql, bytes) => saved(() => session.copyIn(sql, bytes)),
    runAndCommit: (sql) => session.runAndCommit(sql),
    batch: (statements) => saved(() => session.batch(statements)),
  };
}
