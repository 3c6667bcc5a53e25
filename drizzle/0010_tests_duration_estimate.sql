-- A test's duration percentiles come from a streaming estimate (docs/tests.md): the mean and
-- variance of ln(1 + ms) over the window, and how many durations are behind them, instead of the
-- window's 50 durations that every run read and rewrote. Existing windows seed the estimate.
ALTER TABLE "tests" ADD COLUMN "duration_log_mean" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "duration_log_var" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "duration_samples" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE "tests" t SET "duration_log_mean" = s.m, "duration_log_var" = s.v, "duration_samples" = s.n
FROM (
  SELECT t2.id, avg(ln(1 + d)) AS m, coalesce(var_pop(ln(1 + d)), 0) AS v, count(*) AS n
  FROM "tests" t2, unnest(t2.window_durations) AS d
  WHERE d >= 0
  GROUP BY t2.id
) s
WHERE t.id = s.id;
