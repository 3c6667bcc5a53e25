/** The project forms' fields, checked as the API checks them (name, description, default branch, auto-quarantine, retention); the upload commands the pages show. */
import { UPLOADER_BUNDLE_PATH, UPLOADER_TARBALL_PATH } from "../lib/uploader-package";
import { MAX_AUTO_QUARANTINE_DAYS } from "../services/tests/quarantine";
import { checkName } from "./forms";
import { DEFAULT_SUMMARY_RETENTION_DAYS } from "../lib/retention";
import { hasControlCharacters } from "../lib/control-characters";

/** `retentionDays`: the settings form's (the new-project form has none). */
export type ProjectFields = {
  name: string;
  description: string;
  defaultBranch: string;
  autoQuarantineDays: string;
  retentionDays?: string;
};
export type CheckedProject = {
  name: string;
  description: string | null;
  defaultBranch: string | null;
  autoQuarantineDays: number | null;
  /** Null: the deployment's RETENTION_DAYS. */
  retentionDays: number | null;
};

const DESCRIPTION_MAX = 10_000;

/** A number of days from 1 to `max`, null when empty, NaN when neither. */
function daysField(text: string | undefined, max: number): number | null {
  const days = (text ?? "").trim();
  if (days === "") return null;
  const value = /^\d{1,5}$/.test(days) ? Number(days) : Number.NaN;
  return value >= 1 && value <= max ? value : Number.NaN;
}

/**
 * The values to store, or the problems to show (one per field, in the form's order);
 * `summaryRetentionDays`: the most a project's own retention may be (SUMMARY_RETENTION_DAYS).
 */
export function checkProjectFields(
  fields: ProjectFields,
  summaryRetentionDays: number = DEFAULT_SUMMARY_RETENTION_DAYS,
): { value: CheckedProject } | { problems: string[] } {
  const problems: string[] = [];
  const nameProblem = checkName(fields.name, "Name");
  if (nameProblem) problems.push(nameProblem);
  if (fields.description.length > DESCRIPTION_MAX) problems.push(`Description is too long (maximum is ${DESCRIPTION_MAX} characters).`);
  if (fields.description.includes("\u0000")) problems.push("Description must not contain NUL characters.");
  const branch = fields.defaultBranch.trim();
  if (branch.length > 255) problems.push("Default branch is too long (maximum is 255 characters).");
  if (hasControlCharacters(branch)) problems.push("Default branch must not contain control characters.");
  const autoQuarantineDays = daysField(fields.autoQuarantineDays, MAX_AUTO_QUARANTINE_DAYS);
  if (Number.isNaN(autoQuarantineDays))
    problems.push(`Auto-quarantine must be a whole number of days from 1 to ${MAX_AUTO_QUARANTINE_DAYS}, or empty for off.`);
  const retentionDays = daysField(fields.retentionDays, summaryRetentionDays);
  if (Number.isNaN(retentionDays))
    problems.push(`Retention must be a whole number of days from 1 to ${summaryRetentionDays}, or empty for the service's default.`);
  if (problems.length > 0) return { problems };
  return {
    value: {
      name: fields.name,
      description: fields.description === "" ? null : fields.description,
      defaultBranch: branch === "" ? null : branch,
      autoQuarantineDays,
      retentionDays,
    },
  };
}

/** `text` as one word of a POSIX shell: as is when it holds nothing the shell reads, else single-quoted. */
export function shellWord(text: string): string {
  return /^[A-Za-z0-9%+,./:=@_~-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The CLI line that uploads reports with a project's token (docs/uploader-cli.md, "Getting it"):
 * npx installs the uploader from this service (GET /uploader/ci-test-analytics.tgz,
 * src/routes/uploader.ts), never from the npm registry, where the name is not ours.
 * test/cli/uploader-commands-e2e.test.ts runs it as the page shows it.
 */
export const uploadCommand = (baseUrl: string, token: string) =>
  `CTA_UPLOAD_TOKEN=${shellWord(token)} npx --yes --package=${shellWord(baseUrl + UPLOADER_TARBALL_PATH)} ci-test-analytics upload --url ${shellWord(baseUrl)} 'reports/**/*.xml'`;

/** The same without npm: the one file from this service (GET /uploader/ci-test-analytics.mjs), run with node. */
export const downloadCommand = (baseUrl: string, token: string) =>
  `curl -fsSLO ${shellWord(baseUrl + UPLOADER_BUNDLE_PATH)} && CTA_UPLOAD_TOKEN=${shellWord(token)} node ci-test-analytics.mjs upload --url ${shellWord(baseUrl)} 'reports/**/*.xml'`;
