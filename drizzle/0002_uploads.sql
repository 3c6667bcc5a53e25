CREATE TABLE "upload_payloads" (
	"test_run_id" bigint PRIMARY KEY NOT NULL,
	"format" text NOT NULL,
	"content" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "test_cases" DROP CONSTRAINT "test_cases_test_run_id_test_runs_id_fk";
--> statement-breakpoint
ALTER TABLE "test_cases" ADD COLUMN "system_out" text;--> statement-breakpoint
ALTER TABLE "test_cases" ADD COLUMN "system_err" text;--> statement-breakpoint
ALTER TABLE "test_runs" ADD COLUMN "idempotency_key" text;--> statement-breakpoint
ALTER TABLE "upload_payloads" ADD CONSTRAINT "upload_payloads_test_run_id_test_runs_id_fk" FOREIGN KEY ("test_run_id") REFERENCES "public"."test_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "test_runs_project_idempotency_key" ON "test_runs" USING btree ("project_id","idempotency_key") WHERE "test_runs"."idempotency_key" is not null;--> statement-breakpoint
CREATE INDEX "test_runs_project_keyset_idx" ON "test_runs" USING btree ("project_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);