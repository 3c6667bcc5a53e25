/**
 * Variants (docs/tests.md, "Variants"): the configuration a run's tests ran in, such as
 * `os=windows,node=22`, part of each test's identity. One normal form, so that the uploader, the
 * upload, the filters and the quarantine list agree whatever order or spacing a CI wrote: the
 * comma-separated parts trimmed (and a `key=value` part trimmed around its first `=`), empty and
 * repeated parts dropped, sorted. "" is the variant of runs without one.
 */

/** The longest variant, in its normal form. */
export const MAX_VARIANT_LENGTH = 100;
/** The longest variant as written, before it is normalized (spaces and repeats are dropped). */
export const MAX_RAW_VARIANT_LENGTH = 400;

function normalPart(part: string): string {
  const equals = part.indexOf("=");
  if (equals < 0) return part.trim();
  return `${part.slice(0, equals).trim()}=${part.slice(equals + 1).trim()}`;
}

/** The normal form of a variant as written: `node=22,os=windows` for ` os = windows, node=22 `. */
export function normalizeVariant(raw: string): string {
  const parts = new Set(
    raw
      .split(",")
      .map(normalPart)
      .filter((part) => part !== "" && part !== "="),
  );
  return [...parts].sort().join(",");
}
