import assert from "node:assert/strict";
import { ok, TestServer, uploadForm } from "./helpers/server.ts";

const ROOT = new URL("../", import.meta.url).pathname;
/** What `deno compile` downloads when `DENORT_BIN` is not set. */
const DENORT_URL =
  `https://dl.deno.land/release/v${Deno.version.deno}/denort-${Deno.build.target}.zip`;

/**
 * Why `deno compile` cannot run here, or undefined when it can: it needs the runtime it
 * embeds, from `DENORT_BIN` or downloaded from Deno's host.
 */
async function compileUnavailable(): Promise<string | undefined> {
  const denort = Deno.env.get("DENORT_BIN");
  if (denort) {
    try {
      await Deno.stat(denort);
      return undefined;
    } catch {
      // DENORT_BIN names a missing file: that is a broken setup, not a reason to skip.
      throw new Error(`DENORT_BIN is set to "${denort}", which does not exist`);
    }
  }
  let why: string;
  try {
    const answer = await fetch(DENORT_URL, {
      method: "HEAD",
      signal: AbortSignal.timeout(5000),
    });
    await answer.body?.cancel();
    if (answer.ok) return undefined;
    why = `HTTP ${answer.status}`;
  } catch (error) {
    why = error instanceof Error ? error.message.split("\n")[0]! : String(error);
  }
  return `DENORT_BIN is not set and ${DENORT_URL} cannot be downloaded (${why})`;
}

/** The `compile` task of deno.json, writing to `output` instead of `dist/`. */
async function compileCommand(output: string): Promise<Deno.Command> {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  const words = (config.tasks.compile as string).split(/\s+/);
  assert.equal(words[0], "deno");
  assert.ok(words.includes("dist/table-service"), "the task writes dist/table-service");
  const args = words.slice(1).map((word) => word === "dist/table-service" ? output : word);
  return new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  });
}

const unavailable = await compileUnavailable();
if (unavailable) console.log(`compile_test: skipped: ${unavailable}`);

Deno.test({
  name: `deno task compile: the binary starts, creates a table and loads rows${
    unavailable ? ` (skipped: ${unavailable})` : ""
  }`,
  ignore: unavailable !== undefined,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "table-service-compile-" });
    const binary = `${dir}/table-service`;
    try {
      const built = await (await compileCommand(binary)).output();
      assert.equal(built.code, 0, new TextDecoder().decode(built.stderr));

      const server = await TestServer.spawn({}, undefined, (env) =>
        new Deno.Command(binary, {
          env,
          clearEnv: true,
          cwd: dir,
          stdout: "piped",
          stderr: "piped",
        }).spawn());
      try {
        assert.deepEqual(ok(await server.request("GET", "/healthz", { token: null })), {
          status: "ok",
        });
        assert.deepEqual(ok(await server.request("GET", "/readyz", { token: null })), {
          status: "ready",
        });
        ok(
          await server.request("POST", "table/people", {
            body: {
              table: {
                columns: [{ name: "id", type: "INTEGER" }, { name: "name", type: "VARCHAR" }],
              },
            },
          }),
        );
        const loaded = ok(
          await server.request("POST", "table/people/upload/json?if_exists=append", {
            body: { data: [{ id: 1, name: "Ada" }, { id: 2, name: "Grace" }] },
          }),
        );
        assert.equal(loaded.inserted, 2);
        const csv = new TextEncoder().encode("id,name\n3,Edsger\n");
        ok(
          await server.request("POST", "table/people/upload/csv?if_exists=append", {
            body: uploadForm(csv, "more.csv"),
          }),
        );
        const records = ok(await server.request("GET", "table/people/records"));
        assert.deepEqual(records.records.map((r: { name: string }) => r.name), [
          "Ada",
          "Grace",
          "Edsger",
        ]);
        // The page's assets are files of an npm package: they must be in the binary too.
        const script = await server.request("GET", "/docs/assets/swagger-ui-bundle.js", {
          token: null,
        });
        assert.equal(script.status, 200);
        // So must the web UI's own files and the packages' modules it serves.
        for (
          const path of [
            "/ui",
            "/ui/assets/app.js",
            "/ui/npm/preact/preact.mjs",
            "/ui/npm/@tanstack+virtual-core/utils.js",
            "/ui/npm/@codemirror+view/index.js",
          ]
        ) {
          const answer = await server.request("GET", path, { token: null });
          assert.equal(answer.status, 200, path);
        }
      } finally {
        await server.dispose();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
