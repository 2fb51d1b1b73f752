// RUN: pipedream-opt %s -split-input-file -verify-diagnostics -cuda-define-run-time-status

// A take function not made by cuda-lower-run-time-checks (no check names).
// expected-error @+1 {{'pipedream.cuda_take_run_time_status' must take memref<5xi64> and carry 'pipedream.cuda.checks' (cuda-lower-run-time-checks)}}
func.func private @pipedream.cuda_take_run_time_status(memref<5xi64>)

// -----

// expected-error @+1 {{'pipedream.cuda.checks' must list [op type, node, input] strings}}
func.func private @pipedream.cuda_take_run_time_status(memref<5xi64>) attributes {pipedream.cuda.checks = [["Gather", "n"]]}

// -----

// The host record is defined once.
// expected-error @+1 {{the run-time status record 'pipedream_run_time_status' is already defined}}
module {
  func.func @pipedream_run_time_status() {
    return
  }
}
