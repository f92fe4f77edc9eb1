-- Searches for differential_ext.sh: run on stock pgvector (vanilla) and on the extension
-- (ext) over the same data directory; the output must be identical.
\set ON_ERROR_STOP on
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET hnsw.ef_search = 40;
SELECT 'hnsw-l2', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items ORDER BY embedding <-> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
SELECT 'hnsw-ip', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items ORDER BY embedding <#> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
SELECT 'hnsw-cos', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items ORDER BY embedding <=> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
SELECT 'hnsw-half', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items ORDER BY half <-> q.half LIMIT 10) n) FROM queries q ORDER BY q.id;
SELECT 'hnsw-unlogged', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items_unlogged ORDER BY embedding <-> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
-- Filtered: without iterative scans (fewer than 10 rows may come back), then both orders.
SELECT 'hnsw-filter', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items WHERE cat = 3 ORDER BY embedding <-> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
SET hnsw.iterative_scan = strict_order;
SELECT 'hnsw-iter-strict', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items WHERE cat = 3 ORDER BY embedding <-> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
SET hnsw.iterative_scan = relaxed_order;
SELECT 'hnsw-iter-relaxed', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items WHERE cat = 7 ORDER BY embedding <-> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
-- Iterative scans that end at a limit: a filter 67 rows of 20,000 pass, so the scan goes on
-- until its memory limit (work_mem x hnsw.scan_mem_multiplier) or hnsw.max_scan_tuples stops
-- it, mostly before it has found 10. Where the memory limit stops it depends on the bytes the
-- scan has allocated, its visited set's included: a visited set of other memory use (one tried
-- used 1.8x the bytes per TID) changes these answers.
SET hnsw.iterative_scan = strict_order;
SET work_mem = '256kB';
SELECT 'hnsw-iter-memlimit', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items WHERE id % 300 = 7 ORDER BY embedding <-> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
SET hnsw.iterative_scan = relaxed_order;
SELECT 'hnsw-iter-memlimit-relaxed', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items WHERE id % 300 = 7 ORDER BY embedding <-> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
RESET work_mem;
SET hnsw.max_scan_tuples = 3000;
SELECT 'hnsw-iter-tuplelimit', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items WHERE id % 300 = 7 ORDER BY embedding <-> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
RESET hnsw.max_scan_tuples;
RESET hnsw.iterative_scan;
SET ivfflat.probes = 5;
SELECT 'ivf-l2', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items_ivf ORDER BY embedding <-> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
SET ivfflat.iterative_scan = relaxed_order;
SELECT 'ivf-iter', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items_ivf WHERE cat = 3 ORDER BY embedding <-> q.embedding LIMIT 10) n) FROM queries q ORDER BY q.id;
RESET ivfflat.iterative_scan;
SELECT 'counts', (SELECT count(*) FROM items), (SELECT count(*) FROM items_unlogged), (SELECT count(*) FROM items_ivf);
