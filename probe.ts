import { checkZip, detectFormat, readSheet } from "./src/ingest/sheet.ts";
for (const f of ["workbook.xlsx", "workbook.xls", "workbook.ods", "people.csv"]) {
  const path = `tests/fixtures/${f}`;
  const format = await detectFormat(path);
  console.log(f, format);
  if (format === "csv") continue;
  const bytes = await Deno.readFile(path);
  const limits = { maxRows: 1000, maxExpandedBytes: 2 ** 31, maxExpansionRatio: 100 };
  if (format === "zip") await checkZip(bytes, limits);
  for (const sheet of [undefined, "1"]) {
    const out = `/tmp/exp/${crypto.randomUUID()}.json`;
    const r = await readSheet(bytes, { ...limits, outPath: out, sheet });
    console.log(r.sheet, r.keys, r.rows, r.sheetRows);
    console.log(await Deno.readTextFile(out));
  }
}
