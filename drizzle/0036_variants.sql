-- Variants (docs/tests.md, "Variants"): the run's configuration, written on the run, its cases and
-- its tests. It joins the test's identity only when it is not "", so every existing test keeps its
-- id; a generated column's expression cannot be altered in place, so test_id is derived anew (one
-- rewrite of test_cases, with its index).
ALTER TABLE "test_runs" ADD COLUMN "variant" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "alert_check_states" ADD COLUMN "variant" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "alert_check_states" DROP CONSTRAINT "alert_check_states_project_id_alert_type_pk";--> statement-breakpoint
ALTER TABLE "alert_check_states" ADD CONSTRAINT "alert_check_states_project_id_alert_type_variant_pk" PRIMARY KEY("project_id","alert_type","variant");--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "variant" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "quarantine_all_variants" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "test_cases" ADD COLUMN "variant" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "test_cases" DROP COLUMN "test_id";--> statement-breakpoint
ALTER TABLE "test_cases" ADD COLUMN "test_id" uuid GENERATED ALWAYS AS (md5(project_id::text || chr(31) || coalesce(classname, '') || chr(31) || case when classname is null then coalesce(file, '') else '' end || chr(31) || name || case when variant = '' then '' else chr(31) || variant end)::uuid) STORED NOT NULL;--> statement-breakpoint
CREATE INDEX "test_cases_test_idx" ON "test_cases" USING btree ("test_id","id" DESC NULLS FIRST);--> statement-breakpoint
DROP INDEX "test_runs_project_run_key";--> statement-breakpoint
CREATE UNIQUE INDEX "test_runs_project_run_key" ON "test_runs" USING btree ("project_id","run_key","variant") WHERE "test_runs"."run_key" is not null;--> statement-breakpoint
CREATE INDEX "tests_project_variant_impact_idx" ON "tests" USING btree ("project_id","variant","impact" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
-- The arrival function takes the variant: a run key names one run per variant.
DROP FUNCTION IF EXISTS record_test_run_arrival(uuid, timestamptz, integer, text, text, text, text, text, jsonb, timestamptz, text, text, text, text, text, integer, integer, boolean, integer, integer);--> statement-breakpoint
CREATE OR REPLACE FUNCTION record_test_run_arrival(
  p_project_id uuid,
  p_now timestamptz,
  p_lock_class integer,
  p_idempotency_key text,
  p_branch text,
  p_commit_sha text,
  p_build_id text,
  p_build_url text,
  p_tags jsonb,
  p_started_at timestamptz,
  p_payload_format text,
  p_payload_content text,
  p_payload_object_key text,
  p_base_commit_sha text,
  p_run_key text,
  p_shard_index integer,
  p_shard_total integer,
  p_retry boolean,
  p_quiet_ms integer,
  p_max_parts integer,
  p_variant text
) RETURNS TABLE (replayed boolean, run json, part integer, refusal text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_number integer;
  v_part integer := 0;
  v_run test_runs;
BEGIN
  IF p_run_key IS NOT NULL THEN
    -- Parts of one run arrive at once (shards): one at a time per key, the run's row locked.
    PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(p_project_id::text || '#' || p_run_key || chr(31) || p_variant));
    SELECT * INTO v_run FROM test_runs t WHERE t.project_id = p_project_id AND t.run_key = p_run_key AND t.variant = p_variant FOR UPDATE;
    IF FOUND THEN
      IF p_idempotency_key IS NOT NULL THEN
        SELECT rp.part_number INTO v_part FROM test_run_parts rp WHERE rp.test_run_id = v_run.id AND rp.idempotency_key = p_idempotency_key;
        IF FOUND THEN
          RETURN QUERY SELECT true, row_to_json(v_run), v_part, null::text;
          RETURN;
        END IF;
      END IF;
      IF v_run.completed_at IS NOT NULL AND NOT p_retry THEN
        RETURN QUERY SELECT false, row_to_json(v_run), null::integer, 'completed'::text;
        RETURN;
      END IF;
      IF v_run.parts_count >= p_max_parts THEN
        RETURN QUERY SELECT false, row_to_json(v_run), null::integer, 'too_many_parts'::text;
        RETURN;
      END IF;
      UPDATE test_runs SET parts_count = parts_count + 1, shard_total = coalesce(shard_total, p_shard_total),
          complete_after = CASE WHEN completed_at IS NULL THEN p_now + make_interval(secs => p_quiet_ms / 1000.0) ELSE complete_after END
        WHERE id = v_run.id RETURNING * INTO v_run;
      v_part := v_run.parts_count;
      INSERT INTO test_run_parts (test_run_id, part_number, shard_index, retry, idempotency_key, created_at)
        VALUES (v_run.id, v_part, p_shard_index, p_retry, p_idempotency_key, p_now);
      INSERT INTO upload_payloads (test_run_id, part_number, format, content, object_key, created_at)
        VALUES (v_run.id, v_part, p_payload_format, p_payload_content, p_payload_object_key, p_now);
      RETURN QUERY SELECT false, row_to_json(v_run), v_part, null::text;
      RETURN;
    END IF;
  ELSIF p_idempotency_key IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(p_project_id::text || '/' || p_idempotency_key));
    SELECT * INTO v_run FROM test_runs t WHERE t.project_id = p_project_id AND t.idempotency_key = p_idempotency_key LIMIT 1;
    IF FOUND THEN
      RETURN QUERY SELECT true, row_to_json(v_run), 0, null::text;
      RETURN;
    END IF;
  END IF;
  UPDATE projects SET test_runs_count = test_runs_count + 1, last_test_run_at = p_now
    WHERE id = p_project_id RETURNING test_runs_count INTO v_number;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Project % does not exist.', p_project_id;
  END IF;
  IF p_run_key IS NOT NULL THEN
    v_part := 1;
  END IF;
  INSERT INTO test_runs (project_id, number, branch, commit_sha, base_commit_sha, build_id, build_url, tags, started_at, idempotency_key, created_at,
      run_key, shard_total, parts_count, complete_after, variant)
    VALUES (p_project_id, v_number, p_branch, p_commit_sha, p_base_commit_sha, p_build_id, p_build_url, p_tags, p_started_at,
      CASE WHEN p_run_key IS NULL THEN p_idempotency_key END, p_now,
      p_run_key, CASE WHEN p_run_key IS NOT NULL THEN p_shard_total END, v_part,
      CASE WHEN p_run_key IS NOT NULL THEN p_now + make_interval(secs => p_quiet_ms / 1000.0) END, p_variant)
    RETURNING * INTO v_run;
  IF v_part > 0 THEN
    INSERT INTO test_run_parts (test_run_id, part_number, shard_index, retry, idempotency_key, created_at)
      VALUES (v_run.id, v_part, p_shard_index, p_retry, p_idempotency_key, p_now);
  END IF;
  IF p_payload_format IS NOT NULL THEN
    INSERT INTO upload_payloads (test_run_id, part_number, format, content, object_key, created_at)
      VALUES (v_run.id, v_part, p_payload_format, p_payload_content, p_payload_object_key, p_now);
  END IF;
  RETURN QUERY SELECT false, row_to_json(v_run), v_part, null::text;
END
$$;
