import assert from "node:assert/strict";
import { ApiError } from "../errors.ts";
import { zip } from "../../tests/helpers/zip.ts";
import { checkZip } from "./sheet.ts";

Deno.test("checkZip() refuses a part longer than the spreadsheet reader takes, naming it", async () => {
  const sheet = `<?xml version="1.0"?><worksheet>${"<row/>".repeat(400)}</worksheet>`;
  const limits = { maxRows: 10, maxExpandedBytes: 1 << 20, maxExpansionRatio: 1000 };
  for (const stored of [false, true]) {
    const bytes = await zip({ "xl/worksheets/sheet1.xml": sheet }, stored);
    checkZip(bytes, { ...limits, maxPartBytes: sheet.length });
    assert.throws(
      () => checkZip(bytes, { ...limits, maxPartBytes: sheet.length - 1 }),
      (error: unknown) => {
        assert.ok(error instanceof ApiError);
        assert.equal(error.status, 413);
        assert.match(
          error.message,
          /part "xl\/worksheets\/sheet1\.xml" unpacks to more than \d+ bytes.*send the sheet as CSV/,
        );
        return true;
      },
    );
  }
});
