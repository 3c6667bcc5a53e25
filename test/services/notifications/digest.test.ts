/**
 * The weekly digest (docs/notifications.md#the-weekly-digest), on runs seeded week by week with the
 * harness's clock, in an organization of America/New_York:
 * - the schedule: nothing before Monday 09:00 there (09:00 UTC is 05:00 in New York), the digest at
 *   09:00 (13:00 UTC, daylight saving time since the day before), once only though two sweeps run at
 *   once and a late one runs again, and not at all a day late;
 * - its content: the week's new flaky and broken tests, the quarantine ending, the most costly test,
 *   the trend against the week before;
 * - the members' e-mail through a real SMTP server: HTML and text, only those who keep it on
 *   (admins by default), List-Unsubscribe with One-Click, whose POST unsubscribes without a session;
 * - the channels that chose `digest`: Slack (Block Kit) and Teams (an Adaptive Card) checked by a
 *   local receiver, a signed webhook's JSON, an e-mail channel's message; an owner filter's cut.
 */
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { digestWeeks, emailOutbox, members, tests, users } from "../../../src/db/schema";
import { nodeSmtpTransport } from "../../../src/node/smtp-transport";
import { sendDueDigests } from "../../../src/services/notifications/digest";
import { createHarness } from "../../support/harness";
import { captureLogger, testSecrets } from "../../support/harness-core";
import { WEB_APP_URL } from "../../support/constants";
import { SmtpSink, headerOf, mimePart } from "../../support/smtp-sink";

const sink = new SmtpSink();
const received: { path: string; headers: Record<string, unknown>; body: any }[] = [];
let receiver: Server;
let base: string;
let h: Awaited<ReturnType<typeof createHarness>>;

beforeAll(async () => {
  const smtpUrl = await sink.start();
  h = await createHarness({
    background: {
      mail: { transport: nodeSmtpTransport(smtpUrl), from: "CI test analytics <ci@example.com>", logHeldBodies: false },
      deliveryRetryDelaysSeconds: [0.01],
    },
  });
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      received.push({ path: req.url ?? "/", headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => receiver.close(resolve));
  await sink.close();
  await h?.close();
});

const TIME_ZONE = "America/New_York";
/** Monday 2021-03-15, 09:00 in New York (EDT since Sunday): 13:00 UTC. The week is 03-08 to 03-14 (UTC days). */
const MONDAY_9AM = Date.parse("2021-03-15T13:00:00Z");
const at = (iso: string) => h.clock.set(Date.parse(iso));
const digestDeps = () => ({
  db: h.db,
  clock: h.clock,
  logger: captureLogger(h.logs),
  webAppUrl: WEB_APP_URL,
  queue: h.queue,
  secrets: testSecrets,
});

/** A person in the organization, with their digest choice (null: the role's default). */
async function person(organizationId: string, role: "admin" | "member", weeklyDigest: boolean | null) {
  const email = `digest-${role}-${crypto.randomUUID()}@example.com`;
  const [user] = await h.db
    .insert(users)
    .values({ name: `${role} person`, email })
    .returning();
  const [member] = await h.db.insert(members).values({ organizationId, userId: user!.id, role, weeklyDigest }).returning();
  return { email, memberId: member!.id };
}

const suite = (cases: { name: string; status: "passed" | "failed"; retried?: boolean }[]) => ({
  suites: [
    {
      name: "checkout",
      cases: cases.map((c) => ({
        classname: "OrderTest",
        name: c.name,
        status: c.status,
        durationMs: 10,
        ...(c.status === "failed" ? { failureMessage: "expected 1, got 2" } : {}),
        ...(c.retried ? { attempts: [{ status: "failed" as const, durationMs: 2000, failureMessage: "timeout" }] } : {}),
      })),
    },
  ],
});

/**
 * The organization's history: two green runs the week before; this week ten runs on main where
 * `fails always` fails (broken at the tenth), `slow retry` passes on a retry of 2 s in the first
 * (flaky), and `quarantined` is quarantined for a day on Sunday evening (ends Monday 20:00 UTC).
 */
async function seededOrganization() {
  at("2021-02-28T12:00:00Z");
  const { organization, apiKey } = await h.newOrganization("Digest Org", TIME_ZONE);
  const { project } = await h.newProject(organization.id, "Checkout");
  for (const day of ["2021-03-02", "2021-03-04"]) {
    at(`${day}T12:00:00Z`);
    await h.newRun(project.id, {
      meta: { branch: "main", commitSha: crypto.randomUUID().replaceAll("-", "") },
      report: suite([
        { name: "fails always", status: "passed" },
        { name: "slow retry", status: "passed" },
        { name: "quarantined", status: "passed" },
      ]),
    });
  }
  for (let i = 0; i < 10; i++) {
    at(`2021-03-${String(9 + Math.floor(i / 2)).padStart(2, "0")}T${i % 2 === 0 ? "10" : "16"}:00:00Z`);
    await h.newRun(project.id, {
      meta: { branch: "main", commitSha: crypto.randomUUID().replaceAll("-", "") },
      report: suite([
        { name: "fails always", status: "failed" },
        { name: "slow retry", status: "passed", retried: i === 0 },
        { name: "quarantined", status: "passed" },
      ]),
    });
  }
  const byName = Object.fromEntries(
    (await h.db.select({ id: tests.id, name: tests.name }).from(tests).where(eq(tests.projectId, project.id))).map((t) => [t.name, t.id]),
  ) as Record<string, string>;
  at("2021-03-14T20:00:00Z");
  const quarantined = await h.post(`/api/v1/tests/${byName.quarantined}/quarantine`, apiKey, { reason: "waits on a fix", duration: "1d" });
  expect(quarantined.status, quarantined.text).toBe(200);
  return { organizationId: organization.id as string, projectId: project.id as string, tests: byName };
}

describe("the weekly digest", () => {
  let org: Awaited<ReturnType<typeof seededOrganization>>;
  let people: Record<"admin" | "member" | "subscribed" | "optedOut", { email: string; memberId: string }>;

  beforeAll(async () => {
    org = await seededOrganization();
    people = {
      admin: await person(org.organizationId, "admin", null),
      member: await person(org.organizationId, "member", null),
      subscribed: await person(org.organizationId, "member", true),
      optedOut: await person(org.organizationId, "admin", false),
    };
    const add = async (body: Record<string, unknown>) => {
      const res = await h.admin("POST", `/organizations/${org.organizationId}/webhooks`, body);
      expect(res.status, res.text).toBe(201);
    };
    await add({ kind: "slack", url: `${base}/digest/slack`, events: ["digest"], project_id: org.projectId });
    await add({ kind: "teams", url: `${base}/digest/teams`, events: ["digest"] });
    await add({ kind: "webhook", url: `${base}/digest/webhook`, events: ["digest"] });
    await add({ kind: "slack", url: `${base}/digest/payments`, events: ["digest"], owner_filter: "@acme/payments" });
    await add({ kind: "slack", url: `${base}/digest/alerts-only`, events: ["alerts"] });
    await add({ kind: "email", addresses: [people.member.email], events: ["digest"] });
  });

  it("goes out at Monday 09:00 in the organization's time zone, once, though two sweeps run at once and a late one again", async () => {
    for (const before of ["2021-03-15T09:00:00Z", "2021-03-15T12:59:59Z", "2021-03-14T13:00:00Z"]) {
      at(before);
      expect(await sendDueDigests(digestDeps())).not.toContain(org.organizationId);
    }
    h.clock.set(MONDAY_9AM);
    const [first, second] = await Promise.all([sendDueDigests(digestDeps()), sendDueDigests(digestDeps())]);
    expect([...first, ...second].filter((id) => id === org.organizationId)).toEqual([org.organizationId]);
    at("2021-03-15T14:10:00Z");
    expect(await sendDueDigests(digestDeps())).not.toContain(org.organizationId);
    const weeks = await h.db.select().from(digestWeeks).where(eq(digestWeeks.organizationId, org.organizationId));
    expect(weeks.map((week) => week.week)).toEqual(["2021-03-15"]);
    // The next Monday, more than a day late: skipped, not sent as old news.
    at("2021-03-23T13:00:01Z");
    expect(await sendDueDigests(digestDeps())).not.toContain(org.organizationId);
    await h.queue.idle();
  });

  it("reaches the members who keep it on, through SMTP, as HTML and text with a one-click List-Unsubscribe", async () => {
    await sink.waitFor(1);
    const digests = await h.db
      .select({ to: emailOutbox.toAddress, status: emailOutbox.status })
      .from(emailOutbox)
      .where(and(eq(emailOutbox.organizationId, org.organizationId), eq(emailOutbox.kind, "digest")));
    expect(digests.map((row) => row.to).sort()).toEqual([people.admin.email, people.subscribed.email].sort());
    expect(digests.every((row) => row.status === "sent")).toBe(true);

    const [mail] = sink.to(people.admin.email);
    expect(mail!.subject).toBe('Weekly digest of "Digest Org"');
    const text = mimePart(mail!.raw, "text/plain")!;
    const testUrl = (name: string) => `${WEB_APP_URL}/projects/${org.projectId}/tests/${org.tests[name]}`;
    expect(text).toContain(
      "This week: 10 runs (+8), pass rate 0 % (−100 pp), 1 flaky tests (+1), 2 s lost to flakiness (+2 s) against the week before.",
    );
    expect(text).toContain(`Turned flaky: OrderTest › slow retry <${testUrl("slow retry")}>.`);
    expect(text).toContain(`Turned broken: OrderTest › fails always <${testUrl("fails always")}>.`);
    expect(text).toContain(`Quarantines ending this week: OrderTest › quarantined <${testUrl("quarantined")}> (ends 2021-03-15).`);
    expect(text).toContain(`Most costly: OrderTest › slow retry <${testUrl("slow retry")}> (2 s, 100 %).`);
    expect(text).toContain(`Open the project: ${WEB_APP_URL}/projects/${org.projectId}`);
    const html = mimePart(mail!.raw, "text/html")!;
    expect(html).toContain(`<a href="${testUrl("slow retry")}">OrderTest › slow retry</a>`);
    expect(html).toContain("<h2>Weekly digest: Checkout</h2>");

    const unsubscribe = headerOf(mail!.raw, "list-unsubscribe");
    expect(unsubscribe).toMatch(new RegExp(`^<${WEB_APP_URL}/digest/unsubscribe/[^>]+>$`));
    expect(headerOf(mail!.raw, "list-unsubscribe-post")).toBe("List-Unsubscribe=One-Click");
    expect(text).toContain(`Unsubscribe with one click: ${unsubscribe.slice(1, -1)}`);

    // The mail client's one click (RFC 8058): a POST without a session or an Origin of ours.
    const path = new URL(unsubscribe.slice(1, -1)).pathname;
    const clicked = await h.app.request(path, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "List-Unsubscribe=One-Click",
    });
    expect(clicked.status).toBe(200);
    const [row] = await h.db.select({ weeklyDigest: members.weeklyDigest }).from(members).where(eq(members.id, people.admin.memberId));
    expect(row!.weeklyDigest).toBe(false);
  });

  it("reaches Slack as Block Kit and Teams as an Adaptive Card, a webhook as signed JSON, an e-mail channel's member", async () => {
    const slack = received.find((entry) => entry.path === "/digest/slack")!.body;
    expect(Object.keys(slack).sort()).toEqual(["blocks", "text"]);
    expect(slack.blocks.map((block: { type: string }) => block.type)).toEqual(["header", "section", "context", "actions"]);
    expect(slack.blocks[0].text).toEqual({ type: "plain_text", text: "Weekly digest: Checkout", emoji: false });
    const section = slack.blocks[1].text;
    expect(section.type).toBe("mrkdwn");
    expect(section.text).toContain(
      `Turned flaky: <${WEB_APP_URL}/projects/${org.projectId}/tests/${org.tests["slow retry"]}|OrderTest › slow retry>.`,
    );
    expect(slack.blocks[3].elements[0]).toMatchObject({ type: "button", url: `${WEB_APP_URL}/projects/${org.projectId}` });
    expect(slack.text).toMatch(/^Weekly digest: Checkout: This week: 10 runs/);

    const teams = received.find((entry) => entry.path === "/digest/teams")!.body;
    expect(teams.type).toBe("message");
    const card = teams.attachments[0].content;
    expect(teams.attachments[0].contentType).toBe("application/vnd.microsoft.card.adaptive");
    expect(card).toMatchObject({ type: "AdaptiveCard", version: "1.4" });
    expect(card.body.every((block: { type: string }) => block.type === "TextBlock")).toBe(true);
    expect(card.body.map((block: { text: string }) => block.text)).toContain(
      `Turned broken: [OrderTest › fails always](${WEB_APP_URL}/projects/${org.projectId}/tests/${org.tests["fails always"]}).`,
    );
    expect(card.actions).toEqual([{ type: "Action.OpenUrl", title: "Open the project", url: `${WEB_APP_URL}/projects/${org.projectId}` }]);

    const webhook = received.find((entry) => entry.path === "/digest/webhook")!;
    expect(webhook.headers["cta-event-type"]).toBe("digest.weekly");
    expect(webhook.headers["cta-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(webhook.body).toMatchObject({
      type: "digest.weekly",
      project_id: org.projectId,
      week: { from: "2021-03-08T00:00:00.000Z", to: "2021-03-15T00:00:00.000Z" },
      owner_filter: null,
      trend: {
        runs: { this_week: 10, previous_week: 2 },
        pass_rate: { this_week: 0, previous_week: 1 },
        flaky_tests: { this_week: 1, previous_week: 0 },
        time_lost_ms: { this_week: 2000, previous_week: 0 },
      },
    });
    expect(webhook.body.new_flaky_tests.map((test: { id: string }) => test.id)).toEqual([org.tests["slow retry"]]);
    expect(webhook.body.new_broken_tests.map((test: { id: string }) => test.id)).toEqual([org.tests["fails always"]]);
    expect(webhook.body.quarantines_expiring).toEqual([
      expect.objectContaining({ id: org.tests.quarantined, reason: "waits on a fix", expires_at: "2021-03-15T20:00:00.000Z" }),
    ]);
    expect(webhook.body.costly_tests).toEqual([expect.objectContaining({ id: org.tests["slow retry"], cost_ms: 2000, share: 1 })]);

    // The owner filter keeps the lists to the owner's tests (none here); the trend stays the project's.
    const payments = received.find((entry) => entry.path === "/digest/payments")!.body;
    expect(payments.blocks[1].text.text).toContain("Tests owned by @acme/payments; the figures are the whole project's.");
    expect(payments.blocks[1].text.text).not.toContain("Turned flaky");
    expect(received.some((entry) => entry.path === "/digest/alerts-only")).toBe(false);

    // The plain member is not a digest reader, but the e-mail channel names them.
    const [channelMail] = sink.to(people.member.email);
    expect(channelMail!.subject).toBe("Weekly digest: Checkout");
    expect(mimePart(channelMail!.raw, "text/plain")).toContain("Turned broken: OrderTest › fails always");
    expect(sink.to(people.optedOut.email)).toEqual([]);
  });
});

describe("a sweep of the weekly digests", () => {
  it("writes at most its limit of organizations; the others are still due at the next sweep", async () => {
    // Monday 2021-05-03, 09:00 in Kathmandu (UTC+05:45) is 03:15 UTC; New York's Monday is then still to come.
    at("2021-04-20T00:00:00Z");
    const mine = await Promise.all(
      ["A", "B", "C"].map(async (name) => (await h.newOrganization(`Sweep ${name}`, "Asia/Kathmandu")).organization.id),
    );
    at("2021-05-03T03:20:00Z");
    const sentTo: string[] = [];
    for (let sweep = 0; sweep < 20 && !mine.every((id) => sentTo.includes(id)); sweep++) {
      const sent = await sendDueDigests(digestDeps(), 1);
      expect(sent.length).toBeLessThanOrEqual(1);
      sentTo.push(...sent);
    }
    expect(mine.filter((id) => sentTo.includes(id)).sort()).toEqual([...mine].sort());
    expect(new Set(sentTo).size).toBe(sentTo.length);
    await h.queue.idle();
  });
});
