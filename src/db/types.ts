import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import type * as schema from "./schema";

/**
 * The one database type services accept. PGlite, node-postgres and the Neon driver all
 * produce a PgDatabase, and a transaction is one too, so a service can be handed either.
 */
export type Database = PgDatabase<PgQueryResultHKT, typeof schema>;
