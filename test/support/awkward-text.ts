/**
 * Text that would end a naively quoted SQL literal, start a dollar-quoted one or a comment, or
 * end a statement and start another: for the tests of statements whose parameters are written
 * as literals (src/db/transaction-boundaries.ts).
 */
export const AWKWARD = [
  "it's",
  "''",
  "back\\slash",
  "ends with backslash\\",
  "\\'; commit; select '",
  "');commit;drop table test_runs;--",
  "$$ dollar $$",
  "$tag$ x $tag$",
  "/* open comment",
  "*/ close comment",
  "-- line comment",
  "E'not an escape'",
  "\\x41 \\n \\t \\u0041",
  ";commit;",
  "new\nline\r\ttab",
  "unicode: żółć 😀 \u2028",
  "",
];
