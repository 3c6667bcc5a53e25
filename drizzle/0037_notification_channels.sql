CREATE TYPE "public"."channel_kind" AS ENUM('webhook', 'slack', 'teams');--> statement-breakpoint
ALTER TYPE "public"."webhook_event_type" ADD VALUE 'test.message';--> statement-breakpoint
ALTER TABLE "webhook_endpoints" DROP CONSTRAINT "webhook_endpoints_one_signing_secret";--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "kind" "channel_kind" DEFAULT 'webhook' NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "url_encrypted" text;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "events" jsonb DEFAULT '["alerts","health","quarantine"]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "owner_filter" text;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_channel_url" CHECK (("webhook_endpoints"."kind" = 'webhook') = ("webhook_endpoints"."url_encrypted" is null));--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_one_signing_secret" CHECK ("webhook_endpoints"."kind" <> 'webhook' or ("webhook_endpoints"."signing_secret_encrypted" is null) <> ("webhook_endpoints"."signing_secret" is null));