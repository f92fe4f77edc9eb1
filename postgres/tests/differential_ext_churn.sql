-- Run on ext between the two comparisons of differential_ext.sh: inserts through the HNSW and
-- IVFFlat insert paths (whose searches read through calico), DELETE and VACUUM, REINDEX (new
-- relfilenodes: every hint of the old ones goes stale), TRUNCATE and refill of the unlogged
-- table, and DROP / CREATE of an index. Deterministic (setseed), so vanilla's later answers
-- on the same data must be ext's.
\set ON_ERROR_STOP on
SELECT setseed(0.29);
SET enable_seqscan = off;
INSERT INTO items
  SELECT i, i % 10, e, e::halfvec FROM (
    SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, 32) WHERE i > 0)::vector e
    FROM generate_series(20001, 22000) i) s;
INSERT INTO items_ivf SELECT id, cat, embedding FROM items WHERE id > 20000;
DELETE FROM items WHERE id % 37 = 0;
DELETE FROM items_ivf WHERE id % 41 = 0;
VACUUM items, items_ivf;
REINDEX INDEX items_ip;
TRUNCATE items_unlogged;
INSERT INTO items_unlogged SELECT * FROM items WHERE id % 2 = 0;
DROP INDEX items_cos;
CREATE INDEX items_cos ON items USING hnsw (embedding vector_cosine_ops) WITH (m = 8, ef_construction = 40);
ANALYZE items, items_ivf, items_unlogged;
