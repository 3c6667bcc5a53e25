ALTER TABLE "test_runs" ADD COLUMN "base_commit_sha" text;--> statement-breakpoint
-- The uploader's base_commit_sha (docs/verdicts.md): the arrival function takes it too, still one statement.
DROP FUNCTION IF EXISTS record_test_run_arrival(uuid, timestamptz, integer, text, text, text, text, text, jsonb, timestamptz, text, text, text);--> statement-breakpoint
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
  p_base_commit_sha text
) RETURNS TABLE (replayed boolean, run json)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_number integer;
  v_run test_runs;
BEGIN
  IF p_idempotency_key IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(p_project_id::text || '/' || p_idempotency_key));
    SELECT * INTO v_run FROM test_runs t WHERE t.project_id = p_project_id AND t.idempotency_key = p_idempotency_key LIMIT 1;
    IF FOUND THEN
      RETURN QUERY SELECT true, row_to_json(v_run);
      RETURN;
    END IF;
  END IF;
  UPDATE projects SET test_runs_count = test_runs_count + 1, last_test_run_at = p_now
    WHERE id = p_project_id RETURNING test_runs_count INTO v_number;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Project % does not exist.', p_project_id;
  END IF;
  INSERT INTO test_runs (project_id, number, branch, commit_sha, base_commit_sha, build_id, build_url, tags, started_at, idempotency_key, created_at)
    VALUES (p_project_id, v_number, p_branch, p_commit_sha, p_base_commit_sha, p_build_id, p_build_url, p_tags, p_started_at, p_idempotency_key, p_now)
    RETURNING * INTO v_run;
  IF p_payload_format IS NOT NULL THEN
    INSERT INTO upload_payloads (test_run_id, format, content, object_key, created_at) VALUES (v_run.id, p_payload_format, p_payload_content, p_payload_object_key, p_now);
  END IF;
  RETURN QUERY SELECT false, row_to_json(v_run);
END
$$;
