import { hasControlCharacters } from "./control-characters";

/** The longest address SMTP carries (RFC 5321's path limit, less its angle brackets). */
export const MAX_EMAIL_ADDRESS_LENGTH = 254;

/**
 * A plausible e-mail address, `name@domain.tld` without spaces or control characters: what the
 * pages' forms (src/web/forms.ts) and the admin API's invitations accept. better-auth and the SMTP
 * server check it again.
 */
export const isPlausibleEmailAddress = (value: string) =>
  value.length <= MAX_EMAIL_ADDRESS_LENGTH && !hasControlCharacters(value) && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value);
