CREATE TABLE "organization_data_changes" (
	"organization_id" uuid NOT NULL,
	"transaction_id" bigint NOT NULL,
	CONSTRAINT "organization_data_changes_organization_id_transaction_id_pk" PRIMARY KEY("organization_id","transaction_id")
);
--> statement-breakpoint
CREATE TABLE "organization_deadlines" (
	"organization_id" uuid NOT NULL,
	"at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "organization_deadlines_organization_id_at_pk" PRIMARY KEY("organization_id","at")
);
--> statement-breakpoint
ALTER TABLE "organizations" ADD COLUMN "data_version" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "organization_deadlines" ADD CONSTRAINT "organization_deadlines_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- The data version of an organization (docs/conditional-requests.md): every committed transaction
-- that changes a row its /api/v1 GETs show adds one, whichever code path wrote it. Statement
-- triggers (one call per statement, not per row) note the organizations a statement touched;
-- a deferred trigger bumps each one once, at commit, so that concurrent writers of one
-- organization (two projects' runs) wait for each other's commit only, never for a whole
-- transaction. Cases, suites, failure groups (per project and per test) and health transitions are
-- written only by storeTestRun, in the transaction that marks their run processed (its row's
-- trigger notes the organization), and deleted only with their run, test or project: they carry
-- no trigger of their own (a statement trigger's transition table of their wide rows, stack traces
-- included, cost run processing a quarter of its time in bench:etags).
CREATE FUNCTION note_organization_changes(p_organization_ids uuid[]) RETURNS void
LANGUAGE sql VOLATILE AS $$
  INSERT INTO organization_data_changes (organization_id, transaction_id)
  SELECT DISTINCT o, txid_current() FROM unnest(p_organization_ids) o WHERE o IS NOT NULL
  ON CONFLICT DO NOTHING
$$;
--> statement-breakpoint
CREATE FUNCTION bump_organization_data_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE organizations SET data_version = data_version + 1 WHERE id = NEW.organization_id;
  DELETE FROM organization_data_changes WHERE organization_id = NEW.organization_id AND transaction_id = NEW.transaction_id;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER organization_data_changes_bump AFTER INSERT ON organization_data_changes
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_organization_data_version();
--> statement-breakpoint
-- The organization's own row (its name, time zone…): bumped in the same update.
CREATE FUNCTION organizations_data_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.data_version = OLD.data_version THEN NEW.data_version := OLD.data_version + 1; END IF;
  RETURN NEW;
END $$;
--> statement-breakpoint
CREATE TRIGGER organizations_data_version BEFORE UPDATE ON organizations
  FOR EACH ROW EXECUTE FUNCTION organizations_data_version();
--> statement-breakpoint
-- Tables that carry their organization.
CREATE FUNCTION organization_rows_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM note_organization_changes(ARRAY(SELECT DISTINCT organization_id FROM old_rows));
  ELSE
    PERFORM note_organization_changes(ARRAY(SELECT DISTINCT organization_id FROM new_rows));
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- Tables that carry their project. The distinct parents first, then one primary-key lookup each:
-- the planner knows nothing of a transition table's size, and a join against it could read the
-- whole parent table for every statement.
CREATE FUNCTION project_rows_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM note_organization_changes(ARRAY(SELECT (SELECT p.organization_id FROM projects p WHERE p.id = n.project_id) FROM (SELECT DISTINCT project_id FROM old_rows) n));
  ELSE
    PERFORM note_organization_changes(ARRAY(SELECT (SELECT p.organization_id FROM projects p WHERE p.id = n.project_id) FROM (SELECT DISTINCT project_id FROM new_rows) n));
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- Tables that carry their alert.
CREATE FUNCTION alert_rows_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM note_organization_changes(ARRAY(SELECT (SELECT a.organization_id FROM alerts a WHERE a.id = n.alert_id) FROM (SELECT DISTINCT alert_id FROM old_rows) n));
  ELSE
    PERFORM note_organization_changes(ARRAY(SELECT (SELECT a.organization_id FROM alerts a WHERE a.id = n.alert_id) FROM (SELECT DISTINCT alert_id FROM new_rows) n));
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- A snooze's or a quarantine's end changes what the GETs show by the passing of time alone.
CREATE FUNCTION alert_deadlines() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO organization_deadlines (organization_id, at)
  SELECT DISTINCT organization_id, snoozed_until FROM new_rows WHERE snoozed_until IS NOT NULL
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION test_deadline() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO organization_deadlines (organization_id, at)
  SELECT p.organization_id, NEW.quarantine_expires_at FROM projects p WHERE p.id = NEW.project_id
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- Tests: every run upserts each of its tests (10,000 rows for a 10,000-case run), and a statement
-- trigger's transition table of such wide rows cost run processing about a tenth of its time
-- (bench:etags). A row trigger that notes the project's organization once per transaction
-- (remembered in a transaction-local setting; a run touches one project) costs a function call
-- per row instead.
CREATE FUNCTION test_row_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_project uuid := CASE WHEN TG_OP = 'DELETE' THEN OLD.project_id ELSE NEW.project_id END;
BEGIN
  IF current_setting('cia.data_version_noted_project', true) IS DISTINCT FROM v_project::text THEN
    PERFORM note_organization_changes(ARRAY(SELECT p.organization_id FROM projects p WHERE p.id = v_project));
    PERFORM set_config('cia.data_version_noted_project', v_project::text, true);
  END IF;
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NEW;
END $$;
--> statement-breakpoint
CREATE TRIGGER api_keys_data_version_insert AFTER INSERT ON api_keys REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION organization_rows_changed();
--> statement-breakpoint
CREATE TRIGGER api_keys_data_version_update AFTER UPDATE ON api_keys REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION organization_rows_changed();
--> statement-breakpoint
CREATE TRIGGER api_keys_data_version_delete AFTER DELETE ON api_keys REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION organization_rows_changed();
--> statement-breakpoint
CREATE TRIGGER projects_data_version_insert AFTER INSERT ON projects REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION organization_rows_changed();
--> statement-breakpoint
CREATE TRIGGER projects_data_version_update AFTER UPDATE ON projects REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION organization_rows_changed();
--> statement-breakpoint
CREATE TRIGGER projects_data_version_delete AFTER DELETE ON projects REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION organization_rows_changed();
--> statement-breakpoint
CREATE TRIGGER alerts_data_version_insert AFTER INSERT ON alerts REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION organization_rows_changed();
--> statement-breakpoint
CREATE TRIGGER alerts_data_version_update AFTER UPDATE ON alerts REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION organization_rows_changed();
--> statement-breakpoint
CREATE TRIGGER alerts_data_version_delete AFTER DELETE ON alerts REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION organization_rows_changed();
--> statement-breakpoint
CREATE TRIGGER test_runs_data_version_insert AFTER INSERT ON test_runs REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION project_rows_changed();
--> statement-breakpoint
CREATE TRIGGER test_runs_data_version_update AFTER UPDATE ON test_runs REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION project_rows_changed();
--> statement-breakpoint
CREATE TRIGGER test_runs_data_version_delete AFTER DELETE ON test_runs REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION project_rows_changed();
--> statement-breakpoint
CREATE TRIGGER tests_data_version_insert BEFORE INSERT ON tests
  FOR EACH ROW EXECUTE FUNCTION test_row_changed();
--> statement-breakpoint
CREATE TRIGGER tests_data_version_update BEFORE UPDATE ON tests
  FOR EACH ROW EXECUTE FUNCTION test_row_changed();
--> statement-breakpoint
CREATE TRIGGER tests_data_version_delete BEFORE DELETE ON tests
  FOR EACH ROW EXECUTE FUNCTION test_row_changed();
--> statement-breakpoint
CREATE TRIGGER alert_events_data_version_insert AFTER INSERT ON alert_events REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION alert_rows_changed();
--> statement-breakpoint
CREATE TRIGGER alert_events_data_version_update AFTER UPDATE ON alert_events REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION alert_rows_changed();
--> statement-breakpoint
CREATE TRIGGER alert_events_data_version_delete AFTER DELETE ON alert_events REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION alert_rows_changed();
--> statement-breakpoint
CREATE TRIGGER alerts_deadlines_insert AFTER INSERT ON alerts REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION alert_deadlines();
--> statement-breakpoint
CREATE TRIGGER alerts_deadlines_update AFTER UPDATE ON alerts REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION alert_deadlines();
--> statement-breakpoint
CREATE TRIGGER tests_deadlines_insert AFTER INSERT ON tests
  FOR EACH ROW WHEN (NEW.quarantine_expires_at IS NOT NULL) EXECUTE FUNCTION test_deadline();
--> statement-breakpoint
CREATE TRIGGER tests_deadlines_update AFTER UPDATE ON tests
  FOR EACH ROW WHEN (NEW.quarantine_expires_at IS NOT NULL AND NEW.quarantine_expires_at IS DISTINCT FROM OLD.quarantine_expires_at) EXECUTE FUNCTION test_deadline();
