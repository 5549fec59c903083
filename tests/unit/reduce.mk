# unit fragment (owned by its subsystem); included from the Makefile.am above it
