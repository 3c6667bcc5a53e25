/**
 * The upload commands a project's pages show with its token (/projects/new once, the settings page
 * when the token is revealed): npx with the package from this service, and the one file with
 * curl and node, each with the SHA-256 of what it fetches (src/routes/uploader.ts serves both).
 */
import {
  UPLOADER_BUNDLE_PATH,
  UPLOADER_BUNDLE_SHA256,
  UPLOADER_TARBALL_PATH,
  UPLOADER_TARBALL_SHA256,
  UPLOADER_VERSION,
} from "../lib/uploader-package";
import { CopyButton, CopyScript } from "./copy";
import type { WebPaths } from "./env";
import { downloadCommand, uploadCommand } from "./project-forms";

/**
 * The commands wrap inside their box (issue 30: a long token and URL were cut at the box's edge,
 * one line that scrolled without showing it could), breaking anywhere, so the whole command shows
 * at any width; each has a copy button (`nonce`: the answer's CSP nonce, for the copy script).
 */
export const UploadCommands = ({
  baseUrl,
  token,
  nonce,
  paths,
}: {
  baseUrl: string;
  token: string;
  nonce: string | undefined;
  paths: WebPaths;
}) => (
  <>
    <div class="command-box">
      <pre class="command" id="upload-command" tabindex={0} aria-label="The upload command">
        <code>{uploadCommand(baseUrl, token)}</code>
      </pre>
      <CopyButton target="upload-command" what="the upload command" />
    </div>
    <p class="muted">
      npx fetches the uploader (version {UPLOADER_VERSION}) from this service, not from the npm registry:{" "}
      <a href={baseUrl + UPLOADER_TARBALL_PATH}>ci-test-analytics.tgz</a>, SHA-256 <code class="digest">{UPLOADER_TARBALL_SHA256}</code>. Or
      download its one file and run it with Node:
    </p>
    <div class="command-box">
      <pre class="command" id="download-command" tabindex={0} aria-label="The download-and-upload command">
        <code>{downloadCommand(baseUrl, token)}</code>
      </pre>
      <CopyButton target="download-command" what="the download-and-upload command" />
    </div>
    <p class="muted">
      <a href={baseUrl + UPLOADER_BUNDLE_PATH}>ci-test-analytics.mjs</a>, SHA-256 <code class="digest">{UPLOADER_BUNDLE_SHA256}</code>.
    </p>
    <CopyScript nonce={nonce} paths={paths} />
  </>
);
