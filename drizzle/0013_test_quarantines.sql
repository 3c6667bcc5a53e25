CREATE TYPE "public"."quarantine_source" AS ENUM('manual', 'auto');--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "quarantine_version" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "test_cases" ADD COLUMN "quarantined" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "test_runs" ADD COLUMN "quarantined_failures_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "quarantine_reason" text;--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "quarantine_owner" text;--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "quarantine_issue_url" text;--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "quarantine_created_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "quarantine_expires_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "quarantine_source" "quarantine_source";--> statement-breakpoint
CREATE INDEX "tests_project_quarantine_idx" ON "tests" USING btree ("project_id","quarantine_expires_at") WHERE "tests"."quarantine_expires_at" is not null;