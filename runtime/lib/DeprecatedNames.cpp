//===- DeprecatedNames.cpp - the pd_pipeline names of API version 5 -------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pd_pipeline was the name of pd_rank (runtime.h, API version 6): a rank of
// a pipeline bundle running its program. The old names stay exported for
// embedders (docs/Runtime.md) and forward to the pd_rank functions.
//
//===----------------------------------------------------------------------===//

#include "pipedream/runtime.h"

extern "C" {

pd_status pd_pipeline_create(pd_bundle *bundle, size_t rank,
                             pd_transport *transport, pd_rank **out) {
  return pd_rank_create(bundle, rank, transport, out);
}
void pd_pipeline_destroy(pd_rank *r) { pd_rank_destroy(r); }
size_t pd_pipeline_rank(const pd_rank *r) { return pd_rank_index(r); }
size_t pd_pipeline_batch_size(const pd_rank *r) {
  return pd_rank_batch_size(r);
}
pd_status pd_pipeline_check_data(pd_rank *r, const pd_named_array *arrays,
                                 size_t count, size_t *num_samples) {
  return pd_rank_check_data(r, arrays, count, num_samples);
}
pd_status pd_pipeline_step(pd_rank *r, const pd_named_array *arrays,
                           size_t count, uint64_t first_sample, double *loss) {
  return pd_rank_step(r, arrays, count, first_sample, loss);
}
pd_status pd_pipeline_set_check_finite(pd_rank *r, int enabled) {
  return pd_rank_set_check_finite(r, enabled);
}
pd_status pd_pipeline_gather_weights(pd_rank *r) {
  return pd_rank_gather_weights(r);
}
pd_status pd_pipeline_save_checkpoint(pd_rank *r, const char *dir,
                                      uint64_t step) {
  return pd_rank_save_checkpoint(r, dir, step);
}
pd_status pd_pipeline_load_checkpoint(pd_rank *r, const char *dir,
                                      uint64_t *step) {
  return pd_rank_load_checkpoint(r, dir, step);
}
pd_status pd_pipeline_set_tracing(pd_rank *r, int enabled) {
  return pd_rank_set_tracing(r, enabled);
}
size_t pd_pipeline_trace_count(pd_rank *r) { return pd_rank_trace_count(r); }
pd_status pd_pipeline_trace_event(pd_rank *r, size_t index,
                                  pd_trace_event *out) {
  return pd_rank_trace_event(r, index, out);
}
void pd_pipeline_trace_clear(pd_rank *r) { pd_rank_trace_clear(r); }

} // extern "C"
