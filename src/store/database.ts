/**
 * The DuckDB instance: opened hardened, handing out one connection per unit of work.
 *
 * @module
 */

import { type DuckDBConnection, DuckDBInstance, type DuckDBValue, type JS } from "@duckdb/node-api";
import { quoteLiteral } from "./sql.ts";

/** A row as read back: DuckDB values converted to JavaScript, full precision kept. */
export type Row = Record<string, JS>;

/** Connections kept open between units of work. */
const MAX_IDLE_CONNECTIONS = 8;

/** Where the database lives and the one directory its file readers may touch. */
export interface DatabaseOptions {
  readonly path: string;
  /** Absolute directory DuckDB's readers may access; every other path is refused. */
  readonly spoolDir: string;
  /** Absolute directory for DuckDB's spill files. */
  readonly tempDir: string;
  /** DuckDB's memory limit in bytes (DuckDB's own default, 80% of RAM, when absent). */
  readonly memoryBytes?: number;
}

/**
 * One connection for one unit of work. Sharing a connection between overlapping queries
 * is unsafe in the DuckDB bindings, so a session is never used by two requests at once.
 */
export class Session {
  constructor(readonly connection: DuckDBConnection) {}

  /** Runs one statement with bound values and returns its rows. */
  async rows(sql: string, values: DuckDBValue[] = []): Promise<Row[]> {
    const reader = await this.connection.runAndReadAll(sql, values);
    return reader.getRowObjectsJS();
  }

  /** Runs one statement with bound values, ignoring any result. */
  async run(sql: string, values: DuckDBValue[] = []): Promise<void> {
    await this.connection.run(sql, values);
  }
}

/**
 * The open database.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Database } from "./database.ts";
 *
 * const dir = await Deno.makeTempDir();
 * const db = await Database.open({ path: ":memory:", spoolDir: dir, tempDir: dir });
 * const rows = await db.withSession((s) => s.rows("SELECT 40 + 2 AS answer"));
 * assert.equal(rows[0]?.answer, 42);
 * await db.close();
 * ```
 */
export class Database {
  readonly #idle: DuckDBConnection[] = [];
  #active = 0;
  #closed = false;

  private constructor(private readonly instance: DuckDBInstance) {}

  /**
   * Opens (creating if needed) the database file with extensions off, file access confined
   * to the spool directory, and the configuration locked against later `SET`s.
   */
  static async open(options: DatabaseOptions): Promise<Database> {
    const instance = await DuckDBInstance.create(options.path, {
      autoinstall_known_extensions: "false",
      autoload_known_extensions: "false",
      allow_community_extensions: "false",
      temp_directory: options.tempDir,
      ...(options.memoryBytes
        ? { memory_limit: `${Math.max(1, Math.floor(options.memoryBytes / 1024 ** 2))}MiB` }
        : {}),
    });
    const database = new Database(instance);
    await database.withSession(async (session) => {
      // Order matters: each SET below would be refused after the next one.
      await session.run(`SET allowed_directories=[${quoteLiteral(`${options.spoolDir}/`)}]`);
      // GLOBAL: every later connection renders and reads times in UTC, whatever the
      // machine's zone; a plain SET would reach only this connection.
      await session.run("SET GLOBAL TimeZone='UTC'");
      await session.run("SET enable_external_access=false");
      await session.run("SET lock_configuration=true");
    });
    return database;
  }

  /** Runs `work` on a connection of its own. */
  async withSession<T>(work: (session: Session) => Promise<T>): Promise<T> {
    if (this.#closed) throw new Error("The database is closed");
    const connection = this.#idle.pop() ?? await this.instance.connect();
    this.#active++;
    let healthy = true;
    try {
      return await work(new Session(connection));
    } catch (error) {
      healthy = false;
      throw error;
    } finally {
      this.#active--;
      if (healthy && !this.#closed && this.#idle.length < MAX_IDLE_CONNECTIONS) {
        this.#idle.push(connection);
      } else {
        connection.closeSync();
      }
    }
  }

  /**
   * Streams the text of the first column of each result row, one line each, after `first`.
   * The connection is held until the stream ends or is cancelled, so a slow client holds a
   * connection, not the result.
   */
  streamLines(first: string, sql: string, values: DuckDBValue[] = []): ReadableStream<Uint8Array> {
    const encoder = new TextEncoder();
    let connection: DuckDBConnection | undefined;
    let result: Awaited<ReturnType<DuckDBConnection["stream"]>> | undefined;
    const release = () => {
      if (!connection) return;
      this.#active--;
      connection.closeSync();
      connection = undefined;
    };
    return new ReadableStream<Uint8Array>({
      start: async (controller) => {
        if (this.#closed) throw new Error("The database is closed");
        connection = await this.instance.connect();
        this.#active++;
        try {
          // A snapshot: the export is consistent even while writers go on.
          await connection.run("BEGIN TRANSACTION");
          result = await connection.stream(sql, values);
        } catch (error) {
          release();
          throw error;
        }
        controller.enqueue(encoder.encode(`${first}\n`));
      },
      pull: async (controller) => {
        try {
          const chunk = await result!.fetchChunk();
          if (!chunk || chunk.rowCount === 0) {
            await connection?.run("COMMIT").catch(() => {});
            release();
            controller.close();
            return;
          }
          const lines = chunk.getColumnValues(0) as string[];
          controller.enqueue(encoder.encode(`${lines.join("\n")}\n`));
        } catch (error) {
          release();
          controller.error(error);
        }
      },
      cancel: () => release(),
    }, { highWaterMark: 1 });
  }

  /**
   * Runs `work` in one transaction on a connection of its own: committed when `work`
   * returns, rolled back when it throws.
   */
  transaction<T>(work: (session: Session) => Promise<T>): Promise<T> {
    return this.withSession(async (session) => {
      await session.run("BEGIN TRANSACTION");
      let result: T;
      try {
        result = await work(session);
      } catch (error) {
        await session.run("ROLLBACK").catch(() => {});
        throw error;
      }
      await session.run("COMMIT");
      return result;
    });
  }

  /** Connections currently doing work. */
  get activeSessions(): number {
    return this.#active;
  }

  /** Writes everything to the database file and closes it. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.withSession((session) => session.run("CHECKPOINT"));
    this.#closed = true;
    for (const connection of this.#idle.splice(0)) connection.closeSync();
    this.instance.closeSync();
  }
}
