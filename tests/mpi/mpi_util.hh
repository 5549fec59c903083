// C++ helpers shared by the MPI test programs.
#ifndef MXH_MPI_UTIL_HH
#define MXH_MPI_UTIL_HH

#include <mpi.h>

#include <set>
#include <vector>

namespace mxh_test {

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
