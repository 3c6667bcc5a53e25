-- An organization's data version (src/services/shared/data-versions.ts) as a function: every GET
-- of /api/v1 reads it in its first statement, and as two scalar subqueries it more than doubled
-- that statement's planning. A PL/pgSQL function's statement is planned once per session and its
-- plan kept, so the GET's statement plans one function call instead.
CREATE FUNCTION organization_data_version(org uuid, as_of timestamptz) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
  version text;
BEGIN
  SELECT o.data_version::text || ':' || coalesce(
           (SELECT (extract(epoch FROM max(d.at)) * 1000)::bigint::text
              FROM organization_deadlines d
             WHERE d.organization_id = o.id AND d.at <= as_of),
           '')
    INTO version
    FROM organizations o
   WHERE o.id = org;
  RETURN version;
END;
$$;
