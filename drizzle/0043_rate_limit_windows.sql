CREATE TABLE "rate_limit_windows" (
	"counter" text NOT NULL,
	"key_id" text NOT NULL,
	"organization_id" uuid,
	"revoked" boolean DEFAULT false NOT NULL,
	"window_started_at" timestamp (3) with time zone NOT NULL,
	"requests" integer NOT NULL,
	CONSTRAINT "rate_limit_windows_counter_key_id_pk" PRIMARY KEY("counter","key_id")
);
--> statement-breakpoint
ALTER TABLE "rate_limit_windows" ADD CONSTRAINT "rate_limit_windows_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;