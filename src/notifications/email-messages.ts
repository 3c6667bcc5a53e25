/**
 * Notifications as e-mail (docs/e-mail.md): a channel's message (channel-messages.ts) and the
 * weekly digest to members, each as a text body and an HTML alternative. The MIME is the mail
 * library's (nodemailer, worker-mailer); this file writes only the two bodies. Test names come
 * from uploaded output: escaped in the HTML, and never a link of their own (links are ours).
 */
import { type ChannelMessage, type Sentence, plainText } from "./message-types";

export type EmailBodies = { subject: string; text: string; html: string };

const escapeHtml = (value: string) =>
  value.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;").replaceAll("'", "&#39;");

/** A subject line: one line, at most 150 characters. */
const subjectOf = (title: string) => title.replace(/[\u0000-\u001f\u007f]+/g, " ").slice(0, 150);

/** A sentence as text: links followed by their address, so a text-only reader can open them. */
const textSentence = (sentence: Sentence) =>
  sentence.map((part) => (typeof part === "string" ? part : "code" in part ? part.code : `${part.link} <${part.url}>`)).join("");

const htmlSentence = (sentence: Sentence) =>
  sentence
    .map((part) =>
      typeof part === "string"
        ? escapeHtml(part)
        : "code" in part
          ? `<code>${escapeHtml(part.code)}</code>`
          : `<a href="${escapeHtml(part.url)}">${escapeHtml(part.link)}</a>`,
    )
    .join("");

function textSection(message: ChannelMessage): string[] {
  return [
    message.title,
    "",
    ...message.sentences.map(textSentence),
    ...(message.link ? ["", `${message.link.label}: ${message.link.url}`] : []),
  ];
}

function htmlSection(message: ChannelMessage, heading: "h1" | "h2"): string {
  return [
    `<${heading}>${escapeHtml(message.title)}</${heading}>`,
    ...message.sentences.map((sentence) => `<p>${htmlSentence(sentence)}</p>`),
    message.link ? `<p><a href="${escapeHtml(message.link.url)}">${escapeHtml(message.link.label)}</a></p>` : "",
  ].join("\n");
}

const page = (title: string, content: string) =>
  `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>\n<body style="font-family: system-ui, sans-serif; line-height: 1.5; max-width: 40em">\n${content}\n</body></html>`;

/** A channel's notification (an alert, a test's event, a test message, a project's digest) to one of its addresses. */
export function channelEmail(message: ChannelMessage): EmailBodies {
  const footer = `${message.context}. You receive this as an address of an e-mail channel of the project's notifications; an admin of the organization can change it on the project's settings page.`;
  return {
    subject: subjectOf(message.title),
    text: [...textSection(message), "", "--", footer].join("\n"),
    html: page(message.title, `${htmlSection(message, "h1")}\n<hr>\n<p style="color: #666; font-size: small">${escapeHtml(footer)}</p>`),
  };
}

/**
 * The weekly digest to one member: the organization's projects, each a section, then how to stop
 * it: the one-click link (no sign-in) and the team page, where it is turned on again.
 */
export function digestEmail(input: {
  organizationName: string;
  messages: ChannelMessage[];
  unsubscribeUrl: string;
  teamUrl: string;
}): EmailBodies {
  const name = plainText([input.organizationName.replace(/[\u0000-\u001f\u007f]+/g, " ").slice(0, 100)]);
  const title = `Weekly digest of ${name}`;
  const footer = [
    "You receive this weekly digest as a member of the organization.",
    `Unsubscribe with one click: ${input.unsubscribeUrl}`,
    `Or turn it on and off on the team page: ${input.teamUrl}`,
  ];
  const text = [title, "", ...input.messages.flatMap((message) => [...textSection(message), ""]), "--", ...footer].join("\n");
  const html = page(
    title,
    [
      `<h1>${escapeHtml(title)}</h1>`,
      ...input.messages.map((message) => htmlSection(message, "h2")),
      "<hr>",
      `<p style="color: #666; font-size: small">${escapeHtml(footer[0]!)} <a href="${escapeHtml(input.unsubscribeUrl)}">Unsubscribe</a> with one click, or turn it on and off on <a href="${escapeHtml(input.teamUrl)}">the team page</a>.</p>`,
    ].join("\n"),
  );
  return { subject: subjectOf(title), text, html };
}
