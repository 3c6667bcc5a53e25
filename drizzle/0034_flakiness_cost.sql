CREATE TABLE "test_daily_costs" (
	"test_id" uuid NOT NULL,
	"day" date NOT NULL,
	"project_id" uuid NOT NULL,
	"retry_ms" bigint DEFAULT 0 NOT NULL,
	"flaky_failures_ms" bigint DEFAULT 0 NOT NULL,
	"quarantined_failures_ms" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "test_daily_costs_test_id_day_pk" PRIMARY KEY("test_id","day")
);
--> statement-breakpoint
ALTER TABLE "project_daily_rollups" ADD COLUMN "retry_ms" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "project_daily_rollups" ADD COLUMN "flaky_failures_ms" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "project_daily_rollups" ADD COLUMN "quarantined_failures_ms" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "project_daily_rollups" ADD COLUMN "rerun_ms" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "project_daily_rollups" ADD COLUMN "reruns_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "test_runs" ADD COLUMN "flaky_failures_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "test_daily_costs" ADD CONSTRAINT "test_daily_costs_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "test_daily_costs_project_day_idx" ON "test_daily_costs" USING btree ("project_id","day");