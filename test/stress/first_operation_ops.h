/*
 * first_operation_ops.h - the C++ operator new/delete forms, as C functions
 * that first_operation.c calls as a thread's first call.  prepare functions
 * run in the main thread and return a block for the delete forms to free.
 */
#ifndef TL_TEST_FIRST_OPERATION_OPS_H
#define TL_TEST_FIRST_OPERATION_OPS_H

#ifdef __cplusplus
extern "C" {
#endif

void *cxx_prepare(void);
void *cxx_prepare_array(void);
void *cxx_prepare_aligned(void);

void cxx_first_new(void *arg);
void cxx_first_new_array(void *arg);
void cxx_first_new_nothrow(void *arg);
void cxx_first_new_aligned(void *arg);
void cxx_first_new_array_aligned(void *arg);
void cxx_first_new_aligned_nothrow(void *arg);
void cxx_first_new_bad_alloc(void *arg);
void cxx_first_delete(void *arg);
void cxx_first_delete_sized(void *arg);
void cxx_first_delete_array(void *arg);
void cxx_first_delete_aligned(void *arg);
void cxx_first_delete_sized_aligned(void *arg);

#ifdef __cplusplus
}
#endif

#endif /* TL_TEST_FIRST_OPERATION_OPS_H */
