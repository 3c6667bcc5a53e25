-- Split plans (docs/splitting.md): the first plan made for a build's key, answered to every shard
-- of the build for 24 hours. One row per (project, key); an expired row is replaced by the next plan.
CREATE TABLE "split_plans" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"project_id" uuid NOT NULL,
	"key" text NOT NULL,
	"by" text NOT NULL,
	"variant" text DEFAULT '' NOT NULL,
	"shard_count" integer NOT NULL,
	"items_count" integer NOT NULL,
	"items_hash" text NOT NULL,
	"unknown_count" integer NOT NULL,
	"shards" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "split_plans" ADD CONSTRAINT "split_plans_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "split_plans_project_key" ON "split_plans" USING btree ("project_id","key");--> statement-breakpoint
CREATE INDEX "split_plans_expires_idx" ON "split_plans" USING btree ("expires_at");