-- calico 0.2 -> 0.3: calico_stats() reports the reads of calico.lookahead (one more column).
-- CREATE EXTENSION runs calico--0.1.sql, calico--0.1--0.2.sql and then this script.
\echo Use "ALTER EXTENSION calico UPDATE TO '0.3'" to load this file. \quit

DROP FUNCTION calico_stats();
CREATE FUNCTION calico_stats(
    OUT hits bigint,              -- reads served by a hint validated by ReadRecentBuffer
    OUT misses bigint,            -- reads that took ReadBufferExtended (no hint, or stale)
    OUT stale bigint,             -- of the misses: a hint was there but no longer held the block
    OUT uncovered bigint,         -- reads with no array to record into (relation slots or chunks)
    OUT prefetch_reads bigint,    -- asynchronous reads started by the group prefetch
    OUT prefetch_resident bigint, -- prefetch candidates skipped: their hint named a valid buffer
    OUT prefetch_used bigint,     -- reads served by a buffer the group prefetch had pinned
    OUT prefetch_skipped bigint,  -- groups not looked at: the previous ones were all resident
    OUT prefetch_abandoned bigint, -- aborts that found prefetched reads held (the resource owner released them)
    OUT relations integer,        -- relation slots in use
    OUT max_relations integer,
    OUT chunks_used integer,      -- hint chunks in use (each maps calico_chunk_blocks blocks)
    OUT chunks_total integer,
    OUT optimistic_reads bigint,  -- index tuples read under a pin without the content lock, validated
    OUT optimistic_retries bigint, -- of the tries: validation failed (a writer), read again locked
    OUT lookahead_reads bigint)   -- reads a search asked the kernel for ahead of its expansion (calico.lookahead)
RETURNS record
AS 'MODULE_PATHNAME', 'calico_stats'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
