CREATE TABLE "test_rollup_days" (
	"test_id" uuid NOT NULL,
	"day" date NOT NULL,
	"project_id" uuid NOT NULL,
	"executions" integer NOT NULL,
	"failures" integer NOT NULL,
	"passed_on_retry" integer NOT NULL,
	"failed_attempts_ms" bigint NOT NULL,
	"duration_buckets" smallint[] NOT NULL,
	CONSTRAINT "test_rollup_days_test_id_day_pk" PRIMARY KEY("test_id","day")
);
--> statement-breakpoint
CREATE TABLE "test_rollups" (
	"test_id" uuid NOT NULL,
	"period" integer NOT NULL,
	"project_id" uuid NOT NULL,
	"days" "bytea" NOT NULL,
	CONSTRAINT "test_rollups_test_id_period_pk" PRIMARY KEY("test_id","period")
);
--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "retention_days" integer;--> statement-breakpoint
ALTER TABLE "test_runs" ADD COLUMN "cases_deleted_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "test_rollup_days" ADD CONSTRAINT "test_rollup_days_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "test_rollups" ADD CONSTRAINT "test_rollups_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "test_rollup_days_day_idx" ON "test_rollup_days" USING btree ("day");--> statement-breakpoint
CREATE INDEX "test_rollups_period_idx" ON "test_rollups" USING btree ("period");--> statement-breakpoint
CREATE INDEX "alert_events_run_idx" ON "alert_events" USING btree ("test_run_id");--> statement-breakpoint
CREATE INDEX "notification_deliveries_run_idx" ON "notification_deliveries" USING btree ("test_run_id");--> statement-breakpoint
CREATE INDEX "run_comparisons_base_run_idx" ON "run_comparisons" USING btree ("base_run_id");--> statement-breakpoint
CREATE INDEX "test_health_transitions_run_idx" ON "test_health_transitions" USING btree ("test_run_id");--> statement-breakpoint
CREATE INDEX "test_runs_cases_kept_idx" ON "test_runs" USING btree ("project_id","created_at") WHERE "test_runs"."cases_deleted_at" is null;--> statement-breakpoint
-- Per-test rollups (docs/retention.md, src/services/shared/test-rollups.ts): a period's `days` is
-- a run of 22-byte slots, one per day of the period up to its last packed day, big-endian:
--   0  executions (u16)        2  failures (u16)        4  passes on retry (u16)
--   6  ms of failed attempts (u32)
--   10 four duration entries, each a bucket (u8, the project rollups' buckets: 8 per doubling) and a count (u16)
-- Counters stop at their largest value instead of wrapping. The entries are a sketch of the day's
-- durations: past four distinct buckets the two nearest entries merge into one (at their count-weighted
-- bucket), so the day's p50 is exact to its bucket while the day saw at most four distinct buckets.
CREATE FUNCTION "duration_bucket"(p_ms integer) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT width_bucket(p_ms, '{1,2,3,4,5,6,7,8,9,10,11,12,13,15,16,17,19,21,23,25,27,29,32,35,38,41,45,49,54,59,64,70,76,83,91,99,108,117,128,140,152,166,181,197,215,235,256,279,304,332,362,395,431,470,512,558,609,664,724,790,861,939,1024,1117,1218,1328,1448,1579,1722,1878,2048,2233,2435,2656,2896,3158,3444,3756,4096,4467,4871,5312,5793,6317,6889,7512,8192,8933,9742,10624,11585,12634,13777,15024,16384,17867,19484,21247,23170,25268,27554,30048,32768,35734,38968,42495,46341,50535,55109,60097,65536,71468,77936,84990,92682,101070,110218,120194,131072,142935,155872,169979,185364,202141,220436,240387,262144,285870,311744,339959,370728,404281,440872,480774,524288,571740,623487,679917,741455,808563,881744,961548,1048576,1143480,1246974,1359835,1482910,1617125,1763488,1923097,2097152,2286960,2493948,2719670,2965821,3234251,3526975,3846194,4194304,4573921,4987896,5439339,5931642,6468501,7053950,7692387,8388608,9147842,9975792,10878679,11863283,12937002,14107901,15384775,16777216,18295684,19951585,21757357,23726566,25874004,28215802,30769550,33554432,36591368,39903169,43514715,47453133,51748008,56431603,61539100,67108864,73182735,79806339,87029429,94906266,103496017,112863206,123078199,134217728,146365470,159612677,174058859,189812531,206992033,225726413,246156398,268435456,292730940,319225354,348117717,379625062,413984066,451452825,492312797,536870912,585461881,638450708,696235434,759250125,827968132,902905651,984625594,1073741824,1170923762,1276901417,1392470869,1518500250,1655936265,1805811301,1969251188}'::int[])
$$;
--> statement-breakpoint
CREATE FUNCTION "test_rollup_read"(p bytea, p_at integer, p_width integer) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  value bigint := 0;
BEGIN
  FOR i IN 0 .. p_width - 1 LOOP
    value := value * 256 + get_byte(p, p_at + i);
  END LOOP;
  RETURN value;
END $$;
--> statement-breakpoint
CREATE FUNCTION "test_rollup_write"(p bytea, p_at integer, p_width integer, p_value bigint) RETURNS bytea LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  value bigint := least(greatest(p_value, 0), (256::bigint ^ p_width)::bigint - 1);
BEGIN
  FOR i IN REVERSE p_width - 1 .. 0 LOOP
    p := set_byte(p, p_at + i, (value % 256)::int);
    value := value / 256;
  END LOOP;
  RETURN p;
END $$;
--> statement-breakpoint
-- A slot (null: an empty one) with figures added; p_buckets and p_counts: the durations to add, counted by bucket.
CREATE FUNCTION "test_rollup_slot_add"(p_slot bytea, p_executions integer, p_failures integer, p_retries integer, p_failed_ms bigint,
  p_buckets integer[], p_counts integer[]) RETURNS bytea LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  slot bytea := coalesce(p_slot, '\x00000000000000000000000000000000000000000000'::bytea);
  b integer[] := '{}';
  c integer[] := '{}';
  at integer;
  best integer;
  bucket integer;
  count integer;
BEGIN
  slot := test_rollup_write(slot, 0, 2, test_rollup_read(slot, 0, 2) + p_executions);
  slot := test_rollup_write(slot, 2, 2, test_rollup_read(slot, 2, 2) + p_failures);
  slot := test_rollup_write(slot, 4, 2, test_rollup_read(slot, 4, 2) + p_retries);
  slot := test_rollup_write(slot, 6, 4, test_rollup_read(slot, 6, 4) + p_failed_ms);
  -- The entries, sorted by bucket: the slot's (buckets ascending, counts > 0), then the new ones, each added or inserted in place.
  FOR e IN 0 .. 3 LOOP
    count := test_rollup_read(slot, 11 + 3 * e, 2);
    IF count > 0 THEN
      b := b || get_byte(slot, 10 + 3 * e);
      c := c || count;
    END IF;
  END LOOP;
  FOR k IN 1 .. coalesce(array_length(p_buckets, 1), 0) LOOP
    bucket := least(greatest(p_buckets[k], 0), 255);
    at := 1;
    WHILE at <= coalesce(array_length(b, 1), 0) AND b[at] < bucket LOOP at := at + 1; END LOOP;
    IF at <= coalesce(array_length(b, 1), 0) AND b[at] = bucket THEN
      c[at] := least(c[at] + p_counts[k], 65535);
    ELSE
      b := b[1:at - 1] || bucket || b[at:];
      c := c[1:at - 1] || least(p_counts[k], 65535) || c[at:];
    END IF;
  END LOOP;
  -- Over four entries: the two nearest (then the lightest pair) become one, at their count-weighted bucket.
  WHILE array_length(b, 1) > 4 LOOP
    best := 1;
    FOR k IN 2 .. array_length(b, 1) - 1 LOOP
      IF b[k + 1] - b[k] < b[best + 1] - b[best]
        OR (b[k + 1] - b[k] = b[best + 1] - b[best] AND c[k] + c[k + 1] < c[best] + c[best + 1]) THEN
        best := k;
      END IF;
    END LOOP;
    bucket := round((b[best]::numeric * c[best] + b[best + 1]::numeric * c[best + 1]) / (c[best] + c[best + 1]));
    b := b[1:best - 1] || bucket || b[best + 2:];
    c := c[1:best - 1] || least(c[best] + c[best + 1], 65535) || c[best + 2:];
  END LOOP;
  FOR e IN 0 .. 3 LOOP
    slot := set_byte(slot, 10 + 3 * e, coalesce(b[e + 1], 0));
    slot := test_rollup_write(slot, 11 + 3 * e, 2, coalesce(c[e + 1], 0));
  END LOOP;
  RETURN slot;
END $$;
--> statement-breakpoint
-- A period's days with another's added, slot by slot (p_add's empty slots are skipped): a packed
-- day added to the stored period (INSERT … ON CONFLICT's excluded.days), a late day's to its slot.
CREATE FUNCTION "test_rollup_merge"(p_days bytea, p_add bytea) RETURNS bytea LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  result bytea := coalesce(p_days, ''::bytea);
  slot bytea;
  b integer[];
  c integer[];
BEGIN
  FOR d IN 0 .. length(p_add) / 22 - 1 LOOP
    slot := substring(p_add FROM d * 22 + 1 FOR 22);
    CONTINUE WHEN test_rollup_read(slot, 0, 2) = 0;
    IF length(result) < (d + 1) * 22 THEN
      result := result || decode(repeat('00', (d + 1) * 22 - length(result)), 'hex');
    END IF;
    b := '{}';
    c := '{}';
    FOR e IN 0 .. 3 LOOP
      IF test_rollup_read(slot, 11 + 3 * e, 2) > 0 THEN
        b := b || get_byte(slot, 10 + 3 * e);
        c := c || test_rollup_read(slot, 11 + 3 * e, 2)::integer;
      END IF;
    END LOOP;
    result := overlay(result PLACING test_rollup_slot_add(substring(result FROM d * 22 + 1 FOR 22),
      test_rollup_read(slot, 0, 2)::integer, test_rollup_read(slot, 2, 2)::integer, test_rollup_read(slot, 4, 2)::integer,
      test_rollup_read(slot, 6, 4), b, c) FROM d * 22 + 1 FOR 22);
  END LOOP;
  RETURN result;
END $$;
