CREATE TABLE "project_daily_rollups" (
	"project_id" uuid NOT NULL,
	"day" date NOT NULL,
	"runs_count" integer DEFAULT 0 NOT NULL,
	"passed_runs_count" integer DEFAULT 0 NOT NULL,
	"failed_runs_count" integer DEFAULT 0 NOT NULL,
	"errored_runs_count" integer DEFAULT 0 NOT NULL,
	"durations_count" integer DEFAULT 0 NOT NULL,
	"duration_sum_ms" bigint DEFAULT 0 NOT NULL,
	"duration_histogram" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"cases_count" bigint DEFAULT 0 NOT NULL,
	"skipped_cases_count" bigint DEFAULT 0 NOT NULL,
	"flaky_tests_count" integer,
	CONSTRAINT "project_daily_rollups_project_id_day_pk" PRIMARY KEY("project_id","day")
);
--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "upload_token_encrypted" text;--> statement-breakpoint
ALTER TABLE "project_daily_rollups" ADD CONSTRAINT "project_daily_rollups_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- Backfill (hand-written below the generated part): the rollups of the runs processed before this
-- migration, as run processing would have kept them (src/services/daily-rollups.ts): the UTC day
-- of arrival, counts by result, durations in the same buckets (width_bucket over the same bounds:
-- round(2^(i/8)) for i = 0…247 without repeats), cases and skipped cases.
WITH runs AS (
  SELECT project_id, (created_at AT TIME ZONE 'UTC')::date AS day, result, duration_ms, tests_count, skipped_count,
         CASE WHEN duration_ms IS NOT NULL THEN width_bucket(duration_ms, '{1,2,3,4,5,6,7,8,9,10,11,12,13,15,16,17,19,21,23,25,27,29,32,35,38,41,45,49,54,59,64,70,76,83,91,99,108,117,128,140,152,166,181,197,215,235,256,279,304,332,362,395,431,470,512,558,609,664,724,790,861,939,1024,1117,1218,1328,1448,1579,1722,1878,2048,2233,2435,2656,2896,3158,3444,3756,4096,4467,4871,5312,5793,6317,6889,7512,8192,8933,9742,10624,11585,12634,13777,15024,16384,17867,19484,21247,23170,25268,27554,30048,32768,35734,38968,42495,46341,50535,55109,60097,65536,71468,77936,84990,92682,101070,110218,120194,131072,142935,155872,169979,185364,202141,220436,240387,262144,285870,311744,339959,370728,404281,440872,480774,524288,571740,623487,679917,741455,808563,881744,961548,1048576,1143480,1246974,1359835,1482910,1617125,1763488,1923097,2097152,2286960,2493948,2719670,2965821,3234251,3526975,3846194,4194304,4573921,4987896,5439339,5931642,6468501,7053950,7692387,8388608,9147842,9975792,10878679,11863283,12937002,14107901,15384775,16777216,18295684,19951585,21757357,23726566,25874004,28215802,30769550,33554432,36591368,39903169,43514715,47453133,51748008,56431603,61539100,67108864,73182735,79806339,87029429,94906266,103496017,112863206,123078199,134217728,146365470,159612677,174058859,189812531,206992033,225726413,246156398,268435456,292730940,319225354,348117717,379625062,413984066,451452825,492312797,536870912,585461881,638450708,696235434,759250125,827968132,902905651,984625594,1073741824,1170923762,1276901417,1392470869,1518500250,1655936265,1805811301,1969251188}'::int[]) END AS bucket
  FROM test_runs WHERE status = 'processed'
), totals AS (
  SELECT project_id, day, count(*)::int AS runs_count,
         (count(*) FILTER (WHERE result = 'tests_passed'))::int AS passed_runs_count,
         (count(*) FILTER (WHERE result = 'tests_failed'))::int AS failed_runs_count,
         (count(*) FILTER (WHERE result = 'tests_errored'))::int AS errored_runs_count,
         count(duration_ms)::int AS durations_count, coalesce(sum(duration_ms), 0)::bigint AS duration_sum_ms,
         sum(tests_count)::bigint AS cases_count, sum(skipped_count)::bigint AS skipped_cases_count
  FROM runs GROUP BY project_id, day
), histograms AS (
  SELECT project_id, day, jsonb_object_agg(bucket::text, n) AS histogram
  FROM (SELECT project_id, day, bucket, count(*)::int AS n FROM runs WHERE bucket IS NOT NULL GROUP BY project_id, day, bucket) AS b
  GROUP BY project_id, day
)
INSERT INTO "project_daily_rollups" (project_id, day, runs_count, passed_runs_count, failed_runs_count, errored_runs_count,
  durations_count, duration_sum_ms, duration_histogram, cases_count, skipped_cases_count)
SELECT t.project_id, t.day, t.runs_count, t.passed_runs_count, t.failed_runs_count, t.errored_runs_count,
       t.durations_count, t.duration_sum_ms, coalesce(h.histogram, '{}'::jsonb), t.cases_count, t.skipped_cases_count
FROM totals t LEFT JOIN histograms h USING (project_id, day);
--> statement-breakpoint
-- A day's flaky tests: the project's tests whose latest health change before the day ended made
-- them flaky. Only the last 60 days (what the overview reads); older days keep null.
UPDATE "project_daily_rollups" r SET flaky_tests_count = (
  SELECT count(*)::int FROM tests t
  CROSS JOIN LATERAL (
    SELECT h.to_health FROM test_health_transitions h
    WHERE h.test_id = t.id AND h.created_at < ((r.day + 1)::timestamp AT TIME ZONE 'UTC')
    ORDER BY h.created_at DESC, h.id DESC LIMIT 1
  ) AS latest
  WHERE t.project_id = r.project_id AND latest.to_health = 'flaky'
)
WHERE r.day >= current_date - 60;
