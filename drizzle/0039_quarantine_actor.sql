CREATE TYPE "public"."quarantine_via" AS ENUM('page', 'api', 'mcp', 'auto');--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "quarantine_via" "quarantine_via";--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "quarantine_actor_id" uuid;--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "quarantine_actor_name" text;--> statement-breakpoint
ALTER TABLE "tests" ADD COLUMN "quarantine_actor_email" text;--> statement-breakpoint
-- Auto-quarantines in force came through the service itself; manual ones made before this migration name nobody (null).
UPDATE "tests" SET "quarantine_via" = 'auto' WHERE "quarantine_source" = 'auto';