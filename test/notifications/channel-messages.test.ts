/**
 * What Slack and Teams channels receive (src/notifications/channel-messages.ts): sentences, the
 * payload shapes each service documents, escaping of names from uploaded output, and the masked URL.
 */
import { describe, expect, it } from "vitest";
import { channelMessage, maskedChannelUrl, slackPayload, teamsPayload } from "../../src/notifications/channel-messages";

const test = (fields: Record<string, unknown> = {}) => ({
  name: "rejects empty input",
  classname: "OrderTest",
  health: "flaky",
  owners: ["@acme/payments"],
  url: "https://app.example.com/projects/p/tests/t",
  quarantine: null,
  ...fields,
});

describe("sentences", () => {
  it("a test turning flaky names it, the run and the project", () => {
    const message = channelMessage(
      { type: "test.health_changed", project_id: "p", test: test() },
      { projectName: "Checkout", runNumber: 4 },
    );
    expect(slackPayload(message!).text).toBe(
      "OrderTest › rejects empty input turned flaky: OrderTest › rejects empty input turned flaky in run #4 of Checkout.",
    );
    expect(slackPayload(message!).blocks[1]).toEqual({
      type: "section",
      text: { type: "mrkdwn", text: "`OrderTest › rejects empty input` turned flaky in run #4 of Checkout." },
    });
  });

  it("a quarantine says until when, why and by whom", () => {
    const quarantine = {
      reason: "races the clock",
      owner: "alice",
      source: "manual",
      expires_at: "2026-12-20T00:00:00.000Z",
      issue_url: null,
    };
    const message = channelMessage({ type: "test.quarantined", test: test({ quarantine }) }, { projectName: "Checkout", runNumber: null })!;
    expect(message.sentences).toEqual([
      [{ code: "OrderTest › rejects empty input" }, " was quarantined by alice until 2026-12-20 in Checkout."],
      ["Reason: races the clock"],
    ]);
  });

  it("an alert names the tests of its events, five at most", () => {
    const events = Array.from({ length: 7 }, (_, index) => ({ metadata: { name: `t${index}`, classname: "C", rule: "same_commit_flip" } }));
    const body = {
      type: "alert.triggered",
      project: { name: "Checkout" },
      alert: { name: "Flaky tests", url: "https://app.example.com/alerts/a" },
      test_run: { number: 4, branch: "main", commit_sha: "69d74ac0123456" },
      events,
    };
    const message = channelMessage(body, { projectName: "Checkout", runNumber: null })!;
    expect(message.title).toBe("Flaky tests on Checkout");
    expect(message.sentences[0]).toEqual(["The alert “Flaky tests” of Checkout tripped on run #4 (branch main, commit 69d74ac)."]);
    expect(message.sentences[1]).toEqual([{ code: "C › t0" }, " was flagged (same commit flip)."]);
    expect(message.sentences.at(-1)).toEqual(["2 more events on the alert's page."]);
    expect(message.link).toEqual({ label: "Open the alert", url: "https://app.example.com/alerts/a" });
  });

  it("an unknown type is no message", () => {
    expect(channelMessage({ type: "other" }, { projectName: "x", runNumber: null })).toBeNull();
  });
});

describe("escaping", () => {
  const hostile = channelMessage(
    { type: "test.health_changed", test: test({ classname: null, name: "<!channel> *bold* [x](https://evil) `tick`" }) },
    { projectName: "A & B", runNumber: 1 },
  )!;

  it("Slack: no mention, link or code fence can be smuggled in", () => {
    const section = (slackPayload(hostile).blocks[1] as { text: { text: string } }).text.text;
    expect(section).toBe("`&lt;!channel&gt; *bold* [x](https://evil) 'tick'` turned flaky in run #1 of A &amp; B.");
    expect(section).not.toContain("<");
  });

  it("Teams: markdown characters are escaped", () => {
    const body = teamsPayload(hostile).attachments[0]!.content.body;
    expect(body[1]!.text).toBe("**<!channel\\> \\*bold\\* \\[x\\]\\(https://evil\\) \\`tick\\`** turned flaky in run \\#1 of A & B.");
  });
});

describe("payload shapes", () => {
  const message = channelMessage({ type: "test.health_changed", test: test() }, { projectName: "Checkout", runNumber: 4 })!;

  it("Slack: text fallback, header, section, context and a link button", () => {
    const payload = slackPayload(message);
    expect(payload.blocks.map((block) => block.type)).toEqual(["header", "section", "context", "actions"]);
    expect(payload.blocks[0]).toEqual({
      type: "header",
      text: { type: "plain_text", text: "OrderTest › rejects empty input turned flaky", emoji: false },
    });
    expect(payload.blocks[3]).toEqual({
      type: "actions",
      elements: [
        {
          type: "button",
          text: { type: "plain_text", text: "Open the test", emoji: false },
          url: "https://app.example.com/projects/p/tests/t",
        },
      ],
    });
  });

  it("Teams: a message with one Adaptive Card 1.4 and an Action.OpenUrl", () => {
    const payload = teamsPayload(message);
    expect(payload.type).toBe("message");
    expect(payload.attachments).toHaveLength(1);
    const [attachment] = payload.attachments;
    expect(attachment!.contentType).toBe("application/vnd.microsoft.card.adaptive");
    expect(attachment!.content).toMatchObject({ type: "AdaptiveCard", version: "1.4" });
    expect(attachment!.content.body.every((block) => block.type === "TextBlock" && block.wrap)).toBe(true);
    expect(attachment!.content.actions).toEqual([
      { type: "Action.OpenUrl", title: "Open the test", url: "https://app.example.com/projects/p/tests/t" },
    ]);
  });
});

describe("maskedChannelUrl", () => {
  it("keeps the scheme, the host and the path's words; masks the tokens", () => {
    expect(maskedChannelUrl("https://hooks.slack.com/services/T0123/B0456/abcdefSECRET")).toBe(
      "https://hooks.slack.com/services/T…/…/…••••",
    );
    expect(maskedChannelUrl("https://acme.webhook.office.com/webhookb2/1234-abcd@5678/IncomingWebhook/secret/9999")).toBe(
      "https://acme.webhook.office.com/w…/…/…/…/…••••",
    );
    expect(maskedChannelUrl("https://prod.westus.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke?sig=SECRET")).toBe(
      "https://prod.westus.logic.azure.com/workflows/a…/…/…/…/…?…••••",
    );
    expect(maskedChannelUrl("not a url")).toBe("…••••");
  });
});
