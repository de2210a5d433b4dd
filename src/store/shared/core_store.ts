/**
 * The part of the Store interface both engines answer alike, over their core (core.ts):
 * schemas, the listing of tables, templates. Each engine's store extends it and adds the
 * resources it serves its own way.
 *
 * @module
 */

import type {
  ListTablesOptions,
  SchemaStore,
  Store,
  TableListing,
  TemplateStore,
} from "../store.ts";
import type { Core, ListSession, SqlSession } from "./core.ts";
import * as schemas from "./schemas.ts";
import { listTables } from "./tables.ts";
import * as templates from "./templates.ts";

/** A store's resources written once for both engines. */
export abstract class CoreStore<S extends SqlSession & ListSession>
  implements Pick<Store, "schemas" | "templates"> {
  readonly schemas: SchemaStore;
  readonly templates: TemplateStore;

  protected constructor(protected readonly core: Core<S>) {
    this.schemas = {
      list: (visible) => schemas.listSchemas(core, visible),
      resolve: (name) => schemas.resolveSchema(core, name),
      create: (name, keyed) => schemas.createSchema(core, name, keyed),
      drop: (name, cascade, keyed) => schemas.dropSchema(core, name, cascade, keyed),
    };
    this.templates = {
      versions: (name) => templates.versionsOf(core, name),
      list: (options) => templates.listTemplates(core, options),
      add: (template, admit, keyed) => templates.addTemplate(core, template, admit, keyed),
      drop: (name, version, keyed) => templates.dropTemplate(core, name, version, keyed),
    };
  }

  /** A page of tables, as `tables.list` answers it on both engines. */
  protected listTables(options: ListTablesOptions): Promise<TableListing> {
    return listTables(this.core, options);
  }
}
