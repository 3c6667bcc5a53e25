/**
 * Destructive page actions and POST-redirect-GET (docs/web-app.md "Forms"): regenerating the API
 * key, rotating the upload token, removing a member, revoking an invitation and removing a webhook
 * each have a confirmation page (a GET that changes nothing) whose form POSTs the action; the POST
 * answers 303 to a GET page whose URL carries no secret; that page shows the secret once (a
 * one-time server-side message, sealed, bound to the session), and a reload neither shows it again
 * nor repeats the action. Another session, another person, or an expired message shows nothing.
 */
import { and, eq, inArray, isNull } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeys, flashMessages, invitations, members, projects, sessions, users, webhookEndpoints } from "../../src/db/schema";
import { createHarness } from "../support/harness";
import { adminAndMember, inputValue } from "../support/project-page-fixtures";
import { WebClient, uniqueEmail } from "../support/web-client";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const API_KEY = /cta_[0-9A-Za-z]{20,}/;
const UPLOAD_TOKEN = /ctu_[0-9A-Za-z_-]{20,}/;
const apiKeyOnPage = (html: string) => inputValue(html, "api-key-value");

async function liveKey(organizationId: string) {
  return h.db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.organizationId, organizationId), isNull(apiKeys.revokedAt)));
}

/** The team page's messages waiting for the sessions of the person with this e-mail. */
async function teamFlashOf(email: string) {
  const [person] = await h.db.select({ id: users.id }).from(users).where(eq(users.email, email));
  const ids = (await h.db.select({ id: sessions.id }).from(sessions).where(eq(sessions.userId, person!.id))).map((row) => row.id);
  return and(inArray(flashMessages.sessionId, ids), eq(flashMessages.page, "/settings/team"))!;
}

async function withProject(people: Awaited<ReturnType<typeof adminAndMember>>) {
  const created = await people.admin.postAndFollow("/projects/new", { name: "Flash", description: "", defaultBranch: "" });
  const [project] = await h.db.select().from(projects).where(eq(projects.organizationId, people.organizationId));
  return { project: project!, token: inputValue(created.text, "upload-token")!, created };
}

describe("regenerating the API key", () => {
  it("asks first: the button leads to a confirmation page, whose GET changes nothing and whose form POSTs the action", async () => {
    const people = await adminAndMember(h, "Confirm Org");
    const team = await people.admin.get("/settings/team");
    expect(team.text).toContain('<form method="get" action="/settings/team/api-key/regenerate">');
    expect(team.text).not.toContain('<form method="post" action="/settings/team/api-key/regenerate">');
    const before = await liveKey(people.organizationId);
    const confirm = await people.admin.get("/settings/team/api-key/regenerate");
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain("Regenerate the API key?");
    expect(confirm.text).toContain("the current key is refused from its next request");
    expect(confirm.text).toContain('<form method="post" action="/settings/team/api-key/regenerate">');
    expect(confirm.text).not.toMatch(API_KEY);
    // The GET of the action's address (the confirmation) acted on nothing.
    expect(await liveKey(people.organizationId)).toEqual(before);
    // A member gets no confirmation page either.
    expect((await people.member.get("/settings/team/api-key/regenerate")).status).toBe(403);
  });

  it("the POST answers 303 to the team page; the new key is shown there once, sealed meanwhile, and a reload neither shows it nor regenerates", async () => {
    const people = await adminAndMember(h, "Regenerate Org");
    const [before] = await liveKey(people.organizationId);
    const posted = await people.admin.post("/settings/team/api-key/regenerate", {});
    expect(posted.status).toBe(303);
    expect(posted.location).toBe("/settings/team");
    expect(posted.text).not.toMatch(API_KEY);
    const [after] = await liveKey(people.organizationId);
    expect(after!.id).not.toBe(before!.id);

    // Waiting server-side, sealed: the key is not in the row.
    const [waiting] = await h.db
      .select()
      .from(flashMessages)
      .where(await teamFlashOf(people.adminEmail));
    expect(waiting!.bodyEncrypted).toMatch(/^v1:/);
    expect(waiting!.bodyEncrypted).not.toMatch(API_KEY);

    // Another session (the same person signed in elsewhere) does not get it.
    const elsewhere = new WebClient(h.app);
    expect((await elsewhere.signIn(people.adminEmail)).status).toBe(303);
    const other = await elsewhere.get("/settings/team");
    expect(other.status).toBe(200);
    expect(apiKeyOnPage(other.text)).toBeNull();

    const shown = await people.admin.get(posted.location!);
    expect(shown.status).toBe(200);
    expect(shown.headers.get("cache-control")).toBe("no-store");
    const key = apiKeyOnPage(shown.text)!;
    expect(key).toMatch(API_KEY);
    expect(shown.text).toContain("The API key was regenerated");
    expect((await h.call("GET", "/api/v1/organization", { key })).status).toBe(200);

    const reloaded = await people.admin.get(posted.location!);
    expect(reloaded.status).toBe(200);
    expect(reloaded.text).not.toContain(key);
    expect(reloaded.text).not.toContain("The API key was regenerated");
    expect(await liveKey(people.organizationId)).toEqual([after]);
    expect((await h.call("GET", "/api/v1/organization", { key })).status).toBe(200);
    expect(
      await h.db
        .select()
        .from(flashMessages)
        .where(await teamFlashOf(people.adminEmail)),
    ).toEqual([]);
  });

  it("an expired message shows nothing", async () => {
    const people = await adminAndMember(h, "Expired Org");
    const posted = await people.admin.post("/settings/team/api-key/reveal", {});
    expect(posted.status).toBe(303);
    await h.db
      .update(flashMessages)
      .set({ expiresAt: new Date(h.clock.now().getTime() - 1000) })
      .where(await teamFlashOf(people.adminEmail));
    const page = await people.admin.get(posted.location!);
    expect(page.status).toBe(200);
    expect(apiKeyOnPage(page.text)).toBeNull();
    expect(page.text).not.toMatch(API_KEY);
  });
});

describe("removing a member and revoking an invitation", () => {
  it("each has a confirmation page naming whom it concerns; only its POST acts, and answers 303", async () => {
    const people = await adminAndMember(h, "Remove Org");
    const [memberRow] = await h.db
      .select({ id: members.id })
      .from(members)
      .innerJoin(users, eq(users.id, members.userId))
      .where(eq(users.email, people.memberEmail));
    const team = await people.admin.get("/settings/team");
    expect(team.text).toContain(`<form method="get" action="/settings/team/members/${memberRow!.id}/remove">`);
    const confirm = await people.admin.get(`/settings/team/members/${memberRow!.id}/remove`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain("Remove Mo Member?");
    expect(confirm.text).toContain(`<form method="post" action="/settings/team/members/${memberRow!.id}/remove">`);
    expect(await h.db.select().from(members).where(eq(members.id, memberRow!.id))).toHaveLength(1);
    expect((await people.admin.get("/settings/team/members/00000000-0000-4000-8000-000000000000/remove")).status).toBe(404);

    const email = uniqueEmail("confirm-revoke");
    expect((await people.admin.post("/settings/team/invitations", { email, role: "member" })).status).toBe(303);
    const [invitation] = await h.db.select().from(invitations).where(eq(invitations.email, email));
    const revokeConfirm = await people.admin.get(`/settings/team/invitations/${invitation!.id}/revoke`);
    expect(revokeConfirm.status).toBe(200);
    expect(revokeConfirm.text).toContain(`Revoke the invitation of ${email}?`);
    expect((await h.db.select().from(invitations).where(eq(invitations.id, invitation!.id)))[0]!.status).toBe("pending");
    const revoked = await people.admin.postAndFollow(`/settings/team/invitations/${invitation!.id}/revoke`, {});
    expect(revoked.posted.status).toBe(303);
    expect(revoked.text).toContain("The invitation was revoked");

    const removed = await people.admin.postAndFollow(`/settings/team/members/${memberRow!.id}/remove`, {});
    expect(removed.posted.status).toBe(303);
    expect(removed.posted.location).toBe("/settings/team");
    expect(removed.text).toContain("The member was removed");
    expect(await h.db.select().from(members).where(eq(members.id, memberRow!.id))).toEqual([]);
    expect((await people.admin.get("/settings/team")).text).not.toContain("The member was removed");
  });
});

describe("rotating the upload token", () => {
  it("asks first; the POST answers 303 to the settings page, which shows the new token once; a reload neither shows it nor rotates", async () => {
    const people = await adminAndMember(h, "Rotate Org");
    const { project, token } = await withProject(people);
    const settingsPath = `/projects/${project.id}/settings`;
    const settings = await people.admin.get(settingsPath);
    expect(settings.text).toContain(`<form method="get" action="${settingsPath}/upload-token/rotate">`);
    expect(settings.text).not.toContain(`<form method="post" action="${settingsPath}/upload-token/rotate">`);

    const confirm = await people.admin.get(`${settingsPath}/upload-token/rotate`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain("Rotate the upload token of Flash?");
    expect(confirm.text).toContain(`<form method="post" action="${settingsPath}/upload-token/rotate">`);
    const [unchanged] = await h.db.select().from(projects).where(eq(projects.id, project.id));
    expect(unchanged!.uploadTokenEncrypted).toBe(project.uploadTokenEncrypted);

    const posted = await people.admin.post(`${settingsPath}/upload-token/rotate`, {});
    expect(posted.status).toBe(303);
    expect(posted.location).toBe(settingsPath);
    expect(posted.text).not.toMatch(UPLOAD_TOKEN);
    const [rotated] = await h.db.select().from(projects).where(eq(projects.id, project.id));
    expect(rotated!.uploadTokenEncrypted).not.toBe(project.uploadTokenEncrypted);

    // Another person (a member, who may read the token on this page) does not get the message.
    expect(inputValue((await people.member.get(settingsPath)).text, "upload-token")).toBeNull();

    const shown = await people.admin.get(posted.location!);
    const fresh = inputValue(shown.text, "upload-token")!;
    expect(fresh).toMatch(UPLOAD_TOKEN);
    expect(fresh).not.toBe(token);
    expect(shown.text).toContain("the previous one is refused");

    const reloaded = await people.admin.get(posted.location!);
    expect(inputValue(reloaded.text, "upload-token")).toBeNull();
    expect(reloaded.text).not.toContain(fresh);
    const [afterReload] = await h.db.select().from(projects).where(eq(projects.id, project.id));
    expect(afterReload!.uploadTokenEncrypted).toBe(rotated!.uploadTokenEncrypted);
    expect((await h.upload(fresh, "<testsuite name='s'/>")).status).toBe(202);
  });

  it("the created page shows the new project's token once; its reload leads to the project without it", async () => {
    const people = await adminAndMember(h, "Created Org");
    const { project, token, created } = await withProject(people);
    expect(created.posted.location).toBe(`/projects/${project.id}/created`);
    expect(created.posted.location).not.toContain(token);
    expect(token).toMatch(UPLOAD_TOKEN);
    const again = await people.admin.get(created.posted.location!);
    expect(again.status).toBe(303);
    expect(again.location).toBe(`/projects/${project.id}`);
    expect(again.text).not.toContain(token);
    expect(await h.db.select().from(projects).where(eq(projects.organizationId, people.organizationId))).toHaveLength(1);
  });
});

describe("removing a webhook", () => {
  it("asks first: the confirmation's GET removes nothing, its POST answers 303 with the notice shown once", async () => {
    const people = await adminAndMember(h, "Webhook Org");
    const { project } = await withProject(people);
    const settingsPath = `/projects/${project.id}/settings`;
    const added = await people.admin.postAndFollow(`${settingsPath}/webhooks`, { url: "http://127.0.0.1:9/hook", description: "" });
    expect(added.posted.status).toBe(303);
    expect(added.posted.location).toBe(settingsPath);
    const secret = inputValue(added.text, "signing-secret")!;
    expect(secret).toMatch(/^whsec_/);
    expect((await people.admin.get(settingsPath)).text).not.toContain(secret);
    const [webhook] = await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, project.id));
    const confirm = await people.admin.get(`${settingsPath}/webhooks/${webhook!.id}/delete`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain("Remove this webhook?");
    expect(await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, project.id))).toHaveLength(1);
    const removed = await people.admin.postAndFollow(`${settingsPath}/webhooks/${webhook!.id}/delete`, {});
    expect(removed.posted.location).toBe(settingsPath);
    expect(removed.text).toContain("Webhook removed.");
    expect((await people.admin.get(settingsPath)).text).not.toContain("Webhook removed.");
    expect(await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, project.id))).toEqual([]);
  });
});
