-- Data for differential_ext.sh (deterministic: setseed). Built on vanilla (stock pgvector).
\set ON_ERROR_STOP on
SELECT setseed(0.17);
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE items (id int PRIMARY KEY, cat int, embedding vector(32), half halfvec(32));
INSERT INTO items
  SELECT i, i % 10, e, e::halfvec FROM (
    SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, 32) WHERE i > 0)::vector e
    FROM generate_series(1, 20000) i) s;
CREATE TABLE queries AS SELECT id, embedding, half FROM items WHERE id % 500 = 0;
-- The same rows, logged and unlogged, each with HNSW and IVFFlat indexes.
CREATE UNLOGGED TABLE items_unlogged AS SELECT * FROM items;
CREATE INDEX items_l2 ON items USING hnsw (embedding vector_l2_ops) WITH (m = 8, ef_construction = 40);
CREATE INDEX items_ip ON items USING hnsw (embedding vector_ip_ops) WITH (m = 8, ef_construction = 40);
CREATE INDEX items_cos ON items USING hnsw (embedding vector_cosine_ops) WITH (m = 8, ef_construction = 40);
CREATE INDEX items_half ON items USING hnsw (half halfvec_l2_ops) WITH (m = 8, ef_construction = 40);
CREATE INDEX items_unlogged_l2 ON items_unlogged USING hnsw (embedding vector_l2_ops) WITH (m = 8, ef_construction = 40);
CREATE TABLE items_ivf AS SELECT id, cat, embedding FROM items;
CREATE INDEX items_ivf_l2 ON items_ivf USING ivfflat (embedding vector_l2_ops) WITH (lists = 50);
CREATE INDEX ON items (cat);
CREATE INDEX ON items_ivf (cat);
ANALYZE items, items_ivf, items_unlogged;
