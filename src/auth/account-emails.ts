/**
 * The e-mails of a person's own account (docs/accounts.md): the link that confirms a sign-up, a
 * password reset's link, and the notice sent when a sign-up names an e-mail that already has an
 * account (so the page can answer the same for both). Like invitations
 * (src/services/tenancy/invitation-email.ts), the subject and first line are the service's fixed
 * wording, and what someone typed (a name, an organization's name) comes after, quoted as data.
 */
import { quotedName } from "../services/tenancy/invitation-email";

const SERVICE_NAME = "CI test analytics";
const NAME_MAX = 100;

const utc = (at: Date) => `${at.toISOString().slice(0, 16).replace("T", " ")} UTC`;

export function signUpConfirmationEmail(input: { organizationName: string; link: string; expiresAt: Date }) {
  const text = [
    "Hello,",
    "",
    `Someone, probably you, asked to create an account on ${SERVICE_NAME} with this e-mail address, and an organization named ${quotedName(input.organizationName, NAME_MAX)}.`,
    "",
    `Confirm your e-mail address to create them: ${input.link}`,
    "",
    `The link works once and expires on ${utc(input.expiresAt)}.`,
    "If you did not sign up, ignore this e-mail: no account is created without it.",
  ].join("\n");
  return { subject: `Confirm your e-mail address for ${SERVICE_NAME}`, text };
}

export function accountExistsEmail(input: { signInLink: string; resetLink: string }) {
  const text = [
    "Hello,",
    "",
    `Someone asked to create an account on ${SERVICE_NAME} with this e-mail address, which already has one. Nothing was changed.`,
    "",
    `If it was you, sign in: ${input.signInLink}`,
    `Forgot your password? Choose a new one: ${input.resetLink}`,
    "",
    "If it was not you, ignore this e-mail.",
  ].join("\n");
  return { subject: `You already have an account on ${SERVICE_NAME}`, text };
}

export function passwordResetEmail(input: { link: string; expiresAt: Date }) {
  const text = [
    "Hello,",
    "",
    `Someone, probably you, asked to reset the password of the account with this e-mail address on ${SERVICE_NAME}.`,
    "",
    `Choose a new password: ${input.link}`,
    "",
    `The link works once and expires on ${utc(input.expiresAt)}. Choosing a new password signs you out everywhere.`,
    "If you did not ask for it, ignore this e-mail: your password stays as it is.",
  ].join("\n");
  return { subject: `Reset your ${SERVICE_NAME} password`, text };
}

/** A reset asked for an e-mail with no account: the same page answered, and this says so to the address's owner. */
export function noAccountResetEmail(input: { signUpLink: string | null }) {
  const text = [
    "Hello,",
    "",
    `Someone asked to reset the password of an account with this e-mail address on ${SERVICE_NAME}, but no account uses it.`,
    "",
    input.signUpLink ? `If you meant to create one: ${input.signUpLink}` : "If you expected an account, ask the person who invited you.",
    "If it was not you, ignore this e-mail.",
  ].join("\n");
  return { subject: `Password reset for ${SERVICE_NAME}`, text };
}
