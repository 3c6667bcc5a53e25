/**
 * The upload commands of the project pages (src/web/project-forms.ts): every URL and token is one
 * shell word whatever PUBLIC_BASE_URL holds, and the commands fetch the uploader from the service,
 * never from the npm registry. test/cli/uploader-commands-e2e.test.ts runs them for real.
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { configuredBaseUrl } from "../../src/lib/base-url";
import { downloadCommand, shellWord, uploadCommand } from "../../src/web/project-forms";

/** What sh makes of `words`: one line per argument. */
const shellArguments = (words: string) =>
  execFileSync("sh", ["-c", `printf '%s\\n' ${words}`], { encoding: "utf8", env: { PATH: process.env.PATH ?? "" } })
    .split("\n")
    .slice(0, -1);

describe("the upload commands", () => {
  it("install the uploader from this service's tarball, or download its one file, and upload with the token", () => {
    const token = "ctu_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_";
    expect(uploadCommand("https://ci.example.com", token)).toBe(
      `CTA_UPLOAD_TOKEN=${token} npx --yes --package=https://ci.example.com/uploader/ci-test-analytics.tgz ci-test-analytics upload --url https://ci.example.com 'reports/**/*.xml'`,
    );
    expect(downloadCommand("https://ci.example.com/analytics", token)).toBe(
      `curl -fsSLO https://ci.example.com/analytics/uploader/ci-test-analytics.mjs && CTA_UPLOAD_TOKEN=${token} node ci-test-analytics.mjs upload --url https://ci.example.com/analytics 'reports/**/*.xml'`,
    );
  });

  it.each([
    "https://ci.example.com/o'brien/$HOME/a(b)&c;d",
    "http://localhost:8787",
    "https://ci.example.com/*/x y",
    "https://[::1]:8080/path~x",
  ])("a base URL the shell would read (%s) stays one word", (value) => {
    const base = configuredBaseUrl(value, "PUBLIC_BASE_URL");
    expect(shellArguments(shellWord(base))).toEqual([base]);
    expect(shellArguments(`${shellWord(`${base}/uploader/ci-test-analytics.tgz`)} ${shellWord(base)}`)).toEqual([
      `${base}/uploader/ci-test-analytics.tgz`,
      base,
    ]);
    expect(uploadCommand(base, "ctu_x")).toContain(`--url ${shellWord(base)} `);
  });

  it("quotes only what needs it", () => {
    expect(shellWord("https://ci.example.com:8443/a-b_c.d~e")).toBe("https://ci.example.com:8443/a-b_c.d~e");
    expect(shellWord("it's")).toBe(`'it'\\''s'`);
    expect(shellWord("")).toBe("''");
  });
});
