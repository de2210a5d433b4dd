/**
 * A private, throwaway PostgreSQL 15 server (Debian's `postgresql-15`): its own data
 * directory, Unix socket directory and port, `fsync` off, started and stopped by the tests
 * and the benchmarks that need one. Run as root, the server runs as the `postgres` system
 * user, since PostgreSQL refuses to run as root.
 *
 * @module
 */

import pg from "pg";

const BIN = "/usr/lib/postgresql/15/bin";

/** A running server and a way to run SQL on it through psql. */
export interface Postgres {
  /** Directory of the server's Unix socket, for clients other than psql. */
  readonly socketDir: string;
  readonly port: number;
  /** The role the server was made with, a superuser that needs no password. */
  readonly user: string;
  /** A `postgres://` URL of the `postgres` database over the Unix socket, for `npm:pg`. */
  readonly url: string;
  /** Runs SQL through psql and answers its unaligned output, throwing when it fails. */
  sql(text: string): Promise<string>;
  stop(): Promise<void>;
}

async function run(
  command: string,
  args: string[],
  user?: string,
): Promise<{ ok: boolean; out: string }> {
  const asUser = user && Deno.uid() === 0;
  const output = await new Deno.Command(asUser ? "runuser" : command, {
    args: asUser ? ["-u", user, "--", command, ...args] : args,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { ok: output.success, out: decoder.decode(output.stdout) + decoder.decode(output.stderr) };
}

/** Why no server can start here (postgresql-15 missing), or undefined when one can. */
export async function postgresMissing(): Promise<string | undefined> {
  try {
    await Deno.stat(`${BIN}/postgres`);
    return undefined;
  } catch {
    return "postgresql-15 is not installed (apt-get install postgresql-15; .ci/run does)";
  }
}

/** A port no one listens on now; it names the socket file, so it must not clash. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/**
 * Starts PostgreSQL in `dir` (which must exist) with the superuser `user`, or says why it
 * cannot. It listens on its Unix socket only; with `tcp`, on 127.0.0.1 as well (a benchmark
 * that compares it with the service's TCP listener).
 */
export async function startPostgres(
  dir: string,
  user = "tester",
  { tcp = false }: { readonly tcp?: boolean } = {},
): Promise<Postgres | string> {
  const missing = await postgresMissing();
  if (missing) return missing;
  const osUser = Deno.uid() === 0 ? "postgres" : undefined;
  await Deno.mkdir(`${dir}/data`, { recursive: true });
  await Deno.mkdir(`${dir}/socket`, { recursive: true });
  if (osUser) await run("chown", ["-R", `${osUser}:${osUser}`, dir]);
  const init = await run(
    `${BIN}/initdb`,
    ["-D", `${dir}/data`, "-A", "trust", "-U", user, "--no-sync", "-E", "UTF8", "--locale=C"],
    osUser,
  );
  if (!init.ok) return `initdb failed: ${init.out.slice(-300)}`;
  const port = String(freePort());
  const start = await run(`${BIN}/pg_ctl`, [
    "-D",
    `${dir}/data`,
    "-l",
    `${dir}/log`,
    "-w",
    "-o",
    `-k ${dir}/socket -p ${port} -c listen_addresses='${tcp ? "127.0.0.1" : ""}' -c fsync=off ` +
    "-c synchronous_commit=off -c full_page_writes=off -c shared_buffers=256MB -c max_wal_size=4GB",
    "start",
  ], osUser);
  if (!start.ok) return `pg_ctl start failed: ${start.out.slice(-300)}`;
  return {
    socketDir: `${dir}/socket`,
    port: Number(port),
    user,
    url: `postgres://${user}@localhost:${port}/postgres?host=${
      encodeURIComponent(`${dir}/socket`)
    }`,
    async sql(text: string): Promise<string> {
      const result = await run(`${BIN}/psql`, [
        "-h",
        `${dir}/socket`,
        "-p",
        port,
        "-U",
        user,
        "-d",
        "postgres",
        "-X",
        "-q",
        "-t",
        "-A",
        "-v",
        "ON_ERROR_STOP=1",
        "-c",
        text,
      ], osUser);
      if (!result.ok) throw new Error(`psql failed: ${result.out.slice(-500)}`);
      return result.out;
    },
    async stop(): Promise<void> {
      await run(`${BIN}/pg_ctl`, ["-D", `${dir}/data`, "-m", "immediate", "-w", "stop"], osUser);
    },
  };
}

/** A server for a test file: its own, or the run's shared one (see {@link startTestPostgres}). */
export interface TestPostgres {
  /** `postgres://…` of its `postgres` database, as `DATABASE_URL` will take it. */
  readonly url: string;
  /** Stops the server and removes its directory; nothing for the run's shared server. */
  stop(): Promise<void>;
}

/**
 * Starts a server in a new temporary directory for a test file, or answers why it cannot.
 * When `REQUIRE_POSTGRES` is set (CI installs postgresql-15 and sets it), a server that
 * cannot start is an error rather than a reason to skip.
 */
export async function startTestPostgres(): Promise<TestPostgres | string> {
  // `deno task test` (tests/run.ts) starts one server for the whole run: each test file makes
  // its own databases on it rather than running initdb again.
  const shared = Deno.env.get("TEST_POSTGRES_URL");
  if (shared) return { url: shared, stop: () => Promise.resolve() };
  const dir = await Deno.makeTempDir({ prefix: "table-service-pg-" });
  let server: Postgres | string;
  try {
    server = await startPostgres(dir);
  } catch (error) {
    await Deno.remove(dir, { recursive: true });
    throw error;
  }
  if (typeof server === "string") {
    await Deno.remove(dir, { recursive: true });
    if (Deno.env.get("REQUIRE_POSTGRES")) throw new Error(server);
    return server;
  }
  const running = server;
  let stopped = false;
  // A test file whose tests did not run to their `stop()` (filtered out, or failed before it)
  // must not leave its server behind: stopped when the file's worker unloads.
  const leftBehind = () => {
    if (stopped) return;
    stopped = true;
    const osUser = Deno.uid() === 0 ? ["-u", "postgres", "--"] : [];
    const pgCtl = [`${BIN}/pg_ctl`, "-D", `${dir}/data`, "-m", "immediate", "-w", "stop"];
    new Deno.Command(osUser.length ? "runuser" : pgCtl[0]!, {
      args: osUser.length ? [...osUser, ...pgCtl] : pgCtl.slice(1),
      stdout: "null",
      stderr: "null",
    }).outputSync();
    Deno.removeSync(dir, { recursive: true });
  };
  globalThis.addEventListener("unload", leftBehind);
  return {
    url: running.url,
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      globalThis.removeEventListener("unload", leftBehind);
      try {
        await running.stop();
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  };
}

/**
 * Creates a new, empty database on a test server and answers its `postgres://` URL, so that
 * each store (or each service) a test opens starts from nothing.
 */
export async function freshDatabase(postgres: TestPostgres): Promise<string> {
  const name = `t_${crypto.randomUUID().replaceAll("-", "")}`;
  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(postgres.url);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * The environment that runs `TestServer.start(env)` on PostgreSQL: `DATABASE_URL` of a fresh
 * database of `postgres` (see {@link freshDatabase}), to merge with a test's own variables.
 *
 * @example
 * ```ts ignore
 * const postgres = await startTestPostgres();
 * if (typeof postgres === "string") return; // skipped, with the reason
 * const server = await TestServer.start({ ...(await postgresEnv(postgres)) });
 * ```
 */
export async function postgresEnv(postgres: TestPostgres): Promise<{ DATABASE_URL: string }> {
  return { DATABASE_URL: await freshDatabase(postgres) };
}

/**
 * Registers a test that runs on a test server of its own (see {@link startTestPostgres}),
 * stopped however the test ends; where no server can start, the test is ignored with the
 * reason in its name. Await it at the top of the test file, so the test is registered while
 * the module loads.
 *
 * @example
 * ```ts ignore
 * await postgresTest("readRecords() on PostgreSQL", async (t, server) => {
 *   const url = await freshDatabase(server);
 * });
 * ```
 */
export async function postgresTest(
  name: string,
  fn: (t: Deno.TestContext, server: TestPostgres) => Promise<void>,
): Promise<void> {
  const postgres = await startTestPostgres();
  if (typeof postgres === "string") {
    Deno.test({ name: `${name} (skipped: ${postgres})`, ignore: true, fn: () => {} });
    return;
  }
  Deno.test(name, async (t) => {
    try {
      await fn(t, postgres);
    } finally {
      await postgres.stop();
    }
  });
}
