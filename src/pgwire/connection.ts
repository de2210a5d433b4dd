/**
 * One client connection of the PostgreSQL protocol, from its start-up packet to its end:
 * TLS and GSS negotiation, the cleartext password checked as a bearer token, then simple and
 * extended queries. Queries go to a {@link WireSession} held for one statement's implicit
 * transaction or for `BEGIN` … `COMMIT`; transaction control, settings and prepared
 * statements are the listener's own.
 *
 * @module
 */

import type { Socket } from "node:net";
import type { Principal } from "../auth/jwt.ts";
import {
  type QueryParam,
  type QueryRequest,
  WIRE_TYPES,
  type WireColumn,
  type WireRows,
  type WireSession,
} from "../service/wire.ts";
import { asWireError, WireError } from "./errors.ts";
import {
  BodyReader,
  CANCEL_REQUEST,
  GSSENC_REQUEST,
  type Message,
  MessageReader,
  MessageTooLarge,
  MessageWriter,
  SSL_REQUEST,
} from "./messages.ts";
import { Settings } from "./settings.ts";
import { splitStatements, type StatementKind, statementKind } from "./statements.ts";
import { BadParameter, paramValue } from "./parameters.ts";
import { binaryValue, hasBinary } from "./values.ts";
import { answeredQuery } from "./session_queries.ts";

/** The protocol version 3.0. */
const PROTOCOL_3 = 196608;

/** Rows fetched from the store at a time. */
const BATCH_ROWS = 1_000;

/** Bytes written to the socket at once while rows stream. */
const WRITE_BYTES = 256 * 1024;

/** What a connection needs of the listener. */
export interface ConnectionDeps {
  /** The principal of a token, or a failure (an ApiError 401) for a bad one. */
  authenticate(token: string): Promise<Principal>;
  /** An engine session; `single`: for one statement alone (a simple query of one statement). */
  openSession(single: boolean): Promise<WireSession>;
  /** The service's query timeout: the default and the most of `statement_timeout`. */
  readonly queryTimeoutMs: number;
  /** Most bytes of one message. */
  readonly maxMessageBytes: number;
  /** Closed when no message comes for this long (and none runs). */
  readonly idleMs: number;
  /** Closed when start-up and authentication take longer than this. */
  readonly startupMs: number;
  /** Turns the socket into a TLS one, when TLS is configured. */
  readonly tls?: (socket: Socket) => Socket;
  /** Whether another client may connect now; false answers 53300. */
  admit(): boolean;
  /** Notes this connection's cancel key (answered once authenticated). */
  register(connection: Connection): void;
  /** Runs a CancelRequest against the connection with that key. */
  cancel(pid: number, secret: number): void;
  /** Log lines and metrics. */
  readonly observe: ConnectionObserver;
}

/** Where a connection reports what it does. */
export interface ConnectionObserver {
  connected(connection: Connection): void;
  query(connection: Connection, record: QueryRecord): void;
  closed(connection: Connection, reason: string): void;
}

/** One statement as the log and metrics see it. */
export interface QueryRecord {
  readonly sql: string;
  readonly code: string;
  readonly rows: number;
  readonly seconds: number;
}

/** A prepared statement: its text, kind and declared parameter types. */
interface Prepared {
  readonly sql: string;
  readonly kind: StatementKind;
  readonly paramTypes: number[];
  described?: { columns: readonly WireColumn[]; params: readonly number[] };
}

/** A bound statement, and its result once it has begun. */
interface Portal {
  readonly statement: Prepared;
  readonly params: QueryParam[];
  /** Result formats as Bind gave them: none (all text), one for all, or one per column. */
  readonly formats: number[];
  rows?: WireRows;
  /** Whether its result has been read to the end. */
  done: boolean;
}

let nextPid = 1;

/** One client connection. */
export class Connection {
  readonly pid = nextPid++;
  readonly secret = crypto.getRandomValues(new Uint32Array(1))[0]! | 0;
  readonly remote: string;
  user = "";
  database = "";
  principal?: Principal;
  settings?: Settings;
  /** Statements run, for the closing log line. */
  queries = 0;
  readonly opened = performance.now();

  #socket: Socket;
  readonly #reader: MessageReader;
  readonly #out = new MessageWriter();
  #phase: "startup" | "password" | "ready" | "closed" = "startup";
  /** I idle, T in a transaction block, E in a failed one. */
  #status: "I" | "T" | "E" = "I";
  /** The engine session of the transaction under way, implicit or not. */
  #session?: WireSession;
  #opening?: Promise<WireSession>;
  readonly #statements = new Map<string, Prepared>();
  readonly #portals = new Map<string, Portal>();
  /** After an error in the extended protocol, messages are skipped until Sync. */
  #skipping = false;
  #cancelled = false;
  #running = false;
  #idle?: ReturnType<typeof setTimeout>;
  #startup?: ReturnType<typeof setTimeout>;
  #drained?: PromiseWithResolvers<void>;

  constructor(socket: Socket, private readonly deps: ConnectionDeps) {
    this.#socket = socket;
    this.remote = `${socket.remoteAddress}:${socket.remotePort}`;
    this.#reader = new MessageReader(deps.maxMessageBytes);
    this.#listen(socket);
    this.#startup = setTimeout(
      () => this.#fatal(new WireError("08P01", "start-up took too long", "FATAL")),
      deps.startupMs,
    );
  }

  #listen(socket: Socket): void {
    socket.setNoDelay?.(true);
    socket.on("data", (bytes: Uint8Array) => {
      this.#reader.push(bytes);
      void this.#pump();
    });
    socket.on("drain", () => this.#drained?.resolve());
    socket.on("error", () => this.close("socket error"));
    socket.on("close", () => this.close("client closed"));
  }

  /** Handles the messages read so far, one at a time, in order. */
  async #pump(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      while (this.#phase !== "closed") {
        let message: Message | undefined;
        try {
          message = this.#reader.next();
        } catch (error) {
          if (error instanceof MessageTooLarge) {
            return this.#fatal(new WireError("08P01", error.message, "FATAL"));
          }
          throw error;
        }
        if (message === undefined) break;
        clearTimeout(this.#idle);
        await this.#handle(message);
      }
    } catch (error) {
      this.#fatal(new WireError("08P01", `invalid message: ${(error as Error).message}`, "FATAL"));
    } finally {
      this.#running = false;
    }
    // Closed while a statement ran: its session goes back now that nothing uses it.
    if (this.#phase === "closed") {
      await this.#endSession().catch(() => {});
      this.#ended.resolve();
      return;
    }
    if (this.#phase === "ready") {
      clearTimeout(this.#idle);
      this.#idle = setTimeout(
        () =>
          this.#fatal(
            new WireError("57P05", "terminating connection due to idle-session timeout", "FATAL"),
          ),
        this.deps.idleMs,
      );
    }
  }

  async #handle(message: Message): Promise<void> {
    switch (this.#phase) {
      case "startup":
        return await this.#startupPacket(message);
      case "password":
        return await this.#password(message);
      case "ready":
        return await this.#message(message);
    }
  }

  async #startupPacket({ body }: Message): Promise<void> {
    const reader = new BodyReader(body);
    const code = reader.int32();
    if (code === SSL_REQUEST) {
      const tls = this.deps.tls;
      await this.#send(new TextEncoder().encode(tls ? "S" : "N"));
      if (tls) {
        this.#socket.removeAllListeners("data");
        this.#socket.removeAllListeners("close");
        this.#socket.removeAllListeners("error");
        this.#socket.removeAllListeners("drain");
        this.#socket = tls(this.#socket);
        this.#listen(this.#socket);
      }
      return;
    }
    if (code === GSSENC_REQUEST) return await this.#send(new TextEncoder().encode("N"));
    if (code === CANCEL_REQUEST) {
      this.deps.cancel(reader.int32(), reader.int32());
      return this.close("cancel request");
    }
    if (code >> 16 !== 3) {
      return this.#fatal(
        new WireError(
          "0A000",
          `unsupported frontend protocol ${code >> 16}.${code & 0xffff}`,
          "FATAL",
        ),
      );
    }
    const params = new Map<string, string>();
    while (reader.left > 1) {
      const name = reader.cstring();
      params.set(name, reader.cstring());
    }
    if (!this.deps.admit()) {
      return this.#fatal(new WireError("53300", "sorry, too many clients already", "FATAL"));
    }
    this.user = params.get("user") ?? "";
    this.database = params.get("database") ?? this.user;
    const options = [...params.keys()].filter((name) => name.startsWith("_pq_."));
    if (code !== PROTOCOL_3 || options.length > 0) {
      this.#out.begin("v").int32(PROTOCOL_3).int32(options.length);
      for (const option of options) this.#out.cstring(option);
      this.#out.end();
    }
    this.#startupParams = params;
    this.#reader.started = true;
    this.#phase = "password";
    // AuthenticationCleartextPassword.
    this.#out.begin("R").int32(3).end();
    await this.#flush();
  }

  #startupParams = new Map<string, string>();

  async #password({ type, body }: Message): Promise<void> {
    if (type !== "p".charCodeAt(0)) {
      return this.#fatal(new WireError("08P01", "expected a password message", "FATAL"));
    }
    const token = new BodyReader(body).cstring();
    let principal: Principal;
    try {
      principal = await this.deps.authenticate(token);
    } catch {
      return this.#fatal(
        new WireError("28P01", `password authentication failed for user "${this.user}"`, "FATAL"),
      );
    }
    this.principal = principal;
    const settings = new Settings(this.user, principal.schemas, this.deps.queryTimeoutMs);
    this.settings = settings;
    for (const [name, value] of this.#startupParams) {
      if (name === "user" || name === "database" || name.startsWith("_pq_")) continue;
      if (name === "options") continue;
      try {
        settings.set(name, value, true);
      } catch (error) {
        return this.#fatal(asWireError(error));
      }
    }
    clearTimeout(this.#startup);
    this.#phase = "ready";
    this.deps.register(this);
    this.#out.begin("R").int32(0).end();
    for (const [name, value] of settings.reported()) this.#parameterStatus(name, value);
    this.#out.begin("K").int32(this.pid).int32(this.secret).end();
    this.#ready();
    await this.#flush();
    this.deps.observe.connected(this);
  }

  #parameterStatus(name: string, value: string): void {
    this.#out.begin("S").cstring(name).cstring(value).end();
  }

  #ready(): void {
    this.#out.begin("Z").byte(this.#status.charCodeAt(0)).end();
  }

  async #message({ type, body }: Message): Promise<void> {
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
          return await this.#flush();
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
    this.#errorResponse(wire);
    if (this.#status === "T") this.#status = "E";
  }

  #errorResponse(error: WireError): void {
    this.#out.begin("E")
      .byte(83).cstring(error.severity) // S
      .byte(86).cstring(error.severity) // V
      .byte(67).cstring(error.code) // C
      .byte(77).cstring(error.message) // M
      .byte(0).end();
  }

  #notice(message: string, code: string): void {
    this.#out.begin("N")
      .byte(83).cstring("WARNING")
      .byte(86).cstring("WARNING")
      .byte(67).cstring(code)
      .byte(77).cstring(message)
      .byte(0).end();
  }

  async #simpleQuery(text: string): Promise<void> {
    const statements = splitStatements(text);
    if (statements.length === 0) this.#out.begin("I").end();
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
    if (this.#status === "I") await this.#endSession();
    this.#ready();
    await this.#flush();
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
    this.#out.begin("1").end();
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
    this.#out.begin("2").end();
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
      this.#out.begin("t").int16(described.params.length);
      for (const oid of described.params) this.#out.int32(oid);
      this.#out.end();
      this.#rowDescription(described.columns, []);
      return;
    }
    const portal = this.#portals.get(name);
    if (portal === undefined) throw new WireError("34000", `portal "${name}" does not exist`);
    const columns = await this.#portalColumns(portal);
    this.#rowDescription(columns, portal.formats);
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

  /** A RowDescription for `columns` in `formats`, or NoData for none. */
  #rowDescription(columns: readonly WireColumn[], formats: readonly number[]): void {
    if (columns.length === 0) {
      this.#out.begin("n").end();
      return;
    }
    this.#out.begin("T").int16(columns.length);
    columns.forEach((column, i) => {
      const format = formatOf(formats, i);
      if (format === 1 && !hasBinary(column.oid)) {
        throw new WireError("0A000", `binary format is not supported for type ${column.oid}`);
      }
      this.#out.cstring(column.name).int32(0).int16(0).int32(column.oid)
        .int16(typeSize(column.oid)).int32(column.typmod).int16(format);
    });
    this.#out.end();
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
        this.#out.begin("I").end();
        return;
      }
      this.#checkAborted(kind);
      const answered = answeredQuery(kind, statement.sql, this.settings!, this);
      if (answered) {
        if (describe) this.#rowDescription(answered.columns, portal.formats);
        for (const row of answered.rows) this.#dataRow(answered.columns, row, portal.formats);
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
      if (describe) this.#rowDescription(result.columns, portal.formats);
      const want = limit > 0 ? limit : Infinity;
      // Messages the engine built whole are sent as they are when every column is in text.
      const whole = result.nextDataRows && portal.formats.every((format) => format === 0);
      while (rows < want) {
        const size = Math.min(BATCH_ROWS, want - rows);
        let count: number;
        if (whole) {
          const messages = await result.nextDataRows!(size);
          for (const message of messages) this.#out.bytes(message);
          count = messages.length;
        } else {
          const batch = await result.next(size);
          for (const row of batch) this.#dataRow(result.columns, row, portal.formats);
          count = batch.length;
        }
        rows += count;
        if (this.#out.length >= WRITE_BYTES) await this.#flush();
        if (count < size) {
          portal.done = true;
          break;
        }
      }
      if (!portal.done && limit > 0) {
        this.#out.begin("s").end();
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
    this.#out.begin("C").cstring(tag).end();
  }

  #dataRow(
    columns: readonly WireColumn[],
    row: readonly (string | null)[],
    formats: readonly number[],
  ): void {
    this.#out.begin("D").int16(row.length);
    for (let i = 0; i < row.length; i++) {
      const value = row[i]!;
      if (value !== null && formatOf(formats, i) === 1) {
        const bytes = binaryValue(columns[i]!.oid, value);
        if (bytes === undefined) {
          throw new WireError(
            "0A000",
            `binary format is not supported for type ${columns[i]!.oid}`,
          );
        }
        this.#out.value(bytes);
      } else this.#out.text(value);
    }
    this.#out.end();
  }

  /** 25P02 for anything but the end of a failed transaction block. */
  #checkAborted(kind: StatementKind): void {
    if (this.#status !== "E" || kind.kind === "commit" || kind.kind === "rollback") return;
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
        if (this.#status !== "I") {
          this.#notice("there is already a transaction in progress", "25001");
        } else {
          // An implicit transaction under way (a query before BEGIN in one message) ends.
          await this.#endSession();
          this.#status = "T";
        }
        if (/\bREAD\s+WRITE\b/i.test(sql)) {
          throw new WireError(
            "25006",
            "cannot begin a read-write transaction: the service is read-only here",
          );
        }
        return "BEGIN";
      case "commit": {
        const failed = this.#status === "E";
        if (this.#status === "I") this.#notice("there is no transaction in progress", "25P01");
        await this.#endTransaction();
        return failed ? "ROLLBACK" : "COMMIT";
      }
      case "rollback":
        if (this.#status === "I") this.#notice("there is no transaction in progress", "25P01");
        await this.#endTransaction();
        return "ROLLBACK";
      case "set": {
        this.#set(kind.words);
        return "SET";
      }
      case "reset": {
        if (kind.name === "all") {
          for (const [name, value] of settings.resetAll()) this.#parameterStatus(name, value);
        } else {
          const changed = settings.set(kind.name, undefined);
          if (changed) this.#parameterStatus(...changed);
        }
        return "RESET";
      }
      case "discard":
        for (const [name, value] of settings.resetAll()) this.#parameterStatus(name, value);
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
    const text = words.replace(/^(SESSION(?!\s+CHARACTERISTICS\b)|LOCAL)\s+/i, "").trim();
    if (/^(TRANSACTION|SESSION\s+CHARACTERISTICS\s+AS\s+TRANSACTION)\b/i.test(text)) {
      if (/\bREAD\s+WRITE\b/i.test(text)) {
        throw new WireError("25006", "transactions are read-only here");
      }
      return;
    }
    const zone = /^TIME\s+ZONE\s+(.+)$/i.exec(text);
    const match = zone
      ? ["", "timezone", zone[1]!]
      : /^("?[\w.]+"?)\s*(?:=|\s+TO\s+|\s+)\s*(.+)$/is.exec(text);
    if (!match) throw new WireError("42601", `syntax error in SET ${words}`);
    const name = match[1]!.replace(/^"(.*)"$/, "$1");
    const raw = match[2]!.trim();
    const value = /^DEFAULT$/i.test(raw)
      ? undefined
      : name.toLowerCase() === "search_path"
      ? raw
      : raw.replace(/^'(.*)'$/s, "$1").replace(/''/g, "'");
    const changed = this.settings!.set(name, value);
    if (changed) this.#parameterStatus(...changed);
  }

  #request(sql: string, params: QueryParam[]): QueryRequest {
    const settings = this.settings!;
    return {
      sql,
      params,
      defaultSchema: settings.defaultSchema,
      visibleSchemas: this.principal!.schemas,
      timeoutMs: settings.timeout,
      client: { user: this.user, database: this.database },
    };
  }

  /** Whether the message under way is a simple query of one statement outside a block. */
  #single = false;

  /** The engine session of the transaction under way, opened at its first query. */
  async #engine(): Promise<WireSession> {
    if (this.#session) return this.#session;
    this.#opening ??= this.deps.openSession(this.#single && this.#status === "I");
    try {
      this.#session = await this.#opening;
    } finally {
      this.#opening = undefined;
    }
    return this.#session;
  }

  /** Ends the implicit transaction: its portals close, its session goes back. */
  async #endSession(): Promise<void> {
    for (const portal of this.#portals.values()) await portal.rows?.close();
    this.#portals.clear();
    const session = this.#session;
    this.#session = undefined;
    await session?.end();
  }

  async #endTransaction(): Promise<void> {
    this.#status = "I";
    await this.#endSession();
  }

  async #sync(): Promise<void> {
    this.#skipping = false;
    if (this.#status === "I") await this.#endSession();
    this.#ready();
    await this.#flush();
  }

  #close(reader: BodyReader): void {
    const what = String.fromCharCode(reader.byte());
    const name = reader.cstring();
    if (what === "S") this.#statements.delete(name);
    else {
      void this.#portals.get(name)?.rows?.close();
      this.#portals.delete(name);
    }
    this.#out.begin("3").end();
  }

  /** Interrupts the statement under way (a CancelRequest with this connection's key). */
  cancel(): void {
    if (!this.#session) return;
    this.#cancelled = true;
    this.#session.cancel();
  }

  async #send(bytes: Uint8Array): Promise<void> {
    if (this.#phase === "closed") return;
    if (!this.#socket.write(bytes)) {
      this.#drained = Promise.withResolvers<void>();
      await this.#drained.promise;
    }
  }

  async #flush(): Promise<void> {
    if (this.#out.length === 0) return;
    await this.#send(this.#out.take());
  }

  /** Sends a FATAL error and closes. */
  terminate(error: WireError): void {
    this.#fatal(error);
  }

  #fatal(error: WireError): void {
    if (this.#phase === "closed") return;
    this.#errorResponse(error);
    const bytes = this.#out.take();
    this.#socket.end(bytes);
    this.close(error.message);
  }

  /** Closes the connection and lets its session go. */
  close(reason: string): void {
    if (this.#phase === "closed") return;
    const wasReady = this.#phase === "ready";
    this.#phase = "closed";
    clearTimeout(this.#idle);
    clearTimeout(this.#startup);
    this.#drained?.resolve();
    this.#socket.destroySoon?.();
    if (this.#running) this.#session?.cancel();
    else void this.#endSession().catch(() => {}).then(() => this.#ended.resolve());
    if (wasReady) this.deps.observe.closed(this, reason);
    this.onClose?.();
  }

  /** Called once when the connection closes. */
  onClose?: () => void;

  readonly #ended = Promise.withResolvers<void>();

  /** Settles once the connection is closed and its engine session given back. */
  get ended(): Promise<void> {
    return this.#ended.promise;
  }
}

/** The format of column `i` by Bind's result formats. */
function formatOf(formats: readonly number[], i: number): number {
  return formats.length === 0 ? 0 : formats.length === 1 ? formats[0]! : formats[i] ?? 0;
}

/** `typlen` of a type, -1 when unknown. */
function typeSize(oid: number): number {
  return WIRE_SIZES.get(oid) ?? -1;
}

const WIRE_SIZES = new Map([...WIRE_TYPES].map(([oid, type]) => [oid, type.size]));
