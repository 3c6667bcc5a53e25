CREATE TABLE "run_splits" (
	"test_run_id" bigint PRIMARY KEY NOT NULL,
	"key" text NOT NULL,
	"by" text NOT NULL,
	"shards" jsonb NOT NULL,
	"missing_count" integer NOT NULL,
	"recorded_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "run_splits" ADD CONSTRAINT "run_splits_test_run_id_test_runs_id_fk" FOREIGN KEY ("test_run_id") REFERENCES "public"."test_runs"("id") ON DELETE cascade ON UPDATE no action;