-- The tests' daily figures are rolled up by the retention sweep from each finished day's cases
-- (docs/retention.md, src/services/shared/test-rollups.ts) instead of added by every run's
-- processing to test_rollup_days. test_rollup_progress: how far the sweep has rolled each project.
CREATE TABLE "test_rollup_progress" (
	"project_id" uuid PRIMARY KEY NOT NULL,
	"day" date NOT NULL,
	"after_name" text,
	"after_id" uuid,
	"first_case" bigint,
	"last_case" bigint,
	"cases_deleted_before" date,
	"unrolled_from_case" bigint,
	"unrolled_from_at" timestamp (3) with time zone
);
--> statement-breakpoint
ALTER TABLE "test_rollup_progress" ADD CONSTRAINT "test_rollup_progress_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "test_rollup_progress_day_idx" ON "test_rollup_progress" USING btree ("day");--> statement-breakpoint
-- A period's days with one day's slot set (replaced, not added: the sweep rolls a day from all its
-- cases, so rolling it again gives the same slot), the days before it padded with empty slots.
CREATE FUNCTION "test_rollup_put"(p_days bytea, p_slot integer, p_value bytea) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
  SELECT overlay(coalesce(p_days, ''::bytea) || decode(repeat('00', greatest(0, (p_slot + 1) * 22 - length(coalesce(p_days, ''::bytea)))), 'hex')
    PLACING p_value FROM p_slot * 22 + 1 FOR 22)
$$;
--> statement-breakpoint
-- What run processing wrote to test_rollup_days is packed as the sweep packed it, a day at a time
-- (today's too: the sweep rolls today again from its cases once it is over, replacing the slot).
DO $$
DECLARE
  d date;
BEGIN
  FOR d IN SELECT DISTINCT day FROM test_rollup_days ORDER BY day LOOP
    INSERT INTO test_rollups AS t (test_id, period, project_id, days)
    SELECT m.test_id, (m.day - date '1970-01-01') / 32, m.project_id,
      decode(repeat('00', ((m.day - date '1970-01-01') % 32) * 22), 'hex')
        || test_rollup_slot_add(null, least(m.executions, 65535), least(m.failures, 65535), least(m.passed_on_retry, 65535),
          m.failed_attempts_ms, h.buckets, h.counts)
    FROM test_rollup_days m CROSS JOIN LATERAL (
      SELECT coalesce(array_agg(b ORDER BY b), '{}') AS buckets, coalesce(array_agg(n ORDER BY b), '{}') AS counts
      FROM (SELECT b::int AS b, count(*)::int AS n FROM unnest(m.duration_buckets) b GROUP BY b) x) h
    WHERE m.day = d
    ON CONFLICT (test_id, period) DO UPDATE SET days = test_rollup_merge(t.days, excluded.days);
  END LOOP;
END $$;
--> statement-breakpoint
-- Every project's days before today are rolled up (packed above); today is rolled from its cases.
-- A late run or part of an earlier day is not rolled again (cases_deleted_before: today): such a day
-- keeps what run processing wrote to test_rollup_days.
INSERT INTO "test_rollup_progress" ("project_id", "day", "cases_deleted_before")
  SELECT "id", (now() AT TIME ZONE 'UTC')::date, (now() AT TIME ZONE 'UTC')::date FROM "projects";--> statement-breakpoint
DROP TABLE "test_rollup_days" CASCADE;
