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
 *						are not resident; returns how many it started.  The
 *						started reads stay pinned by calico until
 *						prefetch_release; meanwhile read_buffer of one of those
 *						blocks waits for its read and returns its buffer.
 *	prefetch_release -- waits for the group's reads nobody waited for and
 *						unpins them all.  Must be called before the end of the
 *						transaction; an ERROR in between is cleaned up by the
 *						resource owner and calico's transaction callbacks.
 *	prefetch_tuple   -- CPU cache prefetch of item offno of a resident block,
 *						found through the block's hint: with line_pointer_only,
 *						of the line pointer (and the buffer descriptor); else of
 *						the item's first cache lines, through its line pointer.
 *						No pin, no lock, nothing returned: a hint for the CPU.
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
#include "storage/bufmgr.h"
#include "storage/off.h"
#include "common/relpath.h"
#include "utils/relcache.h"

#define CALICO_API_RENDEZVOUS "calico_api"
#define CALICO_API_VERSION 2

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
	void		(*prefetch_tuple) (Relation rel, ForkNumber fork, BlockNumber blkno,
								   OffsetNumber offno, bool line_pointer_only);
} CalicoApi;

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

#endif							/* CALICO_API_H */
