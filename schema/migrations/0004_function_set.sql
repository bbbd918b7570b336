-- n8n-nodes-operation-ledger, migration 0004: which set of functions is installed.
--
-- Tables, indexes and constraints live in schema/migrations/ (applied once each, in order). The
-- functions live one per file in schema/functions/ (CREATE OR REPLACE) and are re-applied as a set
-- whenever they change: by the nodes' migrator under its advisory lock, or by schema/apply.sql.
-- This one-row table records which set is installed: the package version that installed it and a
-- SHA-256 over the function files, so a process never runs against functions other than its own
-- (and never replaces a newer package's functions with older ones).

SET search_path TO :"schema";

CREATE TABLE function_set (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    package_version text NOT NULL,
    functions_hash  text NOT NULL,
    applied_at      timestamptz NOT NULL DEFAULT now()
);

INSERT INTO ol_schema_migrations (version, name) VALUES (4, 'function_set') ON CONFLICT (version) DO NOTHING;
