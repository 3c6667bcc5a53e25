/**
 * A test's identity (docs/tests.md#identity): within a project, a test is the same test across
 * runs when its classname and name are equal, or its file and name when it has no classname. The
 * suite name is not part of it; whitespace and case are kept as written. The database derives the
 * same identity as a UUID (testIdentitySql in src/db/schema.ts); this is its in-memory form, for
 * grouping a run's cases and for keys that pure code (the alert checks, the simulator) compares.
 */
export function testIdentityKey(test: { classname: string | null; file?: string | null; name: string }): string {
  const file = test.classname === null ? (test.file ?? null) : null;
  return `${test.classname ?? ""}\u001f${file ?? ""}\u001f${test.name}`;
}
