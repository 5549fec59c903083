# src/coll fragment: rail exclusion (coll/rail_exclude.h): the decision is pure (decision
# library), the allreduce body needs MPI.
src_libmxh_la_SOURCES += src/coll/rail_exclude.h src/coll/rail_exclude_layout.c
libmpixhier_core_la_SOURCES += src/coll/rail_exclude.c
