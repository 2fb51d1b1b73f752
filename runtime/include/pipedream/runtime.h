/*===- pipedream/runtime.h - pipedream runtime C API ------------*- C -*-===*\
|*                                                                          *|
|* Part of the pipedream project.                                           *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/
/*
 * The public C API of the pipedream runtime: open a compiled bundle
 * (bundle.json + program.so + weights.bin, see docs/Bundle.md), set the
 * inputs of one of its functions, run it, read its outputs.
 *
 * Conventions (docs/Runtime.md has the details):
 *  - Every call that can fail returns a pd_status. On failure the message is
 *    available from pd_last_error() on the same thread until the next failing
 *    call there. The library never aborts, exits or prints.
 *  - Handles are opaque. A pd_bundle owns everything reached through it:
 *    pd_function and pd_buffer handles and every string or shape pointer the
 *    accessors return stay valid until pd_bundle_close().
 *  - Buffers are owned by the runtime: dense, row-major (C order),
 *    64-byte aligned, zero-initialized when the bundle is opened. Weight
 *    buffers are loaded once and shared by every function that uses them.
 *  - One bundle is used from one thread at a time; separate bundles are
 *    independent.
 *
 * New capabilities (ranks and transports, stash slots, checkpoints) arrive
 * as new functions, new enumerators and new roles; existing functions keep
 * their signatures and meaning (PD_RUNTIME_API_VERSION counts additions).
 */

#ifndef PIPEDREAM_RUNTIME_H
#define PIPEDREAM_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define PD_API
#else
#define PD_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this header's API; bumped when functions are added.
 *  2: roles grad/state, `updates`, training accessors, pd_trainer.
 *  3: pipeline bundles (pd_bundle_open_rank, pipeline accessors,
 *     pd_pipeline), transports (threads, MPI, user-defined), statuses
 *     PD_ERROR_TIMEOUT and PD_ERROR_PEER.
 *  4: checkpoints (pd_trainer_/pd_pipeline_save_checkpoint, _load_checkpoint,
 *     pd_checkpoint_step), traces (pd_trace_event, pd_*_set_tracing,
 *     pd_*_trace_*), tags PD_TAG_CHECKPOINT and PD_TAG_TRACE.
 *  5: run-time checks: PD_ERROR_CHECK_FAILED, pd_trainer_set_check_finite,
 *     pd_pipeline_set_check_finite, tag PD_TAG_STEP_STATUS (bundle
 *     version 2).
 *  6: pd_pipeline is pd_rank (one rank of a pipeline bundle running its
 *     program; "pipeline" names the parallelism, not this object):
 *     pd_rank_create ... pd_rank_trace_clear, pd_rank_index for
 *     pd_pipeline_rank. The pd_pipeline names stay, deprecated aliases of
 *     the same functions (end of this header). */
#define PD_RUNTIME_API_VERSION 6

/** Result of every fallible call. Values are stable; more may be added. */
typedef enum pd_status {
  PD_OK = 0,
  /** A NULL handle or pointer, an index out of range, a bad flag. */
  PD_ERROR_INVALID_ARGUMENT = 1,
  /** No function, buffer or weight of that name. */
  PD_ERROR_NOT_FOUND = 2,
  /** A file or directory could not be opened or read. */
  PD_ERROR_IO = 3,
  /** A malformed bundle.json, weights.bin, .npy or .npz. */
  PD_ERROR_FORMAT = 4,
  /** Data whose dtype, shape or size does not match the buffer. */
  PD_ERROR_MISMATCH = 5,
  /** An allocation failed. */
  PD_ERROR_OUT_OF_MEMORY = 6,
  /** dlopen()/dlsym() of the bundle's native library failed. */
  PD_ERROR_LOAD = 7,
  /** A feature this runtime does not have (yet). */
  PD_ERROR_UNSUPPORTED = 8,
  /** A bug in the runtime; the message says where. */
  PD_ERROR_INTERNAL = 9,
  /** A transport receive waited longer than its timeout (the message names
   *  the rank waited for). */
  PD_ERROR_TIMEOUT = 10,
  /** Another rank failed or went away (the message names it). */
  PD_ERROR_PEER = 11,
  /** A run-time check of the compiled code failed (an index out of range,
   *  naming the ONNX node, the value and the bound), or a non-finite loss
   *  or gradient with check-finite on. A training step that fails so is
   *  not applied: weights, optimizer state and step count are as before
   *  it. In a pipeline every rank returns it with the same message. */
  PD_ERROR_CHECK_FAILED = 12,
  /* Not a status: keeps the enum int-sized, so any int is a valid value. */
  PD_STATUS_MAX_ENUM_ = 0x7fffffff
} pd_status;

/** Element types (bundle.json `dtype` strings in comments). */
typedef enum pd_dtype {
  PD_DTYPE_F32 = 0,  /**< "f32" */
  PD_DTYPE_F64 = 1,  /**< "f64" */
  PD_DTYPE_F16 = 2,  /**< "f16" */
  PD_DTYPE_BF16 = 3, /**< "bf16" */
  PD_DTYPE_I64 = 4,  /**< "i64" */
  PD_DTYPE_I32 = 5,  /**< "i32" */
  PD_DTYPE_I8 = 6,   /**< "i8" */
  PD_DTYPE_I1 = 7,   /**< "i1", one byte per element, 0 or 1 */
  PD_DTYPE_U8 = 8,   /**< "u8" */
  PD_DTYPE_U16 = 9,  /**< "u16"; .npy `<u2`, which bf16 bit patterns share:
                          the two are interchangeable in pd_buffer_write /
                          pd_buffer_read (same bits) */
  PD_DTYPE_U32 = 10, /**< "u32" */
  PD_DTYPE_U64 = 11, /**< "u64" */
  PD_DTYPE_I16 = 12, /**< "i16" */
  PD_DTYPE_MAX_ENUM_ = 0x7fffffff /* not a dtype; keeps the enum int-sized */
} pd_dtype;

/** What a buffer is to its function (bundle.json `role`). */
typedef enum pd_role {
  PD_ROLE_INPUT = 0,  /**< "input": set by the caller, read by the function */
  PD_ROLE_OUTPUT = 1, /**< "output": fully written by the function */
  PD_ROLE_WEIGHT = 2, /**< "weight": loaded from weights.bin, shared */
  PD_ROLE_GRAD = 3,   /**< "grad": gradient accumulator, shared by name,
                           zero at open and before every training step */
  PD_ROLE_STATE = 4,  /**< "state": optimizer state, shared by name, zero at
                           open */
  PD_ROLE_MAX_ENUM_ = 0x7fffffff /* not a role; keeps the enum int-sized */
} pd_role;

/** An open bundle: its native library, weights and buffers. */
typedef struct pd_bundle pd_bundle;
/** One function of a bundle (a `pipedream_<name>` symbol). */
typedef struct pd_function pd_function;
/** One runtime-owned tensor: a function's input/output or a persistent
 *  (weight, grad, state) buffer. */
typedef struct pd_buffer pd_buffer;
/** Runs training steps of a training bundle (see pd_trainer_create). */
typedef struct pd_trainer pd_trainer;
/** Moves bytes between the ranks of a pipeline (see pd_transport_*). */
typedef struct pd_transport pd_transport;
/** One rank of a pipeline bundle: runs that rank's program (see
 *  pd_rank_create). */
typedef struct pd_rank pd_rank;

/** A caller-owned array handed to the trainer: dense, row-major, the first
 *  axis is the sample axis. Nothing is kept after the call returns. */
typedef struct pd_named_array {
  const char *name; /**< a training input or the labels */
  pd_dtype dtype;
  size_t rank;          /**< at least 1 */
  const int64_t *shape; /**< `rank` extents; shape[0] = number of samples */
  const void *data;
  size_t num_bytes; /**< product of the extents x pd_dtype_size(dtype) */
} pd_named_array;

/*===-- Errors and enums -------------------------------------------------===*/

/** The message of the last failed call on this thread ("" if none). The
 *  pointer stays valid until the next failing call on this thread. */
PD_API const char *pd_last_error(void);
/** Forgets the last error of this thread. */
PD_API void pd_clear_error(void);
/** "ok", "invalid argument", "not found"... for any value. */
PD_API const char *pd_status_string(pd_status status);
/** The bundle.json spelling ("f32"...), or "?" for an unknown value. */
PD_API const char *pd_dtype_name(pd_dtype dtype);
/** Parses a bundle.json dtype string. */
PD_API pd_status pd_dtype_from_name(const char *name, pd_dtype *out);
/** Bytes per element (1 for i1), 0 for an unknown value. */
PD_API size_t pd_dtype_size(pd_dtype dtype);
/** The bundle.json spelling ("input"...), or "?" for an unknown value. */
PD_API const char *pd_role_name(pd_role role);
/** PD_RUNTIME_API_VERSION of the library actually linked. */
PD_API int pd_runtime_api_version(void);
/** Sets this thread's last error (for user-defined transports, whose
 *  callbacks report failures this way) and returns `status`. */
PD_API pd_status pd_set_last_error(pd_status status, const char *message);

/*===-- Bundles ------------------------------------------------------------===*/

/** Opens the bundle in directory `dir`: validates bundle.json, dlopen()s its
 *  library (RTLD_LOCAL|RTLD_NOW), resolves every function's symbol, loads
 *  every weight from the weights file and allocates every buffer. On
 *  failure *out is set to NULL and nothing is leaked. */
PD_API pd_status pd_bundle_open(const char *dir, pd_bundle **out);
/** Opens one rank of a pipeline bundle (one with a `pipeline` section):
 *  like pd_bundle_open, but loads only the functions rank `rank`'s program
 *  calls, allocates only the grad/state buffers they use, and loads only
 *  the weights they use. Every weight is still listed
 *  (pd_bundle_weight_count/_at) with its name, dtype and shape; those of
 *  other ranks have no memory (pd_buffer_const_data returns NULL) until
 *  pd_rank_gather_weights brings them to rank 0. Value (input and
 *  output) buffers get memory on first use only (the pipeline runs
 *  functions on its registers). PD_ERROR_UNSUPPORTED for a bundle without
 *  a pipeline, PD_ERROR_INVALID_ARGUMENT for a rank it does not have. */
PD_API pd_status pd_bundle_open_rank(const char *dir, size_t rank,
                                     pd_bundle **out);
/** The rank given to pd_bundle_open_rank, -1 for pd_bundle_open. */
PD_API int64_t pd_bundle_rank(const pd_bundle *bundle);
/** Releases the bundle and everything reached through it. NULL is a no-op. */
PD_API void pd_bundle_close(pd_bundle *bundle);
/** The directory given to pd_bundle_open. */
PD_API const char *pd_bundle_dir(const pd_bundle *bundle);
/** bundle.json `model` ("" if absent). */
PD_API const char *pd_bundle_model(const pd_bundle *bundle);

/** Number of functions, in manifest order. */
PD_API size_t pd_bundle_function_count(const pd_bundle *bundle);
/** The index-th function, or NULL when out of range. */
PD_API pd_function *pd_bundle_function_at(pd_bundle *bundle, size_t index);
/** The function called `name`; PD_ERROR_NOT_FOUND lists the names there are. */
PD_API pd_status pd_function_lookup(pd_bundle *bundle, const char *name,
                                    pd_function **out);

/** Number of weights (bundle.json `weights`), in manifest order. */
PD_API size_t pd_bundle_weight_count(const pd_bundle *bundle);
/** The index-th weight buffer, or NULL when out of range. */
PD_API pd_buffer *pd_bundle_weight_at(pd_bundle *bundle, size_t index);
/** The weight buffer called `name`. */
PD_API pd_status pd_bundle_find_weight(pd_bundle *bundle, const char *name,
                                       pd_buffer **out);

/** Number of persistent buffers: the weights (manifest order), then the
 *  `grad` and `state` buffers in order of first appearance. */
PD_API size_t pd_bundle_persistent_count(const pd_bundle *bundle);
/** The index-th persistent buffer, or NULL when out of range. */
PD_API pd_buffer *pd_bundle_persistent_at(pd_bundle *bundle, size_t index);
/** The persistent (weight, grad or state) buffer called `name`. */
PD_API pd_status pd_bundle_find_persistent(pd_bundle *bundle, const char *name,
                                           pd_buffer **out);

/*===-- Training information (bundle.json `training`) ----------------------===*/

/** 1 when bundle.json has a `training` section, else 0. The accessors below
 *  return "", 0 or NULL for a bundle without one. */
PD_API int pd_bundle_is_training(const pd_bundle *bundle);
/** `loss`: "cross-entropy" or "mse". */
PD_API const char *pd_bundle_training_loss(const pd_bundle *bundle);
/** `labels`: the name of the step function's label input. */
PD_API const char *pd_bundle_training_labels(const pd_bundle *bundle);
/** `num_classes` (cross-entropy; 0 for mse). */
PD_API int64_t pd_bundle_training_num_classes(const pd_bundle *bundle);
/** `microbatches` (M), `microbatch_size`, `batch_size` (M x micro-batch). */
PD_API size_t pd_bundle_training_microbatches(const pd_bundle *bundle);
PD_API size_t pd_bundle_training_microbatch_size(const pd_bundle *bundle);
PD_API size_t pd_bundle_training_batch_size(const pd_bundle *bundle);
/** `inputs`: the data arrays the step reads besides the labels. */
PD_API size_t pd_bundle_training_input_count(const pd_bundle *bundle);
PD_API const char *pd_bundle_training_input_at(const pd_bundle *bundle,
                                               size_t index);
/** `optimizer` as compact JSON text, as bundle.json has it ("" if absent). */
PD_API const char *pd_bundle_training_optimizer(const pd_bundle *bundle);
/** `step_function` and `update_function`. */
PD_API pd_function *pd_bundle_training_step_function(pd_bundle *bundle);
PD_API pd_function *pd_bundle_training_update_function(pd_bundle *bundle);

/*===-- Functions ----------------------------------------------------------===*/

/** bundle.json `name`, `symbol` and `kind` ("inference", "forward"...). */
PD_API const char *pd_function_name(const pd_function *function);
PD_API const char *pd_function_symbol(const pd_function *function);
PD_API const char *pd_function_kind(const pd_function *function);
/** Number of buffers the function takes, in manifest (= ABI) order. */
PD_API size_t pd_function_buffer_count(const pd_function *function);
/** The index-th buffer (a weight buffer is the bundle's shared one), or NULL
 *  when out of range. */
PD_API pd_buffer *pd_function_buffer_at(pd_function *function, size_t index);
/** The function's buffer called `name`. */
PD_API pd_status pd_function_find_buffer(pd_function *function,
                                         const char *name, pd_buffer **out);
/** Calls the function on its buffers. Fails with PD_ERROR_INVALID_ARGUMENT,
 *  without calling, while an input buffer has never been written
 *  (pd_buffer_write or pd_buffer_data). After the call, each output with an
 *  `updates` swaps its memory with the persistent buffer it updates (no
 *  copy): the persistent buffer holds the new value, the output the old
 *  one. Pointers from pd_buffer_data / pd_buffer_const_data of either
 *  buffer taken before the run are stale afterwards. */
PD_API pd_status pd_function_run(pd_function *function);

/*===-- Buffers ------------------------------------------------------------===*/

PD_API const char *pd_buffer_name(const pd_buffer *buffer);
PD_API pd_role pd_buffer_role(const pd_buffer *buffer);
PD_API pd_dtype pd_buffer_dtype(const pd_buffer *buffer);
/** Number of dimensions (0 for a scalar). */
PD_API size_t pd_buffer_rank(const pd_buffer *buffer);
/** pd_buffer_rank() extents; valid while the bundle is open. */
PD_API const int64_t *pd_buffer_shape(const pd_buffer *buffer);
PD_API size_t pd_buffer_num_elements(const pd_buffer *buffer);
PD_API size_t pd_buffer_num_bytes(const pd_buffer *buffer);
/** bundle.json `updates` of an output: the persistent buffer it replaces
 *  after each run ("" if none). */
PD_API const char *pd_buffer_updates(const pd_buffer *buffer);

/** The buffer's memory (64-byte aligned, pd_buffer_num_bytes() long) for
 *  the caller to read or fill in place; counts as a write for
 *  pd_function_run's check. NULL for a NULL buffer. */
PD_API void *pd_buffer_data(pd_buffer *buffer);
/** Read-only access; does not count as a write. */
PD_API const void *pd_buffer_const_data(const pd_buffer *buffer);
/** Copies `num_bytes` bytes of dense row-major data into the buffer after
 *  checking that dtype, rank, shape and size match it exactly
 *  (PD_ERROR_MISMATCH names the buffer, the expected and the given type). */
PD_API pd_status pd_buffer_write(pd_buffer *buffer, pd_dtype dtype,
                                 size_t rank, const int64_t *shape,
                                 const void *data, size_t num_bytes);
/** Copies the buffer out into `data` (`num_bytes` long) with the same
 *  checks as pd_buffer_write. */
PD_API pd_status pd_buffer_read(const pd_buffer *buffer, pd_dtype dtype,
                                size_t rank, const int64_t *shape, void *data,
                                size_t num_bytes);

/*===-- Training -----------------------------------------------------------===*/

/** Creates a trainer for a training bundle (one with a `training` section):
 *  PD_ERROR_UNSUPPORTED for any other. The trainer uses the bundle's
 *  buffers; destroy it before pd_bundle_close (which also frees trainers
 *  left over). *out is NULL on failure. */
PD_API pd_status pd_trainer_create(pd_bundle *bundle, pd_trainer **out);
/** Frees the trainer. NULL is a no-op. */
PD_API void pd_trainer_destroy(pd_trainer *trainer);
/** Samples per step (`batch_size`, M x micro-batch size). */
PD_API size_t pd_trainer_batch_size(const pd_trainer *trainer);
/** Checks data arrays before training: every training input and the labels
 *  are present (extra arrays are ignored), with the step function's dtype
 *  and the shape of its buffer after the first axis, all with the same
 *  number of samples (at least 1), which goes to *num_samples; for
 *  cross-entropy, every label is in [0, num_classes). Messages name the
 *  array (and for labels the row and the value). */
PD_API pd_status pd_trainer_check_data(pd_trainer *trainer,
                                       const pd_named_array *arrays,
                                       size_t count, size_t *num_samples);
/** One optimizer step on the batch made of rows first_sample,
 *  first_sample + 1, ..., first_sample + batch_size - 1 of `arrays`, each
 *  taken modulo the arrays' number of samples (arrays of exactly batch_size
 *  rows with first_sample 0 are one batch; a whole data set with
 *  first_sample = s x batch_size is step s, wrapping around). The arrays are
 *  checked as by pd_trainer_check_data (labels only on the rows used).
 *  Then: every `grad` buffer is zeroed; micro-batch i (its rows i x b to
 *  (i+1) x b - 1 of the batch) is copied into the step function's inputs,
 *  the step function runs and its `updates` apply; then the update function
 *  runs and its `updates` apply. *loss (may be NULL) is the mean of the M
 *  micro-batch losses. Nothing runs when a check fails. */
PD_API pd_status pd_trainer_step(pd_trainer *trainer,
                                 const pd_named_array *arrays, size_t count,
                                 uint64_t first_sample, double *loss);

/** 1 when the bundle has an evaluation function (pipedream-compile
 *  --evaluate: training.eval_function), else 0. */
PD_API int pd_trainer_can_evaluate(const pd_trainer *trainer);
/** The mean eval-mode loss (Dropout off, BatchNorm with its running
 *  statistics) of the current weights over every sample of `arrays`,
 *  checked as by pd_trainer_check_data; their number of samples must be a
 *  multiple of the micro-batch size (PD_ERROR_INVALID_ARGUMENT). Runs the
 *  evaluation function on one micro-batch at a time; no weight, statistic
 *  or optimizer state changes. PD_ERROR_UNSUPPORTED without an evaluation
 *  function. */
PD_API pd_status pd_trainer_evaluate(pd_trainer *trainer,
                                     const pd_named_array *arrays, size_t count,
                                     double *loss);

/** Gradient clipping (bundle compiled with --clip-grad-norm): the 2-norm of
 *  the last step's gradients, all trained weights together, before they
 *  were clipped (what torch.nn.utils.clip_grad_norm_ returns). NaN when the
 *  bundle does not clip or no step has completed. */
PD_API double pd_trainer_grad_norm(const pd_trainer *trainer);

/** With `enabled` non-zero, every later step also checks that each
 *  micro-batch's loss and, before the update, every gradient is finite: a
 *  NaN or infinity fails the step with PD_ERROR_CHECK_FAILED (the message
 *  names the micro-batch or the gradient) and the update is not applied.
 *  Off by default. */
PD_API pd_status pd_trainer_set_check_finite(pd_trainer *trainer,
                                             int enabled);

/*===-- Pipeline information (bundle.json `pipeline`) ----------------------===*/

/** 1 when bundle.json has a `pipeline` section, else 0. The accessors below
 *  return "", 0 or NULL for a bundle without one. */
PD_API int pd_bundle_is_pipeline(const pd_bundle *bundle);
/** Number of ranks of the pipeline: its programs (pipeline ranks) times
 *  `replicas` (replicated stages: rank w runs program w % K on replica
 *  w / K, docs/Bundle.md "Replicated stages"). */
PD_API size_t pd_bundle_pipeline_ranks(const pd_bundle *bundle);
/** `replicas` (R, 1 when absent): data-parallel replicas of every
 *  pipeline rank. */
PD_API size_t pd_bundle_pipeline_replicas(const pd_bundle *bundle);
/** `schedule.kind` ("1f1b"...), `schedule.stages`, `schedule.chunks`. */
PD_API const char *pd_bundle_pipeline_schedule(const pd_bundle *bundle);
PD_API size_t pd_bundle_pipeline_stages(const pd_bundle *bundle);
PD_API size_t pd_bundle_pipeline_chunks(const pd_bundle *bundle);
/** `schedule.microbatches` (M), `microbatch_size`, `batch_size`. */
PD_API size_t pd_bundle_pipeline_microbatches(const pd_bundle *bundle);
PD_API size_t pd_bundle_pipeline_microbatch_size(const pd_bundle *bundle);
PD_API size_t pd_bundle_pipeline_batch_size(const pd_bundle *bundle);
/** `loss`, `labels`, `num_classes` (0 for mse). */
PD_API const char *pd_bundle_pipeline_loss(const pd_bundle *bundle);
PD_API const char *pd_bundle_pipeline_labels(const pd_bundle *bundle);
PD_API int64_t pd_bundle_pipeline_num_classes(const pd_bundle *bundle);
/** `inputs`: the data arrays besides the labels. */
PD_API size_t pd_bundle_pipeline_input_count(const pd_bundle *bundle);
PD_API const char *pd_bundle_pipeline_input_at(const pd_bundle *bundle,
                                               size_t index);
/** `optimizer` as compact JSON text ("" if absent). */
PD_API const char *pd_bundle_pipeline_optimizer(const pd_bundle *bundle);
/** The rank whose program has the `loss` instructions (the last stage's). */
PD_API size_t pd_bundle_pipeline_loss_rank(const pd_bundle *bundle);

/*===-- Transports ---------------------------------------------------------===*/

/** Tags the runtime uses for its own messages; program tags are >= 0. */
#define PD_TAG_STEP_LOSS (-1)
#define PD_TAG_WEIGHTS (-2)
#define PD_TAG_CHECKPOINT (-3)
/** Free for embedders' own runtime-level messages (pipedream-run gathers
 *  traces with it). */
#define PD_TAG_TRACE (-4)
/** The pipeline ranks' agreement on whether a step failed (run-time
 *  checks), before any rank applies its update. */
#define PD_TAG_STEP_STATUS (-6)

/** A user-defined transport (pd_transport_create). Every callback gets the
 *  `state` given there. send and recv move exactly num_bytes; recv takes
 *  the first message from `peer` with `tag` not received yet (messages of
 *  one (peer, tag) arrive in the order they were sent) and must give up
 *  after `timeout_seconds` with PD_ERROR_TIMEOUT (or PD_ERROR_PEER once
 *  the peer is known to have failed). Failures set the message with
 *  pd_set_last_error. abort (may be NULL) tells the peers this rank failed,
 *  best effort, without blocking; destroy (may be NULL) frees `state`. */
typedef struct pd_transport_ops {
  pd_status (*send)(void *state, size_t peer, int64_t tag, const void *data,
                    size_t num_bytes, double timeout_seconds);
  pd_status (*recv)(void *state, size_t peer, int64_t tag, void *data,
                    size_t num_bytes, double timeout_seconds);
  void (*abort)(void *state, const char *reason);
  void (*destroy)(void *state);
  /* Optional (NULL: the transport cannot run pipelines with shared
   * weights): replaces the `count` elements of `dtype` (f32 or f64) at
   * `data` by their sum over the ranks `ranks` (num_ranks >= 2, ascending,
   * this rank among them), the same value on every one of them. Only those
   * ranks call it; the i-th call of each on one group is one reduction.
   * Gives up after `timeout_seconds` as recv does. */
  pd_status (*all_reduce)(void *state, const size_t *ranks, size_t num_ranks,
                          void *data, size_t count, pd_dtype dtype,
                          double timeout_seconds);
} pd_transport_ops;

/** Wraps a user-defined transport for rank `rank` of `size`. */
PD_API pd_status pd_transport_create(const pd_transport_ops *ops, void *state,
                                     size_t rank, size_t size,
                                     pd_transport **out);
/** Creates `size` connected in-process transports, out[r] for rank r, to
 *  run each rank on its own thread (tests, the sequential reference, one
 *  machine without MPI). Sends copy into the receiver's mailbox and never
 *  block; a rank that aborts or destroys its transport makes the others'
 *  receives from it fail at once with PD_ERROR_PEER. Each transport is
 *  destroyed on its own (the shared state goes with the last one). */
PD_API pd_status pd_transport_create_threads(size_t size, pd_transport **out);
/** 1 when the library was built with MPI (pd_transport_create_mpi works). */
PD_API int pd_transport_mpi_available(void);
/** Creates the MPI transport of this process (Open MPI; run under mpirun):
 *  MPI_Init_thread (MPI_THREAD_MULTIPLE) unless MPI is initialized
 *  already, rank and size of MPI_COMM_WORLD. Receives are MPI_Irecv polled with MPI_Test until the
 *  timeout; sends copy the message and return at once (a progress thread
 *  completes them; with MPI_THREAD_MULTIPLE, else MPI_Isend polled like a
 *  receive), a send not received in time fails a later call.
 *  PD_ERROR_UNSUPPORTED when built without MPI. */
PD_API pd_status pd_transport_create_mpi(pd_transport **out);
/** Frees the transport (the MPI transport finalizes MPI if it initialized
 *  it and never aborted). NULL is a no-op. */
PD_API void pd_transport_destroy(pd_transport *transport);
PD_API size_t pd_transport_rank(const pd_transport *transport);
PD_API size_t pd_transport_size(const pd_transport *transport);
/** "threads", "mpi" or "custom". */
PD_API const char *pd_transport_kind(const pd_transport *transport);
/** How long a receive (and an MPI send) waits: `seconds` > 0. The default
 *  is $PIPEDREAM_TIMEOUT when it holds a positive number, else 60. */
PD_API pd_status pd_transport_set_timeout(pd_transport *transport,
                                          double seconds);
PD_API double pd_transport_timeout(const pd_transport *transport);
/** Sends / receives `num_bytes` bytes to / from rank `peer` with `tag`.
 *  Messages between two ranks with the same tag arrive in order. */
PD_API pd_status pd_transport_send(pd_transport *transport, size_t peer,
                                   int64_t tag, const void *data,
                                   size_t num_bytes);
PD_API pd_status pd_transport_recv(pd_transport *transport, size_t peer,
                                   int64_t tag, void *data, size_t num_bytes);
/** Sums `count` elements of `dtype` (f32 or f64) at `data`, in place, over
 *  the ranks `ranks` (ascending, two or more, this one among them): every
 *  one of them calls it, and all get the same sum (a shared weight's
 *  gradient, Megatron's embedding group). MPI: MPI_Allreduce on a
 *  communicator of the group; NCCL: ncclAllReduce; threads: in process.
 *  PD_ERROR_UNSUPPORTED for a user-defined transport without all_reduce. */
PD_API pd_status pd_transport_all_reduce(pd_transport *transport,
                                         const size_t *ranks, size_t num_ranks,
                                         void *data, size_t count,
                                         pd_dtype dtype);
/** Tells the other ranks that this one failed (`reason`), so that their
 *  receives from it fail at once instead of waiting for the timeout.
 *  Best effort; pd_rank_step calls it on any failure. */
PD_API void pd_transport_abort(pd_transport *transport, const char *reason);

/*===-- Ranks of a pipeline bundle (pd_rank) ------------------------------===*/

/** Creates the executor of rank `rank` of a pipeline bundle (opened with
 *  pd_bundle_open_rank for that rank, or whole with pd_bundle_open) over
 *  `transport` (whose rank and size must be `rank` and the pipeline's
 *  number of ranks). It allocates the rank's registers. The pipeline
 *  belongs to the bundle (destroy it before pd_bundle_close, or let the
 *  close free it); the transport stays the caller's and must outlive it. */
PD_API pd_status pd_rank_create(pd_bundle *bundle, size_t rank,
                                pd_transport *transport, pd_rank **out);
/** Frees the pipeline. NULL is a no-op. */
PD_API void pd_rank_destroy(pd_rank *r);
PD_API size_t pd_rank_index(const pd_rank *r);
/** Samples per step (`batch_size`). */
PD_API size_t pd_rank_batch_size(const pd_rank *r);
/** Checks a whole data set as pd_trainer_check_data does, for every data
 *  array of the pipeline (inputs and labels, whichever rank reads them), so
 *  that every rank refuses the same data with the same message. */
PD_API pd_status pd_rank_check_data(pd_rank *r, const pd_named_array *arrays,
                                    size_t count, size_t *num_samples);
/** One optimizer step of this rank on the batch of rows first_sample ...
 *  first_sample + batch_size - 1 (modulo the number of samples, as for
 *  pd_trainer_step): checks the arrays this rank reads (others may be
 *  absent), zeroes the rank's grad buffers and runs its program once
 *  (input: micro-batch rows into a register; call: the function on
 *  registers and the rank's persistent buffers, `updates` applied; send /
 *  recv over the transport; loss: accumulated). The loss rank then sends
 *  the step loss (the mean of the M micro-batch losses) to rank 0 (tag
 *  PD_TAG_STEP_LOSS). *loss (may be NULL) is the step loss on rank 0 and
 *  the loss rank, NaN on the others. Every rank must call it with the same
 *  first_sample. On failure the transport is aborted (the other ranks stop
 *  within their timeout, naming this one), except for
 *  PD_ERROR_CHECK_FAILED: a failed run-time check (or, with check-finite,
 *  a non-finite loss or gradient) of any rank is agreed on by all ranks
 *  (tag PD_TAG_STEP_STATUS) before any applies its update, so every rank
 *  returns PD_ERROR_CHECK_FAILED with the same message ("micro-batch m,
 *  rank r: ...") and none applies the step (synchronous schedules; with
 *  the asynchronous `pipedream` and `2bw` schedules the agreement comes at
 *  the end of the step, after their updates, docs/Runtime.md). */
PD_API pd_status pd_rank_step(pd_rank *r, const pd_named_array *arrays,
                              size_t count, uint64_t first_sample,
                              double *loss);
/** 1 when every rank of the pipeline has an evaluation program
 *  (pipedream-compile --evaluate: pipeline.ranks[r].eval), else 0. */
PD_API int pd_rank_can_evaluate(const pd_rank *r);
/** Collective, pd_trainer_evaluate for a pipeline: every rank calls it with
 *  the same arrays, all of the pipeline's (checked as by
 *  pd_rank_check_data, so that every rank refuses a data set alike). Runs
 *  the ranks' evaluation programs (each stage's forward in eval mode, the
 *  loss on the loss rank) on every micro-batch of the arrays in order,
 *  their number of samples a multiple of the micro-batch size
 *  (PD_ERROR_INVALID_ARGUMENT); replicated stages share the micro-batches
 *  out (docs/Bundle.md "Evaluation in pipelines"). *loss (may be NULL) is
 *  the mean loss on rank 0 (the loss ranks send their sums, tag
 *  PD_TAG_STEP_LOSS) and, when the loss rank has no replicas, on the loss
 *  rank; NaN on the others. No weight, statistic or optimizer state
 *  changes. A failed run-time check is agreed on by all ranks (tag
 *  PD_TAG_STEP_STATUS): every rank returns PD_ERROR_CHECK_FAILED with the
 *  same message ("evaluation micro-batch m, rank r: ..."). Between steps
 *  only. PD_ERROR_UNSUPPORTED without evaluation programs. */
PD_API pd_status pd_rank_evaluate(pd_rank *r, const pd_named_array *arrays,
                                  size_t count, double *loss);
/** pd_trainer_grad_norm for a pipeline: the norm over every stage, the
 *  same on every rank (the ranks sum its square before their updates). */
PD_API double pd_rank_grad_norm(const pd_rank *r);
/** pd_trainer_set_check_finite for one rank of a pipeline: the loss rank
 *  checks the micro-batch losses, every rank its gradients before its
 *  update. Every rank must set the same. */
PD_API pd_status pd_rank_set_check_finite(pd_rank *r, int enabled);
/** Collective: every rank sends the current value of each weight it owns
 *  (the lowest rank whose program uses it) to rank 0 (tag PD_TAG_WEIGHTS),
 *  in manifest order. Afterwards every weight buffer of rank 0's bundle
 *  holds the trained value (weights no rank uses hold weights.bin's). */
PD_API pd_status pd_rank_gather_weights(pd_rank *r);

/*===-- Checkpoints (docs/Runtime.md "Checkpoints") -------------------------===*/

/* A checkpoint of step S holds what S optimizer steps left behind: every
 * weight and every `state` buffer (optimizer moments, step counters,
 * rng_seed), per rank, in directory `dir`: `step-<S>.rank-<r>.pdckpt`
 * files and `checkpoint.json`, the manifest, written last. Every file is
 * written to a temporary file, fsync'ed and renamed; the previous
 * checkpoint's files are removed only once the new manifest is in place,
 * so an interrupted save leaves the previous checkpoint loadable. Saves
 * happen between steps (grad buffers are zero then and not saved). */

/** Saves the trainer's bundle as the checkpoint of step `step` (the number
 *  of steps done) into `dir` (created if missing). */
PD_API pd_status pd_trainer_save_checkpoint(pd_trainer *trainer,
                                            const char *dir, uint64_t step);
/** Loads `dir`'s checkpoint into the trainer's bundle; *step (may be NULL)
 *  is its step: the next step to run. PD_ERROR_NOT_FOUND when `dir` has no
 *  checkpoint, PD_ERROR_MISMATCH when it was written by another bundle,
 *  PD_ERROR_FORMAT when a file is damaged (size, CRC-32, header); nothing
 *  is loaded on failure. */
PD_API pd_status pd_trainer_load_checkpoint(pd_trainer *trainer,
                                            const char *dir, uint64_t *step);
/** Collective: every rank writes its file, then sends rank 0 its size and
 *  CRC (tag PD_TAG_CHECKPOINT); rank 0 then writes the manifest. On failure
 *  the transport is aborted, as for pd_rank_step. */
PD_API pd_status pd_rank_save_checkpoint(pd_rank *r, const char *dir,
                                         uint64_t step);
/** Every rank (not collective: each reads the files itself, and verifies
 *  every rank's file so that all refuse a damaged checkpoint alike): as
 *  pd_trainer_load_checkpoint, for this rank's buffers. */
PD_API pd_status pd_rank_load_checkpoint(pd_rank *r, const char *dir,
                                         uint64_t *step);
/** The step of `dir`'s latest complete checkpoint (from its manifest);
 *  PD_ERROR_NOT_FOUND when there is none. */
PD_API pd_status pd_checkpoint_step(const char *dir, uint64_t *step);

/*===-- Traces (docs/Runtime.md "Traces") -----------------------------------===*/

/** One measured interval of a step. Strings stay valid while the bundle is
 *  open. */
typedef struct pd_trace_event {
  /** "step" (a whole pd_*_step), "input", "call", "send", "recv", "loss",
   *  "all_reduce", "all_gather" (replicated stages), "agree" (pipelines: the
   *  ranks' exchange of the step's status, once per step; a call's interval
   *  starts after it), "evaluate" (a whole pd_*_evaluate). */
  const char *op;
  /** call: the function's name; all_reduce/all_gather: the buffer's; agree:
   *  "step status"; send/recv of adjacent messages that travel as one: their
   *  tags ("tags 4, 5", `tag` is the first); else "". */
  const char *function;
  /** call: the pipeline instruction's action ("F", "B", "W", "U", "N"), for a
   *  trainer "FB" (the step function) or "U" (the update); every event of an
   *  evaluation: "E"; else "". */
  const char *action;
  /** -1 when not applicable. */
  int64_t stage;
  int64_t microbatch;
  int64_t peer;
  int64_t tag;
  /** Index of the pd_*_step call (from 0, counted since creation); for an
   *  evaluation's events the number of steps before it. */
  uint64_t step;
  /** Steady-clock microseconds (CLOCK_MONOTONIC: comparable between the
   *  processes of one machine). */
  double start_us;
  double end_us;
} pd_trace_event;

/** Turns the recording of events on or off (off at creation). */
PD_API pd_status pd_trainer_set_tracing(pd_trainer *trainer, int enabled);
/** Number of events recorded (kept until pd_trainer_trace_clear). */
PD_API size_t pd_trainer_trace_count(pd_trainer *trainer);
PD_API pd_status pd_trainer_trace_event(pd_trainer *trainer, size_t index,
                                        pd_trace_event *out);
PD_API void pd_trainer_trace_clear(pd_trainer *trainer);
PD_API pd_status pd_rank_set_tracing(pd_rank *r, int enabled);
PD_API size_t pd_rank_trace_count(pd_rank *r);
PD_API pd_status pd_rank_trace_event(pd_rank *r, size_t index,
                                     pd_trace_event *out);
PD_API void pd_rank_trace_clear(pd_rank *r);

/*===-- Deprecated names (API version 5 and before)
 * ------------------------===*/

/* pd_pipeline was the name of pd_rank; these aliases call the pd_rank
 * functions of the same suffix (pd_pipeline_rank: pd_rank_index). */
#if defined(__GNUC__) || defined(__clang__)
#define PD_DEPRECATED(replacement)                                             \
  __attribute__((deprecated("use " replacement)))
#else
#define PD_DEPRECATED(replacement)
#endif
typedef pd_rank pd_pipeline;
PD_API PD_DEPRECATED("pd_rank_create") pd_status
    pd_pipeline_create(pd_bundle *bundle, size_t rank, pd_transport *transport,
                       pd_rank **out);
PD_API PD_DEPRECATED("pd_rank_destroy") void pd_pipeline_destroy(pd_rank *r);
PD_API PD_DEPRECATED("pd_rank_index") size_t pd_pipeline_rank(const pd_rank *r);
PD_API PD_DEPRECATED("pd_rank_batch_size") size_t
    pd_pipeline_batch_size(const pd_rank *r);
PD_API PD_DEPRECATED("pd_rank_check_data") pd_status
    pd_pipeline_check_data(pd_rank *r, const pd_named_array *arrays,
                           size_t count, size_t *num_samples);
PD_API PD_DEPRECATED("pd_rank_step") pd_status
    pd_pipeline_step(pd_rank *r, const pd_named_array *arrays, size_t count,
                     uint64_t first_sample, double *loss);
PD_API PD_DEPRECATED("pd_rank_set_check_finite") pd_status
    pd_pipeline_set_check_finite(pd_rank *r, int enabled);
PD_API PD_DEPRECATED("pd_rank_gather_weights") pd_status
    pd_pipeline_gather_weights(pd_rank *r);
PD_API PD_DEPRECATED("pd_rank_save_checkpoint") pd_status
    pd_pipeline_save_checkpoint(pd_rank *r, const char *dir, uint64_t step);
PD_API PD_DEPRECATED("pd_rank_load_checkpoint") pd_status
    pd_pipeline_load_checkpoint(pd_rank *r, const char *dir, uint64_t *step);
PD_API PD_DEPRECATED("pd_rank_set_tracing") pd_status
    pd_pipeline_set_tracing(pd_rank *r, int enabled);
PD_API PD_DEPRECATED("pd_rank_trace_count") size_t
    pd_pipeline_trace_count(pd_rank *r);
PD_API PD_DEPRECATED("pd_rank_trace_event") pd_status
    pd_pipeline_trace_event(pd_rank *r, size_t index, pd_trace_event *out);
PD_API PD_DEPRECATED("pd_rank_trace_clear") void pd_pipeline_trace_clear(
    pd_rank *r);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PIPEDREAM_RUNTIME_H */
