/* The one place that knows which hwloc API we compile against (>= 2.5 and
 * 3.x). Everything else in mpix-hier uses these wrappers instead of the
 * version-dependent fields and names:
 *
 *   - OS device type: 2.x has a single value obj->attr->osdev.type; 3.0 made
 *     it a bitmask obj->attr->osdev.types (an OpenFabrics device is then also
 *     Network, a CUDA device is CoProc|GPU). mxh_hwloc_osdev_is() answers
 *     "is this OS device of kind K" for both.
 *   - PCI domain: unsigned short in 2.x (unless built with
 *     --enable-32bits-pci-domain), unsigned int in 3.x: read it through
 *     mxh_hwloc_pci_domain().
 *   - Distances kinds HWLOC_DISTANCES_KIND_MEANS_* (2.x) were renamed
 *     HWLOC_DISTANCES_KIND_VALUE_* in 3.x: not used here (the NVLink matrix
 *     is found by name, and only "link or no link" matters).
 *   - XML: hwloc 3.x no longer imports hwloc 1.x XML (open-mpi/hwloc#562);
 *     mxh_hwloc_xml_v1_supported() tells at run time.
 *   - obj->subtype, hwloc_obj_get_info_by_name() (3.x moved obj->infos into a
 *     struct; the accessor hides it), hwloc_distances_get_by_name(),
 *     hwloc_distances_release(), hwloc_topology_set_io_types_filter() and
 *     HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED have the same spelling in 2.5+
 *     and 3.x; they are used directly.
 */
#ifndef MXH_HWLOC_COMPAT_H
#define MXH_HWLOC_COMPAT_H

#include <hwloc.h>

#if HWLOC_API_VERSION < 0x00020500
#error "mpix-hier needs hwloc >= 2.5"
#endif

#if HWLOC_API_VERSION >= 0x00030000
#define MXH_HWLOC_V3 1
#else
#define MXH_HWLOC_V3 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds of OS devices mpix-hier cares about. */
typedef enum mxh_hwloc_osdev_kind {
    MXH_HWLOC_OSDEV_NETWORK,     /* "eth0", "ib0" (in 3.x also every OpenFabrics device) */
    MXH_HWLOC_OSDEV_OPENFABRICS, /* "mlx5_0", "hfi1_0", "rdmap197s0" */
    MXH_HWLOC_OSDEV_GPU,         /* "nvml0", "card0" (in 3.x also "cuda0") */
    MXH_HWLOC_OSDEV_COPROC       /* "cuda0", "opencl0d0" */
} mxh_hwloc_osdev_kind_t;

#if MXH_HWLOC_V3
#define MXH_HWLOC_OSDEV_HAS(_obj, _t) (((_obj)->attr->osdev.types & (_t)) != 0)
#else
#define MXH_HWLOC_OSDEV_HAS(_obj, _t) ((_obj)->attr->osdev.type == (_t))
#endif

static inline int mxh_hwloc_osdev_is(const struct hwloc_obj *obj, mxh_hwloc_osdev_kind_t kind)
{
    if (obj == NULL || obj->type != HWLOC_OBJ_OS_DEVICE)
        return 0;
    switch (kind) {
    case MXH_HWLOC_OSDEV_NETWORK:     return MXH_HWLOC_OSDEV_HAS(obj, HWLOC_OBJ_OSDEV_NETWORK);
    case MXH_HWLOC_OSDEV_OPENFABRICS: return MXH_HWLOC_OSDEV_HAS(obj, HWLOC_OBJ_OSDEV_OPENFABRICS);
    case MXH_HWLOC_OSDEV_GPU:         return MXH_HWLOC_OSDEV_HAS(obj, HWLOC_OBJ_OSDEV_GPU);
    case MXH_HWLOC_OSDEV_COPROC:      return MXH_HWLOC_OSDEV_HAS(obj, HWLOC_OBJ_OSDEV_COPROC);
    }
    return 0;
}

static inline unsigned mxh_hwloc_pci_domain(const struct hwloc_obj *obj)
{
    return (unsigned)obj->attr->pcidev.domain;
}

/* Whether the hwloc library we run with (not only the one we compiled
 * against) still imports hwloc 1.x XML exports. */
static inline int mxh_hwloc_xml_v1_supported(void)
{
    return hwloc_get_api_version() < 0x00030000;
}

#ifdef __cplusplus
}
#endif

#endif
