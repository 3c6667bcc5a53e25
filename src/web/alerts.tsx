/**
 * `/alerts` (the API's `status` filter: the same values, `active` by default) and `/alerts/:id`:
 * the alert's state, its actions and its events (what tripped it, with a link to the run). Any
 * member may snooze and unsnooze; enabling and disabling are for admins, and a member's forged
 * post is refused here with 403, whatever the page showed. Reads and writes go through the API's
 * services (src/services/alerts/alerts.ts, alert-events.ts).
 */
import type { Context, Hono } from "hono";
import type { FC } from "hono/jsx";
import { readListRequest } from "../lib/lists";
import type { CursorCodec } from "../lib/pagination";
import { ALERT_STATUSES, type AlertStatus, SNOOZE_DURATIONS, type SnoozeDuration } from "../lib/vocabulary";
import { AlertsQuerySchema, PageQuerySchema } from "../contract/schemas";
import { type LatestAlertEvent, alertEventList, latestAlertEvents, listAlertEvents } from "../services/alerts/alert-events";
import {
  type AlertObject,
  alertList,
  alertProjectNames,
  disableAlert,
  enableAlert,
  listAlerts,
  snoozeAlert,
  unsnoozeAlert,
} from "../services/alerts/alerts";
import { defaultMembership, findAlertForMember } from "../services/tenancy/memberships";
import { presentAlert } from "../contract/presenters";
import { type MemberAccess, accessOf, isAdmin, memberAccess, withQuery } from "./access";
import { EventSentence, EventStatistics } from "./alert-sentences";
import { Notice, PageLinks, When, noticeFor } from "./components";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { formFields } from "./forms";
import { ErrorContent, Layout } from "./layout";
import { pageNotFound } from "./not-found";
import { parseQuery } from "./page-input";
import { signedIn } from "./session";

const STATUS_LABELS: Record<AlertStatus, string> = {
  active: "Active (checking, not snoozed)",
  snoozed: "Snoozed",
  inactive: "Disabled",
  all: "All",
};
const SNOOZE_LABELS: Record<SnoozeDuration, string> = { "1h": "1 hour", "4h": "4 hours", "24h": "24 hours", "1w": "1 week" };

const NOTICES = {
  snoozed: "The alert is snoozed: no notifications until the time shown.",
  unsnoozed: "The alert is no longer snoozed.",
  enabled: "The alert is enabled: new runs are checked again.",
  disabled: "The alert is disabled: new runs are not checked.",
};

/** One alert's state in words. */
const AlertState = ({ alert }: { alert: AlertObject }) =>
  !alert.active ? (
    <span class="badge state-disabled">Disabled</span>
  ) : alert.snoozed ? (
    <span class="badge state-snoozed">
      Snoozed until <When at={alert.snoozed_until} />
    </span>
  ) : (
    <span class="badge state-active">Active</span>
  );

/** The alert of the path through the person's membership of its organization (one statement); null → the 404 page. */
async function alertAccess(
  c: Context<WebEnv>,
  config: WebConfig,
  paths: WebPaths,
): Promise<{ alert: AlertObject; access: MemberAccess } | null> {
  const found = await findAlertForMember(c.env, c.var.person.userId, c.req.param("id") ?? "");
  if (!found) return null;
  return { alert: presentAlert(found.alert, c.env.clock.now(), config.webAppUrl), access: accessOf(c, config, paths, found.membership) };
}

/** `/alerts`: the organization's alerts, by the `status` filter. */
async function alertsPage(c: Context<WebEnv>, config: WebConfig, paths: WebPaths, codec: CursorCodec): Promise<Response> {
  const person = c.var.person;
  const membership = await defaultMembership(c.env, person.userId, person.activeOrganizationId);
  const access = await memberAccess(c, config, paths, membership?.organizationId ?? null);
  if (!access) {
    return c.html(
      <Layout title="Alerts" page={{ person, membership: null, paths }} section="alerts">
        <ErrorContent heading="No organization" message="You are not a member of any organization any more." paths={paths} />
      </Layout>,
    );
  }
  const query = parseQuery(AlertsQuerySchema, c, ["status", "cursor", "limit"]);
  const filters = { status: query.status ?? "active", project_id: null, alert_type: null };
  const request = readListRequest(codec, alertList, { organizationId: access.scope.organizationId, filters }, query);
  const page = await listAlerts(access.scope, request);
  const [names, latest] = await Promise.all([
    alertProjectNames(
      access.scope,
      page.items.map((alert) => alert.project_id),
    ),
    latestAlertEvents(
      access.scope,
      page.items.map((alert) => alert.id),
    ),
  ]);
  const base = paths.to("/alerts");
  const filterQuery = { status: filters.status === "active" ? null : filters.status };
  const next = page.next ? withQuery(base, { ...filterQuery, cursor: codec.encode(alertList.listing(request), page.next) }) : null;
  return c.html(
    <Layout title="Alerts" page={access.page} section="alerts">
      <h1>Alerts</h1>
      <AlertsFilters base={base} current={filters.status} />
      {page.items.length === 0 ? (
        <p>No alerts {filters.status === "all" ? "" : `are ${STATUS_LABELS[filters.status].toLowerCase()}`}.</p>
      ) : (
        <AlertsList alerts={page.items} names={names} latest={latest} paths={paths} />
      )}
      <PageLinks first={request.after ? withQuery(base, filterQuery) : null} next={next} label="Alerts" />
    </Layout>,
  );
}

/** `/alerts/:id`: the alert's state, its actions and a page of its events. */
async function alertPage(c: Context<WebEnv>, config: WebConfig, paths: WebPaths, codec: CursorCodec): Promise<Response> {
  const found = await alertAccess(c, config, paths);
  if (!found) return pageNotFound(c, c.var.person, paths);
  const { alert, access } = found;
  const query = parseQuery(PageQuerySchema, c, ["cursor", "limit"]);
  const filters = { alert_id: alert.id };
  const request = readListRequest(codec, alertEventList, { organizationId: access.scope.organizationId, filters }, query);
  const events = await listAlertEvents(access.scope, request);
  const names = await alertProjectNames(access.scope, [alert.project_id]);
  const projectName = names.get(alert.project_id) ?? "Project";
  const base = paths.to(`/alerts/${alert.id}`);
  const next = events.next ? withQuery(base, { cursor: codec.encode(alertEventList.listing(request), events.next) }) : null;
  const admin = isAdmin(access);
  return c.html(
    <Layout title={`${alert.name} · ${projectName}`} page={access.page} section="alerts">
      <p class="crumbs">
        <a href={paths.to("/alerts")}>Alerts</a> › <a href={paths.to(`/projects/${alert.project_id}`)}>{projectName}</a>
      </p>
      <h1>{alert.name}</h1>
      <Notice text={noticeFor(NOTICES, c.req.query("done"))} />
      <AlertFacts alert={alert} projectName={projectName} />

      <AlertActions alert={alert} base={base} admin={admin} />

      <AlertEvents alert={alert} events={events.items} laterPage={Boolean(request.after)} base={base} next={next} paths={paths} />
    </Layout>,
  );
}

export function registerAlerts(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths, codec: CursorCodec): void {
  web.get("/alerts", signedIn(config, paths), (c) => alertsPage(c, config, paths, codec));

  web.get("/alerts/:id", signedIn(config, paths), (c) => alertPage(c, config, paths, codec));

  const refused = (c: Context<WebEnv>, access: MemberAccess) =>
    c.html(
      <Layout title="Refused" page={access.page} section="alerts">
        <ErrorContent heading="Refused" message="Only an admin of the organization can enable or disable alerts." paths={paths} />
      </Layout>,
      403,
    );

  web.post("/alerts/:id/snooze", signedIn(config, paths), async (c) => {
    const found = await alertAccess(c, config, paths);
    if (!found) return pageNotFound(c, c.var.person, paths);
    const { duration } = await formFields(c, ["duration"]);
    if (!Object.hasOwn(SNOOZE_DURATIONS, duration!)) {
      return c.html(
        <Layout title="Not accepted" page={found.access.page} section="alerts">
          <ErrorContent
            heading="Not accepted"
            message={`Choose how long to snooze: ${Object.values(SNOOZE_LABELS).join(", ")}.`}
            paths={paths}
          />
        </Layout>,
        400,
      );
    }
    await snoozeAlert(found.access.scope, found.alert.id, duration as SnoozeDuration);
    return c.redirect(paths.to(`/alerts/${found.alert.id}?done=snoozed`), 303);
  });

  web.post("/alerts/:id/unsnooze", signedIn(config, paths), async (c) => {
    const found = await alertAccess(c, config, paths);
    if (!found) return pageNotFound(c, c.var.person, paths);
    await unsnoozeAlert(found.access.scope, found.alert.id);
    return c.redirect(paths.to(`/alerts/${found.alert.id}?done=unsnoozed`), 303);
  });

  for (const [action, change] of [
    ["enable", enableAlert],
    ["disable", disableAlert],
  ] as const) {
    web.post(`/alerts/:id/${action}`, signedIn(config, paths), async (c) => {
      const found = await alertAccess(c, config, paths);
      if (!found) return pageNotFound(c, c.var.person, paths);
      if (!isAdmin(found.access)) return refused(c, found.access);
      await change(found.access.scope, found.alert.id);
      return c.redirect(paths.to(`/alerts/${found.alert.id}?done=${action}d`), 303);
    });
  }
}

/** The `status` filter (`current`: the one shown). */
const AlertsFilters: FC<{ base: string; current: AlertStatus }> = ({ base, current }) => (
  <form method="get" action={base} class="filters">
    <label>
      Show
      <select name="status">
        {ALERT_STATUSES.map((status) => (
          <option value={status} selected={current === status}>
            {STATUS_LABELS[status]}
          </option>
        ))}
      </select>
    </label>
    <button type="submit">Show</button>
  </form>
);

/** "tripped 5 times, the last time …" or "has not tripped yet". */
const tripsText = (alert: AlertObject) =>
  alert.events_count === 0 ? "has not tripped yet" : `tripped ${alert.events_count === 1 ? "once" : `${alert.events_count} times`}`;

/**
 * The alerts as sentences (issue 30): each alert, its project and state, how often it tripped and
 * its newest event's sentence (`latest`: alert id → newest event), the figures behind a link.
 */
const AlertsList: FC<{
  alerts: AlertObject[];
  names: ReadonlyMap<string, string>;
  latest: ReadonlyMap<string, LatestAlertEvent>;
  paths: WebPaths;
}> = ({ alerts, names, latest, paths }) => (
  <ul class="alert-list">
    {alerts.map((alert) => {
      const event = latest.get(alert.id);
      return (
        <li>
          <p>
            <a href={paths.to(`/alerts/${alert.id}`)}>
              <strong>{alert.name}</strong>
            </a>{" "}
            in <a href={paths.to(`/projects/${alert.project_id}`)}>{names.get(alert.project_id) ?? "a project"}</a>{" "}
            <AlertState alert={alert} /> {tripsText(alert)}
            {event ? (
              <>
                , the last time <When at={event.triggeredAt} />:
              </>
            ) : (
              "."
            )}
          </p>
          {event ? <EventSentence alertType={alert.alert_type} metadata={event.metadata} run={event.run} paths={paths} /> : null}
          {alert.last_notified_at ? (
            <p class="muted">
              Last notified <When at={alert.last_notified_at} />.
            </p>
          ) : null}
        </li>
      );
    })}
  </ul>
);

const AlertFacts: FC<{ alert: AlertObject; projectName: string }> = ({ alert, projectName }) => (
  <dl class="facts">
    <dt>State</dt>
    <dd>
      <AlertState alert={alert} />
    </dd>
    <dt>Project</dt>
    <dd>{projectName}</dd>
    <dt>Events</dt>
    <dd>{alert.events_count}</dd>
    <dt>Last notified</dt>
    <dd>
      <When at={alert.last_notified_at} />
    </dd>
  </dl>
);

/** Snooze (and unsnooze) for every member; enable or disable for an admin (`base`: the alert's page). */
const AlertActions: FC<{ alert: AlertObject; base: string; admin: boolean }> = ({ alert, base, admin }) => (
  <section aria-labelledby="actions">
    <h2 id="actions">Actions</h2>
    <form method="post" action={`${base}/snooze`} class="inline">
      <label>
        Snooze for
        <select name="duration">
          {Object.entries(SNOOZE_LABELS).map(([duration, label]) => (
            <option value={duration} selected={duration === "24h"}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <button type="submit">Snooze</button>
    </form>
    {alert.snoozed ? (
      <form method="post" action={`${base}/unsnooze`} class="inline">
        <button type="submit">Unsnooze</button>
      </form>
    ) : null}
    {admin ? (
      alert.active ? (
        <form method="post" action={`${base}/disable`} class="inline">
          <button type="submit">Disable</button>
        </form>
      ) : (
        <form method="post" action={`${base}/enable`} class="inline">
          <button type="submit">Enable</button>
        </form>
      )
    ) : (
      <p class="muted">Only admins can enable or disable alerts.</p>
    )}
  </section>
);

/** A page of the alert's events (`laterPage`: not the first), each a sentence with the figures behind it in a disclosure. */
const AlertEvents: FC<{
  alert: AlertObject;
  events: Awaited<ReturnType<typeof listAlertEvents>>["items"];
  laterPage: boolean;
  base: string;
  next: string | null;
  paths: WebPaths;
}> = ({ alert, events, laterPage, base, next, paths }) => (
  <section aria-labelledby="events">
    <h2 id="events">Events</h2>
    {events.length === 0 ? (
      <p class="muted">{laterPage ? "No more events." : "It has not tripped yet."}</p>
    ) : (
      <ul class="events">
        {events.map((event) => {
          const run = {
            projectId: event.test_run.project_id,
            number: event.test_run.number,
            branch: event.test_run.branch,
            commitSha: event.test_run.commit_sha,
          };
          return (
            <li id={`event-${event.id}`}>
              <p class="muted">
                <When at={event.triggered_at} />
              </p>
              <EventSentence alertType={alert.alert_type} metadata={event.metadata} run={run} paths={paths} />
              <EventStatistics alertType={alert.alert_type} metadata={event.metadata} projectId={run.projectId} paths={paths} />
            </li>
          );
        })}
      </ul>
    )}
    <PageLinks first={laterPage ? base : null} next={next} label="Events" />
  </section>
);
