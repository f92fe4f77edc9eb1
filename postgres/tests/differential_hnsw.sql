-- HNSW searches on the indexes of one server: run once per setting of calico's knobs; the
-- output must not change with them. Needs differential_data.sql and differential_index.sql.
\set ON_ERROR_STOP on
SET enable_seqscan = off;
SET hnsw.ef_search = 40;
SELECT 'hnsw-l2', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items ORDER BY embedding <-> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
SELECT 'hnsw-ip', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items ORDER BY embedding <#> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
SELECT 'hnsw-cos', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items ORDER BY embedding <=> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
SELECT 'hnsw-l1', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items ORDER BY embedding <+> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
SELECT 'hnsw-half', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items ORDER BY half <-> q.half LIMIT 10) n) FROM queries q ORDER BY q.id;
SET ivfflat.probes = 5;
SELECT 'ivf-l2', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items_ivf ORDER BY embedding <-> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
