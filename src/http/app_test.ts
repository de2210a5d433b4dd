import assert from "node:assert/strict";
import type { Store } from "../store/store.ts";
import { appOver } from "../../tests/helpers/app.ts";
import { mint } from "../../tests/helpers/server.ts";

Deno.test("createApp() answers an unexpected failure with 500, a request id and no internals", async () => {
  const rejecting = () =>
    Promise.reject(new Error('Catalog Error: SELECT * FROM "_table_service".tables at /srv/data'));
  // Every operation of every resource fails so.
  const failing = new Proxy({}, {
    get: () => new Proxy(rejecting, { get: () => rejecting }),
  }) as Store;
  const logged: string[] = [];
  const app = await appOver(failing, (line) => logged.push(line));
  const response = await app.request("/api/v1/table/x", {
    headers: {
      authorization: `Bearer ${await mint({ scope: "tables:read" })}`,
      "x-request-id": "req-42",
    },
  });
  assert.equal(response.status, 500);
  const body = await response.json();
  assert.equal(body.error.code, 500);
  assert.match(body.error.message, /req-42/);
  assert.doesNotMatch(JSON.stringify(body), /SELECT|_table_service|\/srv/);
  assert.equal(logged.length, 1);
  assert.match(logged[0]!, /req-42/);
  assert.match(logged[0]!, /Catalog Error/);
});
