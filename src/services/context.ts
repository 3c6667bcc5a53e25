import type { Database } from "../db/types";
import type { Clock } from "../lib/clock";

/** What every service needs. Services never import Hono and never read the environment. */
export type ServiceDeps = {
  db: Database;
  clock: Clock;
  /** Base of the `url` fields: the web app's address. */
  webAppUrl: string;
};

/** A service call made on behalf of one organization: every query is scoped by it. */
export type OrgScope = ServiceDeps & { organizationId: string };
