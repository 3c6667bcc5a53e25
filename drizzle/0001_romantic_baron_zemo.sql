DROP INDEX "alert_events_alert_keyset_idx";--> statement-breakpoint
DROP INDEX "alerts_org_keyset_idx";--> statement-breakpoint
DROP INDEX "alerts_project_keyset_idx";--> statement-breakpoint
DROP INDEX "projects_org_keyset_idx";--> statement-breakpoint
CREATE INDEX "alert_events_alert_keyset_idx" ON "alert_events" USING btree ("alert_id","triggered_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "alerts_org_keyset_idx" ON "alerts" USING btree ("organization_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "alerts_project_keyset_idx" ON "alerts" USING btree ("project_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "projects_org_keyset_idx" ON "projects" USING btree ("organization_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);