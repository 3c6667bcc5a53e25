/** Reading and checking the pages' form posts (application/x-www-form-urlencoded or multipart). */
import type { Context } from "hono";
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "../auth/people";
import { hasControlCharacters } from "../lib/control-characters";
import { isPlausibleEmailAddress } from "../lib/email-address";

/** The form's text fields; a field sent as a file, or twice, reads as its first text value or "". */
export async function formFields(c: Context, names: readonly string[]): Promise<Record<string, string>> {
  const body = await c.req.parseBody({ all: true }).catch(() => ({}) as Record<string, unknown>);
  const fields: Record<string, string> = {};
  for (const name of names) {
    const value = body[name];
    const first = Array.isArray(value) ? value[0] : value;
    fields[name] = typeof first === "string" ? first : "";
  }
  return fields;
}

/**
 * Control characters (C0 and DEL). Never part of a name, an address or a password typed in a
 * form; NUL in particular is refused by Postgres in any text value, so one that reached a query
 * would be a 500 instead of the form's answer.
 */

/** A display name (person, organization): non-blank, at most `max` characters, no control characters. */
export function checkName(value: string, label: string, max = 255): string | null {
  if (value.trim() === "") return `${label} can't be blank.`;
  if (value.length > max) return `${label} is too long (maximum is ${max} characters).`;
  if (hasControlCharacters(value)) return `${label} must not contain control characters.`;
  return null;
}

/** A plausible e-mail address (better-auth checks it again): sign-up, sign-in and invitations. */
export function checkEmail(value: string): string | null {
  if (!isPlausibleEmailAddress(value)) return "Enter an e-mail address such as name@example.com.";
  return null;
}

/** A password being chosen (sign-up, sign-up through an invitation): better-auth's length bounds, nothing a keyboard cannot type. */
export function checkNewPassword(value: string): string | null {
  if (value.length < MIN_PASSWORD_LENGTH) return `The password must have at least ${MIN_PASSWORD_LENGTH} characters.`;
  if (value.length > MAX_PASSWORD_LENGTH) return `The password must have at most ${MAX_PASSWORD_LENGTH} characters.`;
  if (hasControlCharacters(value)) return "The password must not contain control characters.";
  return null;
}
