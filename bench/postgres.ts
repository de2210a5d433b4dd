/**
 * A private PostgreSQL 15 server for the benchmarks: its own data directory, socket
 * directory and port, started and stopped by the bench.
 *
 * @module
 */

const BIN = "/usr/lib/postgresql/15/bin";

/** A running server and a way to run SQL on it through psql. */
export interface Postgres {
  /** Directory of the server's Unix socket, for clients other than psql. */
  readonly socketDir: string;
  readonly port: number;
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

/** Starts PostgreSQL in `dir`, or says why it cannot. */
export async function startPostgres(dir: string): Promise<Postgres | string> {
  try {
    await Deno.stat(`${BIN}/postgres`);
  } catch {
    return "postgresql-15 is not installed (apt-get install postgresql-15)";
  }
  const user = Deno.uid() === 0 ? "postgres" : undefined;
  await Deno.mkdir(`${dir}/data`, { recursive: true });
  await Deno.mkdir(`${dir}/socket`, { recursive: true });
  if (user) await run("chown", ["-R", `${user}:${user}`, dir]);
  const init = await run(
    `${BIN}/initdb`,
    ["-D", `${dir}/data`, "-A", "trust", "-U", "bench"],
    user,
  );
  if (!init.ok) return `initdb failed: ${init.out.slice(-300)}`;
  const port = String(20000 + Math.floor(Math.random() * 20000));
  const start = await run(`${BIN}/pg_ctl`, [
    "-D",
    `${dir}/data`,
    "-l",
    `${dir}/log`,
    "-w",
    "-o",
    `-k ${dir}/socket -p ${port} -c listen_addresses='' -c fsync=off -c shared_buffers=256MB -c max_wal_size=4GB`,
    "start",
  ], user);
  if (!start.ok) return `pg_ctl start failed: ${start.out.slice(-300)}`;
  return {
    socketDir: `${dir}/socket`,
    port: Number(port),
    async sql(text: string): Promise<string> {
      const result = await run(`${BIN}/psql`, [
        "-h",
        `${dir}/socket`,
        "-p",
        port,
        "-U",
        "bench",
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
      ], user);
      if (!result.ok) throw new Error(`psql failed: ${result.out.slice(-500)}`);
      return result.out;
    },
    async stop(): Promise<void> {
      await run(`${BIN}/pg_ctl`, ["-D", `${dir}/data`, "-m", "immediate", "-w", "stop"], user);
    },
  };
}
