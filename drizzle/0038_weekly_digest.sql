ALTER TYPE "public"."channel_kind" ADD VALUE 'email';--> statement-breakpoint
ALTER TYPE "public"."email_kind" ADD VALUE 'notification';--> statement-breakpoint
ALTER TYPE "public"."email_kind" ADD VALUE 'digest';--> statement-breakpoint
ALTER TYPE "public"."webhook_event_type" ADD VALUE 'digest.weekly';--> statement-breakpoint
CREATE TABLE "digest_weeks" (
	"organization_id" uuid NOT NULL,
	"week" date NOT NULL,
	"sent_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "digest_weeks_organization_id_week_pk" PRIMARY KEY("organization_id","week")
);
--> statement-breakpoint
ALTER TABLE "webhook_endpoints" DROP CONSTRAINT "webhook_endpoints_channel_url";--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ALTER COLUMN "events" SET DEFAULT '["alerts","health","quarantine","digest"]'::jsonb;--> statement-breakpoint
ALTER TABLE "email_outbox" ADD COLUMN "html_encrypted" text;--> statement-breakpoint
ALTER TABLE "email_outbox" ADD COLUMN "headers_encrypted" text;--> statement-breakpoint
ALTER TABLE "members" ADD COLUMN "weekly_digest" boolean;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "email_addresses" text[];--> statement-breakpoint
ALTER TABLE "digest_weeks" ADD CONSTRAINT "digest_weeks_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_email_addresses" CHECK (("webhook_endpoints"."kind"::text = 'email') = ("webhook_endpoints"."email_addresses" is not null));--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_channel_url" CHECK (("webhook_endpoints"."kind"::text in ('webhook', 'email')) = ("webhook_endpoints"."url_encrypted" is null));