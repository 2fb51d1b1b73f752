// RUN: pipedream-opt --show-dialects | FileCheck %s
// RUN: pipedream-opt --help | FileCheck %s --check-prefix=HELP

// pipedream's dialects are registered next to upstream's.
// CHECK: Available Dialects:
// CHECK-SAME: linalg
// CHECK-SAME: nn
// CHECK-SAME: pipe

// HELP: Available Dialects: {{.*}}nn, {{.*}}pipe
