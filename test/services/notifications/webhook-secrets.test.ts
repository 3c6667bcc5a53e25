/**
 * Webhook signing secrets at rest (docs/secrets.md): stored sealed under SECRETS_KEY, bound to
 * their row, opened only to sign a delivery; rows from before migration 0009 (plain text) and rows
 * sealed under an older key are re-sealed by reencryptSigningSecrets; a secret whose key is not
 * configured fails its delivery cleanly (nothing sent unsigned, nothing secret logged); and a dump
 * of every table holds none of the secrets ever issued.
 */
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowsOf } from "../../../src/db/rows";
import { notificationDeliveries, webhookEndpoints } from "../../../src/db/schema";
import { SecretKeyring, sealedKeyId } from "../../../src/lib/secret-box";
import { verifySignature } from "../../../src/notifications/signature";
import { planNotifications } from "../../../src/services/notifications/notifications";
import { openSigningSecret, reencryptSigningSecrets } from "../../../src/services/notifications/webhook-secrets";
import { SECRETS_KEY, captureLogger, createHarness, inProcessHarness, testSecrets } from "../../support/harness";

type Sent = { url: string; signature: string | null; body: string };

/** Every outbound delivery request of a harness, answered 204 without leaving the process. */
function recordingFetch(sent: Sent[]): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    sent.push({ url: String(input), signature: headers.get("cta-signature"), body: String(init?.body) });
    return new Response(null, { status: 204 });
  };
}

const NEW_KEY = "rotated-secrets-key-0123456789abcdefghijklmn";
const OTHER_KEY = "unrelated-secrets-key-0123456789abcdefghijk";

const sent: Sent[] = [];
let h: Awaited<ReturnType<typeof createHarness>>;
/** Every secret the admin API issued in this file, and every secret written to the database. */
const issued = new Set<string>();

beforeAll(async () => {
  h = await createHarness({ background: { fetch: recordingFetch(sent) } });
});
afterAll(async () => {
  await h.close();
});

/** Another app and background over the same database, with other keys (another deployment of the service). */
function sameDatabaseWith(secrets: SecretKeyring, into: Sent[]) {
  // Delivery retries a few milliseconds apart, so a delivery that keeps failing ends within the test.
  const background = { fetch: recordingFetch(into), deliveryRetryDelaysSeconds: [0.01, 0.01, 0.01, 0.01, 0.01] };
  return inProcessHarness(h.db, { overrides: { secrets }, background }, async () => {});
}

async function newWebhook(path: string) {
  const { organization } = await h.newOrganization();
  const { project, alertIds } = await h.newProject(organization.id);
  const created = await h.admin("POST", `/organizations/${organization.id}/webhooks`, { url: `http://127.0.0.1:9/${path}` });
  expect(created.status).toBe(201);
  issued.add(created.body.signing_secret);
  return {
    organization,
    project,
    alertIds,
    webhookId: created.body.webhook.id as string,
    secret: created.body.signing_secret as string,
    url: `http://127.0.0.1:9/${path}`,
  };
}

/** One trip of the project's flakiness alert, planned and delivered by `harness`'s background work. */
async function notify(harness: ReturnType<typeof sameDatabaseWith> | typeof h, projectId: string, alertId: string) {
  const run = await harness.newRun(projectId);
  const event = await harness.newEvent(alertId, run.id);
  await planNotifications(harness.work.notifications, run, [{ alertId, alertType: "test_flakiness", eventId: event.id, snoozed: false }]);
  await harness.queue.idle();
}

const storedRow = async (id: string) => (await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id)))[0]!;

describe("webhook signing secrets at rest", () => {
  it("are stored sealed under SECRETS_KEY, never as they are, and a delivery is signed with the secret itself", async () => {
    const { webhookId, secret, project, alertIds, url } = await newWebhook("sealed");
    const row = await storedRow(webhookId);
    expect(row.legacySigningSecret).toBeNull();
    expect(sealedKeyId(row.signingSecretEncrypted!)).toBe(await testSecrets.currentKeyId());
    expect(JSON.stringify(row)).not.toContain(secret.slice("whsec_".length));

    await notify(h, project.id, alertIds.test_flakiness!);
    const delivery = sent.find((s) => s.url === url)!;
    expect(verifySignature(secret, delivery.signature, delivery.body, Math.floor(h.clock.now().getTime() / 1000))).toBe(true);
  });

  it("a sealed secret is bound to its row: copied to another row, it does not open", async () => {
    const a = await newWebhook("bound-a");
    const b = await newWebhook("bound-b");
    const sealedA = (await storedRow(a.webhookId)).signingSecretEncrypted!;
    await expect(
      openSigningSecret(testSecrets, { id: b.webhookId, signingSecretEncrypted: sealedA, legacySigningSecret: null }),
    ).rejects.toThrow(/altered or moved/);
  });

  it("rows from before migration 0009 (plain text) are sealed by reencryptSigningSecrets, and their deliveries stay signed", async () => {
    const { organization, project, alertIds } = await newWebhook("legacy-neighbour");
    // A row as it was stored before the migration: the secret in plain text in signing_secret.
    const legacySecret = `whsec_${"ab".repeat(32)}`;
    issued.add(legacySecret);
    const [legacy] = await h.db
      .insert(webhookEndpoints)
      .values({
        organizationId: organization.id,
        projectId: project.id,
        url: "http://127.0.0.1:9/legacy",
        legacySigningSecret: legacySecret,
      })
      .returning();

    const logs: string[] = [];
    const report = await reencryptSigningSecrets({ db: h.db, secrets: testSecrets, logger: captureLogger(logs) });
    expect(report.sealed).toBeGreaterThanOrEqual(1);
    const row = await storedRow(legacy!.id);
    expect(row.legacySigningSecret).toBeNull();
    expect(sealedKeyId(row.signingSecretEncrypted!)).toBe(await testSecrets.currentKeyId());
    expect(logs.join("\n")).not.toContain(legacySecret.slice("whsec_".length));

    await notify(h, project.id, alertIds.test_flakiness!);
    const delivery = sent.find((s) => s.url === "http://127.0.0.1:9/legacy")!;
    expect(verifySignature(legacySecret, delivery.signature, delivery.body, Math.floor(h.clock.now().getTime() / 1000))).toBe(true);
    // A second pass has nothing left to do.
    expect((await reencryptSigningSecrets({ db: h.db, secrets: testSecrets, logger: captureLogger([]) })).sealed).toBe(0);
  });

  it("rotation: with the old key as SECRETS_KEY_PREVIOUS deliveries stay signed; re-sealing moves every row to the new key, after which the old key can go", async () => {
    const { webhookId, secret, project, alertIds, url, organization } = await newWebhook("rotation");
    const oldKeyId = await testSecrets.currentKeyId();
    const rotated = new SecretKeyring({ current: NEW_KEY, previous: [SECRETS_KEY] });
    const afterRotation: Sent[] = [];
    const service = sameDatabaseWith(rotated, afterRotation);

    // Before re-sealing: the row is still under the old key, which opens it as a previous key.
    expect(sealedKeyId((await storedRow(webhookId)).signingSecretEncrypted!)).toBe(oldKeyId);
    await notify(service, project.id, alertIds.test_flakiness!);
    const first = afterRotation.find((s) => s.url === url)!;
    expect(verifySignature(secret, first.signature, first.body, Math.floor(service.clock.now().getTime() / 1000))).toBe(true);

    const report = await reencryptSigningSecrets({ db: h.db, secrets: rotated, logger: captureLogger([]) });
    expect(report.resealed).toBeGreaterThanOrEqual(1);
    // This organization's rows (on PostgreSQL the database is shared with other files, whose rows may be under other keys).
    const ours = new Set(
      (
        await h.db.select({ id: webhookEndpoints.id }).from(webhookEndpoints).where(eq(webhookEndpoints.organizationId, organization.id))
      ).map((row) => row.id),
    );
    expect(report.unreadable.filter((row) => ours.has(row.endpointId))).toEqual([]);
    const [remaining] = await rowsOf<{ count: number }>(
      h.db.execute(
        sql`select count(*)::int as count from ${webhookEndpoints} where ${webhookEndpoints.organizationId} = ${organization.id} and ${webhookEndpoints.signingSecretEncrypted} not like ${`v1:${await rotated.currentKeyId()}:%`}`,
      ),
    );
    expect(remaining!.count).toBe(0);
    const onlyNewKey = new SecretKeyring({ current: NEW_KEY });
    expect(await openSigningSecret(onlyNewKey, await storedRow(webhookId))).toBe(secret);

    // Back to the first key for the rest of the file (the same procedure the other way round).
    await reencryptSigningSecrets({
      db: h.db,
      secrets: new SecretKeyring({ current: SECRETS_KEY, previous: [NEW_KEY] }),
      logger: captureLogger([]),
    });
    expect(sealedKeyId((await storedRow(webhookId)).signingSecretEncrypted!)).toBe(oldKeyId);
  });

  it("a secret under a key that is not configured is never sent: each attempt fails with a clear error until the attempts run out; nothing secret is logged", async () => {
    const { webhookId, secret, project, alertIds, url } = await newWebhook("wrong-key");
    const wrongKey: Sent[] = [];
    const service = sameDatabaseWith(new SecretKeyring({ current: OTHER_KEY }), wrongKey);
    await notify(service, project.id, alertIds.test_flakiness!);
    expect(wrongKey.filter((s) => s.url === url)).toEqual([]);

    const [delivery] = await h.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.endpointId, webhookId));
    expect(delivery).toMatchObject({ status: "failed", attempts: 6, lastStatusCode: null });
    expect(delivery!.lastError).toMatch(
      /signing secret cannot be decrypted.*sealed under key [0-9a-f]{12}, which is neither SECRETS_KEY nor one of SECRETS_KEY_PREVIOUS/,
    );
    const logged = service.logs.join("\n");
    expect(logged).toContain("webhook delivery attempt failed");
    expect(logged).not.toContain(secret.slice("whsec_".length));

    // The start-up pass leaves such rows as they are and reports them by id.
    const logs: string[] = [];
    const report = await reencryptSigningSecrets({
      db: h.db,
      secrets: new SecretKeyring({ current: OTHER_KEY }),
      logger: captureLogger(logs),
    });
    expect(report.unreadable).toContainEqual({ endpointId: webhookId, keyId: await testSecrets.currentKeyId() });
    expect(sealedKeyId((await storedRow(webhookId)).signingSecretEncrypted!)).toBe(await testSecrets.currentKeyId());
    expect(logs.join("\n")).toContain("cannot be opened");
  });

  // On the PostgreSQL pass the database holds every earlier file's rows (runs of 100,000 cases): searching them all takes tens of seconds.
  it("a dump of every table holds none of the secrets ever issued (API keys, upload tokens, webhook secrets), and neither do the logs", async () => {
    const { organization, apiKey } = await h.newOrganization("Dumped");
    const regenerated = await h.admin("POST", `/organizations/${organization.id}/api_key/regenerate`);
    const { project, uploadToken } = await h.newProject(organization.id);
    const mine = [
      apiKey,
      regenerated.body.api_key.secret,
      uploadToken,
      (await h.admin("POST", `/projects/${project.id}/upload_token/regenerate`)).body.upload_token,
    ];
    for (const scope of [{}, { project_id: project.id }]) {
      mine.push(
        (await h.admin("POST", `/organizations/${organization.id}/webhooks`, { url: "http://127.0.0.1:9/dumped", ...scope })).body
          .signing_secret,
      );
    }
    expect(mine.every((secret) => /^(cta|ctu|whsec)_[0-9A-Za-z]{40,}$/.test(secret))).toBe(true);
    for (const secret of mine) issued.add(secret);

    const tables = await rowsOf<{ schema: string; name: string }>(
      h.db.execute(
        sql`select table_schema as schema, table_name as name from information_schema.tables where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`,
      ),
    );
    expect(tables.map((t) => t.name)).toContain("webhook_endpoints");
    // Every row of every table, as text, searched by the database itself: the suite's shared
    // database on the PostgreSQL pass holds every earlier file's rows, more text than one string holds.
    // The secrets and their random parts (hex or base62 after the prefix), each on its own.
    const needles = [...issued].flatMap((secret) => [secret, secret.replace(/^(whsec|cta|ctu)_/, "")]);
    const found = new Set<string>();
    for (const { schema, name } of tables) {
      const rows = await rowsOf<{ needle: string }>(
        h.db.execute(
          // Each row made text once (materialized), then searched for every needle.
          sql`with r as materialized (select row_to_json(t)::text as doc from ${sql.raw(`"${schema}"."${name}"`)} t)
            select distinct n.needle from r, json_array_elements_text(${JSON.stringify(needles)}::json) as n(needle)
            where strpos(r.doc, n.needle) > 0`,
        ),
      );
      for (const { needle } of rows) found.add(needle);
    }
    const leaked = [...issued].filter((secret) => found.has(secret) || found.has(secret.replace(/^(whsec|cta|ctu)_/, "")));
    expect(leaked).toEqual([]);
    // The search sees what a dump would: the sealed secrets are there, as sealed text.
    const [sealed] = await rowsOf<{ n: number | string }>(
      h.db.execute(
        sql`select count(*) as n from webhook_endpoints t where strpos(row_to_json(t)::text, '"signing_secret_encrypted":"v1:') > 0`,
      ),
    );
    expect(Number(sealed!.n)).toBeGreaterThan(0);
    const logged = [...issued].filter((secret) => h.logs.some((line) => line.includes(secret.replace(/^(whsec|cta|ctu)_/, ""))));
    expect(logged).toEqual([]);
  }, 300_000);
});
