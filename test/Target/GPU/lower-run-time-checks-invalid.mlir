// RUN: pipedream-opt %s -verify-diagnostics -cuda-lower-run-time-checks

// The record's take function is the pass's own symbol.
// expected-error @+1 {{'pipedream.cuda_take_run_time_status' is already defined}}
module {
  func.func private @pipedream.cuda_take_run_time_status(memref<5xi64>)
  func.func @f(%a: i64) {
    nn.check_index_range %a, %a {lower = 0 : i64, upper = 3 : i64,
        node = "n", op_type = "Gather", input = "i"} : i64
    return
  }
}
