-- The alert checks' per-test entries move out of tests.check_state into a narrow table of their own
-- (docs/alert-checks.md): every run rewrote each of its tests' rows twice, once for run processing
-- and once for its checks, and each time wrote the other's bytes too (check_state was about 450 of
-- a row's ~770 bytes). Fillfactor 50 as tests (0046): every run rewrites its tests' entries, kept
-- in-page (HOT). Tests with no entry ('{}') get no row.
-- staged_test_check_states and committed_check_slices: a large run's checks in slices on PGlite.
CREATE TABLE "committed_check_slices" (
	"test_run_id" bigint PRIMARY KEY NOT NULL,
	"project_id" uuid NOT NULL
);
--> statement-breakpoint
CREATE TABLE "staged_test_check_states" (
	"test_run_id" bigint NOT NULL,
	"test_id" uuid NOT NULL,
	"state" jsonb NOT NULL,
	CONSTRAINT "staged_test_check_states_test_run_id_test_id_pk" PRIMARY KEY("test_run_id","test_id")
);
--> statement-breakpoint
CREATE TABLE "test_check_states" (
	"test_id" uuid PRIMARY KEY NOT NULL,
	"state" jsonb NOT NULL
) WITH (fillfactor = 50);
--> statement-breakpoint
INSERT INTO "test_check_states" ("test_id", "state") SELECT "id", "check_state" FROM "tests" WHERE "check_state" <> '{}'::jsonb;--> statement-breakpoint
ALTER TABLE "committed_check_slices" ADD CONSTRAINT "committed_check_slices_test_run_id_test_runs_id_fk" FOREIGN KEY ("test_run_id") REFERENCES "public"."test_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "staged_test_check_states" ADD CONSTRAINT "staged_test_check_states_test_run_id_test_runs_id_fk" FOREIGN KEY ("test_run_id") REFERENCES "public"."test_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "test_check_states" ADD CONSTRAINT "test_check_states_test_id_tests_id_fk" FOREIGN KEY ("test_id") REFERENCES "public"."tests"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tests" DROP COLUMN "check_state";
