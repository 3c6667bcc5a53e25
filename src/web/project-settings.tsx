/**
 * `/projects/:id/settings` (docs/project-pages.md): name, description, default branch,
 * auto-quarantine, the notification channels that receive the project's events (signed webhooks,
 * Slack, Microsoft Teams; each with its events, an owner filter and a test message), and the upload token. Every
 * member may read the page and reveal the token; only admins change anything, checked here on the
 * server for every post (a member's forged post is a 403 and changes nothing). Every post that
 * succeeds answers 303 to the settings page; what it has to show there (a notice, the token, a
 * new webhook's signing secret) is a one-time server-side message (src/web/flash.ts), never in a
 * URL. Rotating the token and removing a webhook go through a confirmation page first.
 */
import type { Context, Hono } from "hono";
import type { FC } from "hono/jsx";
import { SecretDecryptionError } from "../lib/secret-box";
import { createWebhookEndpoint, ownerFilterProblem, sendTestMessage } from "../services/notifications/notification-admin";
import { CHANNEL_EVENTS, CHANNEL_KINDS, type ChannelEvent, type ChannelKind } from "../lib/vocabulary";
import { regenerateUploadToken, revealUploadToken } from "../services/tenancy/projects";
import {
  type ProjectWebhook,
  deleteProjectWebhook,
  listProjectWebhooks,
  saveProjectSettings,
} from "../services/notifications/project-settings";
import { MAX_AUTO_QUARANTINE_DAYS } from "../services/tests/quarantine";
import { ApiError } from "../lib/errors";
import { WideTable } from "./components";
import { ConfirmButton, ConfirmPage } from "./confirm";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { readFlash, redirectWithFlash } from "./flash";
import { formFields } from "./forms";
import { utcText } from "./format";
import { Layout } from "./layout";
import { pageNotFound } from "./not-found";
import { type MemberProject, adminsOnly, isAdmin, memberProject } from "./project-access";
import { type ProjectFields, checkProjectFields } from "./project-forms";
import { CopyButton } from "./copy";
import { UploadCommands } from "./upload-commands";
import { ProjectHeader } from "./project";
import { signedIn } from "./session";
import { hasControlCharacters } from "../lib/control-characters";
import { DEFAULT_RETENTION, type Retention } from "../lib/retention";

const FIELDS = ["name", "description", "defaultBranch", "autoQuarantineDays", "retentionDays"] as const;

/**
 * What one answer adds to the page: a message, problems, a secret to show once, the form's values
 * as sent. Problems and values are rendered at the failing POST; the rest comes with the one-time message.
 */
type Extras = {
  saved?: boolean;
  problems?: string[];
  /** The upload token, revealed or new. */
  token?: { value: string; rotated: boolean } | { unavailable: true };
  /** A channel just added: a webhook's URL and signing secret, or a Slack or Teams channel's URL, each shown this once. */
  newWebhook?: { url: string; secret: string | null; kind?: ChannelKind };
  webhookProblems?: string[];
  webhookFields?: ChannelFields;
  /** A test message queued for this channel (its masked URL). */
  testSent?: string;
  fields?: ProjectFields;
  removed?: boolean;
};

/** The add-a-channel form's values (`addresses`: an e-mail channel's, as typed). */
type ChannelFields = { kind: string; url: string; addresses: string; description: string; events: string[]; ownerFilter: string };

const KIND_NAMES: Record<ChannelKind, string> = { webhook: "Signed webhook", slack: "Slack", teams: "Microsoft Teams", email: "E-mail" };
const EVENT_NAMES: Record<ChannelEvent, string> = {
  alerts: "Alerts tripping",
  health: "Tests turning flaky or broken",
  quarantine: "Quarantines made and ended",
  digest: "The weekly digest (Monday 09:00)",
};

/** The addresses typed in the form: separated by commas, semicolons or white space. */
const addressesOf = (typed: string) => typed.split(/[\s,;]+/).filter((address) => address !== "");

const Problems = ({ problems }: { problems: string[] | undefined }) =>
  problems && problems.length > 0 ? (
    <div class="notice" role="alert">
      <ul class="plain">
        {problems.map((problem) => (
          <li>{problem}</li>
        ))}
      </ul>
    </div>
  ) : null;

function SettingsPage({
  found,
  webhooks,
  extras,
  config,
  nonce,
}: {
  found: MemberProject;
  webhooks: ProjectWebhook[];
  extras: Extras;
  config: WebConfig;
  /** The answer's CSP nonce: the copy buttons' script. */
  nonce: string | undefined;
}) {
  const { project, page } = found;
  const admin = isAdmin(page.membership);
  const base = `/projects/${project.id}/settings`;
  const to = (path: string) => page.paths.to(`${base}${path}`);
  const fields: ProjectFields = extras.fields ?? {
    name: project.name,
    description: project.description ?? "",
    defaultBranch: project.defaultBranch ?? "",
    autoQuarantineDays: project.autoQuarantineDays === null ? "" : String(project.autoQuarantineDays),
    retentionDays: project.retentionDays === null ? "" : String(project.retentionDays),
  };
  const readOnly = !admin;
  return (
    <Layout title={`Settings · ${project.name}`} page={page} section="projects">
      <ProjectHeader project={project} page={page} tab="settings" />
      {readOnly ? (
        <p class="muted">You are a member: you can read these settings and the upload token; only an admin can change them.</p>
      ) : null}
      {extras.saved ? (
        <p class="success" role="status">
          Settings saved.
        </p>
      ) : null}
      {extras.removed ? (
        <p class="success" role="status">
          Webhook removed.
        </p>
      ) : null}

      <GeneralSection
        fields={fields}
        problems={extras.problems}
        action={to("")}
        admin={admin}
        retention={config.retention ?? DEFAULT_RETENTION}
      />

      <TokenSection found={found} token={extras.token} admin={admin} config={config} nonce={nonce} />

      <section aria-labelledby="webhooks-heading">
        <h2 id="webhooks-heading">Notification channels</h2>
        <p>
          Where this project's events go: alerts tripping, tests turning flaky or broken, quarantines. A Slack or Microsoft Teams channel
          gets them as messages; a signed webhook as JSON signed with its secret. A channel can keep to the tests of one CODEOWNERS owner.
        </p>
        {extras.testSent ? (
          <p class="success" role="status">
            Test message queued for <code>{extras.testSent}</code>: it should arrive within a minute. If it does not, the delivery log
            (admin API) says why.
          </p>
        ) : null}
        <NewWebhookSecret created={extras.newWebhook} />
        <WebhooksTable found={found} webhooks={webhooks} admin={admin} />
        {admin ? <AddWebhookForm action={to("/webhooks")} problems={extras.webhookProblems} fields={extras.webhookFields} /> : null}
      </section>
    </Layout>
  );
}

/** The project's upload token read back; `unavailable` for a token from before tokens were kept, or sealed under a key no longer configured. */
async function revealedToken(config: WebConfig, found: MemberProject): Promise<Extras["token"]> {
  try {
    const value = await revealUploadToken(config.secrets, found.project);
    return value === null ? { unavailable: true } : { value, rotated: false };
  } catch (error) {
    // Sealed under a key that is no longer configured: as unreadable as a token from before.
    if (!(error instanceof SecretDecryptionError)) throw error;
    return { unavailable: true };
  }
}

/** What is wrong with a new channel's fields before the service checks its URL. */
function webhookFieldProblems(fields: ChannelFields): string[] {
  const problems: string[] = [];
  if (!(CHANNEL_KINDS as readonly string[]).includes(fields.kind)) problems.push("Choose the kind of channel.");
  if (fields.url.length > 2048) problems.push("URL is too long (maximum is 2048 characters).");
  if (fields.kind === "email" && addressesOf(fields.addresses).length === 0)
    problems.push("Give the e-mail addresses of the members the channel sends to.");
  if (fields.addresses.length > 5000) problems.push("Addresses are too long (at most 20 addresses).");
  if (fields.events.length === 0) problems.push("Choose at least one event.");
  if (fields.ownerFilter !== "") {
    const problem = ownerFilterProblem(fields.ownerFilter);
    if (problem) problems.push(`Owner ${problem}.`);
  }
  if (fields.description.length > 1000) problems.push("Description is too long (maximum is 1000 characters).");
  if (hasControlCharacters(fields.description)) problems.push("Description must not contain control characters.");
  return problems;
}

/** The add-a-channel form as posted: the events are checkboxes (one value per checked box). */
async function channelFields(c: Context<WebEnv>): Promise<ChannelFields> {
  const body = await c.req.parseBody({ all: true }).catch(() => ({}) as Record<string, unknown>);
  const one = (name: string) => {
    const value = body[name];
    const first = Array.isArray(value) ? value[0] : value;
    return typeof first === "string" ? first.trim() : "";
  };
  // A form without the events' checkboxes (an older page) means every event.
  const checked = body.eventsShown === undefined ? [...CHANNEL_EVENTS] : ([] as unknown[]).concat(body.events ?? []);
  return {
    kind: one("kind") || "webhook",
    url: one("url"),
    addresses: one("addresses"),
    description: one("description"),
    events: CHANNEL_EVENTS.filter((event) => checked.includes(event)),
    ownerFilter: one("ownerFilter"),
  };
}

/** The confirmation before the upload token is rotated (`settings`: the settings page's app path). */
function rotateConfirmation(projectName: string, settings: string) {
  return {
    title: `Rotate the upload token of ${projectName}?`,
    consequence: (
      <p>
        A new token replaces the project's upload token at once: the current one is refused from its next upload, so CI fails to upload
        until its secret holds the new token. The new token is shown on the settings page.
      </p>
    ),
    action: `${settings}/upload-token/rotate`,
    button: "Rotate the upload token",
    cancel: settings,
    section: "projects" as const,
  };
}

/** The confirmation before a webhook is removed. */
function removeWebhookConfirmation(webhook: ProjectWebhook, settings: string) {
  return {
    title: webhook.kind === "webhook" ? "Remove this webhook?" : `Remove this ${KIND_NAMES[webhook.kind]} channel?`,
    consequence: (
      <p>
        <code>{webhook.url}</code> stops receiving this project's events at once
        {webhook.kind === "webhook" ? ", and its signing secret is forgotten. Adding it again makes a new secret." : "."}
      </p>
    ),
    action: `${settings}/webhooks/${webhook.id}/delete`,
    button: webhook.kind === "webhook" ? "Remove the webhook" : "Remove the channel",
    cancel: settings,
    section: "projects" as const,
  };
}

export function registerProjectSettings(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  const retention = config.retention ?? DEFAULT_RETENTION;
  const render = async (c: Context<WebEnv>, found: MemberProject, extras: Extras, status: 200 | 400 = 200) => {
    // Admins manage the endpoints and read them whole; members read scheme and host (URLs often carry a credential).
    const webhooks = await listProjectWebhooks(c.env, found.project.organizationId, found.project.id, { admin: isAdmin(found.membership) });
    return c.html(
      <SettingsPage found={found} webhooks={webhooks} extras={extras} config={config} nonce={c.get("secureHeadersNonce")} />,
      status,
    );
  };
  const deps = (c: Context<WebEnv>) => ({ db: c.env.db, clock: c.env.clock, webAppUrl: config.webAppUrl, secrets: config.secrets });
  /** The project and the person's membership, for admins only; otherwise the 404 or 403 answer. */
  const asAdmin = async (c: Context<WebEnv>, what: string): Promise<MemberProject | Response> => {
    const found = await memberProject(c, paths);
    if (found instanceof Response) return found;
    return isAdmin(found.membership) ? found : adminsOnly(c, found.page, what);
  };
  /** The settings page's app path: where every successful post leads, and the key of its one-time messages. */
  const settings = (id: string) => `/projects/${id}/settings`;
  const done = (c: Context<WebEnv>, found: MemberProject, extras: Extras) =>
    redirectWithFlash(c, config, paths, settings(found.project.id), extras);

  web.get("/projects/:id/settings", signedIn(config, paths), async (c) => {
    const found = await memberProject(c, paths);
    if (found instanceof Response) return found;
    return render(c, found, (await readFlash<Extras>(c, config, settings(found.project.id))) ?? {});
  });

  web.post("/projects/:id/settings", signedIn(config, paths), async (c) => {
    const found = await asAdmin(c, "change a project's settings");
    if (found instanceof Response) return found;
    const fields = (await formFields(c, FIELDS)) as ProjectFields;
    const checked = checkProjectFields(fields, retention.summaryDays);
    if ("problems" in checked) return render(c, found, { problems: checked.problems, fields }, 400);
    await saveProjectSettings({ ...deps(c), retention }, found.project.organizationId, found.project.id, checked.value);
    return done(c, found, { saved: true });
  });

  // Reading the token is open to every member (the CI's secret is theirs to set); it is a POST so the token never sits in a URL or a history.
  web.post("/projects/:id/settings/upload-token/reveal", signedIn(config, paths), async (c) => {
    const found = await memberProject(c, paths);
    if (found instanceof Response) return found;
    return done(c, found, { token: await revealedToken(config, found) });
  });

  web.get("/projects/:id/settings/upload-token/rotate", signedIn(config, paths), async (c) => {
    const found = await asAdmin(c, "rotate the upload token");
    if (found instanceof Response) return found;
    return c.html(<ConfirmPage page={found.page} confirmation={rotateConfirmation(found.project.name, settings(found.project.id))} />);
  });

  web.post("/projects/:id/settings/upload-token/rotate", signedIn(config, paths), async (c) => {
    const found = await asAdmin(c, "rotate the upload token");
    if (found instanceof Response) return found;
    const { upload_token: value } = await regenerateUploadToken(deps(c), found.project.id, found.project.organizationId);
    return done(c, found, { token: { value, rotated: true } });
  });

  web.post("/projects/:id/settings/webhooks", signedIn(config, paths), async (c) => {
    const found = await asAdmin(c, "add webhooks");
    if (found instanceof Response) return found;
    const fields = await channelFields(c);
    const problems = webhookFieldProblems(fields);
    if (problems.length === 0) {
      try {
        const created = await createWebhookEndpoint(
          { ...deps(c), urlPolicy: config.webhookUrlPolicy ?? {} },
          found.project.organizationId,
          {
            ...(fields.kind === "email" ? { addresses: addressesOf(fields.addresses) } : { url: fields.url }),
            kind: fields.kind as ChannelKind,
            projectId: found.project.id,
            events: fields.events as ChannelEvent[],
            ownerFilter: fields.ownerFilter === "" ? null : fields.ownerFilter,
            description: fields.description === "" ? null : fields.description,
          },
        );
        const { url, kind } = created.webhook;
        return await done(c, found, { newWebhook: { url, secret: created.signing_secret, kind } });
      } catch (error) {
        if (!(error instanceof ApiError) || error.status >= 500) throw error;
        const said = (detail: { field: string; message: string }) =>
          detail.field === "url" ? `URL ${detail.message}.` : `${detail.message}.`;
        problems.push(...(error.details?.length ? error.details.map(said) : [error.message]));
      }
    }
    // The URL typed is not sent back into the page: a channel's URL is its credential.
    return render(c, found, { webhookProblems: problems, webhookFields: fields }, 400);
  });

  registerTestMessage(web, config, paths, asAdmin, done);

  web.post("/projects/:id/settings/webhooks/:webhookId/delete", signedIn(config, paths), async (c) => {
    const found = await asAdmin(c, "remove webhooks");
    if (found instanceof Response) return found;
    try {
      await deleteProjectWebhook(c.env, found.project.organizationId, found.project.id, c.req.param("webhookId"));
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return pageNotFound(c, c.var.person, paths);
      throw error;
    }
    return done(c, found, { removed: true });
  });

  web.get("/projects/:id/settings/webhooks/:webhookId/delete", signedIn(config, paths), async (c) => {
    const found = await asAdmin(c, "remove webhooks");
    if (found instanceof Response) return found;
    const webhooks = await listProjectWebhooks(c.env, found.project.organizationId, found.project.id, { admin: true });
    // Only the project's own endpoints are removed here (those of every project belong to the admin API).
    const webhook = webhooks.find((candidate) => candidate.id === c.req.param("webhookId") && !candidate.allProjects);
    if (!webhook) return pageNotFound(c, c.var.person, paths);
    return c.html(<ConfirmPage page={found.page} confirmation={removeWebhookConfirmation(webhook, settings(found.project.id))} />);
  });
}

/** "Send a test message" on a channel the project's notifications reach (its own, or the organization's for every project). */
function registerTestMessage(
  web: Hono<WebEnv>,
  config: WebConfig,
  paths: WebPaths,
  asAdmin: (c: Context<WebEnv>, what: string) => Promise<MemberProject | Response>,
  done: (c: Context<WebEnv>, found: MemberProject, extras: Extras) => Promise<Response>,
): void {
  web.post("/projects/:id/settings/webhooks/:webhookId/test", signedIn(config, paths), async (c) => {
    const found = await asAdmin(c, "send test messages");
    if (found instanceof Response) return found;
    const webhooks = await listProjectWebhooks(c.env, found.project.organizationId, found.project.id, { admin: true });
    const webhook = webhooks.find((candidate) => candidate.id === c.req.param("webhookId"));
    if (!webhook) return pageNotFound(c, c.var.person, paths);
    const deps = { db: c.env.db, clock: c.env.clock, webAppUrl: config.webAppUrl, queue: c.env.runQueue, logger: c.env.logger };
    await sendTestMessage(deps, webhook.id, { organizationId: found.project.organizationId, projectId: found.project.id });
    return done(c, found, { testSent: webhook.url });
  });
}

/** The project's own settings: a form an admin saves, read-only for a member. */
const GeneralSection: FC<{
  fields: ProjectFields;
  problems: string[] | undefined;
  action: string;
  admin: boolean;
  retention: Retention;
}> = ({ fields, problems, action, retention, admin }) => (
  <section aria-labelledby="general-heading">
    <h2 id="general-heading">General</h2>
    <Problems problems={problems} />
    <form method="post" action={action} class="card">
      <fieldset disabled={!admin}>
        <legend class="visually-hidden">Project settings</legend>
        <label>
          Name
          <input name="name" required maxlength={255} value={fields.name} />
        </label>
        <label>
          Description
          <textarea name="description" rows={3} maxlength={10000}>
            {fields.description}
          </textarea>
        </label>
        <label>
          Default branch <span class="muted">(empty: main, master, or runs without a branch)</span>
          <input name="defaultBranch" maxlength={255} value={fields.defaultBranch} />
        </label>
        <label>
          Auto-quarantine, days{" "}
          <span class="muted">(empty: off; 1 to {MAX_AUTO_QUARANTINE_DAYS}: a test that turns flaky is quarantined that long)</span>
          <input name="autoQuarantineDays" inputmode="numeric" pattern="[0-9]*" value={fields.autoQuarantineDays} />
        </label>
        <label>
          Retention, days{" "}
          <span class="muted">
            (empty: the service's {retention.days}; 1 to {retention.summaryDays}: test cases and reports are kept that long, then only the
            runs' summaries and the daily figures)
          </span>
          <input name="retentionDays" inputmode="numeric" pattern="[0-9]*" value={fields.retentionDays ?? ""} />
        </label>
        {admin ? <button type="submit">Save settings</button> : null}
      </fieldset>
    </form>
  </section>
);

/** The upload token: shown once revealed (or new), with the commands that use it; revealing for every member, rotating for admins. */
const TokenSection: FC<{ found: MemberProject; token: Extras["token"]; admin: boolean; config: WebConfig; nonce: string | undefined }> = ({
  found,
  token,
  admin,
  config,
  nonce,
}) => {
  const { project, page } = found;
  const base = `/projects/${project.id}/settings`;
  return (
    <section aria-labelledby="token-heading">
      <h2 id="token-heading">Upload token</h2>
      <p>CI uploads test reports with this token. Anyone who holds it can upload to this project.</p>
      {token && "value" in token ? (
        <>
          {token.rotated ? (
            <p class="success" role="status">
              New token made: the previous one is refused from its next upload. Update your CI's secret.
            </p>
          ) : null}
          <p>
            <label>
              Upload token
              <input id="upload-token" readonly value={token.value} class="secret" />
            </label>
            <CopyButton target="upload-token" what="the upload token" />
          </p>
          <UploadCommands baseUrl={config.publicBaseUrl} token={token.value} nonce={nonce} paths={page.paths} />
        </>
      ) : token ? (
        <p class="notice" role="alert">
          This token was made before tokens were kept for reading back, so it cannot be shown. Rotate it (an admin) to get one that can.
        </p>
      ) : project.uploadTokenEncrypted === null ? (
        <p class="muted">This token was made before tokens were kept for reading back: it cannot be shown until it is rotated.</p>
      ) : null}
      <div class="actions">
        {project.uploadTokenEncrypted !== null && !(token && "value" in token) ? (
          <form method="post" action={page.paths.to(`${base}/upload-token/reveal`)}>
            <button type="submit">Reveal the upload token</button>
          </form>
        ) : null}
        {admin ? <ConfirmButton page={page} to={`${base}/upload-token/rotate`} label="Rotate the upload token" /> : null}
      </div>
    </section>
  );
};

/** A channel just added: a webhook with its signing secret, or a Slack or Teams channel's URL, shown this once. */
const NewWebhookSecret: FC<{ created: Extras["newWebhook"] }> = ({ created }) =>
  created?.kind === "email" ? (
    <div class="success" role="status">
      <p>
        E-mail channel added for <code>{created.url.replace(/^mailto:/, "").replaceAll(",", ", ")}</code>. Send a test message to check it.
      </p>
    </div>
  ) : created && created.secret === null ? (
    <div class="success" role="status">
      <p>
        {KIND_NAMES[created.kind ?? "webhook"]} channel added for <code>{created.url}</code>. This is the last time its URL is shown whole:
        it lets anyone post to the channel, so it is kept encrypted and shown masked from now on. Send a test message to check it.
      </p>
    </div>
  ) : created ? (
    <div class="success" role="status">
      <p>
        Webhook added for <code>{created.url}</code>. Its signing secret is shown <strong>once</strong>:
      </p>
      <p>
        <label>
          Signing secret
          <input id="signing-secret" readonly value={created.secret ?? ""} class="secret" />
        </label>
      </p>
    </div>
  ) : null;

/** The endpoints that receive the project's events; an admin removes the project's own (after a confirmation). */
const WebhooksTable: FC<{ found: MemberProject; webhooks: ProjectWebhook[]; admin: boolean }> = ({ found, webhooks, admin }) => {
  const { project, page } = found;
  const base = `/projects/${project.id}/settings`;
  return webhooks.length === 0 ? (
    <p class="muted">No webhooks yet.</p>
  ) : (
    <WideTable label="Notification channels" class="channels">
      <thead>
        <tr>
          <th scope="col">Channel</th>
          <th scope="col">URL</th>
          <th scope="col">Events</th>
          <th scope="col">Description</th>
          <th scope="col">Scope</th>
          <th scope="col">Added</th>
          <th scope="col">Last delivery</th>
          {admin ? <th scope="col">Actions</th> : null}
        </tr>
      </thead>
      <tbody>
        {webhooks.map((webhook) => (
          <tr>
            <td>{KIND_NAMES[webhook.kind]}</td>
            <td>
              <ChannelDestination webhook={webhook} />
            </td>
            <td>
              {webhook.events.map((event) => EVENT_NAMES[event]).join(", ")}
              {webhook.ownerFilter ? (
                <>
                  {" "}
                  <span class="muted">of tests owned by</span> <code>{webhook.ownerFilter}</code>
                </>
              ) : null}
            </td>
            <td>{webhook.description ?? <span class="muted">–</span>}</td>
            <td>{webhook.allProjects ? "Every project (admin API)" : "This project"}</td>
            <td>{utcText(webhook.createdAt)}</td>
            <td>
              <LastDeliveryCell delivery={webhook.lastDelivery} />
            </td>
            {admin ? (
              <td>
                <form method="post" action={page.paths.to(`${base}/webhooks/${webhook.id}/test`)} class="inline">
                  <button type="submit" class="link" aria-label={`Send a test message to ${webhook.url}`}>
                    Send a test message
                  </button>
                </form>{" "}
                {webhook.allProjects ? null : (
                  <ConfirmButton
                    page={page}
                    to={`${base}/webhooks/${webhook.id}/delete`}
                    label="Remove"
                    ariaLabel={`Remove the channel ${webhook.url}`}
                    kind="link"
                  />
                )}
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </WideTable>
  );
};

/** Where a channel sends: its URL (masked or redacted), or an e-mail channel's addresses (for admins; a member reads how many). */
const ChannelDestination: FC<{ webhook: ProjectWebhook }> = ({ webhook }) =>
  webhook.kind !== "email" ? (
    <code>{webhook.url}</code>
  ) : webhook.addresses ? (
    <code>{webhook.addresses.join(", ")}</code>
  ) : (
    <span class="muted">
      {webhook.addressCount} member{webhook.addressCount === 1 ? "" : "s"} (addresses shown to admins)
    </span>
  );

/** The newest delivery's outcome: what it was about, its status, and why its last attempt failed. */
const LastDeliveryCell: FC<{ delivery: ProjectWebhook["lastDelivery"] }> = ({ delivery }) =>
  delivery === null ? (
    <span class="muted">None yet</span>
  ) : (
    <>
      {delivery.status === "delivered"
        ? "Delivered"
        : delivery.status === "pending"
          ? "Pending"
          : delivery.status === "failed"
            ? "Failed"
            : "Not sent (alert silenced)"}
      {delivery.lastError ? `: ${delivery.lastError}` : ""}{" "}
      <span class="muted">
        ({delivery.eventType}, {utcText(delivery.createdAt)})
      </span>
    </>
  );

/** An admin's form for a new webhook (with the problems and values of one that was refused). */
const AddWebhookForm: FC<{ action: string; problems: string[] | undefined; fields: Extras["webhookFields"] }> = ({
  action,
  problems,
  fields,
}) => (
  <>
    <h3>Add a channel</h3>
    <Problems problems={problems} />
    <form method="post" action={action} class="card">
      <label>
        Kind
        <select name="kind">
          {CHANNEL_KINDS.map((kind) => (
            <option value={kind} selected={(fields?.kind ?? "webhook") === kind}>
              {KIND_NAMES[kind]}
            </option>
          ))}
        </select>
      </label>
      <label>
        URL{" "}
        <span class="muted">
          (https: the Slack incoming webhook's, the Teams webhook's or Workflow's, or your endpoint's; not for e-mail)
        </span>
        <input name="url" type="url" maxlength={2048} value={fields && fields.kind === "webhook" ? fields.url : ""} />
      </label>
      <label>
        Addresses <span class="muted">(e-mail channels only: members of the organization, separated by commas; up to 20)</span>
        <input name="addresses" maxlength={5000} value={fields?.addresses ?? ""} />
      </label>
      <fieldset class="events">
        <legend>Events</legend>
        <input type="hidden" name="eventsShown" value="1" />
        {CHANNEL_EVENTS.map((event) => (
          <label class="checkbox">
            <input type="checkbox" name="events" value={event} checked={fields ? fields.events.includes(event) : true} />{" "}
            {EVENT_NAMES[event]}
          </label>
        ))}
      </fieldset>
      <label>
        Owner <span class="muted">(optional: only the tests this CODEOWNERS owner owns, such as @acme/payments)</span>
        <input name="ownerFilter" maxlength={255} value={fields?.ownerFilter ?? ""} />
      </label>
      <label>
        Description <span class="muted">(optional)</span>
        <input name="description" maxlength={1000} value={fields?.description ?? ""} />
      </label>
      <button type="submit">Add channel</button>
    </form>
  </>
);
