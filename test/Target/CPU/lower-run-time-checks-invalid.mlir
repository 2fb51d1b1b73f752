// RUN: pipedream-opt %s -cpu-lower-run-time-checks -verify-diagnostics

// The record's names are the runtime's: a module that has them already is
// refused.
// expected-error @+1 {{the run-time status record 'pipedream_run_time_status' is already defined}}
module {
  func.func @pipedream_run_time_status() {
    return
  }
}
