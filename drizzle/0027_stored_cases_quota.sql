ALTER TABLE "projects" ADD COLUMN "stored_cases_count" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
-- The stored cases of each project, which QUOTA_STORED_CASES caps per organization (docs/quotas.md).
-- Run processing adds a run's cases in the statement that marks it processed (storeTestRun, the same
-- transaction as the cases); this trigger takes away whatever is deleted, however (a run, a project
-- or an organization deleted, through 0003's trigger; a statement of the operator's), in the
-- deleting transaction. One statement trigger per deletion, one primary-key update per project:
-- no trigger on insert (a transition table of the cases' wide rows would cost run processing
-- dearly, see 0020), and deletions are rare. The rows of a project deleted in the same statement
-- are gone already: its update finds nothing.
CREATE FUNCTION "stored_cases_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  deleted record;
BEGIN
  FOR deleted IN SELECT "project_id", count(*) AS "cases" FROM old_cases GROUP BY "project_id" LOOP
    UPDATE "projects" SET "stored_cases_count" = "stored_cases_count" - deleted."cases" WHERE "id" = deleted."project_id";
  END LOOP;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER "test_cases_stored_count" AFTER DELETE ON "test_cases"
  REFERENCING OLD TABLE AS old_cases
  FOR EACH STATEMENT EXECUTE FUNCTION "stored_cases_deleted"();
--> statement-breakpoint
-- The existing cases, counted once (exact: the same statement in docs/quotas.md recounts them).
UPDATE "projects" SET "stored_cases_count" = c."cases"
FROM (SELECT "project_id", count(*) AS "cases" FROM "test_cases" GROUP BY "project_id") c
WHERE "projects"."id" = c."project_id";
