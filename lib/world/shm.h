/* SPDX-License-Identifier: MIT */
/*
 * Collectives through shared memory, for a world whose ranks all share
 * the host of its store (hmcrun, one-host mpirun, a uid): the store makes
 * a segment with one slot per rank and names it in its JOIN reply; every
 * rank that maps it says so in its record, and when all of them did, the
 * world's small collectives (up to WSHM_DATA bytes) post into their slot
 * and read the others' instead of a round trip through the store.
 *
 * Collective k: a rank writes its part into half k % 2 of its slot, then
 * publishes k + 1 in the slot's sequence (release); it is done when every
 * slot shows k + 1 (acquire). Half k % 2 is rewritten at k + 2 only, which
 * no rank reaches before every rank has read k.
 *
 * Membership changes end this path for good, the same way on every rank:
 * the store sets @changed on any join or departure, and marks departed
 * ranks. A rank that finds @changed before posting k posts ABORT; a rank
 * whose collective sees an ABORT, or a departed rank that never posted,
 * takes collective k and all later ones to the store. Every rank sees the
 * same k posts, so all decide the same.
 */
#ifndef HMC_LIB_WORLD_SHM_H
#define HMC_LIB_WORLD_SHM_H

#include <stddef.h>
#include <stdint.h>

#define WSHM_MAX_RANKS	64
#define WSHM_DATA	1024
#define WSHM_NAME_LEN	64

struct wshm;

/* The store's side: create a segment for @nslots ranks named *@name. */
int wshm_create(uint32_t nslots, char name[WSHM_NAME_LEN], struct wshm **w);
/* A rank's side: map @name, made for @nslots ranks. */
int wshm_open(const char *name, uint32_t nslots, struct wshm **w);
/* The store: forget the name (mappings stay), once every rank has it. */
void wshm_unlink(struct wshm *w);
void wshm_close(struct wshm *w);

/* The store: membership changed; @rank (or UINT32_MAX) departed. */
void wshm_changed(struct wshm *w, uint32_t departed);

enum wshm_kind {
	WSHM_ALLGATHER,
	WSHM_BCAST,
};

/*
 * Collective number @seq of rank @rank: 0 when done (@recv filled), 1 when
 * it must go to the store instead, -ETIMEDOUT at @deadline (@missing
 * names the ranks that did not come), -EINVAL if lengths differ.
 */
int wshm_coll(struct wshm *w, uint32_t rank, uint64_t seq,
	      enum wshm_kind kind, uint32_t root, const void *send, size_t len,
	      void *recv, int64_t deadline, char *missing, size_t mlen);

#endif
