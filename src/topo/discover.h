/* Discovery glue: this rank's node, GPU, NICs and NVLink islands -> the GPU/NIC
 * part of its record. Sources, in order: CUDA's current device, MPIX_HIER_GPU_BUSID,
 * CUDA_VISIBLE_DEVICES; hwloc (live or XML) and an NCCL topology file. Degrades to
 * "no GPU information" (rails = local index) and never fails on missing hardware;
 * a file the user named that cannot be read is an error. */
#ifndef MXH_DISCOVER_H
#define MXH_DISCOVER_H

#include "topo/record.h"
#include "topo/caps.h"
#include "topo/machine.h"
#include "util/config.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The machine description for @cfg (cached per process; do not free), or NULL with
 * MXH_OK when none is available. */
mxh_status_t mxh_discover_machine(const mxh_config_t *cfg, const mxh_machine_t **machine_p);

/* Fill the GPU/NIC fields of @rec (ngpus, gpu, visible, gpu_rail, gpu_island, nnics,
 * nic_names, gpu_busid, flags) from @machine (may be NULL) and the rank's GPU. */
mxh_status_t mxh_discover_fill_record(const mxh_config_t *cfg, const mxh_machine_t *machine,
                                      mxh_record_t *rec);

/* PCI bus id of CUDA's current device ("" when no CUDA device/runtime). The runtime
 * is loaded with dlopen, so the library does not depend on CUDA. */
void mxh_discover_cuda_busid(char busid[MXH_BUSID_LEN]);

/* 1 when the contexts of CUDA's current device are shared through MPS (the device
 * attribute cudaDevAttrMpsEnabled), else 0: no CUDA device or runtime, a runtime
 * that does not know the attribute, or no MPS daemon. */
int mxh_discover_cuda_mps(void);

/* UCX and MPICH transport capabilities, queried once per process (MPI must be
 * initialized); sets the MXH_REC_* capability bits of @rec when given. */
const mxh_caps_t *mxh_discover_caps(mxh_record_t *rec);

/* Free the cached machine descriptions. */
void mxh_discover_cleanup(void);

#ifdef __cplusplus
}
#endif

#endif
