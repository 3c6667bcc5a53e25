/**
 * The invitation e-mail (docs/e-mail.md#invitations). An invitation goes to any address, and the
 * organization's and inviter's names in it are whatever someone typed at sign-up: a name such as
 * "Your password expires today: https://evil.example/reset" must not read as our message. So the
 * subject and the first line are fixed wording of the service, and the names come after it,
 * labelled, in quotes, shortened, on one line, with what mail clients turn into links broken up.
 * The link to accept is the message's only link. An invitation the operator made through the admin
 * API has no inviting person: its "Invited by" is OPERATOR_INVITER, the service's wording.
 */
import type { MemberRole } from "../../db/schema";

/** The service as e-mails name it (the From header's default says the same: src/mail/transport.ts). */
const SERVICE_NAME = "CI test analytics";
/** Characters of the organization's name in the subject, and of either name in the text. */
const SUBJECT_NAME_MAX = 40;
const TEXT_NAME_MAX = 100;

/** Control and format characters (bidi overrides, zero-width ones) and line separators: a name is one plain line. */
const HIDDEN_OR_BREAKING = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\s]+/gu;
/** Dots a mail client may read as a host's (ASCII, ideographic, fullwidth, halfwidth) when another character follows. */
const HOST_DOT = /[.\u3002\uff0e\uff61](?=[^\s.\u3002\uff0e\uff61])/g;

/**
 * A typed name as quoted data: one line, straight double quotes inside turned to single ones (so
 * the quote cannot be closed early), at most `max` characters (then `…`), and `scheme://` and
 * `host.tld` bracketed (`https[:]//evil[.]example`) so no client makes a link of them.
 */
export function quotedName(name: string, max: number): string {
  const line = name.replace(HIDDEN_OR_BREAKING, " ").replaceAll('"', "'").trim();
  const characters = [...line];
  const short =
    characters.length > max
      ? `${characters
          .slice(0, max - 1)
          .join("")
          .trimEnd()}…`
      : line;
  return `"${short.replace(/:(?=\/\/)/g, "[:]").replace(HOST_DOT, "[.]")}"`;
}

/**
 * Who invited when no person did: the operator, through the admin API (`POST
 * /admin/v1/organizations/{id}/invitations`, e.g. an organization's first admin). Fixed wording,
 * never quoted: it is the service's, not a typed name.
 */
const OPERATOR_INVITER = `the operator of ${SERVICE_NAME}`;

export type InvitationEmailInput = {
  organizationName: string;
  /** The inviting admin's name; null: the operator (OPERATOR_INVITER). */
  inviterName: string | null;
  role: MemberRole;
  link: string;
  expiresAt: Date;
};

export function invitationEmail(input: InvitationEmailInput): { subject: string; text: string } {
  const expires = input.expiresAt.toISOString().slice(0, 16).replace("T", " ");
  const text = [
    "Hello,",
    "",
    `You are invited to join an organization on ${SERVICE_NAME} as ${input.role === "admin" ? "an admin" : "a member"}.`,
    "",
    `Organization: ${quotedName(input.organizationName, TEXT_NAME_MAX)}`,
    ...(input.inviterName === null
      ? [
          `Invited by: ${OPERATOR_INVITER}`,
          `(The organization's name is as it was typed; ${SERVICE_NAME} does not check it, and never asks for your password by e-mail.)`,
        ]
      : [
          `Invited by: ${quotedName(input.inviterName, TEXT_NAME_MAX)}`,
          `(The names are as the organization's people typed them; ${SERVICE_NAME} does not check them, and never asks for your password by e-mail.)`,
        ]),
    "",
    `Accept the invitation (create your account or sign in): ${input.link}`,
    "",
    `The link works once and expires on ${expires} UTC.`,
    "If you did not expect this e-mail, ignore it.",
  ].join("\n");
  return { subject: `Invitation: join the organization ${quotedName(input.organizationName, SUBJECT_NAME_MAX)} on ${SERVICE_NAME}`, text };
}
