/**
 * Bulk dataset for the API benchmark, written with set-based SQL (generate_series / INSERT … SELECT)
 * after the organization and its API key were created through the real service.
 *
 * Shape: 500 projects × 4 alerts; 20,000 test runs (5,000 on one "hot" project, the rest spread
 * over the other 499, numbered per project); 100,000 alert events of which 60,000 belong to one
 * alert of the hot project, so GET /alerts/:id/events has a page 50,000 rows deep. Timestamps are
 * spread over months with many exact ties (projects in groups of 5, the 4 alerts of a project,
 * runs in groups of 4, events in groups of 3 and across the alerts of one run), so the id
 * tiebreaker of the keyset pagination is exercised.
 */
import type pg from "pg";

export const DATASET = {
  organizations: 1,
  projects: 500,
  alertsPerProject: 4,
  testRuns: 20_000,
  hotProjectRuns: 5_000,
  alertEvents: 100_000,
  hotAlertEvents: 60_000,
} as const;

export type SeededIds = { hotAlertId: string; hotProjectId: string };

export async function seedDataset(client: pg.Client, organizationId: string): Promise<SeededIds> {
  const d = DATASET;
  const otherProjects = d.projects - 1;
  const otherRuns = d.testRuns - d.hotProjectRuns;
  const otherEvents = d.alertEvents - d.hotAlertEvents;

  // Projects: created over ~2 years, 5 per timestamp. Random upload-token hashes.
  await client.query(
    `insert into projects (organization_id, name, description, upload_token_hash, created_at, updated_at)
     select $1::uuid,
            'project-' || lpad(i::text, 3, '0'),
            case when i % 3 = 0 then null else 'Benchmark project number ' || i || ', a service with a CI pipeline' end,
            encode(sha256(convert_to(gen_random_uuid()::text || i, 'UTF8')), 'hex'),
            timestamptz '2024-06-01 00:00:00+00' + (i / 5) * interval '7 hours 13 minutes',
            timestamptz '2024-06-01 00:00:00+00' + (i / 5) * interval '7 hours 13 minutes'
     from generate_series(0, $2::int - 1) as i`,
    [organizationId, d.projects],
  );

  // Four alerts per project, created with the project (so 4 share a timestamp, as createProject does).
  // About 10 % disabled and 5 % snoozed into the future, so status=active filters some out.
  await client.query(
    `insert into alerts (organization_id, project_id, alert_type, active, snoozed_until, created_at, updated_at)
     select p.organization_id, p.id, t.alert_type,
            abs(hashtext(p.id::text || t.alert_type::text)) % 10 <> 0,
            case when abs(hashtext(t.alert_type::text || p.id::text)) % 20 = 0 then now() + interval '1 week' end,
            p.created_at, p.created_at
     from projects p cross join unnest(enum_range(null::alert_type)) as t(alert_type)`,
  );

  // Hot project = the oldest one; its failure_rate_spike alert is the hot alert (kept active).
  const hot = await client.query<{ project_id: string; alert_id: string }>(
    `select p.id as project_id, a.id as alert_id
     from projects p join alerts a on a.project_id = p.id and a.alert_type = 'failure_rate_spike'
     order by p.created_at, p.id limit 1`,
  );
  const { project_id: hotProjectId, alert_id: hotAlertId } = hot.rows[0]!;
  await client.query(`update alerts set active = true, snoozed_until = null where id = $1`, [hotAlertId]);

  // Test runs: 5,000 on the hot project, the rest round-robin over the others; numbered 1.. per
  // project in creation order; created over ~4 months, 4 runs per timestamp.
  await client.query(
    `with p as (
       select id, row_number() over (order by created_at, id) - 1 as idx from projects
     ), g as (
       select i, case when i < $1::int then 0 else 1 + (i - $1::int) % $2::int end as pidx
       from generate_series(0, $3::int - 1) as i
     ), r as (
       select g.i, p.id as project_id, row_number() over (partition by g.pidx order by g.i) as number,
              timestamptz '2026-06-01 00:00:00+00' + (g.i / 4) * interval '2 minutes 30 seconds' as created_at,
              (20000 + (g.i * 7919) % 600000) as duration_ms,
              (150 + (g.i * 31) % 400) as tests_count,
              case when g.i % 11 = 0 then 1 + g.i % 5 else 0 end as failed_count,
              case when g.i % 97 = 0 then 1 else 0 end as errored_count,
              (g.i * 13) % 9 as skipped_count
       from g join p on p.idx = g.pidx
     )
     insert into test_runs (project_id, number, status, result, branch, commit_sha, build_id, build_url, tags,
                            started_at, created_at, processed_at, duration_ms,
                            tests_count, passed_count, failed_count, errored_count, skipped_count, suites_count)
     select project_id, number, 'processed',
            (case when errored_count > 0 then 'tests_errored' when failed_count > 0 then 'tests_failed' else 'tests_passed' end)::run_result,
            (array['main', 'main', 'main', 'develop', 'feature/checkout-flow', 'fix/flaky-io-timeouts'])[1 + i % 6],
            left(encode(sha256(convert_to('commit-' || i, 'UTF8')), 'hex'), 40),
            'build-' || (100000 + i),
            'https://ci.example.com/acme/builds/' || (100000 + i),
            case when i % 3 = 0 then '["nightly", "linux"]'::jsonb when i % 3 = 1 then '["pr"]'::jsonb else '[]'::jsonb end,
            created_at - duration_ms * interval '1 millisecond' - interval '20 seconds',
            created_at,
            created_at + interval '3 seconds',
            duration_ms,
            tests_count, tests_count - failed_count - errored_count - skipped_count, failed_count, errored_count, skipped_count,
            3 + i % 7
     from r
     order by i`,
    [d.hotProjectRuns, otherProjects, d.testRuns],
  );
  if (otherRuns / otherProjects < 1) throw new Error("dataset: every project needs at least one run");

  await client.query(
    `update projects p
     set test_runs_count = s.runs, last_test_run_at = s.last_at, latest_result = s.latest_result
     from (
       select distinct on (project_id) project_id, count(*) over (partition by project_id) as runs,
              created_at as last_at, result as latest_result
       from test_runs order by project_id, number desc
     ) s
     where s.project_id = p.id`,
  );

  // Hot alert: 60,000 events over the hot project's runs (12 per run, in 4 groups of 3 sharing a
  // millisecond). Inserted in time order with ties shuffled, so ids mostly follow time.
  await client.query(
    `with runs as (
       select id, created_at, row_number() over (order by number) - 1 as k from test_runs where project_id = $2::uuid
     ), e as (
       select j, r.id as test_run_id, r.created_at + interval '4 seconds' + ((j % 12) / 3) * interval '250 milliseconds' as triggered_at
       from generate_series(0, $3::int - 1) as j
       join runs r on r.k = (j / 12) % (select count(*) from runs)
     )
     insert into alert_events (alert_id, test_run_id, metadata, triggered_at)
     select $1::uuid, test_run_id,
            jsonb_build_object('check', 'failure_rate_spike', 'window_runs', 20, 'threshold', 0.2,
                               'observed', round((0.2 + (j % 80) / 100.0)::numeric, 2),
                               'failed_tests', jsonb_build_array('checkout/payment_spec.rb:' || (j % 97), 'api/orders_test.go:TestCreate')),
            triggered_at
     from e
     order by triggered_at, random()`,
    [hotAlertId, hotProjectId, d.hotAlertEvents],
  );

  // The other 40,000 events round-robin over the other 1,999 alerts, each on a run of its own
  // project; alerts of one project tripping on the same run share the timestamp.
  await client.query(
    `with a as (
       select a.id, a.project_id, a.alert_type, p.test_runs_count, row_number() over (order by a.id) - 1 as idx, count(*) over () as n
       from alerts a join projects p on p.id = a.project_id
       where a.id <> $1::uuid
     ), e as (
       select k, a.id as alert_id, a.alert_type, a.project_id, 1 + (k / a.n) % a.test_runs_count as run_number
       from generate_series(0, $2::int - 1) as k
       join a on a.idx = k % a.n
     )
     insert into alert_events (alert_id, test_run_id, metadata, triggered_at)
     select e.alert_id, t.id,
            jsonb_build_object('check', e.alert_type, 'observed', round(((k % 90) / 100.0)::numeric, 2), 'baseline', 0.05),
            t.created_at + interval '4 seconds'
     from e join test_runs t on t.project_id = e.project_id and t.number = e.run_number
     order by t.created_at, random()`,
    [hotAlertId, otherEvents],
  );

  await client.query(
    `update alerts a set events_count = s.events, last_notified_at = s.last_at
     from (select alert_id, count(*) as events, max(triggered_at) as last_at from alert_events group by alert_id) s
     where s.alert_id = a.id`,
  );

  await client.query("analyze");
  return { hotAlertId, hotProjectId };
}

/** Row counts as stored, for the report (and a check that the seed did what it says). */
export async function countDataset(client: pg.Client, hotAlertId: string) {
  const { rows } = await client.query<Record<string, string>>(
    `select (select count(*) from organizations) as organizations,
            (select count(*) from api_keys) as api_keys,
            (select count(*) from projects) as projects,
            (select count(*) from alerts) as alerts,
            (select count(*) from alerts where active and (snoozed_until is null or snoozed_until <= now())) as active_alerts,
            (select count(*) from test_runs) as test_runs,
            (select count(*) from alert_events) as alert_events,
            (select count(*) from alert_events where alert_id = $1::uuid) as hot_alert_events,
            (select count(*) from (select triggered_at from alert_events where alert_id = $1::uuid group by triggered_at having count(*) > 1) t) as hot_tied_timestamps`,
    [hotAlertId],
  );
  return Object.fromEntries(Object.entries(rows[0]!).map(([k, v]) => [k, Number(v)]));
}

/** The tests project: 20,000 tests and 5,000 runs, about 5 % flaky and 1 % broken. */
export const TESTS_DATASET = { tests: 20_000, testRuns: 5_000 } as const;

/**
 * One project for the tests list: its runs, and tests as run processing leaves them (impact,
 * rates, durations, health spread over the range; a few share an impact, so ties are broken by id).
 */
export async function seedTestsProject(client: pg.Client, organizationId: string): Promise<string> {
  const { rows } = await client.query<{ id: string }>(
    `insert into projects (organization_id, name, upload_token_hash, test_runs_count, tests_count, created_at, updated_at)
     values ($1::uuid, 'tests-project', encode(sha256(convert_to(gen_random_uuid()::text, 'UTF8')), 'hex'), $2::int, $3::int, now(), now())
     returning id`,
    [organizationId, TESTS_DATASET.testRuns, TESTS_DATASET.tests],
  );
  const projectId = rows[0]!.id;
  await client.query(
    `insert into test_runs (project_id, number, status, result, branch, commit_sha, created_at, processed_at, tests_count, passed_count)
     select $1::uuid, i, 'processed', 'tests_passed', 'main', md5(i::text), now() - (($2::int - i) * interval '20 minutes'), now() - (($2::int - i) * interval '20 minutes'), 4000, 4000
     from generate_series(1, $2::int) as i`,
    [projectId, TESTS_DATASET.testRuns],
  );
  await client.query(
    `insert into tests (id, project_id, name, classname, suite, health, executions_count, last_status, last_executed_at, last_failed_at, first_seen_at,
                        last_run_number, window_size, failure_rate, flip_rate, impact, duration_p50_ms, duration_p95_ms)
     select md5($1::text || i)::uuid, $1::uuid, 'test_' || i, 'com.acme.Module' || (i % 200) || 'Test', 'module-' || (i % 200),
            (case when i % 20 = 0 then 'flaky' when i % 100 = 1 then 'broken' else 'healthy' end)::test_health,
            1000 + i % 1000, 'passed', now(), case when i % 3 = 0 then now() - (i % 500) * interval '1 hour' end, now() - interval '60 days',
            $2::int, 50, (i % 51) / 50.0, (i % 37) / 49.0, i % 51, 10 + i % 900, 20 + i % 1800
     from generate_series(1, $3::int) as i`,
    [projectId, TESTS_DATASET.testRuns, TESTS_DATASET.tests],
  );
  await client.query("analyze tests");
  return projectId;
}
