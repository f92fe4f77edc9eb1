-- The indexes differential_hnsw.sql searches (built once per server: HNSW levels are random).
\set ON_ERROR_STOP on
CREATE INDEX items_l2 ON items USING hnsw (embedding vector_l2_ops) WITH (m = 8, ef_construction = 40);
CREATE INDEX items_ip ON items USING hnsw (embedding vector_ip_ops) WITH (m = 8, ef_construction = 40);
CREATE INDEX items_cos ON items USING hnsw (embedding vector_cosine_ops) WITH (m = 8, ef_construction = 40);
CREATE INDEX items_l1 ON items USING hnsw (embedding vector_l1_ops) WITH (m = 8, ef_construction = 40);
CREATE INDEX items_half ON items USING hnsw (half halfvec_l2_ops) WITH (m = 8, ef_construction = 40);
CREATE TABLE items_ivf AS SELECT id, embedding FROM items;
CREATE INDEX items_ivf_l2 ON items_ivf USING ivfflat (embedding vector_l2_ops) WITH (lists = 50);
ANALYZE items, items_ivf;
