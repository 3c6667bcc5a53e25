-- GET /api/v1/projects/:id/test_runs?commit_sha=: a project's runs of one commit, a full SHA by equality (read in
-- keyset order), an abbreviated one by prefix (lower(commit_sha) LIKE 'abc1234%', which text_pattern_ops serves
-- whatever the database's collation). Without it the filter reads every run of the project.
CREATE INDEX "test_runs_project_commit_idx" ON "test_runs" USING btree ("project_id",lower("commit_sha") text_pattern_ops,"created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);