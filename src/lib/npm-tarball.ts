/**
 * The tar archive inside an npm package tarball (`.tgz`): ustar entries under `package/`, as
 * `npm pack` makes them. Pure functions on bytes (no Node built-ins) so that the Worker can read
 * what the build wrote.
 *
 * Why not a library: the writer is the build's (src/cli/build-bundle.ts) and must be
 * byte-for-byte deterministic (fixed mtimes, modes and owners, sorted entries, no directory
 * entries, no pax headers); node-tar, the one npm uses, stamps times and owners unless told
 * otherwise option by option and is not a dependency of this repository. A ustar header is 512
 * bytes of fixed fields, so writing and reading the few regular files of a package is short.
 */

const BLOCK = 512;
/** The mtime npm gives every entry of a packed tarball (1985-10-26T08:15:00Z), for reproducible packs. */
const NPM_PACK_MTIME_SECONDS = 499_162_500;

export type TarEntry = { path: string; bytes: Uint8Array; mode: number };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** `value` as `width - 1` octal digits and a NUL, as ustar's numeric fields are written. */
function octal(value: number, width: number): string {
  const digits = value.toString(8);
  if (digits.length > width - 1) throw new Error(`${value} does not fit a ${width}-byte tar field`);
  return `${digits.padStart(width - 1, "0")}\0`;
}

function put(header: Uint8Array, offset: number, width: number, text: string): void {
  const bytes = encoder.encode(text);
  if (bytes.length > width) throw new Error(`tar field at ${offset} too long: ${JSON.stringify(text)}`);
  header.set(bytes, offset);
}

function header(entry: TarEntry): Uint8Array {
  const name = encoder.encode(entry.path);
  // Names up to 100 bytes fit the name field alone; the package's few files are far shorter.
  if (name.length === 0 || name.length > 100) throw new Error(`tar entry name must be 1 to 100 bytes: ${entry.path}`);
  const block = new Uint8Array(BLOCK);
  block.set(name, 0);
  put(block, 100, 8, octal(entry.mode, 8));
  put(block, 108, 8, octal(0, 8)); // uid
  put(block, 116, 8, octal(0, 8)); // gid
  put(block, 124, 12, octal(entry.bytes.length, 12));
  put(block, 136, 12, octal(NPM_PACK_MTIME_SECONDS, 12));
  put(block, 148, 8, "        "); // the checksum counts its own field as spaces
  put(block, 156, 1, "0"); // a regular file
  put(block, 257, 8, "ustar\u000000");
  put(block, 329, 8, octal(0, 8)); // devmajor
  put(block, 337, 8, octal(0, 8)); // devminor
  let sum = 0;
  for (const byte of block) sum += byte;
  put(block, 148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
  return block;
}

/** A ustar archive of `entries`, sorted by path: same entries, same bytes. Ends with two zero blocks. */
export function ustarArchive(entries: TarEntry[]): Uint8Array {
  const sorted = [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const paths = new Set(sorted.map((entry) => entry.path));
  if (paths.size !== sorted.length) throw new Error("tar entries must have distinct paths");
  const padded = (size: number) => Math.ceil(size / BLOCK) * BLOCK;
  const total = sorted.reduce((sum, entry) => sum + BLOCK + padded(entry.bytes.length), 0) + 2 * BLOCK;
  const archive = new Uint8Array(total);
  let offset = 0;
  for (const entry of sorted) {
    archive.set(header(entry), offset);
    archive.set(entry.bytes, offset + BLOCK);
    offset += BLOCK + padded(entry.bytes.length);
  }
  return archive;
}

/** A NUL-terminated text field. */
function field(block: Uint8Array, offset: number, width: number): string {
  const bytes = block.subarray(offset, offset + width);
  const end = bytes.indexOf(0);
  return decoder.decode(end < 0 ? bytes : bytes.subarray(0, end));
}

/**
 * The regular files of a ustar archive (path → bytes and mode), as ustarArchive writes them; a
 * malformed header (checksum, size) is an error, and so is any entry that is not a regular file.
 */
export function readUstarArchive(archive: Uint8Array): Map<string, { bytes: Uint8Array; mode: number }> {
  const files = new Map<string, { bytes: Uint8Array; mode: number }>();
  let offset = 0;
  while (offset + BLOCK <= archive.length) {
    const block = archive.subarray(offset, offset + BLOCK);
    if (block.every((byte) => byte === 0)) return files;
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : block[i]!;
    if (Number.parseInt(field(block, 148, 8).trim(), 8) !== sum) throw new Error(`tar header at ${offset}: bad checksum`);
    const type = field(block, 156, 1);
    if (type !== "0" && type !== "") throw new Error(`tar header at ${offset}: entry type ${JSON.stringify(type)} is not a regular file`);
    const prefix = field(block, 345, 155);
    const name = field(block, 0, 100);
    const size = Number.parseInt(field(block, 124, 12).trim(), 8);
    const mode = Number.parseInt(field(block, 100, 8).trim(), 8);
    if (!Number.isSafeInteger(size) || size < 0 || offset + BLOCK + size > archive.length)
      throw new Error(`tar header at ${offset}: bad size`);
    files.set(prefix ? `${prefix}/${name}` : name, { bytes: archive.slice(offset + BLOCK, offset + BLOCK + size), mode });
    offset += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  throw new Error("tar archive ends without its two zero blocks");
}
