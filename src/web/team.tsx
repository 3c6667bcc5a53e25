/**
 * `/settings/team` (docs/e-mail.md): the organization's members and roles (every member sees
 * them); for admins also the pending invitations, the invite form, removing members, and the
 * organization's API key (reveal, regenerate). Members see neither the key nor the controls, and
 * every state-changing POST checks the role again in its service: a member's forged request is a
 * 403 and changes nothing. The organization is the person's default one (src/services/tenancy/memberships.ts);
 * a person with none gets the 404 page.
 */
import type { Context, Hono } from "hono";
import type { FC } from "hono/jsx";
import { revokeApiKeys } from "../auth/key-gate";
import { MEMBER_ROLES, type MemberRole } from "../db/schema";
import { ApiError } from "../lib/errors";
import { queueEmails } from "../services/shared/email-outbox";
import { type Membership, defaultMembership } from "../services/tenancy/memberships";
import { describeApiKey, regenerateApiKey, revealApiKey } from "../services/tenancy/organizations";
import {
  type PendingInvitation,
  type TeamMember,
  inviteMember,
  listMembers,
  listPendingInvitations,
  removeMember,
  revokeInvitation,
} from "../services/tenancy/team";
import type { PageContext, WebConfig, WebEnv, WebPaths } from "./env";
import { utcText } from "./format";
import { WideTable } from "./components";
import { ConfirmButton, type Confirmation, ConfirmPage } from "./confirm";
import { CopyButton, CopyScript } from "./copy";
import { readFlash, redirectWithFlash } from "./flash";
import { checkEmail, formFields } from "./forms";
import { Layout } from "./layout";
import { pageNotFound } from "./not-found";
import { signedIn } from "./session";
import { ownDigestSetting, setOwnDigest } from "../services/notifications/digest-subscriptions";

/**
 * What the page shows after a POST: a confirmation or the key (carried to the GET by a one-time
 * message, src/web/flash.ts), or a refusal (rendered at the POST itself).
 */
type Outcome = {
  notice?: string;
  error?: string;
  revealedKey?: string | null;
  /** An invitation made without a mail transport: its link, for the admin to hand over (shown once). */
  unsent?: { email: string; link: string };
};

type TeamView = {
  page: PageContext;
  /** Whether invitations are e-mailed (SMTP_URL); without, the page shows their links. */
  mailConfigured: boolean;
  /** The answer's CSP nonce: the copy buttons' script. */
  nonce: string | undefined;
  members: TeamMember[];
  invitations: PendingInvitation[];
  key: { displayPrefix: string; createdAt: Date } | null;
  /** Whether the signed-in person gets the weekly digest e-mail of this organization. */
  digest: boolean;
  outcome: Outcome;
};

/** The person's own weekly digest e-mail: on or off, one button (every member, for themself only). */
const DigestSection: FC<{ page: PageContext; on: boolean }> = ({ page, on }) => (
  <section aria-labelledby="digest-heading">
    <h2 id="digest-heading">Your weekly digest</h2>
    <p>
      {on ? "You receive" : "You do not receive"} the weekly digest e-mail: every Monday at 09:00 in the organization's time zone, each
      project's new flaky and broken tests, quarantines ending, the most costly tests and the week against the one before.
    </p>
    <form method="post" action={page.paths.to("/settings/team/digest")}>
      <input type="hidden" name="weeklyDigest" value={on ? "off" : "on"} />
      <button type="submit">{on ? "Stop the weekly digest" : "Send me the weekly digest"}</button>
    </form>
  </section>
);

const ApiKeySection = ({ view }: { view: TeamView }) => {
  const { page, key, outcome } = view;
  return (
    <section aria-labelledby="api-key-heading">
      <h2 id="api-key-heading">API key</h2>
      <p class="muted">
        The organization's key for the API (<code>Authorization: Bearer …</code>). It has an admin's reach over every project: keep it
        secret.
      </p>
      {key ? (
        <p>
          Key <code>{key.displayPrefix}…</code>, created {utcText(key.createdAt)}.
        </p>
      ) : null}
      {outcome.revealedKey ? (
        <p>
          <label>
            The key
            <input type="text" readonly value={outcome.revealedKey} id="api-key-value" aria-describedby="api-key-hint" size={60} />
          </label>
          <CopyButton target="api-key-value" what="the API key" />
          <span id="api-key-hint" class="muted">
            Shown on this page only; it is stored encrypted.
          </span>
        </p>
      ) : outcome.revealedKey === null ? (
        <p class="notice" role="status">
          This key cannot be shown: it was created before keys were kept for revealing (only its hash is stored), or its copy is sealed
          under a secret key the server no longer has. Regenerate it to get a key you can reveal (the current one then stops working).
        </p>
      ) : null}
      <div class="actions">
        <form method="post" action={page.paths.to("/settings/team/api-key/reveal")}>
          <button type="submit">Reveal the key</button>
        </form>
        <ConfirmButton page={page} to="/settings/team/api-key/regenerate" label="Regenerate the key" />
      </div>
      <p class="muted">Regenerating replaces the key at once: the old key is refused from its next request, and every admin is e-mailed.</p>
    </section>
  );
};

/** The organization's members; an admin removes them (after a confirmation), never the last admin. */
const MembersSection: FC<{ members: TeamMember[]; page: PageContext; isAdmin: boolean }> = ({ members, page, isAdmin }) => {
  // The server refuses to remove the last admin (removeMember); the page offers no control that would fail.
  const adminsCount = members.filter((member) => member.role === "admin").length;
  const removable = (member: (typeof members)[number]) => member.role !== "admin" || adminsCount > 1;
  return (
    <section aria-labelledby="members-heading">
      <h2 id="members-heading">Members</h2>
      <WideTable label="Members">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">E-mail</th>
            <th scope="col">Role</th>
            <th scope="col">Joined</th>
            {isAdmin ? (
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>
          {members.map((member) => (
            <tr>
              <td>{member.name}</td>
              <td>{member.email}</td>
              <td>{member.role}</td>
              <td>{utcText(member.joinedAt)}</td>
              {isAdmin ? (
                <td>
                  {removable(member) ? (
                    <ConfirmButton
                      page={page}
                      to={`/settings/team/members/${member.memberId}/remove`}
                      label="Remove"
                      ariaLabel={`Remove ${member.name}`}
                      kind="link"
                    />
                  ) : (
                    <span class="muted">The only admin</span>
                  )}
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </WideTable>
    </section>
  );
};

/** The link of an invitation no e-mail carried (no mail transport), for the admin who sent it; this page shows it once. */
const UnsentInvitation: FC<{ unsent: NonNullable<Outcome["unsent"]> }> = ({ unsent }) => (
  <div class="handover" role="status">
    <p>
      Invitation created for <strong>{unsent.email}</strong>, but <strong>no e-mail was sent</strong>: this instance has no mail transport
      (SMTP_URL is not set). Give them this link yourself; it works once, for 7 days, and is shown only this once:
    </p>
    <p>
      <label>
        Invitation link
        <input type="text" readonly value={unsent.link} id="invitation-link" size={60} />
      </label>
      <CopyButton target="invitation-link" what="the invitation link" />
    </p>
  </div>
);

const InviteSection: FC<{ page: PageContext; mailConfigured: boolean }> = ({ page, mailConfigured }) => (
  <section aria-labelledby="invite-heading">
    <h2 id="invite-heading">Invite someone</h2>
    <form class="card" method="post" action={page.paths.to("/settings/team/invitations")}>
      <label>
        E-mail
        <input type="email" name="email" required maxlength={254} />
      </label>
      <label>
        Role
        <select name="role">
          {MEMBER_ROLES.map((role) => (
            <option value={role} selected={role === "member"}>
              {role}
            </option>
          ))}
        </select>
      </label>
      <button type="submit">{mailConfigured ? "Send the invitation" : "Create the invitation"}</button>
    </form>
    <p class="muted">
      {mailConfigured
        ? "The invitation is e-mailed with a link that works once, for 7 days."
        : "No mail transport is configured (SMTP_URL), so no e-mail is sent: the page shows you the invitation's link, once, to hand over. It works once, for 7 days."}
    </p>
  </section>
);

/** The invitations not yet accepted, each revocable (after a confirmation). */
const InvitationsSection: FC<{ invitations: PendingInvitation[]; page: PageContext }> = ({ invitations, page }) => (
  <section aria-labelledby="invitations-heading">
    <h2 id="invitations-heading">Pending invitations</h2>
    {invitations.length === 0 ? (
      <p class="muted">None.</p>
    ) : (
      <WideTable label="Pending invitations">
        <thead>
          <tr>
            <th scope="col">E-mail</th>
            <th scope="col">Role</th>
            <th scope="col">Invited by</th>
            <th scope="col">Expires</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {invitations.map((invitation) => (
            <tr>
              <td>{invitation.email}</td>
              <td>{invitation.role}</td>
              <td>{invitation.invitedBy ?? <span class="muted">the operator (admin API)</span>}</td>
              <td>{utcText(invitation.expiresAt)}</td>
              <td>
                <ConfirmButton
                  page={page}
                  to={`/settings/team/invitations/${invitation.id}/revoke`}
                  label="Revoke"
                  ariaLabel={`Revoke the invitation of ${invitation.email}`}
                  kind="link"
                />
              </td>
            </tr>
          ))}
        </tbody>
      </WideTable>
    )}
  </section>
);

const TeamPage = ({ view }: { view: TeamView }) => {
  const { page, members, invitations, outcome, mailConfigured, nonce } = view;
  const isAdmin = page.membership?.role === "admin";
  return (
    <Layout title="Team" page={page} section="team">
      <h1>Team</h1>
      {outcome.error ? (
        <p class="notice" role="alert">
          {outcome.error}
        </p>
      ) : null}
      {outcome.notice ? (
        <p class="confirmation" role="status">
          {outcome.notice}
        </p>
      ) : null}
      {outcome.unsent ? <UnsentInvitation unsent={outcome.unsent} /> : null}
      <MembersSection members={members} page={page} isAdmin={isAdmin} />
      <DigestSection page={page} on={view.digest} />
      {isAdmin ? (
        <>
          <InviteSection page={page} mailConfigured={mailConfigured} />
          <InvitationsSection invitations={invitations} page={page} />
          <ApiKeySection view={view} />
          <CopyScript nonce={nonce} paths={page.paths} />
        </>
      ) : null}
    </Layout>
  );
};

const TEAM_PAGE = "/settings/team";

const ERROR_STATUS = { invalid_request: 400, forbidden: 403, not_found: 404, rate_limited: 429 } as const;

/** Who acts: the signed-in person in the organization of their membership. */
const actorOf = (c: Context<WebEnv>, membership: Membership) => ({
  userId: c.var.person.userId,
  organizationId: membership.organizationId,
});
const deps = (c: Context<WebEnv>, config: WebConfig) => ({
  db: c.env.db,
  clock: c.env.clock,
  webAppUrl: config.webAppUrl,
  secrets: config.secrets,
});

/** The confirmation before the API key is regenerated. */
async function describeKeyRegeneration(): Promise<Omit<Confirmation, "cancel">> {
  return {
    title: "Regenerate the API key?",
    consequence: (
      <p>
        A new key replaces the organization's API key at once: the current key is refused from its next request, so every script and
        integration that uses it stops working until it is given the new one. Every admin is e-mailed. The new key is shown on the team page
        afterwards, and admins can reveal it there again later.
      </p>
    ),
    action: "/settings/team/api-key/regenerate",
    button: "Regenerate the key",
  };
}

/** The confirmation before a member is removed; null when the member is not (any more) in the organization. */
async function describeMemberRemoval(c: Context<WebEnv>, membership: Membership): Promise<Omit<Confirmation, "cancel"> | null> {
  const member = (await listMembers(c.env, membership.organizationId)).find((candidate) => candidate.memberId === c.req.param("id"));
  if (!member) return null;
  return {
    title: `Remove ${member.name}?`,
    consequence: (
      <p>
        {member.name} ({member.email}) loses access to the organization and its projects at once. To come back they need a new invitation.
      </p>
    ),
    action: `/settings/team/members/${member.memberId}/remove`,
    button: `Remove ${member.name}`,
  };
}

/** The confirmation before an invitation is revoked; null when it is no longer pending. */
async function describeInvitationRevocation(c: Context<WebEnv>, membership: Membership): Promise<Omit<Confirmation, "cancel"> | null> {
  const invitation = (await listPendingInvitations(c.env, membership.organizationId)).find(
    (candidate) => candidate.id === c.req.param("id"),
  );
  if (!invitation) return null;
  return {
    title: `Revoke the invitation of ${invitation.email}?`,
    consequence: <p>The invitation link of {invitation.email} stops working at once. Inviting them again makes a new link.</p>,
    action: `/settings/team/invitations/${invitation.id}/revoke`,
    button: "Revoke the invitation",
  };
}

/** Invites someone (the form's e-mail and role) and queues the invitation's e-mail. */
async function sendInvitation(c: Context<WebEnv>, membership: Membership, config: WebConfig): Promise<Outcome> {
  const form = await formFields(c, ["email", "role"]);
  const email = form.email!.trim();
  const problem = checkEmail(email);
  if (problem) throw new ApiError("invalid_request", problem);
  if (!(MEMBER_ROLES as readonly string[]).includes(form.role!)) throw new ApiError("invalid_request", "Choose the role: admin or member.");
  const { emailId, link } = await inviteMember(deps(c, config), actorOf(c, membership), { email, role: form.role as MemberRole });
  await queueEmails({ queue: c.env.runQueue, logger: c.env.logger }, [emailId]);
  // Without a mail transport the e-mail only waits in the outbox: saying "sent" would be untrue, and the link is the only way in.
  if (!config.mailConfigured) return { unsent: { email: email.toLowerCase(), link } };
  return { notice: `Invitation sent to ${email.toLowerCase()}.` };
}

/** A new API key for the organization: the old one refused at once (its ids dropped from the key counter), every admin e-mailed. */
async function regenerateKey(c: Context<WebEnv>, membership: Membership, config: WebConfig): Promise<Outcome> {
  const revokeKeys = (keyIds: string[]) => revokeApiKeys(c.env.keyCounter, keyIds);
  const { api_key, emailIds } = await regenerateApiKey({ ...deps(c, config), revokeKeys }, membership.organizationId, c.var.person.name);
  await queueEmails({ queue: c.env.runQueue, logger: c.env.logger }, emailIds);
  return {
    notice: "The API key was regenerated: the previous key no longer works, and every admin was e-mailed.",
    revealedKey: api_key.secret,
  };
}

export function registerTeam(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  const render = async (c: Context<WebEnv>, membership: Membership, outcome: Outcome, status: 200 | 400 | 403 | 404 | 429 = 200) => {
    const person = c.var.person;
    const isAdmin = membership.role === "admin";
    const [members, invitations, key, digest] = await Promise.all([
      listMembers(c.env, membership.organizationId),
      isAdmin ? listPendingInvitations(c.env, membership.organizationId) : Promise.resolve([]),
      isAdmin ? describeApiKey(c.env.db, membership.organizationId) : Promise.resolve(null),
      ownDigestSetting(c.env.db, membership.organizationId, person.userId),
    ]);
    const view = {
      page: { person, membership, paths },
      members,
      invitations,
      key,
      digest: digest ?? false,
      outcome,
      mailConfigured: Boolean(config.mailConfigured),
      nonce: c.get("secureHeadersNonce"),
    };
    return c.html(<TeamPage view={view} />, status);
  };

  /** A team action: the person's organization, the action (its service checks the role), the page again with the outcome. */
  const action = (run: (c: Context<WebEnv>, membership: Membership) => Promise<Outcome>) => async (c: Context<WebEnv>) => {
    const person = c.var.person;
    const membership = await defaultMembership(c.env, person.userId, person.activeOrganizationId);
    if (!membership) return pageNotFound(c, person, paths);
    // Checked here for a clear answer, and again by every service in its transaction.
    if (membership.role !== "admin") return render(c, membership, { error: "Only an admin of the organization can do this." }, 403);
    try {
      const outcome = await run(c, membership);
      // Done: the page is shown by a GET (a reload repeats nothing), the outcome carried there server-side.
      return await redirectWithFlash(c, config, paths, TEAM_PAGE, outcome);
    } catch (error) {
      if (!(error instanceof ApiError) || !(error.code in ERROR_STATUS)) throw error;
      // Retry-After of a refused invitation, as the API would send it.
      for (const [name, value] of Object.entries(error.headers ?? {})) c.header(name, value);
      return render(c, membership, { error: error.message }, ERROR_STATUS[error.code as keyof typeof ERROR_STATUS]);
    }
  };

  web.get("/settings/team", signedIn(config, paths), async (c) => {
    const person = c.var.person;
    const membership = await defaultMembership(c.env, person.userId, person.activeOrganizationId);
    if (!membership) return pageNotFound(c, person, paths);
    return render(c, membership, (await readFlash<Outcome>(c, config, TEAM_PAGE)) ?? {});
  });

  /** The confirmation page of a destructive action, for admins; `describe` returns null when its subject is gone (404). */
  const confirmation =
    (describe: (c: Context<WebEnv>, membership: Membership) => Promise<Omit<Confirmation, "cancel"> | null>) =>
    async (c: Context<WebEnv>) => {
      const person = c.var.person;
      const membership = await defaultMembership(c.env, person.userId, person.activeOrganizationId);
      if (!membership) return pageNotFound(c, person, paths);
      if (membership.role !== "admin") return render(c, membership, { error: "Only an admin of the organization can do this." }, 403);
      const confirm = await describe(c, membership);
      if (!confirm) return pageNotFound(c, person, paths);
      return c.html(<ConfirmPage page={{ person, membership, paths }} confirmation={{ ...confirm, cancel: TEAM_PAGE, section: "team" }} />);
    };

  web.get("/settings/team/api-key/regenerate", signedIn(config, paths), confirmation(describeKeyRegeneration));

  web.get("/settings/team/members/:id/remove", signedIn(config, paths), confirmation(describeMemberRemoval));

  web.get("/settings/team/invitations/:id/revoke", signedIn(config, paths), confirmation(describeInvitationRevocation));

  // Every member sets their own digest (no admin needed): only the signed-in person's membership changes.
  web.post("/settings/team/digest", signedIn(config, paths), async (c) => {
    const person = c.var.person;
    const membership = await defaultMembership(c.env, person.userId, person.activeOrganizationId);
    if (!membership) return pageNotFound(c, person, paths);
    const on = (await formFields(c, ["weeklyDigest"])).weeklyDigest === "on";
    await setOwnDigest(c.env.db, membership.organizationId, person.userId, on);
    const notice = on ? "You will receive the weekly digest e-mail." : "You will no longer receive the weekly digest e-mail.";
    return redirectWithFlash(c, config, paths, TEAM_PAGE, { notice });
  });

  web.post(
    "/settings/team/invitations",
    signedIn(config, paths),
    action((c, membership) => sendInvitation(c, membership, config)),
  );

  web.post(
    "/settings/team/invitations/:id/revoke",
    signedIn(config, paths),
    action(async (c, membership) => {
      await revokeInvitation(c.env, actorOf(c, membership), c.req.param("id")!);
      return { notice: "The invitation was revoked: its link no longer works." };
    }),
  );

  web.post(
    "/settings/team/members/:id/remove",
    signedIn(config, paths),
    action(async (c, membership) => {
      await removeMember(c.env, actorOf(c, membership), c.req.param("id")!);
      return { notice: "The member was removed from the organization." };
    }),
  );

  web.post(
    "/settings/team/api-key/reveal",
    signedIn(config, paths),
    action(async (c, membership) => {
      const key = await revealApiKey({ db: c.env.db, secrets: config.secrets }, membership.organizationId);
      return { revealedKey: key.secret };
    }),
  );

  web.post(
    "/settings/team/api-key/regenerate",
    signedIn(config, paths),
    action((c, membership) => regenerateKey(c, membership, config)),
  );
}
