CREATE TABLE "project_codeowners" (
	"project_id" uuid PRIMARY KEY NOT NULL,
	"content" text NOT NULL,
	"rules_count" integer NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "owners" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "project_codeowners" ADD CONSTRAINT "project_codeowners_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tests_owners_idx" ON "tests" USING gin ("owners");