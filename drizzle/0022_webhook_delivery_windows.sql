CREATE TABLE "webhook_delivery_windows" (
	"organization_id" uuid PRIMARY KEY NOT NULL,
	"window_started_at" timestamp (3) with time zone NOT NULL,
	"deliveries" integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE "webhook_delivery_windows" ADD CONSTRAINT "webhook_delivery_windows_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;