-- Deterministic data (setseed) and queries whose output must be identical on vanilla and
-- calico. Output: one line per query, unaligned.
\set ON_ERROR_STOP on
SELECT setseed(0.42);
CREATE EXTENSION IF NOT EXISTS vector;
DROP TABLE IF EXISTS t, items, queries;

CREATE TABLE t (id int PRIMARY KEY, k int, pad text, v float8);
INSERT INTO t SELECT i, (i * 7919) % 1000, repeat(md5(i::text), 1 + i % 8), random()
  FROM generate_series(1, 200000) i;
CREATE INDEX t_k ON t (k);
ANALYZE t;
SELECT 'seqscan', count(*), sum(k), sum(length(pad)), round(sum(v)::numeric, 6) FROM t;
SET enable_seqscan = off;
SELECT 'bitmapscan', count(*), sum(id), round(sum(v)::numeric, 6) FROM t WHERE k BETWEEN 100 AND 200;
SET enable_bitmapscan = off;
SELECT 'indexscan', count(*), sum(id), round(sum(v)::numeric, 6) FROM t WHERE k BETWEEN 300 AND 420;
SELECT 'indexonly', count(*), sum(k) FROM t WHERE k < 50;
RESET enable_seqscan;
RESET enable_bitmapscan;
UPDATE t SET v = v + 1 WHERE id % 10 = 0;
DELETE FROM t WHERE id % 97 = 0;
VACUUM t;
SELECT 'after-dml', count(*), round(sum(v)::numeric, 6), sum(length(pad)) FROM t;
SELECT 'sorted', string_agg(id::text, ',') FROM (SELECT id FROM t ORDER BY v DESC, id LIMIT 20) s;
TRUNCATE t;
INSERT INTO t SELECT i, i % 10, 'x', i FROM generate_series(1, 1000) i;
SELECT 'after-truncate', count(*), sum(v) FROM t;

CREATE TABLE items (id int PRIMARY KEY, embedding vector(32), half halfvec(32));
INSERT INTO items
  SELECT i, e, e::halfvec FROM (
    SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, 32) WHERE i > 0)::vector e
    FROM generate_series(1, 20000) i) s;
CREATE TABLE queries AS SELECT id, embedding, half FROM items WHERE id % 400 = 0;
SELECT 'exact-l2', string_agg(ids, ';' ORDER BY qid) FROM (
  SELECT q.id qid, (SELECT string_agg(id::text, ',' ORDER BY embedding <-> q.embedding, id)
                    FROM (SELECT id, embedding FROM items ORDER BY embedding <-> q.embedding, id LIMIT 10) n) ids
  FROM queries q) s;
