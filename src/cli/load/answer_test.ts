import assert from "node:assert/strict";
import { failureLines } from "./answer.ts";
import { parseLoadArgs } from "./args.ts";

Deno.test("failureLines() names the status, the service's message, details and a hint", () => {
  const options = parseLoadArgs(["p.csv", "--table", "people", "--schema", "sales"], {});
  const error = (code: number, message: string, details?: unknown[]) =>
    JSON.stringify({ error: { code, type: "x", message, details } });

  const conflict = failureLines(409, "application/json", error(409, "Table exists"), options);
  assert.deepEqual(conflict, [
    "error 409: Table exists",
    'hint: table "people" already exists; pass --if-exists replace to replace it or ' +
    "--if-exists append to add the rows",
  ]);
  const appending = parseLoadArgs(["p.csv", "--table", "t", "--if-exists", "append"], {});
  assert.deepEqual(failureLines(409, "application/json", error(409, "Key conflict"), appending), [
    "error 409: Key conflict",
  ]);
  assert.match(failureLines(401, "", error(401, "Expired"), options)[1]!, /TABLE_SERVICE_TOKEN/);
  assert.match(failureLines(403, "", error(403, "No"), options)[1]!, /schema "sales"/);
  assert.match(failureLines(413, "", error(413, "Big"), options)[1]!, /MAX_UPLOAD_BYTES/);
  // A 404 hints at what its message says is missing.
  const missing = (message: string) => failureLines(404, "", error(404, message), options)[1];
  assert.match(missing('Schema "sales" does not exist')!, /schema "sales" may not exist/);
  assert.match(missing('The spreadsheet has no sheet "Nope"; it has "S"')!, /--sheet/);
  assert.match(missing('Template "base" does not exist')!, /template/);

  const details = Array.from({ length: 7 }, (_, i) => ({
    row: i,
    column: "price",
    message: "not a number",
  }));
  const invalid = failureLines(422, "application/json", error(422, "Bad rows", details), options);
  assert.equal(invalid[0], "error 422: Bad rows");
  assert.equal(invalid[1], '  row 0, column "price": not a number');
  assert.equal(invalid[6], "  … and 2 more");
  assert.match(invalid[7]!, /^hint: /);

  const html = failureLines(502, "text/html", "<html>\n<b>Bad Gateway</b></html>", options);
  assert.equal(
    html[0],
    "error 502: the answer from http://127.0.0.1:8080 is not JSON (text/html): " +
      "<html> <b>Bad Gateway</b></html>",
  );
});
