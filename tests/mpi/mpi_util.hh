// C++ helpers shared by the MPI test programs.
#ifndef MXH_MPI_UTIL_HH
#define MXH_MPI_UTIL_HH

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "mxh_test_shim.h"

namespace mxh_test {

inline int world_rank()
{
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}
inline int world_size()
{
    int s;
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    return s;
}

// An intercommunicator between MPI_COMM_WORLD's lower and upper halves (2+ ranks): @half
// gets the caller's half, @low whether it is the lower one. The caller frees both.
inline MPI_Comm world_intercomm(MPI_Comm *half, int *low)
{
    int rank = world_rank(), size = world_size();
    MPI_Comm inter;
    *low = rank < size / 2;
    MPI_Comm_split(MPI_COMM_WORLD, *low, rank, half);
    MPI_Intercomm_create(*half, 0, MPI_COMM_WORLD, *low ? size / 2 : 0, 77, &inter);
    return inter;
}

// The name of MPI error class @cls (or the library's own class).
inline const char *class_name(int cls)
{
    switch (cls) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPI_ERR_BUFFER: return "MPI_ERR_BUFFER";
    case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
    case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
    case MPI_ERR_TAG: return "MPI_ERR_TAG";
    case MPI_ERR_COMM: return "MPI_ERR_COMM";
    case MPI_ERR_RANK: return "MPI_ERR_RANK";
    case MPI_ERR_ROOT: return "MPI_ERR_ROOT";
    case MPI_ERR_OP: return "MPI_ERR_OP";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
    case MPI_ERR_INTERN: return "MPI_ERR_INTERN";
    case MPI_ERR_INFO_VALUE: return "MPI_ERR_INFO_VALUE";
    case MPI_ERR_INFO_KEY: return "MPI_ERR_INFO_KEY";
    case MPI_ERR_REQUEST: return "MPI_ERR_REQUEST";
    default: break;
    }
    int mine = -1;
    MPIX_Hier_get_error_class(&mine);
    return cls == mine ? "MPIX_Hier_get_error_class()" : "another class";
}

// MXH_TEST_QUICK=1: the tests trim their matrices.
inline bool quick() { return mxh_env_int("MXH_TEST_QUICK", 0) != 0; }

// MXH_TEST_TRACE=1: every case is printed to stderr before it runs.
inline void trace(const std::string &label)
{
    static int on = mxh_env_int("MXH_TEST_TRACE", 0);
    if (on) {
        std::fprintf(stderr, "[rank %d] case: %s\n", world_rank(), label.c_str());
        std::fflush(stderr);
    }
}

// splitmix64's finaliser: pseudo-random values that are the same on every rank.
inline uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// The data pattern's salt of a case: type and op names, then two numbers.
inline uint64_t salt_of(const mxh_type_t *t, MPI_Op op, int a, int b)
{
    uint64_t h = MXH_FNV_INIT;
    h = mxh_hash_bytes_fnv(h, t->name, strlen(t->name));
    const char *on = mxh_op_name(op);
    h = mxh_hash_bytes_fnv(h, on, strlen(on));
    h = mxh_hash_bytes_fnv(h, &a, sizeof(a));
    return mxh_hash_bytes_fnv(h, &b, sizeof(b));
}

// (type, op) pairs MPI allows; MPICH-rejected ones (e.g. MPI_COMPLEX32) are
// counted in *skipped.
struct Pair {
    const mxh_type_t *t;
    MPI_Op op;
};

inline std::vector<Pair> allowed_pairs(int *skipped)
{
    std::vector<Pair> v;
    *skipped = 0;
    for (int i = 0; i < mxh_num_types(); i++)
        for (int o = 0; o < mxh_num_ops(); o++) {
            const mxh_type_t *t = mxh_type_at(i);
            MPI_Op op = mxh_op_at(o);
            if (!mxh_op_allowed(t, op))
                continue;
            if (!mxh_op_mpich_ok(t, op)) {
                ++*skipped;
                continue;
            }
            v.push_back({t, op});
        }
    return v;
}

// Says once per @what (rank 0) how many pairs allowed_pairs skipped.
inline void note_skipped(int skipped, const char *what)
{
    static std::set<std::string> said;
    if (skipped && world_rank() == 0 && !said.count(what)) {
        said.insert(what);
        std::printf("  [note] %s: %d type/op pair(s) MPI allows but MPICH rejects (no reference): "
                    "skipped\n",
                    what, skipped);
    }
}

// WORLD ranks of the members of @c (MPI_COMM_NULL: empty).
inline std::set<int> world_members(MPI_Comm c)
{
    std::set<int> s;
    if (c == MPI_COMM_NULL)
        return s;
    MPI_Group g, w;
    int n;
    MPI_Comm_group(c, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &w);
    MPI_Group_size(g, &n);
    std::vector<int> in((size_t)n), out((size_t)n);
    for (int i = 0; i < n; i++)
        in[(size_t)i] = i;
    MPI_Group_translate_ranks(g, n, in.data(), w, out.data());
    s.insert(out.begin(), out.end());
    MPI_Group_free(&g);
    MPI_Group_free(&w);
    return s;
}

}  // namespace mxh_test

#endif
