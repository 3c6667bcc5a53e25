CREATE TYPE "public"."base_choice" AS ENUM('base_commit', 'latest_default_before', 'previous_default', 'none');--> statement-breakpoint
CREATE TYPE "public"."verdict" AS ENUM('quarantined', 'infrastructure', 'failing_on_base', 'flaky', 'new');--> statement-breakpoint
CREATE TABLE "run_comparisons" (
	"test_run_id" bigint PRIMARY KEY NOT NULL,
	"project_id" uuid NOT NULL,
	"base_run_id" bigint,
	"base_choice" "base_choice" NOT NULL,
	"awaited_base_commit" text,
	"infrastructure_reason" text,
	"quarantined_count" integer DEFAULT 0 NOT NULL,
	"infrastructure_count" integer DEFAULT 0 NOT NULL,
	"failing_on_base_count" integer DEFAULT 0 NOT NULL,
	"flaky_count" integer DEFAULT 0 NOT NULL,
	"new_count" integer DEFAULT 0 NOT NULL,
	"fixed_count" integer DEFAULT 0 NOT NULL,
	"compared_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "run_fixed_tests" (
	"test_run_id" bigint NOT NULL,
	"test_case_id" bigint NOT NULL,
	"test_id" uuid NOT NULL,
	"base_test_case_id" bigint NOT NULL,
	CONSTRAINT "run_fixed_tests_test_run_id_test_case_id_pk" PRIMARY KEY("test_run_id","test_case_id")
);
--> statement-breakpoint
CREATE TABLE "run_verdicts" (
	"test_run_id" bigint NOT NULL,
	"test_case_id" bigint NOT NULL,
	"test_id" uuid NOT NULL,
	"verdict" "verdict" NOT NULL,
	"reason" text NOT NULL,
	CONSTRAINT "run_verdicts_test_run_id_test_case_id_pk" PRIMARY KEY("test_run_id","test_case_id")
);
--> statement-breakpoint
ALTER TABLE "test_runs" ADD COLUMN "verdict_counts" jsonb;--> statement-breakpoint
ALTER TABLE "run_comparisons" ADD CONSTRAINT "run_comparisons_test_run_id_test_runs_id_fk" FOREIGN KEY ("test_run_id") REFERENCES "public"."test_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_comparisons" ADD CONSTRAINT "run_comparisons_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_comparisons" ADD CONSTRAINT "run_comparisons_base_run_id_test_runs_id_fk" FOREIGN KEY ("base_run_id") REFERENCES "public"."test_runs"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_fixed_tests" ADD CONSTRAINT "run_fixed_tests_test_run_id_test_runs_id_fk" FOREIGN KEY ("test_run_id") REFERENCES "public"."test_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_verdicts" ADD CONSTRAINT "run_verdicts_test_run_id_test_runs_id_fk" FOREIGN KEY ("test_run_id") REFERENCES "public"."test_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "run_comparisons_awaited_idx" ON "run_comparisons" USING btree ("project_id","awaited_base_commit") WHERE "run_comparisons"."awaited_base_commit" is not null;--> statement-breakpoint
CREATE INDEX "run_verdicts_run_verdict_idx" ON "run_verdicts" USING btree ("test_run_id","verdict","test_case_id");