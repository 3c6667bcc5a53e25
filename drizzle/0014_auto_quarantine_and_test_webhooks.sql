CREATE TYPE "public"."webhook_event_type" AS ENUM('alert.triggered', 'test.quarantined', 'test.unquarantined', 'test.health_changed');--> statement-breakpoint
ALTER TABLE "notification_deliveries" ALTER COLUMN "alert_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "notification_deliveries" ALTER COLUMN "test_run_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD COLUMN "event_type" "webhook_event_type" DEFAULT 'alert.triggered' NOT NULL;--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD COLUMN "payload" jsonb;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "auto_quarantine_days" integer;--> statement-breakpoint
CREATE INDEX "notification_deliveries_test_events_idx" ON "notification_deliveries" USING btree ("test_run_id") WHERE "notification_deliveries"."attempts" = 0 and "notification_deliveries"."event_type" <> 'alert.triggered';