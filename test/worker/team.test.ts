/**
 * The team page and invitations through the Worker (SELF.fetch, the Neon driver), without
 * SMTP_URL: the invitation is written to the outbox and read back by the operator through the
 * admin API, the invitee joins through its link, a regenerated key is refused at once (its
 * Durable Object), a member's forged admin post is refused. And the
 * Worker's SMTP transport (worker-mailer over `cloudflare:sockets`) runs in workerd: a server that
 * does not answer is an error the outbox records, not a crash.
 */
import { describe, expect, it } from "vitest";
import { workerSmtpTransport } from "../../src/worker/smtp-transport";
import { createHarness } from "./support/harness";
import { WebClient, uniqueEmail } from "../support/web-client";

describe("the team page on the Worker", () => {
  it("invite → held in the outbox → read by the operator → the invitee joins as member and cannot act as admin", async () => {
    const h = await createHarness();
    try {
      const admin = new WebClient(h.app);
      await admin.signUp({ email: uniqueEmail("worker-team"), organization: "Worker Team Org" });
      const team = await admin.get("/settings/team");
      expect(team.status).toBe(200);
      expect(team.text).toContain("Reveal the key");
      const revealed = await admin.postAndFollow("/settings/team/api-key/reveal", {});
      const oldKey = /value="(cta_[0-9A-Za-z]{49})"/.exec(revealed.text)![1]!;
      // The key's Durable Object learns the key, then regenerating marks it revoked there: 401 at once.
      expect((await h.get("/api/v1/organization", oldKey)).status).toBe(200);
      const regenerated = await admin.postAndFollow("/settings/team/api-key/regenerate", {});
      expect(regenerated.posted.status).toBe(303);
      const newKey = /value="(cta_[0-9A-Za-z]{49})"/.exec(regenerated.text)![1]!;
      expect((await h.get("/api/v1/organization", oldKey)).status).toBe(401);
      expect((await h.get("/api/v1/organization", newKey)).status).toBe(200);

      const invitee = uniqueEmail("worker-invitee");
      expect((await admin.postAndFollow("/settings/team/invitations", { email: invitee, role: "member" })).status).toBe(200);
      let link: string | undefined;
      for (let i = 0; i < 100 && !link; i++) {
        const outbox = await h.admin("GET", "/emails");
        const mail = (outbox.body.data as { to: string; text: string }[]).find((email) => email.to === invitee);
        link = /\/invitations\/[A-Za-z0-9_-]{43}/.exec(mail?.text ?? "")?.[0];
        if (!link) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(link).toBeDefined();

      const member = new WebClient(h.app);
      expect((await member.get(link!)).status).toBe(200);
      expect((await member.post(`${link}/sign-up`, { name: "Edge Member", password: "edge member password" })).status).toBe(303);
      const memberTeam = await member.get("/settings/team");
      expect(memberTeam.status).toBe(200);
      expect(memberTeam.text).not.toContain("Reveal the key");
      expect((await member.post("/settings/team/api-key/regenerate", {})).status).toBe(403);
      expect((await member.get(link!)).status).toBe(404);
    } finally {
      await h.close();
    }
  });

  it("the SMTP transport over TCP sockets runs in workerd and reports a refused connection", async () => {
    const transport = workerSmtpTransport("smtp://user:pass@127.0.0.1:1");
    await expect(transport.send({ from: "a@example.com", to: "b@example.com", subject: "s", text: "t" })).rejects.toThrow();
  });
});
