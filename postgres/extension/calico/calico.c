/*-------------------------------------------------------------------------
 *
 * calico.c
 *	  Calico's array translation and group prefetch for index reads, as a
 *	  library loaded into an unmodified PostgreSQL 18 server.
 *
 * Principal entry points (through CalicoApi, calico_api.h):
 *	calico_read_buffer		-- ReadBufferExtended through block -> buffer hints
 *	calico_prefetch_group	-- asynchronous reads of a group's missing blocks
 *	calico_prefetch_release -- wait for and unpin the group's reads
 *	calico_read_hinted		-- calico_read_buffer with a hint looked up before
 *	calico_page_hints		-- the hints of a group of blocks (CPU prefetch)
 *	calico_optimistic_mask	-- whether a relation may be read without the
 *							   content lock (calico_api.h's optimistic reads)
 * SQL: calico_stats(), calico_reset() (calico--0.1.sql, calico--0.1--0.2.sql).
 *
 * Translation.  PostgreSQL finds a block's buffer through a shared hash table
 * (buf_table.c) under one of 128 partition LWLocks: a hash of the tag, a
 * shared lock acquire and release, a probe.  The Calico paper replaces that
 * with an array indexed by page id.  We cannot replace the server's table,
 * but we can avoid consulting it: per relation fork, a shared-memory array
 * maps block numbers to the buffer that last held the block, and
 * ReadRecentBuffer() (bufmgr.c) pins that buffer only if its tag is still
 * <relation, fork, block> and it is valid, under the buffer header spinlock.
 * So an array entry is a HINT, as LIPAH's frame hints are: it is never
 * trusted, only validated.  A hint that fails validation (the buffer was
 * evicted, the relation dropped or truncated, the relfilenode reused) costs
 * one header spinlock and then the normal ReadBufferExtended(), after which
 * the entry is overwritten with the buffer it returned.
 *
 * Invariants (the whole correctness argument rests on the first):
 *	I1. A read returns a buffer only if ReadRecentBuffer() validated it or
 *		ReadBufferExtended() returned it.  Nothing read from calico's shared
 *		memory is trusted beyond being a number in 1..NBuffers (checked).
 *		Hence a stale, torn or misplaced hint can cost time, never a wrong
 *		page: DROP, TRUNCATE, REINDEX (a new relfilenode), buffer eviction,
 *		crash recovery and redo on a standby all change a buffer's tag or
 *		validity through bufmgr, which ReadRecentBuffer() checks.
 *	I2. Hints are 32-bit atomic stores and loads: a reader sees some buffer
 *		number that was stored, never a torn one.
 *	I3. The directory (which slot holds which relation, which chunk backs
 *		which block range) changes only under CalicoLock held exclusively;
 *		each change of a slot's relation bumps the slot's epoch.  Backends
 *		cache slot numbers with the epoch they saw and drop the cache entry
 *		when the epoch moved.  A backend that raced with a change (read the
 *		epoch, then the slot was reassigned) may write a hint into a chunk
 *		that now serves another relation: by I1 that is harmless.
 *	I4. Temporary relations (local buffers) are never translated: hints
 *		name shared buffers only.
 *
 * Memory.  max_relations slots, each with a directory of CALICO_DIR_CHUNKS
 * chunk numbers; a chunk holds the hints of CALICO_CHUNK_BLOCKS consecutive
 * blocks.  Chunks come from a shared pool of calico.hint_chunks.  A block
 * beyond the directory, or with no chunk to be had, is read normally
 * ("uncovered").  When a new relation needs a slot and none is free, a clock
 * sweep over the slots (a referenced bit set by lookups) frees a victim and
 * returns its chunks to the pool; when the pool is empty, the same sweep
 * frees a slot other than the one asking.
 *
 * Group prefetch.  pgvector's HNSW search expands a node by reading its
 * neighbours' element tuples one after another; when those pages are not in
 * shared buffers each read waits for the disk.  calico_prefetch_group()
 * starts the group's missing reads at once through PostgreSQL 18's AIO:
 * StartReadBuffer() per block, inside pgaio_enter_batchmode() /
 * pgaio_exit_batchmode() so that the method (io_uring, or the I/O workers)
 * gets them as one submission.  Not PrefetchBuffer(): that only advises the
 * kernel (posix_fadvise) and still leaves a synchronous read into shared
 * buffers.  Not a read stream: it hands pages back in order and ramps up its
 * look-ahead from one block after each reset, while an expansion needs a
 * dozen unrelated blocks at once, in whatever order the search consumes
 * them.  A block whose hint names a valid buffer holding it is resident and
 * skipped without touching the buffer mapping table.
 *
 * Optimistic reads.  A reader holding a pin may read an index page without
 * its content lock and then validate what it read (the protocol and its
 * proof are in calico_api.h).  The version it validates against is the
 * page's LSN together with the content lock's exclusive bit, whose value in
 * the lock's state word is private to lwlock.c: calico_calibrate() measures
 * it once, at shared memory setup, on a lock of its own, and leaves
 * optimistic reads off if the measurement is not one bit clear of the shared
 * holders' count.
 *
 * Locking rules: CalicoLock is taken only to assign or free slots and chunks
 * and to read the directory in calico_stats(); no buffer pin, content lock or
 * staged I/O is held while it is taken (hints are recorded after
 * pgaio_exit_batchmode()), and nothing else is acquired while it is held.
 *
 * Copyright: the Calico project.  See docs/postgres/extension.md.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/aio.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procnumber.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "calico_api.h"

PG_MODULE_MAGIC_EXT(.name = "calico", .version = "0.1");

/* Hints of this many consecutive blocks form one chunk (16 KB of hints, 32 MB of relation). */
#define CALICO_CHUNK_BLOCKS 4096
/* Chunks per relation fork: 512 x 32 MB = 16 GB, md.c's 16 segments of 1 GB. */
#define CALICO_DIR_CHUNKS 512
/* The backend-local cache of relation -> slot. */
#define CALICO_LOCAL_CACHE 8
/* A chunk number in a directory entry: chunk index + 1; 0 means none. */
#define CALICO_NO_CHUNK 0

StaticAssertDecl(CALICO_MAX_PREFETCH_READS <= 64, "prefetch set is scanned linearly");

/* One relation fork's directory. Fields other than atomics change only under CalicoLock exclusive. */
typedef struct CalicoSlot
{
	pg_atomic_uint32 epoch;		/* bumped on every (re)assignment and free (I3) */
	pg_atomic_uint32 referenced;	/* clock bit: set by lookups, cleared by the sweep */
	bool		in_use;
	RelFileLocator locator;
	ForkNumber	fork;
	int			nchunks;		/* chunks this slot holds */
	pg_atomic_uint32 chunks[CALICO_DIR_CHUNKS]; /* CALICO_NO_CHUNK or index + 1 */
} CalicoSlot;

/*
 * Per-process counters: written only by their owner (no atomic read-modify-write), summed by
 * calico_stats(); one cache line each, so that backends do not share lines.
 */
typedef union CalicoCounters
{
	struct
	{
		uint64		hits;
		uint64		misses;
		uint64		stale;
		uint64		uncovered;
		uint64		prefetch_reads;
		uint64		prefetch_resident;
		uint64		prefetch_used;
		uint64		prefetch_skipped;
		uint64		prefetch_abandoned;
		uint64		optimistic_reads;	/* validated reads without the content lock */
		uint64		optimistic_retries; /* of those tried: validation failed, read locked */
		uint64		lookahead_reads;	/* advise_reads: reads the kernel was asked for */
	};
	char		pad[PG_CACHE_LINE_SIZE];
} CalicoCounters;

StaticAssertDecl(sizeof(CalicoCounters) == PG_CACHE_LINE_SIZE, "one cache line of counters per process");

/*
 * Adaptive group prefetch.  In memory every group is resident, and looking
 * that up costs a hint and a buffer descriptor per neighbour for nothing
 * (measured: a few percent of a query).  After CALICO_RESIDENT_STREAK groups
 * in a row that started no read, the next CALICO_SKIP_GROUPS groups are not
 * looked at (their blocks are read when needed, as without calico), then
 * looking resumes.  A group that starts a read resets the streak, so larger
 * than memory (most groups start reads) the prefetch stays on.
 */
#define CALICO_RESIDENT_STREAK 8
#define CALICO_SKIP_GROUPS 64

typedef struct CalicoShared
{
	LWLock	   *lock;			/* CalicoLock */
	int			max_relations;
	int			nchunks;		/* the pool's size */
	int			nfree;			/* chunks on the free stack */
	int			clock_hand;
	int			nprocs;			/* counters[] entries */
	int			nrelations;		/* slots in use */
	uint32		lwlock_exclusive;	/* an LWLock state's exclusive bit; 0: not measured */
	/* followed by: slots[max_relations], free[nchunks], counters[nprocs], hints[nchunks][CHUNK] */
} CalicoShared;

/* GUCs */
static bool calico_translation = true;
static bool calico_group_prefetch = true;
static bool calico_tuple_prefetch = true;
static bool calico_optimistic_reads = true;
static int	calico_max_relations = 64;
static int	calico_hint_chunks = 256;
static int	calico_lookahead_candidates = 2;

/* Shared state (set by calico_shmem_startup; NULL when not preloaded) */
static CalicoShared *Calico = NULL;
static CalicoSlot *CalicoSlots;
static uint32 *CalicoFree;
static CalicoCounters *CalicoCountersArray;
static pg_atomic_uint32 *CalicoHints;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* The backend-local relation -> slot cache (I3). */
typedef struct CalicoLocalEntry
{
	RelFileLocator locator;
	ForkNumber	fork;
	int			slot;			/* -1: empty */
	uint32		epoch;
} CalicoLocalEntry;

static CalicoLocalEntry local_cache[CALICO_LOCAL_CACHE];
static int	local_cache_next = 0;
static CalicoCounters local_counters;	/* before MyProcNumber is set */

/* The reads the group prefetch holds pinned until calico_prefetch_release. */
typedef struct CalicoPrefetchEntry
{
	ReadBuffersOperation op;
	Buffer		buffer;
	BlockNumber block;
	RelFileLocator locator;
	ForkNumber	fork;
	bool		io_pending;		/* StartReadBuffer started I/O nobody waited for yet */
} CalicoPrefetchEntry;

static CalicoPrefetchEntry prefetch[CALICO_MAX_PREFETCH_READS];
static int	prefetch_n = 0;
static int	resident_streak = 0;	/* groups in a row that started no read */
static int	skip_groups = 0;	/* groups still to skip (adaptive, above) */
static SubTransactionId prefetch_subxact = InvalidSubTransactionId;

static Buffer calico_read_buffer(Relation rel, ForkNumber fork, BlockNumber blkno,
								 BufferAccessStrategy strategy);
static int	calico_prefetch_group(Relation rel, ForkNumber fork, const BlockNumber *blocks,
								  int nblocks);
static void calico_prefetch_release(void);
static Buffer calico_read_hinted(Relation rel, ForkNumber fork, BlockNumber blkno, Buffer hint,
								 BufferAccessStrategy strategy);
static int	calico_page_hints(Relation rel, ForkNumber fork, const BlockNumber *blocks, int nblocks,
							  Buffer *hints);
static uint32 calico_optimistic_mask(Relation rel);
static void calico_count_optimistic(uint64 reads, uint64 retries);
static int	calico_lookahead(void);
static int	calico_advise_reads(Relation rel, ForkNumber fork, const BlockNumber *blocks, int nblocks);

static const CalicoApi calico_api = {
	.version = CALICO_API_VERSION,
	.size = sizeof(CalicoApi),
	.read_buffer = calico_read_buffer,
	.prefetch_group = calico_prefetch_group,
	.prefetch_release = calico_prefetch_release,
	.read_hinted = calico_read_hinted,
	.page_hints = calico_page_hints,
	.optimistic_mask = calico_optimistic_mask,
	.count_optimistic = calico_count_optimistic,
	.lookahead = calico_lookahead,
	.advise_reads = calico_advise_reads,
};

static Size
calico_shmem_size(void)
{
	Size		size = MAXALIGN(sizeof(CalicoShared));
	int			nprocs = MaxBackends + NUM_AUXILIARY_PROCS;

	size = add_size(size, mul_size(calico_max_relations, sizeof(CalicoSlot)));
	size = add_size(size, mul_size(calico_hint_chunks, sizeof(uint32)));
	size = TYPEALIGN(PG_CACHE_LINE_SIZE, size);
	size = add_size(size, PG_CACHE_LINE_SIZE);	/* to align the counters */
	size = add_size(size, mul_size(nprocs, sizeof(CalicoCounters)));
	size = add_size(size, mul_size(mul_size(calico_hint_chunks, CALICO_CHUNK_BLOCKS),
								   sizeof(pg_atomic_uint32)));
	return size;
}

static void
calico_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(calico_shmem_size());
	RequestNamedLWLockTranche("calico", 1);
}

/*
 * calico_calibrate -- the bit an LWLock's state word carries while the lock is
 * held exclusively (lwlock.c's LW_VAL_EXCLUSIVE, which no header exports),
 * measured on a lock of our own in the postmaster, where no other process can
 * touch it: the state free, held shared, and held exclusively.  Returns 0,
 * and optimistic reads stay off, unless the exclusive value is a single bit,
 * clear of the free state and above any count of shared holders the server's
 * processes could reach.
 */
static uint32
calico_calibrate(void)
{
	LWLock		probe;
	uint32		free_state;
	uint32		shared_state;
	uint32		exclusive_state;
	uint32		bit;

	LWLockInitialize(&probe, Calico->lock->tranche);
	free_state = pg_atomic_read_u32(&probe.state);
	LWLockAcquire(&probe, LW_SHARED);
	shared_state = pg_atomic_read_u32(&probe.state);
	LWLockRelease(&probe);
	LWLockAcquire(&probe, LW_EXCLUSIVE);
	exclusive_state = pg_atomic_read_u32(&probe.state);
	LWLockRelease(&probe);

	bit = exclusive_state & ~free_state;
	if (bit == 0 || (bit & (bit - 1)) != 0 || (shared_state & bit) != 0 ||
		pg_atomic_read_u32(&probe.state) != free_state ||
		bit <= (uint32) (MaxBackends + NUM_AUXILIARY_PROCS))
	{
		elog(LOG, "calico: optimistic reads are off: the LWLock state did not calibrate "
			 "(free %08x, shared %08x, exclusive %08x)", free_state, shared_state, exclusive_state);
		return 0;
	}
	return bit;
}

static void
calico_shmem_startup(void)
{
	bool		found;
	char	   *p;
	int			nprocs = MaxBackends + NUM_AUXILIARY_PROCS;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	p = ShmemInitStruct("calico", calico_shmem_size(), &found);
	Calico = (CalicoShared *) p;
	p += MAXALIGN(sizeof(CalicoShared));
	CalicoSlots = (CalicoSlot *) p;
	p += calico_max_relations * sizeof(CalicoSlot);
	CalicoFree = (uint32 *) p;
	p += calico_hint_chunks * sizeof(uint32);
	p = (char *) TYPEALIGN(PG_CACHE_LINE_SIZE, p);
	CalicoCountersArray = (CalicoCounters *) p;
	p += nprocs * sizeof(CalicoCounters);
	CalicoHints = (pg_atomic_uint32 *) p;

	if (!found)
	{
		/* Fresh shared memory: at postmaster start and after a crash restart. */
		Calico->lock = &(GetNamedLWLockTranche("calico"))->lock;
		Calico->max_relations = calico_max_relations;
		Calico->nchunks = calico_hint_chunks;
		Calico->nprocs = nprocs;
		Calico->clock_hand = 0;
		Calico->nrelations = 0;
		Calico->lwlock_exclusive = calico_calibrate();
		for (int i = 0; i < calico_max_relations; i++)
		{
			CalicoSlot *slot = &CalicoSlots[i];

			pg_atomic_init_u32(&slot->epoch, 0);
			pg_atomic_init_u32(&slot->referenced, 0);
			slot->in_use = false;
			slot->nchunks = 0;
			for (int c = 0; c < CALICO_DIR_CHUNKS; c++)
				pg_atomic_init_u32(&slot->chunks[c], CALICO_NO_CHUNK);
		}
		/* Free stack: pops hand out chunk 0 first. */
		Calico->nfree = calico_hint_chunks;
		for (int i = 0; i < calico_hint_chunks; i++)
			CalicoFree[i] = calico_hint_chunks - 1 - i;
		memset(CalicoCountersArray, 0, nprocs * sizeof(CalicoCounters));
		for (Size i = 0; i < (Size) calico_hint_chunks * CALICO_CHUNK_BLOCKS; i++)
			pg_atomic_init_u32(&CalicoHints[i], InvalidBuffer);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* calico_counters -- this process's counters (owner-written, I: one writer each). */
static inline CalicoCounters *
calico_counters(void)
{
	if (MyProcNumber >= 0 && MyProcNumber < Calico->nprocs)
		return &CalicoCountersArray[MyProcNumber];
	return &local_counters;
}

static inline bool
calico_same_rel(const RelFileLocator *a, ForkNumber afork, const RelFileLocator *b, ForkNumber bfork)
{
	return afork == bfork && RelFileLocatorEquals(*a, *b);
}

/*
 * calico_free_slot -- frees a slot and returns its chunks to the pool.
 * Caller holds CalicoLock exclusively.  Backends that cached the slot see
 * its epoch move (I3); one that already read a chunk number may still store
 * a hint into it after it is reused (harmless by I1).
 */
static void
calico_free_slot(CalicoSlot *slot)
{
	Assert(LWLockHeldByMeInMode(Calico->lock, LW_EXCLUSIVE));
	Assert(slot->in_use);
	pg_atomic_fetch_add_u32(&slot->epoch, 1);
	for (int c = 0; c < CALICO_DIR_CHUNKS && slot->nchunks > 0; c++)
	{
		uint32		chunk = pg_atomic_read_u32(&slot->chunks[c]);

		if (chunk == CALICO_NO_CHUNK)
			continue;
		Assert(chunk <= (uint32) Calico->nchunks && Calico->nfree < Calico->nchunks);
		pg_atomic_write_u32(&slot->chunks[c], CALICO_NO_CHUNK);
		CalicoFree[Calico->nfree++] = chunk - 1;
		slot->nchunks--;
	}
	Assert(slot->nchunks == 0);
	slot->in_use = false;
	Calico->nrelations--;
}

/*
 * calico_clock_victim -- a slot in use other than 'keep', chosen by a clock
 * sweep over the referenced bits (two turns at most: the first clears them),
 * or NULL if there is none.  Caller holds CalicoLock exclusively.
 */
static CalicoSlot *
calico_clock_victim(CalicoSlot *keep)
{
	for (int step = 0; step < 2 * Calico->max_relations; step++)
	{
		CalicoSlot *slot = &CalicoSlots[Calico->clock_hand];

		Calico->clock_hand = (Calico->clock_hand + 1) % Calico->max_relations;
		if (!slot->in_use || slot == keep)
			continue;
		if (pg_atomic_read_u32(&slot->referenced) != 0)
		{
			pg_atomic_write_u32(&slot->referenced, 0);
			continue;
		}
		return slot;
	}
	return NULL;
}

/* calico_find_slot -- the slot of <locator, fork> or -1.  Caller holds CalicoLock. */
static int
calico_find_slot(const RelFileLocator *locator, ForkNumber fork)
{
	for (int i = 0; i < Calico->max_relations; i++)
	{
		CalicoSlot *slot = &CalicoSlots[i];

		if (slot->in_use && calico_same_rel(&slot->locator, slot->fork, locator, fork))
			return i;
	}
	return -1;
}

/*
 * calico_slot -- the slot of <locator, fork>, from the local cache when its
 * epoch still holds, else from the shared directory; with 'create', a slot is
 * assigned (freeing a clock victim if none is free).  NULL if there is none.
 * The slot returned may be reassigned at any moment after (I3).
 */
static CalicoSlot *
calico_slot(const RelFileLocator *locator, ForkNumber fork, bool create)
{
	int			idx;
	uint32		epoch;
	CalicoLocalEntry *e;

	for (int i = 0; i < CALICO_LOCAL_CACHE; i++)
	{
		e = &local_cache[i];
		if (e->slot >= 0 && calico_same_rel(&e->locator, e->fork, locator, fork))
		{
			CalicoSlot *slot = &CalicoSlots[e->slot];

			if (pg_atomic_read_u32(&slot->epoch) == e->epoch)
			{
				/* Set the clock bit only when clear: no shared write per read. */
				if (pg_atomic_read_u32(&slot->referenced) == 0)
					pg_atomic_write_u32(&slot->referenced, 1);
				return slot;
			}
			e->slot = -1;		/* the slot changed hands */
			break;
		}
	}

	LWLockAcquire(Calico->lock, LW_SHARED);
	idx = calico_find_slot(locator, fork);
	if (idx >= 0)
		epoch = pg_atomic_read_u32(&CalicoSlots[idx].epoch);
	LWLockRelease(Calico->lock);

	if (idx < 0)
	{
		CalicoSlot *slot = NULL;

		if (!create)
			return NULL;
		LWLockAcquire(Calico->lock, LW_EXCLUSIVE);
		idx = calico_find_slot(locator, fork);
		if (idx < 0)
		{
			for (int i = 0; i < Calico->max_relations && slot == NULL; i++)
				if (!CalicoSlots[i].in_use)
					slot = &CalicoSlots[i];
			if (slot == NULL)
			{
				slot = calico_clock_victim(NULL);
				if (slot != NULL)
					calico_free_slot(slot);
			}
			if (slot != NULL)
			{
				pg_atomic_fetch_add_u32(&slot->epoch, 1);
				slot->locator = *locator;
				slot->fork = fork;
				slot->in_use = true;
				slot->nchunks = 0;
				pg_atomic_write_u32(&slot->referenced, 1);
				Calico->nrelations++;
				idx = slot - CalicoSlots;
			}
		}
		if (idx >= 0)
			epoch = pg_atomic_read_u32(&CalicoSlots[idx].epoch);
		LWLockRelease(Calico->lock);
		if (idx < 0)
			return NULL;
	}

	e = &local_cache[local_cache_next];
	local_cache_next = (local_cache_next + 1) % CALICO_LOCAL_CACHE;
	e->locator = *locator;
	e->fork = fork;
	e->slot = idx;
	e->epoch = epoch;
	return &CalicoSlots[idx];
}

/*
 * calico_hint_entry -- the hint of 'block' in 'slot', or NULL if no chunk
 * backs it.  With 'create', a chunk is allocated for it (freeing another
 * relation's slot when the pool is empty).
 */
static pg_atomic_uint32 *
calico_hint_entry(CalicoSlot *slot, BlockNumber block, bool create)
{
	uint32		c = block / CALICO_CHUNK_BLOCKS;
	uint32		chunk;

	if (c >= CALICO_DIR_CHUNKS)
		return NULL;
	chunk = pg_atomic_read_u32(&slot->chunks[c]);
	if (chunk == CALICO_NO_CHUNK)
	{
		if (!create)
			return NULL;
		LWLockAcquire(Calico->lock, LW_EXCLUSIVE);
		/* The slot may have changed hands since the caller found it: then record nothing. */
		chunk = pg_atomic_read_u32(&slot->chunks[c]);
		if (chunk == CALICO_NO_CHUNK && slot->in_use)
		{
			if (Calico->nfree == 0)
			{
				CalicoSlot *victim = calico_clock_victim(slot);

				if (victim != NULL)
					calico_free_slot(victim);
			}
			if (Calico->nfree > 0)
			{
				uint32		idx = CalicoFree[--Calico->nfree];
				pg_atomic_uint32 *hints = &CalicoHints[(Size) idx * CALICO_CHUNK_BLOCKS];

				for (int i = 0; i < CALICO_CHUNK_BLOCKS; i++)
					pg_atomic_write_u32(&hints[i], InvalidBuffer);
				chunk = idx + 1;
				pg_atomic_write_u32(&slot->chunks[c], chunk);
				slot->nchunks++;
			}
		}
		LWLockRelease(Calico->lock);
		if (chunk == CALICO_NO_CHUNK)
			return NULL;
	}
	Assert(chunk >= 1 && chunk <= (uint32) Calico->nchunks);
	return &CalicoHints[(Size) (chunk - 1) * CALICO_CHUNK_BLOCKS + block % CALICO_CHUNK_BLOCKS];
}

/* calico_hint_buffer -- a hint's buffer if it is a shared buffer number, else InvalidBuffer (I1). */
static inline Buffer
calico_hint_buffer(pg_atomic_uint32 *entry)
{
	uint32		hint = pg_atomic_read_u32(entry);

	return (hint >= 1 && hint <= (uint32) NBuffers) ? (Buffer) hint : InvalidBuffer;
}

/* calico_record -- remembers that 'buffer' held 'block' (a hint, I2). */
static void
calico_record(const RelFileLocator *locator, ForkNumber fork, BlockNumber block, Buffer buffer)
{
	CalicoSlot *slot;
	pg_atomic_uint32 *entry;

	Assert(BufferIsValid(buffer) && !BufferIsLocal(buffer));
	slot = calico_slot(locator, fork, true);
	entry = slot != NULL ? calico_hint_entry(slot, block, true) : NULL;
	if (entry == NULL)
	{
		calico_counters()->uncovered++;
		return;
	}
	if (pg_atomic_read_u32(entry) != (uint32) buffer)
		pg_atomic_write_u32(entry, (uint32) buffer);
}

/*
 * calico_prefetch_take -- if the group prefetch holds <locator, fork, block>,
 * waits for its read if nobody did, and returns it with one more pin (the
 * caller's); else InvalidBuffer.
 */
static Buffer
calico_prefetch_take(const RelFileLocator *locator, ForkNumber fork, BlockNumber block)
{
	for (int i = 0; i < prefetch_n; i++)
	{
		CalicoPrefetchEntry *p = &prefetch[i];

		if (p->block == block && calico_same_rel(&p->locator, p->fork, locator, fork))
		{
			if (p->io_pending)
			{
				p->io_pending = false;
				WaitReadBuffers(&p->op);
			}
			IncrBufferRefCount(p->buffer);
			calico_counters()->prefetch_used++;
			return p->buffer;
		}
	}
	return InvalidBuffer;
}

/*
 * calico_read -- ReadBufferExtended(rel, fork, blkno, RBM_NORMAL, strategy)
 * through the hints; with looked, hint is the block's hint the caller found
 * (a number in 1..NBuffers or InvalidBuffer), else it is looked up here.  On
 * exit the buffer is pinned (not locked), valid and holds the block (I1).  A hit through a hint counts in the
 * relation's statistics and pg_stat_io as the hit of a normal read would.
 * With a strategy, a hit pins as ReadRecentBuffer does (the ring is not
 * consulted): it only changes the buffer's usage count.
 */
static Buffer
calico_read(Relation rel, ForkNumber fork, BlockNumber blkno, BufferAccessStrategy strategy,
			bool looked, Buffer hint)
{
	Buffer		buffer;
	CalicoCounters *counters;

	if (Calico == NULL || RelationUsesLocalBuffers(rel) || blkno == P_NEW)
		return ReadBufferExtended(rel, fork, blkno, RBM_NORMAL, strategy);

	counters = calico_counters();
	if (prefetch_n > 0)
	{
		buffer = calico_prefetch_take(&rel->rd_locator, fork, blkno);
		if (BufferIsValid(buffer))
			return buffer;
	}
	if (!calico_translation)
		return ReadBufferExtended(rel, fork, blkno, RBM_NORMAL, strategy);

	if (!looked)
	{
		CalicoSlot *slot = calico_slot(&rel->rd_locator, fork, false);
		pg_atomic_uint32 *entry = slot != NULL ? calico_hint_entry(slot, blkno, false) : NULL;

		hint = entry != NULL ? calico_hint_buffer(entry) : InvalidBuffer;
	}
	if (BufferIsValid(hint))
	{
		if (ReadRecentBuffer(rel->rd_locator, fork, blkno, hint))
		{
			pgstat_count_buffer_read(rel);
			pgstat_count_buffer_hit(rel);
			pgstat_count_io_op(IOOBJECT_RELATION, IOContextForStrategy(strategy),
							   IOOP_HIT, 1, 0);
			if (VacuumCostActive)
				VacuumCostBalance += VacuumCostPageHit;
			counters->hits++;
			Assert(BufferGetBlockNumber(hint) == blkno);
			return hint;
		}
		counters->stale++;
	}

	buffer = ReadBufferExtended(rel, fork, blkno, RBM_NORMAL, strategy);
	counters->misses++;
	calico_record(&rel->rd_locator, fork, blkno, buffer);
	return buffer;
}

static Buffer
calico_read_buffer(Relation rel, ForkNumber fork, BlockNumber blkno, BufferAccessStrategy strategy)
{
	return calico_read(rel, fork, blkno, strategy, false, InvalidBuffer);
}

/*
 * calico_read_hinted -- calico_read_buffer with the block's hint already
 * looked up by calico_page_hints (InvalidBuffer: it had none): the same
 * contract, without a second lookup.  The number is checked again (I1).
 */
static Buffer
calico_read_hinted(Relation rel, ForkNumber fork, BlockNumber blkno, Buffer hint,
				   BufferAccessStrategy strategy)
{
	if (hint < 1 || hint > NBuffers)
		hint = InvalidBuffer;
	return calico_read(rel, fork, blkno, strategy, true, hint);
}

/*
 * calico_hint_resident -- whether the hint of <locator, fork, block> names a
 * valid buffer holding it.  Reads the descriptor's state and tag without the
 * header lock: the answer may be stale the moment it is given, and is used
 * only to skip a prefetch (a wrong "resident" costs a synchronous read later,
 * a wrong "not resident" a StartReadBuffer that finds it).
 */
static bool
calico_hint_resident(CalicoSlot *slot, const RelFileLocator *locator, ForkNumber fork, BlockNumber block)
{
	pg_atomic_uint32 *entry = calico_hint_entry(slot, block, false);
	Buffer		hint;
	BufferDesc *desc;
	BufferTag	tag;
	BufferTag	seen;

	if (entry == NULL)
		return false;
	hint = calico_hint_buffer(entry);
	if (!BufferIsValid(hint))
		return false;
	desc = GetBufferDescriptor(hint - 1);
	if ((pg_atomic_read_u32(&desc->state) & BM_VALID) == 0)
		return false;
	InitBufferTag(&tag, locator, fork, block);
	memcpy(&seen, (const void *) &desc->tag, sizeof(seen));
	return BufferTagsEqual(&tag, &seen);
}

/*
 * calico_prefetch_group -- starts asynchronous reads of the blocks of the
 * group that are neither resident (by their hints) nor held by the prefetch
 * already; returns how many it started.  Bounded by
 * CALICO_MAX_PREFETCH_READS held at once, by the backend's share of pins
 * (GetAdditionalPinLimit: at shared_buffers = 1MB there is none, and nothing
 * is prefetched), and by half of io_max_concurrency (past its AIO handles a
 * backend waits for its own reads to finish).
 */
static int
calico_prefetch_group(Relation rel, ForkNumber fork, const BlockNumber *blocks, int nblocks)
{
	CalicoSlot *slot;
	CalicoCounters *counters;
	int			limit;
	int			first = prefetch_n;
	int			started = 0;
	bool		batch = false;
	Buffer		found[CALICO_MAX_PREFETCH_READS];
	int			nfound = 0;

	if (Calico == NULL || !calico_group_prefetch || RelationUsesLocalBuffers(rel) || nblocks <= 0)
		return 0;
	/* Pins held at once: the started reads plus the resident blocks pinned until the end. */
	limit = Min(CALICO_MAX_PREFETCH_READS, io_max_concurrency / 2) - prefetch_n;
	limit = Min(limit, (int) Min(GetAdditionalPinLimit(), (uint32) INT_MAX));
	Assert(limit <= CALICO_MAX_PREFETCH_READS);
	if (limit <= 0)
		return 0;
	counters = calico_counters();
	if (skip_groups > 0)
	{
		skip_groups--;
		counters->prefetch_skipped++;
		return 0;
	}
	slot = calico_slot(&rel->rd_locator, fork, false);

	for (int i = 0; i < nblocks && started + nfound < limit; i++)
	{
		BlockNumber block = blocks[i];
		CalicoPrefetchEntry *p;
		bool		held = false;

		for (int j = 0; j < prefetch_n && !held; j++)
			held = prefetch[j].block == block &&
				calico_same_rel(&prefetch[j].locator, prefetch[j].fork, &rel->rd_locator, fork);
		if (held)
			continue;
		if (slot != NULL && calico_hint_resident(slot, &rel->rd_locator, fork, block))
		{
			counters->prefetch_resident++;
			continue;
		}

		if (!batch)
		{
			pgaio_enter_batchmode();
			batch = true;
		}
		p = &prefetch[prefetch_n];
		p->op.rel = rel;
		p->op.smgr = RelationGetSmgr(rel);
		p->op.persistence = rel->rd_rel->relpersistence;
		p->op.forknum = fork;
		p->op.strategy = NULL;
		p->block = block;
		p->locator = rel->rd_locator;
		p->fork = fork;
		p->io_pending = StartReadBuffer(&p->op, &p->buffer, block, 0);
		if (!p->io_pending)
		{
			/*
			 * Resident after all: hinted and unpinned below, and the entry is
			 * reused (entries never move: op.buffers points into them).
			 */
			found[nfound++] = p->buffer;
			continue;
		}
		prefetch_n++;
		started++;
		if (prefetch_subxact == InvalidSubTransactionId)
			prefetch_subxact = GetCurrentSubTransactionId();
	}
	if (batch)
		pgaio_exit_batchmode();

	/* Outside batch mode (no staged I/O while CalicoLock may be waited for): the hints. */
	for (int i = first; i < prefetch_n; i++)
		calico_record(&prefetch[i].locator, prefetch[i].fork, prefetch[i].block, prefetch[i].buffer);
	for (int i = 0; i < nfound; i++)
	{
		calico_record(&rel->rd_locator, fork, BufferGetBlockNumber(found[i]), found[i]);
		ReleaseBuffer(found[i]);
	}
	counters->prefetch_resident += nfound;
	if (started > 0)
		resident_streak = 0;
	else if (++resident_streak >= CALICO_RESIDENT_STREAK)
	{
		resident_streak = 0;
		skip_groups = CALICO_SKIP_GROUPS;
	}
	counters->prefetch_reads += started;
	return started;
}

/* calico_prefetch_release -- waits for the held reads nobody waited for, unpins them all. */
static void
calico_prefetch_release(void)
{
	while (prefetch_n > 0)
	{
		CalicoPrefetchEntry *p = &prefetch[prefetch_n - 1];

		if (p->io_pending)
		{
			p->io_pending = false;
			WaitReadBuffers(&p->op);
		}
		prefetch_n--;
		ReleaseBuffer(p->buffer);
	}
	prefetch_subxact = InvalidSubTransactionId;
}

/* calico_lookahead -- calico.lookahead, when the group prefetch is on */
static int
calico_lookahead(void)
{
	return Calico != NULL && calico_group_prefetch ? calico_lookahead_candidates : 0;
}

/*
 * calico_advise_reads -- PrefetchBuffer (the kernel reads into its page cache;
 * no pin, no wait) of each block of the group that is neither resident by
 * its hint nor held by the group prefetch, nor the block just before it in
 * the group; returns how many were advised.  A later read of the block, by
 * the group prefetch or a synchronous one, then copies it from the page
 * cache, or waits for the kernel's read already in flight.
 */
static int
calico_advise_reads(Relation rel, ForkNumber fork, const BlockNumber *blocks, int nblocks)
{
	CalicoSlot *slot;
	int			advised = 0;

	if (Calico == NULL || !calico_group_prefetch || calico_lookahead_candidates == 0 ||
		RelationUsesLocalBuffers(rel) || nblocks <= 0)
		return 0;
	slot = calico_slot(&rel->rd_locator, fork, false);
	for (int i = 0; i < nblocks; i++)
	{
		BlockNumber block = blocks[i];
		bool		held = i > 0 && blocks[i - 1] == block;
		PrefetchBufferResult r;

		for (int j = 0; j < prefetch_n && !held; j++)
			held = prefetch[j].block == block &&
				calico_same_rel(&prefetch[j].locator, prefetch[j].fork, &rel->rd_locator, fork);
		if (held || (slot != NULL && calico_hint_resident(slot, &rel->rd_locator, fork, block)))
			continue;
		r = PrefetchBuffer(rel, fork, block);
		if (r.initiated_io)
			advised++;
	}
	calico_counters()->lookahead_reads += advised;
	return advised;
}

/*
 * calico_page_hints -- hints[i] = the hint of blocks[i] of rel's fork: the
 * buffer that last held it, a number in 1..NBuffers, or InvalidBuffer.  One
 * slot lookup for the whole group.  A hint is only a number (I1): the caller
 * may CPU-prefetch inside that buffer's page (calico_api.h) and pass it to
 * read_hinted, which validates it; nothing else.  Returns CALICO_HINTS_PREFETCH
 * when calico.tuple_prefetch allows those CPU prefetches.
 */
static int
calico_page_hints(Relation rel, ForkNumber fork, const BlockNumber *blocks, int nblocks,
				  Buffer *hints)
{
	CalicoSlot *slot = NULL;

	if (Calico != NULL && calico_translation && !RelationUsesLocalBuffers(rel))
		slot = calico_slot(&rel->rd_locator, fork, false);
	for (int i = 0; i < nblocks; i++)
	{
		pg_atomic_uint32 *entry = slot != NULL ? calico_hint_entry(slot, blocks[i], false) : NULL;

		hints[i] = entry != NULL ? calico_hint_buffer(entry) : InvalidBuffer;
	}
	return slot != NULL && calico_tuple_prefetch ? CALICO_HINTS_PREFETCH : 0;
}

/*
 * calico_optimistic_mask -- the content lock's exclusive bit when rel's pages
 * may be read without the content lock (calico_api.h), else 0.  The protocol
 * needs every writer of the page to set a new LSN under the exclusive lock:
 * true of WAL-logged relations, and RelationNeedsWAL() says which those are
 * in this backend (another backend's uncommitted relfilenode, unlogged under
 * wal_level minimal, is not visible here).  Unlogged and temporary relations,
 * and a relfilenode this transaction created under wal_level minimal, read
 * with the lock.
 */
static uint32
calico_optimistic_mask(Relation rel)
{
	if (Calico == NULL || !calico_optimistic_reads || RelationUsesLocalBuffers(rel) ||
		!RelationNeedsWAL(rel))
		return 0;
	return Calico->lwlock_exclusive;
}

/* calico_count_optimistic -- adds a search's optimistic reads to this process's counters */
static void
calico_count_optimistic(uint64 reads, uint64 retries)
{
	if (Calico != NULL)
	{
		CalicoCounters *c = calico_counters();

		c->optimistic_reads += reads;
		c->optimistic_retries += retries;
	}
}

/*
 * At abort the resource owner has released the prefetch's pins and the AIO
 * subsystem its reads: forget them (releasing them again would be an error).
 */
static void
calico_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		if (prefetch_n > 0 && Calico != NULL)
			calico_counters()->prefetch_abandoned++;
		prefetch_n = 0;
		prefetch_subxact = InvalidSubTransactionId;
	}
}

static void
calico_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && prefetch_subxact == mySubid)
	{
		if (prefetch_n > 0 && Calico != NULL)
			calico_counters()->prefetch_abandoned++;
		prefetch_n = 0;
		prefetch_subxact = InvalidSubTransactionId;
	}
}

void
_PG_init(void)
{
	DefineCustomBoolVariable("calico.translation",
							 "Reads index blocks through calico's block-to-buffer hints.",
							 "Off: every read takes ReadBufferExtended (for comparisons).",
							 &calico_translation, true, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("calico.group_prefetch",
							 "Starts the asynchronous reads of a search step's blocks together.",
							 NULL, &calico_group_prefetch, true, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("calico.tuple_prefetch",
							 "Prefetches the next index tuples into the CPU cache through their hints.",
							 "Needs calico.translation.", &calico_tuple_prefetch, true, PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("calico.optimistic_reads",
							 "Reads index tuples of WAL-logged relations under a pin without the content lock.",
							 "Validated by the page LSN and the lock's state; a failed validation reads again locked.",
							 &calico_optimistic_reads, true, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("calico.lookahead",
							"Candidates a search reads ahead for beyond the expansion it is in.",
							"The kernel is asked to read their neighbours' pages into its page cache "
							"(larger than shared_buffers; only while expansions start reads). 0: off.",
							&calico_lookahead_candidates, 2, 0, 4, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("calico.max_relations",
							"Relation forks with a block-to-buffer array.",
							NULL, &calico_max_relations, 64, 1, 4096, PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("calico.hint_chunks",
							"Chunks of hints in shared memory (each 16 kB, mapping 4096 blocks).",
							NULL, &calico_hint_chunks, 256, 1, 1 << 20, PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("calico");

	for (int i = 0; i < CALICO_LOCAL_CACHE; i++)
		local_cache[i].slot = -1;

	/* Shared memory only from shared_preload_libraries; loaded later, the API stays unpublished. */
	if (!process_shared_preload_libraries_in_progress)
		return;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = calico_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = calico_shmem_startup;
	RegisterXactCallback(calico_xact_callback, NULL);
	RegisterSubXactCallback(calico_subxact_callback, NULL);
	*(const CalicoApi **) find_rendezvous_variable(CALICO_API_RENDEZVOUS) = &calico_api;
}

static void
calico_require_preloaded(void)
{
	if (Calico == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("calico is not loaded through shared_preload_libraries"),
				 errhint("Add calico to shared_preload_libraries and restart the server.")));
}

PG_FUNCTION_INFO_V1(calico_stats);
Datum
calico_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[16];
	bool		nulls[16] = {0};
	uint64		sum[12] = {0};
	int			relations;
	int			chunks_used;

	calico_require_preloaded();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	for (int i = 0; i < Calico->nprocs; i++)
	{
		volatile CalicoCounters *c = &CalicoCountersArray[i];

		sum[0] += c->hits;
		sum[1] += c->misses;
		sum[2] += c->stale;
		sum[3] += c->uncovered;
		sum[4] += c->prefetch_reads;
		sum[5] += c->prefetch_resident;
		sum[6] += c->prefetch_used;
		sum[7] += c->prefetch_skipped;
		sum[8] += c->prefetch_abandoned;
		sum[9] += c->optimistic_reads;
		sum[10] += c->optimistic_retries;
		sum[11] += c->lookahead_reads;
	}
	LWLockAcquire(Calico->lock, LW_SHARED);
	relations = Calico->nrelations;
	chunks_used = Calico->nchunks - Calico->nfree;
	LWLockRelease(Calico->lock);

	for (int i = 0; i < 9; i++)
		values[i] = Int64GetDatum((int64) sum[i]);
	values[9] = Int32GetDatum(relations);
	values[10] = Int32GetDatum(Calico->max_relations);
	values[11] = Int32GetDatum(chunks_used);
	values[12] = Int32GetDatum(Calico->nchunks);
	values[13] = Int64GetDatum((int64) sum[9]);
	values[14] = Int64GetDatum((int64) sum[10]);
	values[15] = Int64GetDatum((int64) sum[11]);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * calico_reset -- zeroes the counters and frees every relation slot (each
 * backend's cache sees the epochs move).  Counters written concurrently may
 * survive the reset: they have one writer each and no lock.
 */
PG_FUNCTION_INFO_V1(calico_reset);
Datum
calico_reset(PG_FUNCTION_ARGS)
{
	calico_require_preloaded();
	LWLockAcquire(Calico->lock, LW_EXCLUSIVE);
	for (int i = 0; i < Calico->max_relations; i++)
		if (CalicoSlots[i].in_use)
			calico_free_slot(&CalicoSlots[i]);
	Assert(Calico->nrelations == 0 && Calico->nfree == Calico->nchunks);
	memset(CalicoCountersArray, 0, Calico->nprocs * sizeof(CalicoCounters));
	LWLockRelease(Calico->lock);
	PG_RETURN_VOID();
}
