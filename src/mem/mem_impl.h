/* Private to src/mem: the kinds' ops tables and what the registry (mem.c)
 * needs from each kind. The engine uses mem.h only. */
#ifndef MXH_MEM_IMPL_H
#define MXH_MEM_IMPL_H

#include "mem/ipc_cache.h"
#include "mem/mem.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const mxh_mem_ops_t mxh_mem_host_ops;
extern const mxh_mem_ops_t mxh_mem_test_ops;

/* Live test-kind allocations: mxh_mem_of asks the test kind only when this
 * is nonzero, so processes that never allocate test memory pay one load. */
extern int mxh_mem_test_live;

/* The test kind's opener of peer mappings (/proc/<pid>/fd/<memfd>), the
 * default of mem/ipc_cache.c for keys of kind MXH_MEM_TEST. */
extern const mxh_ipc_cache_ops_t mxh_mem_test_ipc_ops;

#ifdef HAVE_CUDA
extern const mxh_mem_ops_t mxh_mem_cuda_ops;
/* Destroy the CUDA kind's streams and pooled events (mxh_mem_finalize). */
void mxh_mem_cuda_finalize(void);
#endif

#ifdef __cplusplus
}
#endif

#endif
