-- A test's passes on retry over its window (an `r` in window_outcomes from now on). A constant default adds the
-- column without rewriting the table, so the tests table keeps its fillfactor 70 (drizzle/0008_tests.sql) and run
-- processing's updates stay in-page (HOT): the column has no index. Windows written before this migration hold a
-- pass on retry as `p`, so their count starts at 0 and grows as runs arrive.
ALTER TABLE "tests" ADD COLUMN "passed_on_retry_count" integer DEFAULT 0 NOT NULL;
