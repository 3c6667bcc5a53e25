-- Failures grouped by cause (docs/failure-groups.md). Runs stored before this version have no
-- signatures: their failures are not grouped.
CREATE TABLE "failure_groups" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "failure_groups_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"project_id" uuid NOT NULL,
	"signature" text NOT NULL,
	"message" text NOT NULL,
	"occurrences" integer DEFAULT 0 NOT NULL,
	"tests_count" integer DEFAULT 0 NOT NULL,
	"first_seen_at" timestamp (3) with time zone NOT NULL,
	"last_seen_at" timestamp (3) with time zone NOT NULL,
	"sample_test_case_id" bigint NOT NULL,
	"sample_message" text,
	"sample_text" text
);
--> statement-breakpoint
CREATE TABLE "test_failure_groups" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "test_failure_groups_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"test_id" uuid NOT NULL,
	"signature" text NOT NULL,
	"message" text NOT NULL,
	"occurrences" integer DEFAULT 0 NOT NULL,
	"first_seen_at" timestamp (3) with time zone NOT NULL,
	"last_seen_at" timestamp (3) with time zone NOT NULL,
	"sample_test_case_id" bigint NOT NULL,
	"sample_message" text,
	"sample_text" text
);
--> statement-breakpoint
ALTER TABLE "test_cases" ADD COLUMN "failure_signature" text;--> statement-breakpoint
ALTER TABLE "failure_groups" ADD CONSTRAINT "failure_groups_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "test_failure_groups" ADD CONSTRAINT "test_failure_groups_test_id_tests_id_fk" FOREIGN KEY ("test_id") REFERENCES "public"."tests"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "failure_groups_project_signature_key" ON "failure_groups" USING btree ("project_id","signature");--> statement-breakpoint
CREATE INDEX "failure_groups_project_keyset_idx" ON "failure_groups" USING btree ("project_id","last_seen_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE UNIQUE INDEX "test_failure_groups_test_signature_key" ON "test_failure_groups" USING btree ("test_id","signature");--> statement-breakpoint
CREATE INDEX "test_failure_groups_test_keyset_idx" ON "test_failure_groups" USING btree ("test_id","last_seen_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);