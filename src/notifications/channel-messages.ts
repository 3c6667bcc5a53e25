/**
 * What Slack and Microsoft Teams channels receive (docs/notifications.md#slack-and-teams): the
 * notification a signed webhook gets as JSON, told in sentences ("`OrderTest › rejects empty
 * input` turned flaky in run #4 of Checkout.") with a button to its page.
 *
 * `channelMessage` turns a delivery's body (the JSON a signed webhook would receive) into a
 * message of sentences; `slackPayload` renders it as Block Kit (`text` as the notification's
 * fallback, `blocks`: header, section, context, a link button), `teamsPayload` as a message with one
 * Adaptive Card 1.4 (TextBlocks and an Action.OpenUrl). Names and reasons come from uploaded test
 * output: they are escaped for each format, so a test named `<!channel>` mentions nobody.
 */
import { digestMessage } from "./digest-messages";
import { type ChannelMessage, type MessageContext, type Part, type Sentence, plainText } from "./message-types";

export type { ChannelMessage } from "./message-types";

type Json = Record<string, unknown>;
const record = (value: unknown): Json => (value !== null && typeof value === "object" ? (value as Json) : {});
const text = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);

/** A test as people name it: `Class › name`, or the name alone. */
function testLabel(test: { classname?: unknown; name?: unknown }): string {
  const name = text(test.name) ?? "a test";
  const classname = text(test.classname);
  return classname ? `${classname} › ${name}` : name;
}

const day = (iso: unknown) => (typeof iso === "string" ? iso.slice(0, 10) : null);
const inRun = (run: number | null, project: string) => (run === null ? ` in ${project}` : ` in run #${run} of ${project}`);

/** The message for a delivery's body, or null for a body of no known type. */
export function channelMessage(body: Json, context: MessageContext): ChannelMessage | null {
  const project = context.projectName;
  const footer = `Project ${project} · CI test analytics`;
  switch (body.type) {
    case "test.health_changed": {
      const test = record(body.test);
      const health = text(test.health) ?? "changed";
      return {
        title: `${testLabel(test)} turned ${health}`.slice(0, 150),
        sentences: [[{ code: testLabel(test) }, ` turned ${health}${inRun(context.runNumber, project)}.`]],
        link: text(test.url) ? { label: "Open the test", url: text(test.url)! } : null,
        context: footer,
      };
    }
    case "test.quarantined": {
      const test = record(body.test);
      const quarantine = record(test.quarantine);
      const until = day(quarantine.expires_at);
      const how = quarantine.source === "auto" ? " automatically" : text(quarantine.owner) ? ` by ${text(quarantine.owner)}` : "";
      const sentences: Sentence[] = [[{ code: testLabel(test) }, ` was quarantined${how}${until ? ` until ${until}` : ""} in ${project}.`]];
      if (text(quarantine.reason)) sentences.push([`Reason: ${text(quarantine.reason)}`]);
      if (text(quarantine.issue_url)) sentences.push([`Issue: ${text(quarantine.issue_url)}`]);
      return {
        title: `${testLabel(test)} quarantined`.slice(0, 150),
        sentences,
        link: text(test.url) ? { label: "Open the test", url: text(test.url)! } : null,
        context: footer,
      };
    }
    case "test.unquarantined": {
      const test = record(body.test);
      return {
        title: `${testLabel(test)} no longer quarantined`.slice(0, 150),
        sentences: [[{ code: testLabel(test) }, ` is no longer quarantined in ${project}: its failures count again.`]],
        link: text(test.url) ? { label: "Open the test", url: text(test.url)! } : null,
        context: footer,
      };
    }
    case "alert.triggered":
      return alertMessage(body, project, footer);
    case "digest.weekly":
      return digestMessage(body, footer);
    case "test.message":
      return {
        title: "Test message from CI test analytics",
        sentences: [
          [`This channel is set up: it will receive ${context.eventsLabel ?? "the notifications"} of ${project}.`],
          ["Nothing happened to any test: an admin sent this message from the project's settings."],
        ],
        link: text(body.url) ? { label: "Open the project's settings", url: text(body.url)! } : null,
        context: footer,
      };
    default:
      return null;
  }
}

const MAX_TESTS_NAMED = 5;

function alertMessage(body: Json, project: string, footer: string): ChannelMessage {
  const alert = record(body.alert);
  const run = record(body.test_run);
  const events = Array.isArray(body.events) ? body.events.map((event) => record(record(event).metadata)) : [];
  const name = text(alert.name) ?? "An alert";
  const where = [
    text(run.branch) ? `branch ${text(run.branch)}` : null,
    text(run.commit_sha) ? `commit ${text(run.commit_sha)!.slice(0, 7)}` : null,
  ]
    .filter(Boolean)
    .join(", ");
  const number = typeof run.number === "number" ? ` on run #${run.number}` : "";
  const sentences: Sentence[] = [[`The alert “${name}” of ${project} tripped${number}${where ? ` (${where})` : ""}.`]];
  const named = events.filter((metadata) => text(metadata.name));
  for (const metadata of named.slice(0, MAX_TESTS_NAMED)) {
    const rule = text(metadata.rule);
    sentences.push([{ code: testLabel(metadata) }, rule ? ` was flagged (${rule.replaceAll("_", " ")}).` : " was flagged."]);
  }
  const others = events.length - Math.min(named.length, MAX_TESTS_NAMED);
  if (others > 0) sentences.push([`${others} more event${others === 1 ? "" : "s"} on the alert's page.`]);
  return {
    title: `${name} on ${project}`.slice(0, 150),
    sentences,
    link: text(alert.url) ? { label: "Open the alert", url: text(alert.url)! } : null,
    context: footer,
  };
}

/** Slack mrkdwn: `&`, `<` and `>` escaped (no mention, link or channel can be smuggled in); code without backticks. */
const slackEscape = (value: string) => value.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
const slackPart = (part: Part) =>
  typeof part === "string"
    ? slackEscape(part)
    : "code" in part
      ? `\`${slackEscape(part.code.replaceAll("`", "'"))}\``
      : // A link's text cannot hold `|` or `>` unescaped: either would end it early.
        `<${part.url}|${slackEscape(part.link).replaceAll("|", "¦")}>`;
const slackText = (sentence: Sentence) => sentence.map(slackPart).join("");

/** Slack Block Kit, for an incoming webhook: https://api.slack.com/messaging/webhooks. */
export function slackPayload(message: ChannelMessage) {
  const blocks: Json[] = [
    { type: "header", text: { type: "plain_text", text: message.title.slice(0, 150), emoji: false } },
    { type: "section", text: { type: "mrkdwn", text: message.sentences.map(slackText).join("\n").slice(0, 3000) } },
    { type: "context", elements: [{ type: "mrkdwn", text: slackEscape(message.context) }] },
  ];
  if (message.link) {
    blocks.push({
      type: "actions",
      elements: [{ type: "button", text: { type: "plain_text", text: message.link.label, emoji: false }, url: message.link.url }],
    });
  }
  // `text` is what notifications and screen readers show: the first sentence in plain words.
  return { text: `${message.title}: ${plainText(message.sentences[0] ?? [])}`.slice(0, 3000), blocks };
}

/** Adaptive Card markdown: the characters that would start emphasis or a link are escaped; code is shown in bold. */
const teamsEscape = (value: string) => value.replace(/[\\*_[\]()~#>`]/g, (char) => `\\${char}`);
const teamsPart = (part: Part) =>
  typeof part === "string"
    ? teamsEscape(part)
    : "code" in part
      ? `**${teamsEscape(part.code)}**`
      : `[${teamsEscape(part.link)}](${part.url})`;
const teamsText = (sentence: Sentence) => sentence.map(teamsPart).join("");

/** A Teams message with one Adaptive Card (incoming webhooks and Workflows' "post to a channel when a webhook request is received"). */
export function teamsPayload(message: ChannelMessage) {
  return {
    type: "message",
    attachments: [
      {
        contentType: "application/vnd.microsoft.card.adaptive",
        contentUrl: null,
        content: {
          $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
          type: "AdaptiveCard",
          version: "1.4",
          body: [
            { type: "TextBlock", text: teamsEscape(message.title), weight: "Bolder", size: "Medium", wrap: true },
            ...message.sentences.map((sentence) => ({ type: "TextBlock", text: teamsText(sentence), wrap: true })),
            { type: "TextBlock", text: teamsEscape(message.context), isSubtle: true, size: "Small", wrap: true },
          ],
          actions: message.link ? [{ type: "Action.OpenUrl", title: message.link.label, url: message.link.url }] : [],
        },
      },
    ],
  };
}

/**
 * A channel's URL as everyone but the admin who sets it reads it: scheme and host, the path's
 * first word (`services`), the first character of the next segment, and the rest masked:
 * `https://hooks.slack.com/services/T…/…/…••••`.
 */
export function maskedChannelUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "…••••";
  }
  // The first segment when it is a word (`services`, `workflows`), then one character of the next: no more.
  const parts = url.pathname.split("/").filter((segment) => segment !== "");
  const word = /^[a-z]{1,16}$/.test(parts[0] ?? "") ? 1 : 0;
  const segments = parts.map((segment, index) => (index < word ? segment : index === word ? `${segment.slice(0, 1)}…` : "…"));
  const path = segments.length === 0 ? "" : `/${segments.join("/")}`;
  return `${url.protocol}//${url.host}${path}${url.search ? "?…" : ""}••••`;
}
