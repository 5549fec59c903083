#!/bin/bash
# Discovery on fake multi-GPU nodes (tests/mpi/test_topo): real servers' hwloc XML
# and NCCL topology files from tests/data/topologies, GPUs chosen per rank with
# MPIX_HIER_GPU_BUSID (or CUDA_VISIBLE_DEVICES), expected rails/islands written
# here from reading the files (see tests/data/topologies/README.*.md).
set -u
self=$(cd "$(dirname "$0")" && pwd)
data=${MXH_TEST_DATADIR:-$self/../data}/topologies
bin=${MXH_TEST_BINDIR:-$(pwd)/mpi}/test_topo
logdir=$(dirname $bin)
# MXH_TEST_WRAPPER="valgrind ..." runs every rank under that command (make check-valgrind)
[ -n "${MXH_TEST_WRAPPER:-}" ] && bin="$MXH_TEST_WRAPPER $bin"
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC_TIMEOUT=${MXH_TEST_RUN_TIMEOUT:-300}
export MXH_TEST_TIMEOUT=${MXH_TEST_TIMEOUT:-120}
unset MPIX_HIER_HOSTNAME MPIX_HIER_TOPO_FILE MPIX_HIER_HWLOC_XML MPIX_HIER_NCCL_TOPO_FILE \
      MPIX_HIER_GPU_BUSID MPIX_HIER_GPU_MPS NCCL_TOPO_FILE HWLOC_XMLFILE CUDA_VISIBLE_DEVICES MPIR_CVAR_NUM_CLIQUES
command -v "${MPIEXEC%% *}" >/dev/null 2>&1 || { echo "SKIP: $MPIEXEC not found"; exit 77; }
npass=0; nfail=0; failed=()

# run NAME ENV... -- MPIEXEC-ARGS
run() {
    local name=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local log=${MXH_TEST_LOGDIR:-$logdir}/mxh-topo-$name.log
    if env "${envs[@]}" MXH_TEST_LAYOUT="$name" timeout $((MPIEXEC_TIMEOUT + 30)) \
           $MPIEXEC "$@" >"$log" 2>&1; then
        echo "PASS: topo $name"; npass=$((npass + 1))
    else
        echo "FAIL: topo $name (log: $log)"; tail -n 30 "$log"; nfail=$((nfail + 1)); failed+=("$name")
    fi
}
H=MPIX_HIER_HOSTNAME; G=MPIX_HIER_GPU_BUSID; R=MXH_TEST_EXPECT_RAIL; I=MXH_TEST_EXPECT_ISLAND

# coral-ea-hwloc1 (hwloc v1 XML): GPUs 0002/0003:01:00.0 on socket 0 next to mlx5_0
# (rail 0), 0006/0007:01:00.0 on socket 1 next to mlx5_1 (rail 1).
coral=$data/coral-ea-hwloc1.xml
run coral-2x2 MPIX_HIER_HWLOC_XML="$coral" MXH_TEST_EXPECT_LEVELS=node,rail MXH_TEST_EXPECT_NIC=mlx5_1 -- \
    -n 1 -env $H a -env $G 0002:01:00.0 -env $R 0 $bin : -n 1 -env $H a -env $G 0006:01:00.0 -env $R 1 $bin : \
    -n 1 -env $H b -env $G 0003:01:00.0 -env $R 0 $bin : -n 1 -env $H b -env $G 0007:01:00.0 -env $R 1 $bin
# the same GPUs in the opposite local order on node b: rails follow the NIC, not the rank
run coral-swapped MPIX_HIER_HWLOC_XML="$coral" MXH_TEST_EXPECT_LEVELS=node,rail -- \
    -n 1 -env $H a -env $G 0002:01:00.0 -env $R 0 $bin : -n 1 -env $H a -env $G 0006:01:00.0 -env $R 1 $bin : \
    -n 1 -env $H b -env $G 0007:01:00.0 -env $R 1 $bin : -n 1 -env $H b -env $G 0002:01:00.0 -env $R 0 $bin
# nvidiaDGX2: GPUs 0-7 (buses 34..5e) and 8-15 (b7..e7) form two NVSwitch islands; no
# NICs in the export, so rails are the order inside the node. GPUs by CUDA_VISIBLE_DEVICES.
dgx=$data/nvidiaDGX2.xml
run dgx2-islands MPIX_HIER_HWLOC_XML="$dgx" CUDA_VISIBLE_DEVICES=0,1,8,9 MXH_TEST_EXPECT_LEVELS=island,node,rail -- \
    -n 1 -env $H a -env $R 0 -env $I 0 $bin : -n 1 -env $H a -env $R 1 -env $I 0 $bin : \
    -n 1 -env $H a -env $R 2 -env $I 1 $bin : -n 1 -env $H a -env $R 3 -env $I 1 $bin : \
    -n 1 -env $H b -env $R 0 -env $I 0 $bin : -n 1 -env $H b -env $R 1 -env $I 0 $bin : \
    -n 1 -env $H b -env $R 2 -env $I 1 $bin : -n 1 -env $H b -env $R 3 -env $I 1 $bin
# g4dn.metal: 8 PCIe T4 (18,19,35,36 | e7,e8,f4,f5), one EFA (rdmap197s0) for all:
# every GPU is on rail 0; the ranks of a node pair by their order on the shared rail.
g4=$data/g4dnmetal.xml
run g4dn-shared-nic MPIX_HIER_HWLOC_XML="$g4" MXH_TEST_EXPECT_LEVELS=node,rail MXH_TEST_EXPECT_NIC=rdmap197s0 -- \
    -n 1 -env $H a -env $G 0000:18:00.0 -env $R 0 $bin : -n 1 -env $H a -env $G 0000:e7:00.0 -env $R 0 $bin : \
    -n 1 -env $H b -env $G 0000:19:00.0 -env $R 0 $bin : -n 1 -env $H b -env $G 0000:f5:00.0 -env $R 0 $bin
# two ranks per GPU (one GPU each of nodes a and b): MPIX_HIER_IPC=auto takes the device
# node level only from 4 MiB (time-sliced contexts; exec/ipc.h), and says so
run g4dn-shared-gpu MPIX_HIER_HWLOC_XML="$g4" MXH_TEST_EXPECT_LEVELS=node,rail \
    MXH_TEST_EXPECT_SHARED_GPU="device node level (MPIX_HIER_IPC=auto) from 4194304 bytes: ranks 0 and 1 share GPU 0 of their node" -- \
    -n 2 -env $H a -env $G 0000:18:00.0 -env $R 0 $bin : -n 2 -env $H b -env $G 0000:19:00.0 -env $R 0 $bin
# the same through CUDA MPS (one context per GPU, no time slicing): from MPIX_HIER_IPC_MIN
run g4dn-shared-gpu-mps MPIX_HIER_HWLOC_XML="$g4" MPIX_HIER_GPU_MPS=yes MXH_TEST_EXPECT_LEVELS=node,rail \
    MXH_TEST_EXPECT_SHARED_GPU="device node level (MPIX_HIER_IPC=auto) from 262144 bytes: ranks of a node share a GPU through MPS" -- \
    -n 2 -env $H a -env $G 0000:18:00.0 -env $R 0 $bin : -n 2 -env $H b -env $G 0000:19:00.0 -env $R 0 $bin
# MPS on node a only, and on one of node b's two ranks: b's pair is time-sliced
run g4dn-shared-gpu-mps-partial MPIX_HIER_HWLOC_XML="$g4" MXH_TEST_EXPECT_LEVELS=node,rail \
    MXH_TEST_EXPECT_SHARED_GPU="device node level (MPIX_HIER_IPC=auto) from 4194304 bytes: ranks 2 and 3 share GPU 1 of their node" -- \
    -n 2 -env $H a -env $G 0000:18:00.0 -env $R 0 -env MPIX_HIER_GPU_MPS yes $bin : \
    -n 1 -env $H b -env $G 0000:19:00.0 -env $R 0 -env MPIX_HIER_GPU_MPS yes $bin : \
    -n 1 -env $H b -env $G 0000:19:00.0 -env $R 0 -env MPIX_HIER_GPU_MPS no $bin
# NCCL topology of OCI BM.GPU.H100.8: GPU 0f:00.0 -> mlx5_0 (rail 0), 2d:00.0 -> mlx5_3
# (rail 2 of the 16 ports); one NVLink island (NVSwitches) per node.
h100=$data/H100-topology.xml
run h100-nccl MPIX_HIER_NCCL_TOPO_FILE="$h100" MXH_TEST_EXPECT_LEVELS=node,rail MXH_TEST_EXPECT_NIC=mlx5_3 -- \
    -n 1 -env $H a -env $G 0000:0f:00.0 -env $R 0 -env $I 0 $bin : -n 1 -env $H a -env $G 0000:2d:00.0 -env $R 2 -env $I 0 $bin : \
    -n 1 -env $H b -env $G 0000:2d:00.0 -env $R 2 -env $I 0 $bin : -n 1 -env $H b -env $G 0000:0f:00.0 -env $R 0 -env $I 0 $bin

echo "$npass passed, $nfail failed"
[ $nfail -eq 0 ] || { echo "failed: ${failed[*]}"; exit 1; }
