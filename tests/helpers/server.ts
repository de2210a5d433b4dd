/**
 * Test support: the real service on an ephemeral port with its own temporary data directory,
 * in this process or in a child process, and a small HTTP client for it.
 *
 * @module
 */

import { SignJWT } from "jose";
import { ConfigError, parseConfig, VARIABLES } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { shutDown, startService, StartupError } from "../../src/server.ts";
import { dropDatabase, engineEnv } from "./engine.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** The HMAC secret test servers use unless a test configures another key. */
export const TEST_SECRET = "test-secret-that-is-long-enough-for-hs256-0123456789";

/** Every scope. */
export const ALL_SCOPES = "tables:read tables:write templates:read templates:write admin";

/** An answer from the service. */
export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  // deno-lint-ignore no-explicit-any
  readonly body: any;
  readonly text: string;
}

/** Options of a request. */
export interface RequestOptions {
  /** JSON-encoded unless it is a string, bytes, a form or a stream, sent as they are. */
  readonly body?: unknown;
  /** Bearer token; the server's default all-scope token when absent, none when null. */
  readonly token?: string | null;
  readonly headers?: Record<string, string>;
}

/** How a {@link TestServer} runs: started, stopped with a signal, and its process id. */
interface Run {
  readonly pid: number;
  /** Resolves to the exit code; again the same code once stopped. */
  stop(signal: Deno.Signal): Promise<number>;
}

/** A running service. */
export class TestServer {
  #run!: Run;
  #launch: ((env: Record<string, string>) => Deno.ChildProcess) | undefined;
  #stdout = "";
  #stderr = "";
  /** The PostgreSQL database made for this server, dropped by {@link dispose}. */
  #database: string | undefined;
  /** A backup to restore at the first start in process (`--restore`). */
  #restore: string | undefined;

  private constructor(
    readonly dataDir: string,
    readonly env: Record<string, string>,
    public port: number,
    public token: string,
    launch: ((env: Record<string, string>) => Deno.ChildProcess) | undefined,
  ) {
    this.#launch = launch;
  }

  /**
   * Starts the service in this process, as `main.ts` would with `env` as its whole
   * environment: `env` adds to or overrides the test defaults (with `TEST_ENGINE=postgres`,
   * a `DATABASE_URL` of a fresh database unless `env` names one), log lines go to
   * {@link stderr} and what it prints to {@link stdout}. For tests of the service's
   * behaviour over HTTP; {@link spawn} for those of its process.
   */
  static async start(
    env: Record<string, string> = {},
    dataDir?: string,
    options: { readonly restore?: string } = {},
  ): Promise<TestServer> {
    // What else a process reads from its environment (TZ, DENO_*) would be this one's.
    const foreign = Object.keys(env).filter((name) => !VARIABLES.includes(name));
    if (foreign.length > 0) {
      throw new Error(`In process the service cannot see ${foreign.join(", ")}: use spawn()`);
    }
    // One DuckDB thread: `task test` runs two test files at a time on two cores, where a second
    // thread per store only adds scheduling. Tests of memory limits set DUCKDB_THREADS to ""
    // (DuckDB's default, one per core), since DuckDB's memory use grows with its threads.
    return await TestServer.#create({ DUCKDB_THREADS: "1", ...env }, dataDir, undefined, options);
  }

  /**
   * Starts the service in a child process, for tests of the process itself: signals, exit
   * codes, its memory. `launch` runs it (the main module with `deno run` unless told
   * otherwise, such as a compiled binary).
   */
  static async spawn(
    env: Record<string, string> = {},
    dataDir?: string,
    launch: (env: Record<string, string>) => Deno.ChildProcess = (env) => spawn(env),
  ): Promise<TestServer> {
    return await TestServer.#create(env, dataDir, launch);
  }

  static async #create(
    env: Record<string, string>,
    dataDir: string | undefined,
    launch: ((env: Record<string, string>) => Deno.ChildProcess) | undefined,
    options: { readonly restore?: string } = {},
  ): Promise<TestServer> {
    const dir = dataDir ?? await Deno.makeTempDir({ prefix: "table-service-test-" });
    const engine = env.DATABASE_URL === undefined ? await engineEnv() : {};
    const fullEnv: Record<string, string> = {
      PORT: "0",
      DATA_DIR: dir,
      AUTH_JWT_SECRET: TEST_SECRET,
      LOG_LEVEL: Deno.env.get("TEST_LOG_LEVEL") ?? "warn",
      // The service's default follows the machine's memory (half of it); tests keep a fixed
      // one, so what they load at "the default" means the same on every machine. A test of the
      // real default sets it to "".
      DUCKDB_MEMORY_LIMIT: "256MiB",
      ...engine,
      ...env,
    };
    const server = new TestServer(dir, fullEnv, 0, "", launch);
    server.#database = engine.DATABASE_URL;
    server.#restore = options.restore;
    try {
      await server.#begin();
    } catch (error) {
      if (server.#database) await dropDatabase(server.#database);
      throw error;
    }
    server.token = fullEnv.AUTH_JWT_SECRET
      ? await mint({ scope: ALL_SCOPES })
      : server.printedToken() ?? "";
    return server;
  }

  /** Process id of the service (this process's when it runs in process). */
  get pid(): number {
    return this.#run.pid;
  }

  /** Everything the service printed on standard output so far. */
  get stdout(): string {
    return this.#stdout;
  }

  /** Everything the service printed on standard error so far. */
  get stderr(): string {
    return this.#stderr;
  }

  /** The token printed at first start, if any. */
  printedToken(): string | undefined {
    return /^(eyJ[A-Za-z0-9_.-]+)$/m.exec(this.#stdout)?.[1];
  }

  /** Base URL of the API. */
  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /**
   * Opens a raw connection and writes a POST to `path` with the token: its request line,
   * `Host` and `Authorization`, then `rest` as it is (the other headers, the blank line and
   * as much body as the test wants sent). For bodies `fetch` would not send: cut off, lying
   * about their length, or with broken chunks.
   */
  async rawPost(path: string, rest: string): Promise<Deno.Conn> {
    const socket = await Deno.connect({ hostname: "127.0.0.1", port: this.port });
    const bytes = new TextEncoder().encode(
      `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${this.token}\r\n${rest}`,
    );
    for (let at = 0; at < bytes.length;) at += await socket.write(bytes.subarray(at));
    return socket;
  }

  /** Sends a request to `path` (under /api/v1 unless it starts with "/"). */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<Answer> {
    const url = `${this.base}${path.startsWith("/") ? path : `/api/v1/${path}`}`;
    const headers: Record<string, string> = { ...options.headers };
    const token = options.token === undefined ? this.token : options.token;
    if (token !== null) headers.authorization ??= `Bearer ${token}`;
    let body: BodyInit | undefined;
    if (options.body !== undefined) {
      if (
        typeof options.body === "string" || options.body instanceof Uint8Array ||
        options.body instanceof FormData || options.body instanceof ReadableStream
      ) {
        body = options.body as BodyInit;
      } else {
        body = JSON.stringify(options.body);
        headers["content-type"] ??= "application/json";
      }
    }
    const response = await fetch(url, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = undefined;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON: tests look at `text`.
    }
    return { status: response.status, headers: response.headers, body: parsed, text };
  }

  /**
   * Stops the service with a signal and waits for it to exit; returns the exit code. In
   * process it shuts down as on SIGTERM or SIGINT; other signals need {@link spawn}.
   */
  async stop(signal: Deno.Signal = "SIGTERM"): Promise<number> {
    return await this.#run.stop(signal);
  }

  /** Stops and starts again on the same data directory and database (a new port). */
  async restart(): Promise<void> {
    await this.stop();
    this.#stdout = "";
    this.#stderr = "";
    await this.#begin();
  }

  /** Stops the service and removes its data directory, and its database on PostgreSQL. */
  async dispose(): Promise<void> {
    await this.stop();
    // Unexpected failures are logged at error level: show them, they explain a failing test.
    const errors = this.#stderr.split("\n").filter((line) => line.includes('"level":"error"'));
    if (errors.length > 0) console.error(errors.join("\n"));
    await Deno.remove(this.dataDir, { recursive: true }).catch(() => {});
    if (this.#database) await dropDatabase(this.#database);
    this.#database = undefined;
  }

  async #begin(): Promise<void> {
    this.#run = this.#launch ? await this.#spawned(this.#launch) : await this.#inProcess();
  }

  async #inProcess(): Promise<Run> {
    let logger;
    let service;
    try {
      const config = parseConfig(this.env);
      logger = createLogger(config.logLevel, (line) => this.#stderr += `${line}\n`);
      const restore = this.#restore;
      this.#restore = undefined;
      service = await startService(config, logger, {
        print: (line) => this.#stdout += `${line}\n`,
        restore,
      });
    } catch (error) {
      if (!(error instanceof ConfigError || error instanceof StartupError)) throw error;
      throw new Error(
        `The service exited with 1 before listening:\n${this.#stderr}${error.message}`,
      );
    }
    this.port = service.addr.port;
    let code: Promise<number> | undefined;
    return {
      pid: Deno.pid,
      stop: (signal) => {
        if (signal !== "SIGTERM" && signal !== "SIGINT") {
          throw new Error(`A service in process cannot take ${signal}: use TestServer.spawn`);
        }
        return code ??= shutDown(service, signal, logger);
      },
    };
  }

  async #spawned(launch: (env: Record<string, string>) => Deno.ChildProcess): Promise<Run> {
    const process = launch(this.env);
    const decoder = new TextDecoder();
    let listening: (port: number) => void;
    const ready = new Promise<number>((resolve) => listening = resolve);
    const pump = async (stream: ReadableStream<Uint8Array>, sink: "out" | "err") => {
      for await (const chunk of stream) {
        const text = decoder.decode(chunk, { stream: true });
        if (sink === "out") this.#stdout += text;
        else this.#stderr += text;
        const match = /Listening on http:\/\/[^:]+:(\d+)\//.exec(this.#stdout);
        if (match) listening(Number(match[1]));
      }
    };
    const readers = [pump(process.stdout, "out"), pump(process.stderr, "err")];
    const exited = process.status.then((s) => {
      throw new Error(
        `The service exited with ${s.code} before listening:\n${this.#stderr}${this.#stdout}`,
      );
    });
    this.port = await Promise.race([ready, exited]);
    // The token line follows the listening line; give it the moment it needs.
    await new Promise((r) => setTimeout(r, 50));
    return {
      pid: process.pid,
      async stop(signal) {
        try {
          process.kill(signal);
        } catch {
          // Already gone.
        }
        const status = await process.status;
        await Promise.all(readers);
        return status.code;
      },
    };
  }
}

/** The service's main module run with `env`, with the permissions `task start` grants. */
function serviceCommand(
  env: Record<string, string>,
  args: string[],
  denoFlags: string[],
): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-env",
      "--allow-net",
      "--allow-read",
      "--allow-write",
      "--allow-ffi",
      "--allow-sys=homedir,osRelease",
      ...denoFlags,
      `${ROOT}main.ts`,
      ...args,
    ],
    cwd: ROOT,
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  });
}

/**
 * Runs the service's main module with `env` and piped output; `denoFlags` go to `deno run`
 * (the load bench preloads a module with them).
 */
export function spawn(
  env: Record<string, string>,
  args: string[] = [],
  denoFlags: string[] = [],
): Deno.ChildProcess {
  return serviceCommand(env, args, denoFlags).spawn();
}

/**
 * Runs the service to completion (for start-up failures): exit code and output. It is killed
 * after `seconds`, so a service that starts when it should refuse fails a test instead of
 * hanging it.
 */
export async function runToExit(
  env: Record<string, string>,
  args: string[] = [],
  seconds = 30,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(env, args);
  const timer = setTimeout(() => child.kill("SIGKILL"), seconds * 1000);
  try {
    const output = await child.output();
    const decoder = new TextDecoder();
    return {
      code: output.code,
      stdout: decoder.decode(output.stdout),
      stderr: decoder.decode(output.stderr),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** Claims and header tweaks for {@link mint}. */
export interface MintOptions {
  readonly scope?: string;
  readonly scopes?: unknown;
  readonly schemas?: unknown;
  readonly sub?: string;
  /**
   * Seconds from now, a day unless given (a slow run, or a wall clock stepped while it runs,
   * must not see a test's token expire); null leaves `exp` out.
   */
  readonly expiresIn?: number | null;
  readonly notBefore?: number;
  readonly issuedAt?: number;
  readonly issuer?: string;
  readonly audience?: string;
  readonly secret?: string | Uint8Array;
  readonly alg?: string;
}

const DAY_SECONDS = 86_400;

/** Mints an HMAC token for tests (the test secret unless another is given). */
export async function mint(options: MintOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = {};
  if (options.scope !== undefined) claims.scope = options.scope;
  if (options.scopes !== undefined) claims.scopes = options.scopes;
  if (options.schemas !== undefined) claims.schemas = options.schemas;
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: options.alg ?? "HS256", typ: "JWT" })
    .setSubject(options.sub ?? "tester")
    .setIssuedAt(options.issuedAt ?? now);
  if (options.expiresIn !== null) jwt.setExpirationTime(now + (options.expiresIn ?? DAY_SECONDS));
  if (options.notBefore !== undefined) jwt.setNotBefore(now + options.notBefore);
  if (options.issuer) jwt.setIssuer(options.issuer);
  if (options.audience) jwt.setAudience(options.audience);
  const secret = options.secret ?? TEST_SECRET;
  return await jwt.sign(typeof secret === "string" ? new TextEncoder().encode(secret) : secret);
}

/**
 * What keeps a failure answer from the contract's error shape (`{"error": {code, type,
 * message}}` and nothing beside it, `code` its status), or undefined when nothing does.
 */
export function errorShapeProblem(answer: Answer): string | undefined {
  const error = answer.body?.error;
  if (
    !error || error.code !== answer.status || typeof error.message !== "string" ||
    typeof error.type !== "string"
  ) return "Not the contract's error shape";
  if (Object.keys(answer.body).length !== 1) return "Extra top-level keys";
  return undefined;
}

/** Asserts the contract's error shape and returns the error object. */
export function errorOf(
  answer: Answer,
  status: number,
): { code: number; type: string; message: string; details?: unknown[] } {
  if (answer.status !== status) {
    throw new Error(`Expected status ${status}, got ${answer.status}: ${answer.text}`);
  }
  const problem = errorShapeProblem(answer);
  if (problem) throw new Error(`${problem}: ${answer.text}`);
  return answer.body.error;
}

/** The `[row, column]` each detail of a failure names, in order (none when it has no details). */
export function cellsOf(error: { details?: unknown[] }): [number, string][] {
  return ((error.details ?? []) as { row: number; column: string }[]).map((d) => [d.row, d.column]);
}

/** Asserts a success and returns its body. */
// deno-lint-ignore no-explicit-any
export function ok(answer: Answer): any {
  if (answer.status !== 200) throw new Error(`Expected 200, got ${answer.status}: ${answer.text}`);
  if (answer.body && typeof answer.body === "object" && "error" in answer.body) {
    throw new Error(`A success must not carry "error": ${answer.text}`);
  }
  return answer.body;
}

/**
 * A fingerprint of everything visible: schemas, every table's full definition and every
 * template version.
 */
export async function snapshot(server: TestServer): Promise<string> {
  const schemas = ok(await server.request("GET", "schema"));
  const listing = ok(await server.request("GET", "table?verbose=true&limit=1000"));
  // Each table's rows_estimate is the engine's statistics, which PostgreSQL publishes a moment
  // after a commit: a figure that moves on its own is no part of what a change left alone.
  const tables = {
    ...listing,
    tables: listing.tables.map(({ rows_estimate: _, ...table }: Record<string, unknown>) => table),
  };
  const templates = ok(await server.request("GET", "table_template"));
  return JSON.stringify({ schemas, tables, templates });
}

/**
 * {@link snapshot} plus every table's rows (its CSV export), hashed: equal fingerprints mean
 * nothing visible changed, definitions or contents.
 */
export async function fingerprint(server: TestServer): Promise<string> {
  const definitions = await snapshot(server);
  const { tables } = ok(await server.request("GET", "table?limit=1000"));
  const parts = [definitions];
  for (const { name, schema } of tables as { name: string; schema: string }[]) {
    const answer = await server.request("GET", `table/${name}/records/csv?schema=${schema}`);
    if (answer.status !== 200) throw new Error(`Export of ${schema}.${name}: ${answer.text}`);
    parts.push(`${schema}.${name}\n${answer.text}`);
  }
  return await sha256Hex(new TextEncoder().encode(parts.join("\0")));
}

/** Asserts that no request body was left behind in the service's spool directory. */
export async function assertSpoolEmpty(server: TestServer): Promise<void> {
  const left = [];
  for await (const entry of Deno.readDir(`${server.dataDir}/spool`)) left.push(entry.name);
  if (left.length > 0) throw new Error(`Request bodies stayed in the spool: ${left.join(", ")}`);
}

/** The SHA-256 of `bytes` in hex. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A multipart upload: `file` under `filename`, and a `body` part (JSON unless a string). */
export function uploadForm(file: Uint8Array, filename: string, body?: unknown): FormData {
  const data = new FormData();
  if (body !== undefined) {
    data.append(
      "body",
      new Blob([typeof body === "string" ? body : JSON.stringify(body)], {
        type: "application/json",
      }),
    );
  }
  data.append("file", new File([file as Uint8Array<ArrayBuffer>], filename));
  return data;
}

/** A seeded generator of numbers in [0, 1) (mulberry32), so a random run can be repeated. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}
