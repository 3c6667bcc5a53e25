import type { Database } from "../../db/types";
import type { Clock } from "../../lib/clock";
import type { Retention } from "../../lib/retention";

/** What every service needs. Services never import Hono and never read the environment. */
export type ServiceDeps = {
  db: Database;
  clock: Clock;
  /** Base of the `url` fields: the web app's address. */
  webAppUrl: string;
};

/**
 * Where a GET of /api/v1 leaves the data version its first statement read (src/services/shared/data-versions.ts).
 * `asOf` is the time deadlines are judged at: the request's start, never later than the `now` its
 * content is presented at.
 */
export type DataVersionSink = { asOf: Date; value?: string | null };

/**
 * A service call made on behalf of one organization: every query is scoped by it. `dataVersion`:
 * a GET of /api/v1 that answers with an ETag (src/services/shared/data-versions.ts).
 */
export type OrgScope = ServiceDeps & {
  organizationId: string;
  dataVersion?: DataVersionSink;
  /** RETENTION_DAYS and SUMMARY_RETENTION_DAYS: the defaults (src/lib/retention.ts) when absent. */
  retention?: Retention;
};
