/**
 * A notification in sentences, whatever carries it (channel-messages.ts renders it for Slack and
 * Teams, email-messages.ts as e-mail, digest-messages.ts writes the digest's).
 */

/** A sentence's parts: text, a name shown as code, or a link to one of our pages. */
export type Part = string | { code: string } | { link: string; url: string };
export type Sentence = Part[];

export type ChannelMessage = {
  /** One line, plain text: Slack's header, the card's title. */
  title: string;
  sentences: Sentence[];
  /** The page the button opens. */
  link: { label: string; url: string } | null;
  /** Small print under the sentences (the project). */
  context: string;
};

/** What the body alone does not say: the project's name, and the run of a test's event. */
export type MessageContext = { projectName: string; runNumber: number | null; eventsLabel?: string };

/** A sentence in plain words (links as their text). */
export const plainText = (sentence: Sentence) =>
  sentence.map((part) => (typeof part === "string" ? part : "code" in part ? part.code : part.link)).join("");
