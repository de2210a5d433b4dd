/**
 * The part of the Store interface both engines answer alike, over their core (core.ts):
 * schemas, the listing of tables, templates. Each engine's store extends it and adds what it
 * does its own way.
 *
 * @module
 */

import type { StoredTemplate, Template, Version } from "../../catalog/templates.ts";
import type {
  KeyedWrite,
  ListTablesOptions,
  ListTemplatesOptions,
  NewTemplate,
  Store,
  TableListing,
} from "../store.ts";
import type { Core, ListSession, SqlSession } from "./core.ts";
import * as schemas from "./schemas.ts";
import { listTables } from "./tables.ts";
import * as templates from "./templates.ts";

/** The operations written once for both engines. */
type Shared =
  | "listSchemas"
  | "resolveSchema"
  | "createSchema"
  | "dropSchema"
  | "listTables"
  | "templateVersions"
  | "listTemplates"
  | "addTemplate"
  | "dropTemplate";

/** A store's operations that are the same on every engine, over the engine's `core`. */
export abstract class CoreStore<S extends SqlSession & ListSession> implements Pick<Store, Shared> {
  protected constructor(protected readonly core: Core<S>) {}

  listSchemas(visible?: readonly string[]): Promise<string[]> {
    return schemas.listSchemas(this.core, visible);
  }

  resolveSchema(name: string): Promise<string> {
    return schemas.resolveSchema(this.core, name);
  }

  createSchema(name: string, keyed?: KeyedWrite<string>): Promise<string> {
    return schemas.createSchema(this.core, name, keyed);
  }

  dropSchema(name: string, cascade: boolean, keyed?: KeyedWrite<string>): Promise<string> {
    return schemas.dropSchema(this.core, name, cascade, keyed);
  }

  listTables(options: ListTablesOptions): Promise<TableListing> {
    return listTables(this.core, options);
  }

  templateVersions(name: string): Promise<StoredTemplate[]> {
    return templates.versionsOf(this.core, name);
  }

  listTemplates(options: ListTemplatesOptions): Promise<Template[]> {
    return templates.listTemplates(this.core, options);
  }

  addTemplate(
    template: NewTemplate,
    admit: (existing: readonly StoredTemplate[]) => void,
    keyed?: KeyedWrite<Template>,
  ): Promise<Template> {
    return templates.addTemplate(this.core, template, admit, keyed);
  }

  dropTemplate(
    name: string,
    version?: Version | "latest",
    keyed?: KeyedWrite<string>,
  ): Promise<string> {
    return templates.dropTemplate(this.core, name, version, keyed);
  }
}
