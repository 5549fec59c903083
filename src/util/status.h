/* Internal status codes of mpix-hier. One enum for the whole library; the code
 * that first detects an error logs its exact cause and returns one of these;
 * mpix/ converts them to MPI error codes. */
#ifndef MXH_STATUS_H
#define MXH_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mxh_status {
    MXH_OK = 0,
    MXH_ERR_NO_MEMORY,     /* allocation failed */
    MXH_ERR_INVALID_PARAM, /* bad argument from the caller (internal API) */
    MXH_ERR_IO,            /* a file could not be opened or read */
    MXH_ERR_PARSE,         /* a file or value is malformed */
    MXH_ERR_CONFIG,        /* configuration invalid or not agreed across ranks */
    MXH_ERR_MPI,           /* an MPI call failed */
    MXH_ERR_UNSUPPORTED,   /* valid request this build/library cannot serve */
    MXH_ERR_LAST
} mxh_status_t;

/* Short human name of a status ("invalid parameter", ...). */
const char *mxh_status_string(mxh_status_t status);

#ifdef __cplusplus
}
#endif

#endif
