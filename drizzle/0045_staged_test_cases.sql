CREATE TABLE "staged_test_cases" (
	"seq" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "staged_test_cases_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"test_run_id" bigint NOT NULL,
	"project_id" uuid NOT NULL,
	"variant" text DEFAULT '' NOT NULL,
	"suite_number" integer NOT NULL,
	"name" text NOT NULL,
	"classname" text,
	"file" text,
	"status" "case_status" NOT NULL,
	"duration_ms" integer,
	"failure_type" text,
	"failure_message" text,
	"failure_text" text,
	"attempts" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"failure_signature" text,
	"quarantined" boolean DEFAULT false NOT NULL,
	"system_out" text,
	"system_err" text
);
--> statement-breakpoint
ALTER TABLE "staged_test_cases" ADD CONSTRAINT "staged_test_cases_test_run_id_test_runs_id_fk" FOREIGN KEY ("test_run_id") REFERENCES "public"."test_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "staged_test_cases_run_idx" ON "staged_test_cases" USING btree ("test_run_id","seq");