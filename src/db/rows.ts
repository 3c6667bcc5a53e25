/** Rows of a raw statement, whichever driver ran it (node-postgres, Neon and PGlite answer `{rows}`). */
export async function rowsOf<T>(result: Promise<unknown>): Promise<T[]> {
  const value = (await result) as { rows?: T[] } | T[];
  return Array.isArray(value) ? value : (value.rows ?? []);
}
