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
import { downloadCommand, uploadCommand } from "./project-forms";

export const UploadCommands = ({ baseUrl, token }: { baseUrl: string; token: string }) => (
  <>
    <pre class="command" id="upload-command" tabindex={0}>
      <code>{uploadCommand(baseUrl, token)}</code>
    </pre>
    <p class="muted">
      npx fetches the uploader (version {UPLOADER_VERSION}) from this service, not from the npm registry:{" "}
      <a href={baseUrl + UPLOADER_TARBALL_PATH}>ci-test-analytics.tgz</a>, SHA-256 <code class="digest">{UPLOADER_TARBALL_SHA256}</code>. Or
      download its one file and run it with Node:
    </p>
    <pre class="command" id="download-command" tabindex={0}>
      <code>{downloadCommand(baseUrl, token)}</code>
    </pre>
    <p class="muted">
      <a href={baseUrl + UPLOADER_BUNDLE_PATH}>ci-test-analytics.mjs</a>, SHA-256 <code class="digest">{UPLOADER_BUNDLE_SHA256}</code>.
    </p>
  </>
);
