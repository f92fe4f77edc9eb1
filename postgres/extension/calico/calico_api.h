/*-------------------------------------------------------------------------
 *
 * calico_api.h
 *	  The interface the calico library offers other extensions (pgvector).
 *
 * The calico library (shared_preload_libraries = 'calico') publishes one
 * CalicoApi in the rendezvous variable CALICO_API_RENDEZVOUS when it sets up
 * its shared memory.  A caller looks it up with CalicoGetApi(): NULL when the
 * library is not preloaded (or is another version), and the caller then reads
 * as it always did.  No symbol of calico.so is linked to, so the caller loads
 * and works without it.
 *
 * Entry points:
 *	read_buffer      -- ReadBufferExtended(rel, fork, blkno, RBM_NORMAL,
 *						strategy), through calico's block -> buffer hints.
 *						Same contract: returns a pinned, valid buffer holding
 *						the block, no content lock; ERROR as ReadBufferExtended.
 *	prefetch_group   -- starts asynchronous reads of the blocks of a group that
 *						are not resident (a block may repeat: its read starts
 *						once); returns how many it started.  The
 *						started reads stay pinned by calico until
 *						prefetch_release; meanwhile read_buffer of one of those
 *						blocks waits for its read and returns its buffer.
 *	prefetch_release -- waits for the group's reads nobody waited for and
 *						unpins them all.  Must be called before the end of the
 *						transaction; an ERROR in between is cleaned up by the
 *						resource owner and calico's transaction callbacks.
 *	read_hinted      -- read_buffer of a block whose hint page_hints returned
 *						(InvalidBuffer: none): the same contract, one lookup
 *						fewer.
 *	page_hints       -- the hints of a group of blocks, one lookup for all:
 *						for each, the buffer that last held it or InvalidBuffer.
 *						A hint is a number, not a pin: the buffer may hold
 *						another page by the time it is used.  Its uses are
 *						read_hinted, which validates it, and the CPU prefetches
 *						below, which form addresses only inside its page.
 *						Returns CALICO_HINTS_PREFETCH when calico.tuple_prefetch
 *						allows those prefetches.
 *	optimistic_mask  -- nonzero when rel's pages may be read under a pin
 *						without the content lock (the protocol below): the
 *						content lock's exclusive bit.  0: lock as always.
 *	count_optimistic -- adds a search's optimistic reads and failed
 *						validations to calico_stats().
 *	lookahead        -- how many candidates a search reads ahead for beyond
 *						the expansion it is in (calico.lookahead; 0: none).
 *	advise_reads     -- asks the kernel to read the blocks of a group that are
 *						neither resident (by their hints) nor held by the
 *						group prefetch into its page cache (PrefetchBuffer:
 *						posix_fadvise WILLNEED): no pin, no wait, nothing to
 *						release.  For the reads a search expects to make an
 *						expansion or two later, so that the device sees more
 *						than one group in flight.  Returns how many it advised.
 *
 * The blocks given to prefetch_group must exist (they come from index tuples,
 * and the indexes that use this never shrink); a read of a block past the end
 * fails in prefetch_release or read_buffer with the read's error.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CALICO_API_H
#define CALICO_API_H

#include "fmgr.h"
#include "storage/block.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/off.h"
#include "common/relpath.h"
#include "utils/relcache.h"

#define CALICO_API_RENDEZVOUS "calico_api"
#define CALICO_API_VERSION 5

/* At most this many blocks are read ahead by one prefetch_group. */
#define CALICO_MAX_PREFETCH_READS 32

typedef struct CalicoApi
{
	uint32		version;		/* CALICO_API_VERSION */
	uint32		size;			/* sizeof(CalicoApi) */
	Buffer		(*read_buffer) (Relation rel, ForkNumber fork, BlockNumber blkno,
								BufferAccessStrategy strategy);
	int			(*prefetch_group) (Relation rel, ForkNumber fork,
								   const BlockNumber *blocks, int nblocks);
	void		(*prefetch_release) (void);
	Buffer		(*read_hinted) (Relation rel, ForkNumber fork, BlockNumber blkno, Buffer hint,
								BufferAccessStrategy strategy);
	int			(*page_hints) (Relation rel, ForkNumber fork, const BlockNumber *blocks,
							   int nblocks, Buffer *hints);
	uint32		(*optimistic_mask) (Relation rel);
	void		(*count_optimistic) (uint64 reads, uint64 retries);
	int			(*lookahead) (void);
	int			(*advise_reads) (Relation rel, ForkNumber fork, const BlockNumber *blocks,
								 int nblocks);
} CalicoApi;

/* page_hints' result: the hints may be used for CPU prefetches */
#define CALICO_HINTS_PREFETCH 1

/*
 * CPU prefetches into a page through its hint (page_hints), with no pin and
 * no lock.  Everything read is untrusted: the buffer may hold another page by
 * now and a line pointer may be torn.  Only addresses inside the hint's page
 * are formed (bounds checked), and a prefetch of shared memory never faults.
 *
 * Always inlined: GCC counts a function whose only effect is a prefetch as
 * pure and drops the calls it does not inline.
 */

/* The line pointer of item offno, and the buffer descriptor a read will lock */
static pg_attribute_always_inline void
CalicoPrefetchLinePointer(Buffer hint, OffsetNumber offno)
{
	if (hint >= 1 && hint <= NBuffers && offno >= FirstOffsetNumber &&
		SizeOfPageHeaderData + offno * sizeof(ItemIdData) <= BLCKSZ)
	{
		__builtin_prefetch((char *) BufferGetBlock(hint) + SizeOfPageHeaderData +
						   (offno - 1) * sizeof(ItemIdData));
		__builtin_prefetch(GetBufferDescriptor(hint - 1));
	}
}

/*
 * The first maxBytes of item offno, found through its line pointer (prefetched
 * earlier by CalicoPrefetchLinePointer, or this read waits for it)
 */
static pg_attribute_always_inline void
CalicoPrefetchItem(Buffer hint, OffsetNumber offno, Size maxBytes)
{
	char	   *page;
	ItemIdData	lp;

	if (hint < 1 || hint > NBuffers || offno < FirstOffsetNumber ||
		SizeOfPageHeaderData + offno * sizeof(ItemIdData) > BLCKSZ)
		return;
	page = (char *) BufferGetBlock(hint);
	memcpy(&lp, page + SizeOfPageHeaderData + (offno - 1) * sizeof(ItemIdData), sizeof(lp));
	if (lp.lp_len == 0 || lp.lp_off < SizeOfPageHeaderData || lp.lp_off + lp.lp_len > BLCKSZ)
		return;
	for (Size off = 0; off < lp.lp_len && off < maxBytes; off += 64)
		__builtin_prefetch(page + lp.lp_off + off);
}

/*
 * CalicoGetApi -- the preloaded library's interface, or NULL.  A hash lookup:
 * callers look it up once per scan, not per read.
 */
static inline const CalicoApi *
CalicoGetApi(void)
{
	const CalicoApi *api = *(const CalicoApi **) find_rendezvous_variable(CALICO_API_RENDEZVOUS);

	if (api != NULL && api->version == CALICO_API_VERSION && api->size == sizeof(CalicoApi))
		return api;
	return NULL;
}

/*
 * Optimistic reads: reading a page of a pinned buffer without its content
 * lock, then validating.
 *
 *		if (CalicoOptimisticBegin(buf, mask, &lsn))
 *		{
 *			... read the page; check every offset and length before use ...
 *			if (CalicoOptimisticValid(buf, mask, lsn))
 *				... what was read is one version of the page: use it ...
 *		}
 *		... else read it again under the content lock ...
 *
 * The version is the page's LSN together with the content lock's exclusive
 * bit (mask, from optimistic_mask).  The reader reads LSN, lock word, the
 * page, lock word, LSN, with read barriers between.  Proof sketch, for a
 * relation every writer of which changes a page only under the exclusive
 * content lock and sets a new, larger LSN before releasing it (what
 * optimistic_mask checks: WAL-logged relations, whose changes go through
 * GenericXLog or redo, full-page images included):
 *	- a writer holding the lock at the first look of the lock word: Begin
 *	  fails;
 *	- a writer that takes the lock after that look and still holds it at the
 *	  second: Valid fails;
 *	- a writer that takes and releases the lock between the two looks: it set
 *	  a new LSN before its release, which the reader saw (the second look
 *	  read the released word, and the release orders the LSN store before
 *	  it), so the second LSN differs: Valid fails;
 *	- a writer done before the first look changed nothing read after it.
 * The pin excludes eviction, so the buffer holds the same block throughout
 * (no reuse counter is needed).  Hint-bit style writes under a share lock
 * are not covered: the caller must not read anything such writers change
 * (pgvector's index pages have none).  Torn values read before validation
 * must stay inside the page: every offset and length is checked first.
 */
static inline bool
CalicoOptimisticBegin(Buffer buf, uint32 mask, XLogRecPtr *lsn)
{
	BufferDesc *desc = GetBufferDescriptor(buf - 1);

	*lsn = PageGetLSN(BufferGetPage(buf));
	pg_read_barrier();
	if (pg_atomic_read_u32(&BufferDescriptorGetContentLock(desc)->state) & mask)
		return false;
	pg_read_barrier();
	return true;
}

static inline bool
CalicoOptimisticValid(Buffer buf, uint32 mask, XLogRecPtr lsn)
{
	BufferDesc *desc = GetBufferDescriptor(buf - 1);

	pg_read_barrier();
	if (pg_atomic_read_u32(&BufferDescriptorGetContentLock(desc)->state) & mask)
		return false;
	pg_read_barrier();
	return PageGetLSN(BufferGetPage(buf)) == lsn;
}

#endif							/* CALICO_API_H */
