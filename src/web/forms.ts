/** Reading and checking the pages' form posts (application/x-www-form-urlencoded or multipart). */
import type { Context } from "hono";

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

/** A display name (person, organization): non-blank, at most `max` characters, no control characters. */
export function checkName(value: string, label: string, max = 255): string | null {
  if (value.trim() === "") return `${label} can't be blank.`;
  if (value.length > max) return `${label} is too long (maximum is ${max} characters).`;
  if (/[\u0000-\u001f\u007f]/.test(value)) return `${label} must not contain control characters.`;
  return null;
}

/** A plausible e-mail address (better-auth checks it again). */
export function checkEmail(value: string): string | null {
  if (value.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value)) return "Enter an e-mail address such as name@example.com.";
  return null;
}
