/**
 * One client connection of the PostgreSQL protocol once authenticated (link.ts): simple and
 * extended queries. Queries go to a {@link WireSession} held for one statement's implicit
 * transaction or for `BEGIN` … `COMMIT`; transaction control, settings and prepared
 * statements are the listener's own.
 *
 * @module
 */

import type { QueryParam, QueryRequest, WireColumn, WireSession } from "../service/wire.ts";
import { dataRow, errorResponse, notice, rowDescription } from "./backend.ts";
import type { Portal, Prepared } from "./connection_types.ts";
import { asWireError, WireError } from "./errors.ts";
import { Link } from "./link.ts";
import { BodyReader, type Message } from "./messages.ts";
import { setTo, splitStatements, type StatementKind, statementKind } from "./statements.ts";
import { BadParameter, paramValue } from "./parameters.ts";
import { answeredQuery } from "./session_queries.ts";

export type { ConnectionDeps, ConnectionObserver, QueryRecord } from "./connection_types.ts";

/** Rows fetched from the store at a time. */
const BATCH_ROWS = 1_000;

/** Bytes written to the socket at once while rows stream. */
const WRITE_BYTES = 256 * 1024;

/** One client connection. */
export class Connection extends Link {
  /** The engine session of the transaction under way, implicit or not. */
  #session?: WireSession;
  #opening?: Promise<WireSession>;
  readonly #statements = new Map<string, Prepared>();
  readonly #portals = new Map<string, Portal>();
  /** After an error in the extended protocol, messages are skipped until Sync. */
  #skipping = false;
  #cancelled = false;

  protected authenticated(): void {
    this.deps.register(this);
  }

  protected connected(): void {
    this.deps.observe.connected(this);
  }

  protected closed(reason: string): void {
    this.deps.observe.closed(this, reason);
  }

  protected interrupt(): void {
    this.#session?.cancel();
  }

  protected async message({ type, body }: Message): Promise<void> {
    const kind = String.fromCharCode(type);
    if (kind === "X") return this.close("terminated");
    if (this.#skipping && kind !== "S") return;
    const reader = new BodyReader(body);
    try {
      switch (kind) {
        case "Q":
          return await this.#simpleQuery(reader.cstring());
        case "P":
          return await this.#parse(reader);
        case "B":
          return this.#bind(reader);
        case "D":
          return await this.#describe(reader);
        case "E":
          return await this.#execute(reader);
        case "C":
          return this.#close(reader);
        case "H":
          return await this.flush();
        case "S":
          return await this.#sync();
        case "d":
        case "c":
        case "f":
          // COPY data with no COPY under way: ignored, as PostgreSQL does.
          return;
        default:
          throw new WireError("08P01", `invalid frontend message type ${type}`);
      }
    } catch (error) {
      if (error instanceof RangeError) {
        throw error;
      }
      this.#error(error);
      this.#skipping = true;
    }
  }

  /** Sends an ErrorResponse for `error`; a transaction block fails with it. */
  #error(error: unknown): void {
    const wire = asWireError(error, this.#cancelled);
    this.#cancelled = false;
    errorResponse(this.out, wire);
    if (this.status === "T") this.status = "E";
  }

  async #simpleQuery(text: string): Promise<void> {
    const statements = splitStatements(text);
    if (statements.length === 0) this.out.begin("I").end();
    this.#single = statements.length === 1;
    for (const sql of statements) {
      const statement: Prepared = { sql, kind: statementKind(sql), paramTypes: [] };
      const portal: Portal = { statement, params: [], formats: [], done: false };
      try {
        await this.#run(portal, 0, true);
      } catch (error) {
        this.#error(error);
        break;
      }
    }
    // A message's statements outside a block are one implicit transaction.
    this.#single = false;
    if (this.status === "I") await this.endSession();
    this.ready();
    await this.flush();
  }

  async #parse(reader: BodyReader): Promise<void> {
    const name = reader.cstring();
    const sql = reader.cstring();
    const count = reader.int16();
    const paramTypes: number[] = [];
    for (let i = 0; i < count; i++) paramTypes.push(reader.int32());
    if (name !== "" && this.#statements.has(name)) {
      throw new WireError("42P05", `prepared statement "${name}" already exists`);
    }
    const statements = splitStatements(sql);
    if (statements.length > 1) {
      throw new WireError("42601", "cannot insert multiple commands into a prepared statement");
    }
    const text = statements[0] ?? "";
    const kind: StatementKind = text === "" ? { kind: "query" } : statementKind(text);
    // PostgreSQL parses and analyses a statement at Parse: a syntax error, a table that does
    // not exist or one out of reach is reported here, not at Bind or Execute.
    if (kind.kind === "query" && text !== "" && !answeredQuery(kind, text, this.settings!, this)) {
      this.#checkAborted(kind);
      await (await this.#engine()).check(this.#request(text, []));
    }
    this.#statements.set(name, { sql: text, kind, paramTypes });
    this.out.begin("1").end();
  }

  #bind(reader: BodyReader): void {
    const portalName = reader.cstring();
    const statementName = reader.cstring();
    const statement = this.#statements.get(statementName);
    if (statement === undefined) {
      throw new WireError("26000", `prepared statement "${statementName}" does not exist`);
    }
    const formatCount = reader.int16();
    const paramFormats: number[] = [];
    for (let i = 0; i < formatCount; i++) paramFormats.push(reader.int16());
    const count = reader.int16();
    const params: QueryParam[] = [];
    for (let i = 0; i < count; i++) {
      const length = reader.int32();
      const bytes = length < 0 ? null : reader.bytes(length);
      const format = paramFormats.length === 1 ? paramFormats[0]! : paramFormats[i] ?? 0;
      const declared = statement.paramTypes[i] || statement.described?.params[i] || 0;
      try {
        params.push(paramValue(declared, format, bytes));
      } catch (error) {
        if (error instanceof BadParameter) throw new WireError("22P02", error.message);
        throw error;
      }
    }
    const resultCount = reader.int16();
    const formats: number[] = [];
    for (let i = 0; i < resultCount; i++) formats.push(reader.int16());
    const old = this.#portals.get(portalName);
    if (old && portalName !== "") {
      throw new WireError("42P03", `cursor "${portalName}" already exists`);
    }
    void old?.rows?.close();
    this.#portals.set(portalName, { statement, params, formats, done: false });
    this.out.begin("2").end();
  }

  async #describe(reader: BodyReader): Promise<void> {
    const what = String.fromCharCode(reader.byte());
    const name = reader.cstring();
    if (what === "S") {
      const statement = this.#statements.get(name);
      if (statement === undefined) {
        throw new WireError("26000", `prepared statement "${name}" does not exist`);
      }
      const described = await this.#describeStatement(statement);
      this.out.begin("t").int16(described.params.length);
      for (const oid of described.params) this.out.int32(oid);
      this.out.end();
      rowDescription(this.out, described.columns, []);
      return;
    }
    const portal = this.#portals.get(name);
    if (portal === undefined) throw new WireError("34000", `portal "${name}" does not exist`);
    const columns = await this.#portalColumns(portal);
    rowDescription(this.out, columns, portal.formats);
  }

  /** The parameter types and columns of a statement, asked of the store once. */
  async #describeStatement(
    statement: Prepared,
  ): Promise<{ columns: readonly WireColumn[]; params: readonly number[] }> {
    if (statement.described) return statement.described;
    const answered = answeredQuery(statement.kind, statement.sql, this.settings!, this);
    let described: { columns: readonly WireColumn[]; params: readonly number[] };
    if (answered) described = { columns: answered.columns, params: [] };
    else if (statement.kind.kind === "query") {
      this.#checkAborted(statement.kind);
      const session = await this.#engine();
      described = await session.describe(this.#request(statement.sql, []));
    } else described = { columns: [], params: [] };
    // A declared type wins; an unknown one is sent as text.
    const params = described.params.map((oid, i) => statement.paramTypes[i] || oid || 25);
    for (let i = params.length; i < statement.paramTypes.length; i++) {
      params.push(statement.paramTypes[i]!);
    }
    statement.described = { columns: described.columns, params };
    return statement.described;
  }

  /** A portal's columns: its query is started to learn them (PostgreSQL plans at Bind). */
  async #portalColumns(portal: Portal): Promise<readonly WireColumn[]> {
    const answered = answeredQuery(
      portal.statement.kind,
      portal.statement.sql,
      this.settings!,
      this,
    );
    if (answered) return answered.columns;
    if (portal.statement.kind.kind !== "query") return [];
    if (portal.statement.sql === "") return [];
    this.#checkAborted(portal.statement.kind);
    portal.rows ??= await (await this.#engine()).open(
      this.#request(portal.statement.sql, portal.params),
    );
    return portal.rows.columns;
  }

  async #execute(reader: BodyReader): Promise<void> {
    const name = reader.cstring();
    const limit = reader.int32();
    const portal = this.#portals.get(name);
    if (portal === undefined) throw new WireError("34000", `portal "${name}" does not exist`);
    await this.#run(portal, limit, false);
  }

  /**
   * Runs a portal: a query's rows (at most `limit`, 0 for all; PortalSuspended when more
   * remain) then its CommandComplete, or a command's answer. `describe`: send its
   * RowDescription first, as a simple query does.
   */
  async #run(portal: Portal, limit: number, describe: boolean): Promise<void> {
    const { statement } = portal;
    const { kind } = statement;
    const began = performance.now();
    let rows = 0;
    let code = "00000";
    // A CancelRequest that came between statements cancels nothing.
    this.#cancelled = false;
    try {
      if (statement.sql === "") {
        this.out.begin("I").end();
        return;
      }
      this.#checkAborted(kind);
      const answered = answeredQuery(kind, statement.sql, this.settings!, this);
      if (answered) {
        if (describe) rowDescription(this.out, answered.columns, portal.formats);
        for (const row of answered.rows) dataRow(this.out, answered.columns, row, portal.formats);
        rows = answered.rows.length;
        this.#complete(answered.tag ?? `SELECT ${rows}`);
        return;
      }
      if (kind.kind !== "query") {
        this.#complete(await this.#command(kind, statement.sql));
        return;
      }
      if (portal.done) {
        this.#complete("SELECT 0");
        return;
      }
      const session = await this.#engine();
      portal.rows ??= await session.open(this.#request(statement.sql, portal.params));
      const result = portal.rows;
      if (describe) rowDescription(this.out, result.columns, portal.formats);
      const want = limit > 0 ? limit : Infinity;
      // Messages the engine built whole are sent as they are when every column is in text.
      const whole = result.nextDataRows && portal.formats.every((format) => format === 0);
      while (rows < want) {
        const size = Math.min(BATCH_ROWS, want - rows);
        let count: number;
        if (whole) {
          const messages = await result.nextDataRows!(size);
          for (const message of messages) this.out.bytes(message);
          count = messages.length;
        } else {
          const batch = await result.next(size);
          for (const row of batch) dataRow(this.out, result.columns, row, portal.formats);
          count = batch.length;
        }
        rows += count;
        if (this.out.length >= WRITE_BYTES) await this.flush();
        if (count < size) {
          portal.done = true;
          break;
        }
      }
      if (!portal.done && limit > 0) {
        this.out.begin("s").end();
        return;
      }
      portal.done = true;
      await result.close();
      this.#complete(`SELECT ${rows}`);
    } catch (error) {
      code = asWireError(error, this.#cancelled).code;
      throw error;
    } finally {
      this.queries++;
      this.deps.observe.query(this, {
        sql: statement.sql,
        code,
        rows,
        seconds: (performance.now() - began) / 1000,
      });
    }
  }

  #complete(tag: string): void {
    this.out.begin("C").cstring(tag).end();
  }

  /** 25P02 for anything but the end of a failed transaction block. */
  #checkAborted(kind: StatementKind): void {
    if (this.status !== "E" || kind.kind === "commit" || kind.kind === "rollback") return;
    throw new WireError(
      "25P02",
      "current transaction is aborted, commands ignored until end of transaction block",
    );
  }

  /** A command the listener answers itself; its tag. */
  async #command(kind: StatementKind, sql: string): Promise<string> {
    const settings = this.settings!;
    switch (kind.kind) {
      case "begin":
        if (this.status !== "I") {
          notice(this.out, "there is already a transaction in progress", "25001");
        } else {
          // An implicit transaction under way (a query before BEGIN in one message) ends.
          await this.endSession();
          this.status = "T";
        }
        if (/\bREAD\s+WRITE\b/i.test(sql)) {
          throw new WireError(
            "25006",
            "cannot begin a read-write transaction: the service is read-only here",
          );
        }
        return "BEGIN";
      case "commit": {
        const failed = this.status === "E";
        if (this.status === "I") notice(this.out, "there is no transaction in progress", "25P01");
        await this.#endTransaction();
        return failed ? "ROLLBACK" : "COMMIT";
      }
      case "rollback":
        if (this.status === "I") notice(this.out, "there is no transaction in progress", "25P01");
        await this.#endTransaction();
        return "ROLLBACK";
      case "set": {
        this.#set(kind.words);
        return "SET";
      }
      case "reset": {
        if (kind.name === "all") {
          for (const [name, value] of settings.resetAll()) this.parameterStatus(name, value);
        } else {
          const changed = settings.set(kind.name, undefined);
          if (changed) this.parameterStatus(...changed);
        }
        return "RESET";
      }
      case "discard":
        for (const [name, value] of settings.resetAll()) this.parameterStatus(name, value);
        this.#statements.clear();
        for (const portal of this.#portals.values()) await portal.rows?.close();
        this.#portals.clear();
        return "DISCARD ALL";
      case "deallocate":
        if (kind.name.toUpperCase() === "ALL") this.#statements.clear();
        else if (!this.#statements.delete(kind.name)) {
          throw new WireError("26000", `prepared statement "${kind.name}" does not exist`);
        }
        return "DEALLOCATE";
      case "write":
        throw new WireError(
          "25006",
          `cannot execute ${kind.command} in a read-only transaction`,
        );
      case "unsupported":
        throw new WireError(
          kind.command === "" ? "42601" : "0A000",
          `${kind.command || "this statement"} is not supported: only reads are served here`,
        );
      default:
        throw new WireError("0A000", "not supported");
    }
  }

  /** `SET` of one setting, or of transaction characteristics (a read-only session's own). */
  #set(words: string): void {
    const setting = setTo(words);
    if (setting === undefined) return;
    const changed = this.settings!.set(setting.name, setting.value);
    if (changed) this.parameterStatus(...changed);
  }

  #request(sql: string, params: QueryParam[]): QueryRequest {
    const settings = this.settings!;
    return {
      sql,
      params,
      defaultSchema: settings.defaultSchema,
      visibleSchemas: this.principal!.schemas,
      timeoutMs: settings.timeout,
      client: {
        user: this.user,
        database: this.database,
        settings: settings.record,
      },
    };
  }

  /** Whether the message under way is a simple query of one statement outside a block. */
  #single = false;

  /** The engine session of the transaction under way, opened at its first query. */
  async #engine(): Promise<WireSession> {
    if (this.#session) return this.#session;
    this.#opening ??= this.deps.openSession(this.#single && this.status === "I");
    try {
      this.#session = await this.#opening;
    } finally {
      this.#opening = undefined;
    }
    return this.#session;
  }

  /** Ends the implicit transaction: its portals close, its session goes back. */
  protected async endSession(): Promise<void> {
    for (const portal of this.#portals.values()) await portal.rows?.close();
    this.#portals.clear();
    const session = this.#session;
    this.#session = undefined;
    await session?.end();
  }

  async #endTransaction(): Promise<void> {
    this.status = "I";
    await this.endSession();
  }

  async #sync(): Promise<void> {
    this.#skipping = false;
    if (this.status === "I") await this.endSession();
    this.ready();
    await this.flush();
  }

  #close(reader: BodyReader): void {
    const what = String.fromCharCode(reader.byte());
    const name = reader.cstring();
    if (what === "S") this.#statements.delete(name);
    else {
      void this.#portals.get(name)?.rows?.close();
      this.#portals.delete(name);
    }
    this.out.begin("3").end();
  }

  /** Interrupts the statement under way (a CancelRequest with this connection's key). */
  cancel(): void {
    if (!this.#session) return;
    this.#cancelled = true;
    this.#session.cancel();
  }
}
