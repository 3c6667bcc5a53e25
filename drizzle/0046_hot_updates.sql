-- Room on each page for a new version of every row on it, so that run processing's updates stay
-- HOT (heap-only: no index entry written; docs/tests.md#what-each-run-updates):
-- - tests: every processed run rewrites each of its tests' rows once, and its alert checks once more
--   (check_state), each in its own transaction. At fillfactor 70 a page of ~770-byte rows had room
--   for under half of its rows' new versions, so the rest moved to other pages and wrote an entry in
--   each of the table's nine indexes; at 50 a page holds its rows and one new version of each (the
--   previous transaction's versions are pruned when the page is next visited).
-- - test_rollup_days: every processed run adds to its tests' rows of the day (ON CONFLICT DO UPDATE);
--   packed to fillfactor 100, none of those updates was HOT.
-- Pages written from now on follow it; pages already full are repacked by the next VACUUM FULL.
ALTER TABLE "tests" SET (fillfactor = 50);--> statement-breakpoint
ALTER TABLE "test_rollup_days" SET (fillfactor = 50);
