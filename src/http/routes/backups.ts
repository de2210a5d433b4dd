/**
 * Routes of backups: take one, list them, download one, remove one. They need the `admin`
 * scope and a token confined to no schemas, since a backup holds every schema.
 *
 * @module
 */

import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { type AuthVariables, checkWholeDatabase } from "../auth.ts";
import { type Backups, noBackups } from "../../service/backups.ts";
import { errorResponses, failureResponse } from "./shapes.ts";
import { scoped } from "./scoped.ts";
import { validationHook } from "./validation.ts";

type Env = { Variables: AuthVariables };

const BackupParams = z.object({
  backup_id: z.string().openapi({ example: "20261128T101500Z" }),
});

const TakenBackup = z.object({
  id: z.string().openapi({ example: "20261128T101500Z" }),
  time: z.string().openapi({ example: "2026-11-28T10:15:00Z" }),
  bytes: z.number().int(),
  seconds: z.number(),
}).openapi("TakenBackup");

const BackupInfo = z.object({
  id: z.string(),
  time: z.string(),
  bytes: z.number().int(),
  scheduled: z.boolean(),
}).openapi("Backup");

const unavailableHere = { 501: failureResponse(501, "The engine is PostgreSQL: use pg_dump") };

const takeBackup = createRoute(scoped("admin", {
  method: "post",
  operationId: "takeBackup",
  path: "/backup",
  summary: "Take a backup of the whole database",
  description: "Answers once `DATA_DIR/backups/<id>.duckdb` is complete: a consistent snapshot " +
    "(every write acknowledged before it began, none in part) taken while the service goes on. " +
    "The token must not have a `schemas` claim.",
  tags: ["backups"],
  responses: {
    200: { description: "Taken", content: { "application/json": { schema: TakenBackup } } },
    ...errorResponses(409),
    ...unavailableHere,
  },
}));

const listBackups = createRoute(scoped("admin", {
  method: "get",
  operationId: "listBackups",
  path: "/backup",
  summary: "List the complete backups, newest first",
  tags: ["backups"],
  responses: {
    200: {
      description: "The backups",
      content: {
        "application/json": { schema: z.object({ backups: z.array(BackupInfo) }) },
      },
    },
    ...errorResponses(),
    ...unavailableHere,
  },
}));

const getBackup = createRoute(scoped("admin", {
  method: "get",
  operationId: "getBackup",
  path: "/backup/{backup_id}",
  summary: "Download a backup: a DuckDB file, to restore with --restore",
  tags: ["backups"],
  request: { params: BackupParams },
  responses: {
    200: {
      description: "The DuckDB file",
      content: { "application/octet-stream": { schema: z.string().openapi({ format: "binary" }) } },
    },
    ...errorResponses(404),
    ...unavailableHere,
  },
}));

const deleteBackup = createRoute(scoped("admin", {
  method: "delete",
  operationId: "deleteBackup",
  path: "/backup/{backup_id}",
  summary: "Remove a backup",
  tags: ["backups"],
  request: { params: BackupParams },
  responses: {
    200: {
      description: "Removed",
      content: {
        "application/json": { schema: z.object({ id: z.string(), message: z.string() }) },
      },
    },
    ...errorResponses(404),
    ...unavailableHere,
  },
}));

/** Backup routes over `backups`; each answers 501 without them (an engine that takes none). */
export function backupRoutes(backups: Backups | undefined): OpenAPIHono<Env> {
  const app = new OpenAPIHono<Env>({ defaultHook: validationHook });
  const available = (c: Parameters<typeof checkWholeDatabase>[0]): Backups => {
    checkWholeDatabase(c, "a backup holds every schema");
    if (!backups) throw noBackups();
    return backups;
  };

  app.openapi(takeBackup, async (c) => c.json(await available(c).take(), 200));

  app.openapi(listBackups, async (c) => c.json({ backups: await available(c).list() }, 200));

  app.openapi(getBackup, async (c) => {
    const { backup_id: id } = c.req.valid("param");
    const { file, bytes } = await available(c).open(id);
    return c.body(file.readable, 200, {
      "content-type": "application/octet-stream",
      "content-length": String(bytes),
      "content-disposition": `attachment; filename="${id}.duckdb"`,
    });
  });

  app.openapi(deleteBackup, async (c) => {
    const { backup_id: id } = c.req.valid("param");
    await available(c).remove(id);
    return c.json({ id, message: `Backup "${id}" removed` }, 200);
  });

  return app;
}
