-- The alert checks' per-test state moves into the tests' rows (one entry per detector version).
-- States stored before it (one document per project and check) are converted by the service at
-- the project's next checked run (src/services/alert-checks.ts, Check.fromLegacy).
ALTER TABLE "tests" ADD COLUMN "check_state" jsonb DEFAULT '{}'::jsonb NOT NULL;
