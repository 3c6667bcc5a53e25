-- test_cases.test_run_id has no foreign key (its per-row check doubled the cost of storing large
-- runs; see src/db/schema.ts). This statement-level trigger keeps ON DELETE CASCADE's meaning:
-- deleting runs (directly, or through their project or organization) deletes their cases.
CREATE FUNCTION "delete_cases_of_deleted_runs"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "test_cases" WHERE "test_run_id" IN (SELECT "id" FROM deleted_runs);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER "test_runs_delete_cases" AFTER DELETE ON "test_runs"
  REFERENCING OLD TABLE AS deleted_runs
  FOR EACH STATEMENT EXECUTE FUNCTION "delete_cases_of_deleted_runs"();
--> statement-breakpoint
-- Uploaded reports wait here for a few hundred milliseconds: compressing them on the way in and
-- decompressing them on the way out cost more than the space saved.
ALTER TABLE "upload_payloads" ALTER COLUMN "content" SET STORAGE EXTERNAL;
