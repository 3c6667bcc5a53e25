/**
 * The uploader this service version was built with, as the service serves it (src/routes/uploader.ts)
 * and the pages show it (src/web/project-forms.ts): the package tarball of packages/uploader that
 * `npm run build:cli` wrote into ./uploader-package.generated.ts, and the bundle inside it.
 * Web APIs only (DecompressionStream, crypto.subtle), so Node and the Worker serve the same bytes.
 */
import { UPLOADER_BUNDLE_SHA256, UPLOADER_TARBALL_BASE64, UPLOADER_TARBALL_SHA256, UPLOADER_VERSION } from "./uploader-package.generated";
import { readUstarArchive } from "./npm-tarball";

export { UPLOADER_BUNDLE_SHA256, UPLOADER_TARBALL_SHA256, UPLOADER_VERSION };

/** Where the service serves them (below its public base URL). */
export const UPLOADER_BUNDLE_PATH = "/uploader/ci-test-analytics.mjs";
export const UPLOADER_TARBALL_PATH = "/uploader/ci-test-analytics.tgz";
/** The bin's path inside the tarball. */
const BUNDLE_ENTRY = "package/bin/ci-test-analytics.mjs";

export type UploaderFiles = { tarball: Uint8Array; bundle: Uint8Array };

function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...digest].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

async function gunzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function load(): Promise<UploaderFiles> {
  const tarball = fromBase64(UPLOADER_TARBALL_BASE64);
  const bundle = readUstarArchive(await gunzip(tarball)).get(BUNDLE_ENTRY)?.bytes;
  if (!bundle) throw new Error(`the uploader tarball holds no ${BUNDLE_ENTRY}`);
  // The digests are what the pages show and the ETags: a module edited by hand is refused, not served.
  if ((await sha256Hex(tarball)) !== UPLOADER_TARBALL_SHA256 || (await sha256Hex(bundle)) !== UPLOADER_BUNDLE_SHA256) {
    throw new Error("the uploader tarball does not match its SHA-256: run `npm run build:cli`");
  }
  return { tarball, bundle };
}

let files: Promise<UploaderFiles> | undefined;

/** The tarball and the bundle, unpacked and checked once per process or isolate. */
export function uploaderFiles(): Promise<UploaderFiles> {
  files ??= load().catch((error: unknown) => {
    files = undefined;
    throw error;
  });
  return files;
}
