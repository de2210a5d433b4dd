import assert from "node:assert/strict";
import * as XLSX from "xlsx";
import { errorOf, mint, ok, snapshot, TestServer, uploadForm } from "./helpers/server.ts";

interface ColumnSpec {
  name: string;
  type: string;
  default?: string;
  is_nullable?: boolean;
}

/** A column; `notNull` and `default` as a definition gives them. */
function col(name: string, type: string, options: Partial<ColumnSpec> = {}): ColumnSpec {
  return { name, type, ...options };
}

const NOT_NULL = { is_nullable: false };

Deno.test("templates: create, list, get and delete versions", async (t) => {
  const server = await TestServer.start();
  try {
    const create = (name: string, body: unknown) =>
      server.request("POST", `table_template/${name}`, { body });
    const orders = {
      columns: [col("id", "bigserial"), col("email", "varchar(80)", NOT_NULL)],
      constraints: { primary_key: { columns: ["id"] } },
    };

    await t.step("a first version defaults to 1.0 and none, and is stored as given", async () => {
      const before = Date.now();
      const { table_template } = ok(await create("orders", { table_template: orders }));
      const { created_at, ...rest } = table_template;
      assert.deepEqual(rest, {
        name: "orders",
        table_template: {
          columns: [
            { name: "id", type: "bigserial", default: null, is_nullable: false },
            { name: "email", type: "varchar(80)", default: null, is_nullable: false },
          ],
          constraints: { primary_key: { columns: ["id"] }, unique: [], foreign_keys: [] },
        },
        version: "1.0",
        compatibility: "none",
      });
      assert.match(created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.ok(Date.parse(created_at) >= before - 1000);
    });

    await t.step("later versions: 1.1 and 2.0, compatibility stored lowercase", async () => {
      const v11 = {
        columns: [...orders.columns, col("note", "text")],
        constraints: orders.constraints,
      };
      const body = ok(
        await create("orders", { table_template: v11, version: "1.1", compatibility: "BACKWARD" }),
      );
      assert.equal(body.table_template.version, "1.1");
      assert.equal(body.table_template.compatibility, "backward");
      ok(await create("orders", { table_template: { columns: [] }, version: "2.0" }));
      ok(await create("customers", { table_template: { columns: [col("id", "int")] } }));
    });

    await t.step("get: all versions newest first, the latest, or one", async () => {
      const all = ok(await server.request("GET", "table_template/orders"));
      assert.deepEqual(all.versions, ["2.0", "1.1", "1.0"]);
      assert.deepEqual(all.table_templates.map((v: { version: string }) => v.version), [
        "2.0",
        "1.1",
        "1.0",
      ]);
      const latest = ok(await server.request("GET", "table_template/ORDERS?version=latest"));
      assert.deepEqual(latest.table_templates.map((v: { version: string }) => v.version), ["2.0"]);
      assert.deepEqual(latest.versions, ["2.0", "1.1", "1.0"]);
      const one = ok(await server.request("GET", "table_template/orders?version=1.1"));
      assert.equal(one.table_templates.length, 1);
      assert.equal(one.table_templates[0].table_template.columns[2].name, "note");
      errorOf(await server.request("GET", "table_template/orders?version=1.2"), 404);
      errorOf(await server.request("GET", "table_template/nothing"), 404);
      errorOf(await server.request("GET", "table_template/orders?version=1.2.3"), 400);
    });

    await t.step("list: search, order_by and latest", async () => {
      const list = async (query: string) =>
        ok(await server.request("GET", `table_template${query}`)).table_templates.map(
          (v: { name: string; version: string }) => `${v.name} ${v.version}`,
        );
      assert.deepEqual(await list(""), [
        "customers 1.0",
        "orders 2.0",
        "orders 1.1",
        "orders 1.0",
      ]);
      assert.deepEqual(await list("?order_by=name_asc"), [
        "customers 1.0",
        "orders 2.0",
        "orders 1.1",
        "orders 1.0",
      ]);
      assert.deepEqual(await list("/?order_by=NAME_DESC&latest=true"), [
        "orders 2.0",
        "customers 1.0",
      ]);
      assert.deepEqual(await list("?search=RDE&latest=1"), ["orders 2.0"]);
      assert.deepEqual(await list("?search=zzz"), []);
      errorOf(await server.request("GET", "table_template?order_by=oldest"), 400);
      errorOf(await server.request("GET", "table_template?latest=maybe"), 400);
    });

    await t.step("delete one version, then the latest, then all", async () => {
      const one = ok(await server.request("DELETE", "table_template/orders?version=1.1"));
      assert.equal(one.table_template_name, "orders");
      assert.equal(typeof one.message, "string");
      errorOf(await server.request("DELETE", "table_template/orders?version=1.1"), 404);
      assert.deepEqual(ok(await server.request("GET", "table_template/orders")).versions, [
        "2.0",
        "1.0",
      ]);
      ok(await server.request("DELETE", "table_template/orders?version=latest"));
      assert.deepEqual(ok(await server.request("GET", "table_template/orders")).versions, [
        "1.0",
      ]);
      ok(await server.request("DELETE", "table_template/Orders"));
      errorOf(await server.request("GET", "table_template/orders"), 404);
      errorOf(await server.request("DELETE", "table_template/orders"), 404);
      // Once every version is gone the name starts afresh.
      ok(await create("orders", { table_template: orders }));
    });

    await t.step("a version under another spelling joins the template", async () => {
      const body = ok(await create("ORDERS", { table_template: orders, version: "1.1" }));
      assert.equal(body.table_template.name, "orders");
    });

    await t.step("of concurrent creates of one version exactly one succeeds", async () => {
      const answers = await Promise.all(
        Array.from(
          { length: 8 },
          () => create("orders", { table_template: orders, version: "3.0" }),
        ),
      );
      assert.deepEqual(answers.map((a) => a.status).sort(), [
        200,
        409,
        409,
        409,
        409,
        409,
        409,
        409,
      ]);
      assert.deepEqual(ok(await server.request("GET", "table_template/orders")).versions, [
        "3.0",
        "1.1",
        "1.0",
      ]);
    });

    await t.step("versions persist across a restart", async () => {
      await server.restart();
      assert.deepEqual(ok(await server.request("GET", "table_template/orders")).versions, [
        "3.0",
        "1.1",
        "1.0",
      ]);
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("templates: names, versions and bodies that are refused change nothing", async (t) => {
  const server = await TestServer.start();
  try {
    const create = (name: string, body: unknown) =>
      server.request("POST", `table_template/${name}`, { body });
    const definition = { columns: [col("id", "integer")] };
    ok(await create("base", { table_template: definition, version: "1.5" }));
    const before = await snapshot(server);

    const cases: [string, string, unknown, number][] = [
      ["a malformed version", "base", { table_template: definition, version: "2.0.0" }, 400],
      [
        "a version with a leading zero",
        "base",
        { table_template: definition, version: "02.0" },
        400,
      ],
      ["a version with no minor", "base", { table_template: definition, version: "2" }, 400],
      ["a version as a number", "base", { table_template: definition, version: 2.0 }, 400],
      ["a name of symbols", encodeURIComponent("!#%"), { table_template: definition }, 400],
      ["a name of 33 characters", "a".repeat(33), { table_template: definition }, 400],
      ["a name starting with a digit", "1abc", { table_template: definition }, 400],
      ["an unknown compatibility", "base", {
        table_template: definition,
        version: "2.0",
        compatibility: "sideways",
      }, 400],
      ["a table_template that is not an object", "base", { table_template: [] }, 400],
      ["the same version", "base", { table_template: definition, version: "1.5" }, 409],
      ["the same version spelt 1.05", "base", { table_template: definition, version: "1.05" }, 409],
      ["an older version", "base", { table_template: definition, version: "1.4" }, 409],
      ["an unknown type", "base", {
        table_template: { columns: [col("x", "no_such_type")] },
        version: "2.0",
      }, 422],
      ["a constraint on an unknown column", "base", {
        table_template: { columns: [], constraints: { unique: [{ columns: ["x"] }] } },
        version: "2.0",
      }, 422],
      ["a default that is a statement", "base", {
        table_template: { columns: [col("x", "int", { default: "1; DROP TABLE t" })] },
        version: "2.0",
      }, 422],
    ];
    for (const [label, name, body, status] of cases) {
      await t.step(`${label} is ${status}`, async () => {
        const error = errorOf(await create(name, body), status);
        if (status === 422) assert.match(error.message, /template "base"/);
      });
    }

    await t.step("none of them stored anything", async () => {
      assert.equal(await snapshot(server), before);
    });

    await t.step("32 characters with digits, _ and - make a valid name", async () => {
      const name = `T${"a1_-".repeat(7)}xyz`;
      assert.equal(name.length, 32);
      assert.equal(
        ok(await create(name, { table_template: definition })).table_template.name,
        name,
      );
    });

    await t.step("an absent or null table_template is an empty definition", async () => {
      const empty = ok(await create("empty", {})).table_template;
      assert.deepEqual(empty.table_template, {
        columns: [],
        constraints: { primary_key: null, unique: [], foreign_keys: [] },
      });
      const nulls = { table_template: null, version: "1.1", compatibility: null };
      assert.equal(ok(await create("empty", nulls)).table_template.version, "1.1");
    });

    await t.step("1.10 is newer than 1.9", async () => {
      ok(await create("minor", { table_template: definition, version: "1.9" }));
      ok(await create("minor", { table_template: definition, version: "1.10" }));
      assert.deepEqual(ok(await server.request("GET", "table_template/minor")).versions, [
        "1.10",
        "1.9",
      ]);
    });

    await t.step("templates need their scopes", async () => {
      const reader = await mint({ scope: "templates:read" });
      const tablesOnly = await mint({ scope: "tables:read tables:write" });
      ok(await server.request("GET", "table_template", { token: reader }));
      errorOf(
        await server.request("POST", "table_template/x", {
          body: { table_template: definition },
          token: reader,
        }),
        403,
      );
      errorOf(await server.request("GET", "table_template", { token: tablesOnly }), 403);
      errorOf(await server.request("DELETE", "table_template/base", { token: reader }), 403);
      errorOf(await server.request("GET", "table_template", { token: null }), 401);
    });
  } finally {
    await server.dispose();
  }
});

/** A compatibility case: earlier versions (oldest first), the new one, and its verdict. */
interface CompatibilityCase {
  readonly label: string;
  readonly mode: string;
  readonly earlier:
    readonly (readonly ColumnSpec[] | { columns: ColumnSpec[]; constraints: unknown })[];
  readonly next: readonly ColumnSpec[] | { columns: ColumnSpec[]; constraints: unknown };
  /** The expected violations as `rule change column-or-key @version`; empty: compatible. */
  readonly violations: readonly string[];
}

const BASE = [
  col("id", "integer", NOT_NULL),
  col("name", "varchar(20)"),
  col("qty", "integer", NOT_NULL),
];
const without = (name: string) => BASE.filter((c) => c.name !== name);
const replace = (name: string, column: ColumnSpec) =>
  BASE.map((c) => (c.name === name ? column : c));
const keyed = (columns: ColumnSpec[], unique?: string[]) => ({
  columns,
  constraints: {
    primary_key: { columns: ["id"] },
    ...(unique ? { unique: [{ columns: unique }] } : {}),
  },
});

const COMPATIBILITY_CASES: readonly CompatibilityCase[] = [
  // backward: consumers of the new version read rows written under the old.
  {
    label: "adding a nullable column",
    mode: "backward",
    earlier: [BASE],
    next: [...BASE, col("note", "varchar")],
    violations: [],
  },
  {
    label: "adding a NOT NULL column with a default",
    mode: "backward",
    earlier: [BASE],
    next: [...BASE, col("n", "int", { ...NOT_NULL, default: "0" })],
    violations: [],
  },
  {
    label: "adding a serial column",
    mode: "backward",
    earlier: [BASE],
    next: [...BASE, col("seq", "serial")],
    violations: [],
  },
  {
    label: "adding a NOT NULL column without a default",
    mode: "backward",
    earlier: [BASE],
    next: [...BASE, col("n", "int", NOT_NULL)],
    violations: ["backward column_added n @1.0"],
  },
  {
    label: "dropping a NOT NULL column",
    mode: "backward",
    earlier: [BASE],
    next: without("qty"),
    violations: [],
  },
  {
    label: "widening INTEGER to BIGINT",
    mode: "backward",
    earlier: [BASE],
    next: replace("qty", col("qty", "bigint", NOT_NULL)),
    violations: [],
  },
  {
    label: "widening VARCHAR(20) to VARCHAR",
    mode: "backward",
    earlier: [BASE],
    next: replace("name", col("name", "varchar")),
    violations: [],
  },
  {
    label: "widening VARCHAR(20) to VARCHAR(40)",
    mode: "backward",
    earlier: [BASE],
    next: replace("name", col("name", "varchar(40)")),
    violations: [],
  },
  {
    label: "widening FLOAT to DOUBLE",
    mode: "backward",
    earlier: [[col("x", "float")]],
    next: [col("x", "double precision")],
    violations: [],
  },
  {
    label: "widening DECIMAL(10,2) to DECIMAL(12,2)",
    mode: "backward",
    earlier: [[col("x", "numeric(10,2)")]],
    next: [col("x", "decimal(12,2)")],
    violations: [],
  },
  {
    label: "a type alias is no change (int4 is INTEGER)",
    mode: "backward",
    earlier: [BASE],
    next: replace("qty", col("qty", "int4", NOT_NULL)),
    violations: [],
  },
  {
    label: "narrowing INTEGER to SMALLINT",
    mode: "backward",
    earlier: [BASE],
    next: replace("qty", col("qty", "smallint", NOT_NULL)),
    violations: ["backward type_narrowed qty @1.0"],
  },
  {
    label: "narrowing VARCHAR to VARCHAR(10)",
    mode: "backward",
    earlier: [[col("s", "text")]],
    next: [col("s", "varchar(10)")],
    violations: ["backward type_narrowed s @1.0"],
  },
  {
    label: "changing INTEGER to VARCHAR",
    mode: "backward",
    earlier: [BASE],
    next: replace("qty", col("qty", "varchar", NOT_NULL)),
    violations: ["backward type_changed qty @1.0"],
  },
  {
    label: "relaxing NOT NULL",
    mode: "backward",
    earlier: [BASE],
    next: replace("qty", col("qty", "integer")),
    violations: [],
  },
  {
    label: "tightening to NOT NULL",
    mode: "backward",
    earlier: [BASE],
    next: replace("name", col("name", "varchar(20)", NOT_NULL)),
    violations: ["backward not_null_added name @1.0"],
  },
  {
    label: "renaming a NOT NULL column (a drop plus an add)",
    mode: "backward",
    earlier: [BASE],
    next: replace("qty", col("quantity", "integer", NOT_NULL)),
    violations: ["backward column_added quantity @1.0"],
  },
  {
    label: "adding a unique key",
    mode: "backward",
    earlier: [keyed(BASE)],
    next: keyed(BASE, ["name"]),
    violations: ["backward key_added unique key (name) @1.0"],
  },
  {
    label: "adding a serial column that is the primary key",
    mode: "backward",
    earlier: [BASE],
    next: {
      columns: [col("key", "bigserial"), ...BASE],
      constraints: { primary_key: { columns: ["key"] } },
    },
    violations: [],
  },
  {
    label: "dropping a unique key",
    mode: "backward",
    earlier: [keyed(BASE, ["name"])],
    next: keyed(BASE),
    violations: [],
  },
  {
    label: "a default changed",
    mode: "backward",
    earlier: [BASE],
    next: replace("qty", col("qty", "integer", { ...NOT_NULL, default: "1" })),
    violations: [],
  },

  // forward: consumers of the old version read rows written under the new.
  {
    label: "adding a NOT NULL column without a default",
    mode: "forward",
    earlier: [BASE],
    next: [...BASE, col("n", "int", NOT_NULL)],
    violations: [],
  },
  {
    label: "dropping a nullable column",
    mode: "forward",
    earlier: [BASE],
    next: without("name"),
    violations: [],
  },
  {
    label: "dropping a NOT NULL column with a default",
    mode: "forward",
    earlier: [replace("qty", col("qty", "integer", { ...NOT_NULL, default: "0" }))],
    next: without("qty"),
    violations: [],
  },
  {
    label: "dropping a NOT NULL column without a default",
    mode: "forward",
    earlier: [BASE],
    next: without("qty"),
    violations: ["forward column_dropped qty @1.0"],
  },
  {
    label: "narrowing BIGINT to INTEGER",
    mode: "forward",
    earlier: [replace("qty", col("qty", "bigint", NOT_NULL))],
    next: BASE,
    violations: [],
  },
  {
    label: "widening INTEGER to BIGINT",
    mode: "forward",
    earlier: [BASE],
    next: replace("qty", col("qty", "bigint", NOT_NULL)),
    violations: ["forward type_widened qty @1.0"],
  },
  {
    label: "changing INTEGER to DATE",
    mode: "forward",
    earlier: [BASE],
    next: replace("qty", col("qty", "date", NOT_NULL)),
    violations: ["forward type_changed qty @1.0"],
  },
  {
    label: "tightening to NOT NULL",
    mode: "forward",
    earlier: [BASE],
    next: replace("name", col("name", "varchar(20)", NOT_NULL)),
    violations: [],
  },
  {
    label: "relaxing NOT NULL",
    mode: "forward",
    earlier: [BASE],
    next: replace("qty", col("qty", "integer")),
    violations: ["forward not_null_dropped qty @1.0"],
  },
  {
    label: "renaming a NOT NULL column (a drop plus an add)",
    mode: "forward",
    earlier: [BASE],
    next: replace("qty", col("quantity", "integer", NOT_NULL)),
    violations: ["forward column_dropped qty @1.0"],
  },
  {
    label: "dropping the primary key",
    mode: "forward",
    earlier: [keyed(BASE)],
    next: BASE,
    violations: ["forward key_dropped primary key (id) @1.0"],
  },
  {
    label: "dropping a nullable column that has a unique key",
    mode: "forward",
    earlier: [keyed(BASE, ["name"])],
    next: keyed(without("name")),
    violations: [],
  },
  {
    label: "dropping a NOT NULL column that has a unique key",
    mode: "forward",
    earlier: [keyed(BASE, ["qty"])],
    next: keyed(without("qty")),
    violations: ["forward column_dropped qty @1.0"],
  },
  {
    label: "adding a unique key",
    mode: "forward",
    earlier: [keyed(BASE)],
    next: keyed(BASE, ["name"]),
    violations: [],
  },

  // full: both.
  {
    label: "adding a nullable column",
    mode: "full",
    earlier: [BASE],
    next: [...BASE, col("note", "varchar")],
    violations: [],
  },
  {
    label: "adding a NOT NULL column without a default",
    mode: "full",
    earlier: [BASE],
    next: [...BASE, col("n", "int", NOT_NULL)],
    violations: ["backward column_added n @1.0"],
  },
  {
    label: "dropping a NOT NULL column without a default",
    mode: "full",
    earlier: [BASE],
    next: without("qty"),
    violations: ["forward column_dropped qty @1.0"],
  },
  {
    label: "widening INTEGER to BIGINT",
    mode: "full",
    earlier: [BASE],
    next: replace("qty", col("qty", "bigint", NOT_NULL)),
    violations: ["forward type_widened qty @1.0"],
  },
  {
    label: "narrowing INTEGER to SMALLINT",
    mode: "full",
    earlier: [BASE],
    next: replace("qty", col("qty", "smallint", NOT_NULL)),
    violations: ["backward type_narrowed qty @1.0"],
  },
  {
    label: "changing INTEGER to VARCHAR breaks both rules",
    mode: "FULL",
    earlier: [BASE],
    next: replace("qty", col("qty", "varchar", NOT_NULL)),
    violations: ["backward type_changed qty @1.0", "forward type_changed qty @1.0"],
  },
  {
    label: "renaming a NOT NULL column breaks both rules",
    mode: "full",
    earlier: [BASE],
    next: replace("qty", col("quantity", "integer", NOT_NULL)),
    violations: ["backward column_added quantity @1.0", "forward column_dropped qty @1.0"],
  },
  { label: "the same definition", mode: "full", earlier: [BASE], next: BASE, violations: [] },

  // none and ignore check nothing.
  {
    label: "changing a type",
    mode: "none",
    earlier: [BASE],
    next: replace("qty", col("qty", "varchar", NOT_NULL)),
    violations: [],
  },
  { label: "dropping every column", mode: "ignore", earlier: [BASE], next: [], violations: [] },

  // transitive: against every earlier version, not only the latest.
  {
    label: "narrowing back what an earlier version had wide",
    mode: "backward",
    earlier: [replace("qty", col("qty", "bigint", NOT_NULL)), BASE],
    next: BASE,
    violations: [],
  },
  {
    label: "narrowing back what an earlier version had wide",
    mode: "backward_transitive",
    earlier: [replace("qty", col("qty", "bigint", NOT_NULL)), BASE],
    next: BASE,
    violations: ["backward type_narrowed qty @1.0"],
  },
  {
    label: "dropping a column an earlier version had NOT NULL",
    mode: "forward",
    earlier: [BASE, replace("qty", col("qty", "integer"))],
    next: without("qty"),
    violations: [],
  },
  {
    label: "dropping a column an earlier version had NOT NULL",
    mode: "forward_transitive",
    earlier: [BASE, replace("qty", col("qty", "integer"))],
    next: without("qty"),
    violations: ["forward column_dropped qty @1.0"],
  },
  {
    label: "keeping a type an earlier version did not have",
    mode: "full",
    earlier: [BASE, replace("qty", col("qty", "varchar", NOT_NULL))],
    next: replace("qty", col("qty", "varchar", NOT_NULL)),
    violations: [],
  },
  {
    label: "keeping a type an earlier version did not have",
    mode: "full_transitive",
    earlier: [BASE, replace("qty", col("qty", "varchar", NOT_NULL))],
    next: replace("qty", col("qty", "varchar", NOT_NULL)),
    violations: ["backward type_changed qty @1.0", "forward type_changed qty @1.0"],
  },
  {
    label: "a violation against every earlier version",
    mode: "backward_transitive",
    earlier: [BASE, [...BASE, col("x", "int")]],
    next: [...BASE, col("n", "int", NOT_NULL)],
    violations: ["backward column_added n @1.1", "backward column_added n @1.0"],
  },
];

Deno.test("templates: the compatibility rules, case by case", async (t) => {
  const server = await TestServer.start();
  try {
    for (const [index, c] of COMPATIBILITY_CASES.entries()) {
      const verdict = c.violations.length === 0 ? "compatible" : c.violations.join("; ");
      await t.step(`${c.mode}: ${c.label} → ${verdict}`, async () => {
        const name = `case${index}`;
        const definition = (d: CompatibilityCase["next"]) => ("columns" in d ? d : { columns: d });
        for (const [i, earlier] of c.earlier.entries()) {
          ok(
            await server.request("POST", `table_template/${name}`, {
              body: { table_template: definition(earlier), version: `1.${i}` },
            }),
          );
        }
        const body = { table_template: definition(c.next), version: "2.0", compatibility: c.mode };
        const summary = (
          details: {
            rule: string;
            change: string;
            column?: string;
            key?: string;
            version: string;
          }[],
        ) => details.map((d) => `${d.rule} ${d.change} ${d.key ?? d.column} @${d.version}`);

        const dryRun = ok(
          await server.request("POST", `table_template/${name}/compatibility`, { body }),
        );
        assert.deepEqual(summary(dryRun.details), c.violations);
        assert.equal(dryRun.is_compatible, c.violations.length === 0);
        for (const detail of dryRun.details) assert.equal(typeof detail.message, "string");
        // The dry run stored nothing.
        assert.equal(
          ok(await server.request("GET", `table_template/${name}`)).versions.length,
          c.earlier.length,
        );

        const created = await server.request("POST", `table_template/${name}`, { body });
        if (c.violations.length === 0) {
          assert.equal(ok(created).table_template.version, "2.0");
        } else {
          const error = errorOf(created, 409);
          assert.deepEqual(summary(error.details as never), c.violations);
          assert.equal(
            ok(await server.request("GET", `table_template/${name}`)).versions.length,
            c.earlier.length,
          );
        }
      });
    }

    await t.step("a dry run with a version judges against the versions before it", async () => {
      ok(
        await server.request("POST", "table_template/dry", {
          body: { table_template: { columns: BASE } },
        }),
      );
      ok(
        await server.request("POST", "table_template/dry", {
          body: { table_template: { columns: without("qty") }, version: "3.0" },
        }),
      );
      const check = async (mode: string, version?: string) =>
        ok(
          await server.request("POST", "table_template/dry/compatibility", {
            body: {
              table_template: { columns: without("qty") },
              compatibility: mode,
              ...(version ? { version } : {}),
            },
          }),
        );
      // Without a version: against the latest, 3.0, which has no qty either.
      assert.equal((await check("forward")).is_compatible, true);
      // As 2.0: against 1.0, whose qty is NOT NULL without a default.
      const asTwo = await check("forward", "2.0");
      assert.deepEqual(asTwo.details.map((d: { version: string }) => d.version), ["1.0"]);
      assert.equal((await check("forward", "4.0")).is_compatible, true);
      const transitive = await check("forward_transitive");
      assert.deepEqual(transitive.details.map((d: { version: string }) => d.version), ["1.0"]);
      const narrowing = { table_template: { columns: without("qty") }, compatibility: "full" };
      // Details are capped at 100, as an error's are.
      const wide = Array.from({ length: 120 }, (_, i) => col(`w${i}`, "int", NOT_NULL));
      ok(
        await server.request("POST", "table_template/wide", {
          body: { table_template: { columns: wide } },
        }),
      );
      const many = ok(
        await server.request("POST", "table_template/wide/compatibility", {
          body: { table_template: { columns: [] }, compatibility: "forward" },
        }),
      );
      assert.equal(many.is_compatible, false);
      assert.equal(many.details.length, 100);
      // A template that does not exist yet has nothing to be incompatible with.
      assert.deepEqual(
        ok(
          await server.request("POST", "table_template/newcomer/compatibility", {
            body: narrowing,
          }),
        ),
        { is_compatible: true, details: [] },
      );
      errorOf(await server.request("GET", "table_template/newcomer"), 404);
      errorOf(
        await server.request("POST", "table_template/dry/compatibility", {
          body: { ...narrowing, version: "x" },
        }),
        400,
      );
      errorOf(
        await server.request("POST", "table_template/dry/compatibility", {
          body: { table_template: { columns: [col("a", "nope")] } },
        }),
        422,
      );
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("templates: tables created and uploaded from a template", async (t) => {
  const server = await TestServer.start();
  try {
    const v1 = {
      columns: [col("id", "serial"), col("email", "varchar", NOT_NULL), col("score", "double")],
      constraints: { primary_key: { columns: ["id"] }, unique: [{ columns: ["email"] }] },
    };
    const v2 = { columns: [...v1.columns, col("note", "text")], constraints: v1.constraints };
    ok(await server.request("POST", "table_template/people", { body: { table_template: v1 } }));
    ok(
      await server.request("POST", "table_template/people", {
        body: { table_template: v2, version: "1.1", compatibility: "backward" },
      }),
    );

    await t.step("POST /table?template= makes the latest version and records it", async () => {
      const { table } = ok(await server.request("POST", "table/crew?template=people"));
      assert.deepEqual(table.template, { name: "people", version: "1.1" });
      assert.deepEqual(table.columns.map((c: { name: string }) => c.name), [
        "id",
        "email",
        "score",
        "note",
      ]);
      // Constraint names are the table's own, not the template's.
      assert.equal(table.constraints.primary_key.name, "crew_pkey");
      assert.deepEqual(table.constraints.unique[0], { name: "crew_email_key", columns: ["email"] });
      assert.deepEqual(ok(await server.request("GET", "table/crew")).table, table);
    });

    await t.step("template_version picks a version; the body may be {}", async () => {
      const { table } = ok(
        await server.request("POST", "table/crew_v1?template=People&template_version=1.0", {
          body: {},
        }),
      );
      assert.deepEqual(table.template, { name: "people", version: "1.0" });
      assert.equal(table.columns.length, 3);
      const listed = ok(await server.request("GET", "table?verbose=true")).tables;
      assert.deepEqual(
        listed.map((t: { name: string; template?: unknown }) => [t.name, t.template]),
        [
          ["crew", { name: "people", version: "1.1" }],
          ["crew_v1", { name: "people", version: "1.0" }],
        ],
      );
    });

    await t.step("a table not made from a template shows no template", async () => {
      const { table } = ok(
        await server.request("POST", "table/plain", { body: { table: { columns: [] } } }),
      );
      assert.equal("template" in table, false);
    });

    await t.step(
      "upload/json from a template: objects and arrays in its column order",
      async () => {
        const objects = ok(
          await server.request("POST", "table/from_json/upload/json?template=people", {
            body: { data: [{ email: "a@x", score: 1.5 }, { email: "b@x", note: "hi" }] },
          }),
        );
        assert.equal(objects.inserted, 2);
        assert.deepEqual(objects.table.template, { name: "people", version: "1.1" });
        const arrays = ok(
          await server.request(
            "POST",
            "table/from_arrays/upload/json?template=people&template_version=1.0",
            { body: { data: [[1, "a@x", 2.5], [2, "b@x", null]] } },
          ),
        );
        assert.equal(arrays.inserted, 2);
        const { records } = ok(await server.request("GET", "table/from_arrays/records"));
        assert.deepEqual(records, [
          { id: 1, email: "a@x", score: 2.5 },
          { id: 2, email: "b@x", score: null },
        ]);
      },
    );

    await t.step("upload/csv and upload/excel from a template", async () => {
      const csv = uploadForm(new TextEncoder().encode("email,score\nc@x,3\nd@x,4\n"), "p.csv");
      const fromCsv = ok(
        await server.request("POST", "table/from_csv/upload/csv?template=people", { body: csv }),
      );
      assert.equal(fromCsv.inserted, 2);
      assert.deepEqual(fromCsv.table.template, { name: "people", version: "1.1" });
      const book = XLSX.utils.book_new();
      XLSX.utils.book_append_sheet(
        book,
        XLSX.utils.aoa_to_sheet([["email", "score"], ["e@x", 5], ["f@x", 6]]),
        "S",
      );
      const bytes = new Uint8Array(XLSX.write(book, { type: "array", bookType: "xlsx" }));
      const fromSheet = ok(
        await server.request(
          "POST",
          "table/from_sheet/upload/excel?template=people&template_version=1.0",
          { body: uploadForm(bytes, "p.xlsx") },
        ),
      );
      assert.equal(fromSheet.inserted, 2);
      assert.deepEqual(fromSheet.table.template, { name: "people", version: "1.0" });
      const { records } = ok(await server.request("GET", "table/from_sheet/records"));
      assert.deepEqual(records.map((r: { email: string }) => r.email), ["e@x", "f@x"]);
    });

    await t.step("replace takes the new origin; append keeps the table's", async () => {
      const replaced = ok(
        await server.request(
          "POST",
          "table/from_json/upload/json?if_exists=replace&template=people&template_version=1.0",
          { body: { data: [{ email: "z@x" }] } },
        ),
      );
      assert.deepEqual(replaced.table.template, { name: "people", version: "1.0" });
      const appended = ok(
        await server.request(
          "POST",
          "table/from_json/upload/json?if_exists=append&template=people&template_version=1.0",
          { body: { data: [{ email: "y@x" }] } },
        ),
      );
      assert.equal(appended.inserted, 1);
      assert.deepEqual(appended.table.template, { name: "people", version: "1.0" });
      // Appending with a template whose columns differ from the table's is 422.
      errorOf(
        await server.request(
          "POST",
          "table/from_json/upload/json?if_exists=append&template=people",
          {
            body: { data: [{ email: "w@x" }] },
          },
        ),
        422,
      );
      const plainReplace = ok(
        await server.request("POST", "table/from_json/upload/json?if_exists=replace", {
          body: { data: [{ a: 1 }] },
        }),
      );
      assert.equal("template" in plainReplace.table, false);
    });

    await t.step("an update keeps the origin; dropping the table forgets it", async () => {
      const { table } = ok(await server.request("GET", "table/crew"));
      const renamed = ok(
        await server.request("PUT", "table/crew", {
          body: { table: { ...table, name: "crew2", columns: table.columns.slice(0, 3) } },
        }),
      );
      assert.deepEqual(renamed.table.template, { name: "people", version: "1.1" });
      ok(await server.request("DELETE", "table/crew2"));
      const again = ok(
        await server.request("POST", "table/crew2", { body: { table: { columns: [] } } }),
      );
      assert.equal("template" in again.table, false);
    });

    await t.step("the origin stays when the template is deleted", async () => {
      ok(await server.request("POST", "table_template/gone", { body: { table_template: v1 } }));
      ok(await server.request("POST", "table/orphan?template=gone"));
      ok(await server.request("DELETE", "table_template/gone"));
      const { table } = ok(await server.request("GET", "table/orphan"));
      assert.deepEqual(table.template, { name: "gone", version: "1.0" });
    });

    await t.step(
      "refusals: both given, version alone, unknown template or version, scope",
      async () => {
        const before = await snapshot(server);
        const cases: [string, string, unknown, number, string?][] = [
          ["table/t1?template=people", "a definition and a template", {
            table: { columns: [] },
          }, 400],
          ["table/t1?template_version=1.0", "a version without a template", {}, 400],
          ["table/t1?template=nobody", "an unknown template", {}, 404],
          ["table/t1?template=people&template_version=9.0", "an unknown version", {}, 404],
          ["table/t1?template=people&template_version=1", "a malformed version", {}, 400],
          ["table/t1?template=%21bad", "a malformed template name", {}, 400],
          ["table/t1/upload/json?template=people", "upload/json with both", {
            table: { columns: [col("a", "int")] },
            data: [],
          }, 400],
          ["table/t1/upload/json?template=nobody", "upload/json from an unknown template", {
            data: [],
          }, 404],
          [
            "table/t1/upload/csv?template=people",
            "upload/csv with both",
            uploadForm(new TextEncoder().encode("a\n1\n"), "a.csv", { table: { columns: [] } }),
            400,
          ],
          [
            "table/t1/upload/excel?template=nobody",
            "upload/excel from an unknown template",
            uploadForm(new TextEncoder().encode("a\n1\n"), "a.csv"),
            404,
          ],
          ["table/t1?template=people", "a token without templates:read", {}, 403, "tables:write"],
        ];
        for (const [path, label, body, status, scope] of cases) {
          const token = scope ? await mint({ scope }) : undefined;
          const answer = await server.request("POST", path, { body, token });
          assert.equal(answer.status, status, `${label}: ${answer.text}`);
          errorOf(answer, status);
        }
        assert.equal(await snapshot(server), before);
      },
    );
  } finally {
    await server.dispose();
  }
});
