// The zero-bubble and V-shaped schedule kinds against the orders
// torch.distributed.pipelining 2.15 builds (Inputs/torch, written by
// Inputs/torch/generate.py): our schedule, exported as torch's CSV, has the
// same actions in the same order on every rank as torch's file (idle cells
// removed: torch places them by its own step model). K = 4, M = 8.
// Unit costs (F = B = W = 1 per chunk, communication 0): ZB-H1's bubble is
// (K-1)/(3M+K-1) = 3/27; ZB-V's (K-1)/(6M+K-1) = 3/51.

// RUN: pipedream-opt %s -pipe-report-schedule="kind=zb-h1 stages=4 microbatches=8 csv=%t.zbh1.csv json=%t.zbh1.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=ZBH1 < %t.zbh1.csv
// RUN: FileCheck %s --check-prefix=ZBH1-JSON < %t.zbh1.json
// RUN: sed -e 's/\r$//' -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %S/Inputs/torch/zb-h1-k4-m8.csv > %t.torch.zbh1
// RUN: sed -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %t.zbh1.csv | diff %t.torch.zbh1 -

// RUN: pipedream-opt %s -pipe-report-schedule="kind=zb-v stages=4 microbatches=8 virtual=2 csv=%t.zbv.csv json=%t.zbv.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=ZBV-JSON < %t.zbv.json
// RUN: sed -e 's/\r$//' -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %S/Inputs/torch/zb-v-k4-m8.csv > %t.torch.zbv
// RUN: sed -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %t.zbv.csv | diff %t.torch.zbv -

// RUN: pipedream-opt %s -pipe-report-schedule="kind=interleaved-zb stages=4 microbatches=8 virtual=2 csv=%t.izb.csv" -o /dev/null
// RUN: sed -e 's/\r$//' -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %S/Inputs/torch/interleaved-zb-k4-m8-v2.csv > %t.torch.izb
// RUN: sed -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %t.izb.csv | diff %t.torch.izb -

// RUN: pipedream-opt %s -pipe-report-schedule="kind=dualpipe-v stages=4 microbatches=8 virtual=2 csv=%t.dual.csv json=%t.dual.json" -o /dev/null
// RUN: sed -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %t.dual.csv | FileCheck %s --check-prefix=DUAL
// RUN: sed -e 's/\r$//' %S/Inputs/torch/dualpipe-v-k4-m8.csv > %t.torch.dual
// RUN: sed -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %t.dual.csv | diff %t.torch.dual -

// The trace marks joined actions; the report names the V placement.
// RUN: pipedream-opt %s -pipe-report-schedule="kind=dualpipe-v stages=4 microbatches=8 virtual=2 trace=%t.dual.trace svg=%t.dual.svg" -o /dev/null
// RUN: grep -c '"join": "overlap_f_b"' %t.dual.trace | FileCheck %s --check-prefix=NOVERLAP
// RUN: grep -c '"join": "full_backward"' %t.dual.trace | FileCheck %s --check-prefix=NFULL
// RUN: grep -c 'overlapped with the F before it' %t.dual.svg | FileCheck %s --check-prefix=NOVERLAP
// NOVERLAP: {{^}}25{{$}}
// NFULL: {{^}}42{{$}}
// RUN: FileCheck %s --check-prefix=PLACEMENT < %t.zbv.json
// PLACEMENT: "placement": "v"

// Import: torch's files, compute_only and compute_comms, kind inferred; the
// communication and FSDP actions are ignored with a one-line remark.
// RUN: pipedream-opt %s -pipe-report-schedule="schedule-csv=%S/Inputs/torch/dualpipe-v-k4-m8.comms.csv json=-" -o /dev/null 2>%t.remark | FileCheck %s --check-prefix=DUAL-JSON
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: pipedream-opt %s -pipe-report-schedule="schedule-csv=%S/Inputs/torch/zb-h1-k4-m8.comms.csv json=-" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=ZBH1-JSON
// RUN: pipedream-opt %s -pipe-report-schedule="schedule-csv=%S/Inputs/torch/zb-v-k4-m8.csv json=-" -o /dev/null | FileCheck %s --check-prefix=ZBV-JSON

// Errors: a V-shaped kind with the wrong chunk count; too few micro-batches
// for DualPipeV. (The compile path runs every kind: unroll-v-schedules.mlir.)
// RUN: not pipedream-opt %s -pipe-report-schedule="kind=zb-v stages=4 microbatches=8" 2>&1 | FileCheck %s --check-prefix=ZBV-V1
// RUN: not pipedream-opt %s -pipe-report-schedule="kind=dualpipe-v stages=4 microbatches=7 virtual=2" 2>&1 | FileCheck %s --check-prefix=DUAL-M

// ZB-H1, K = 4, M = 8: rank r runs K-1-r warm-up forwards and defers each
// W by r backwards; every action as early as its inputs allow.
// ZBH1:      0F0,0F1,0F2,0F3,,,,0I0,0W0,0F4,0I1,0W1,0F5,0I2,0W2,0F6,0I3,0W3,0F7,0I4,0W4,0I5,0W5,0I6,0W6,0I7,0W7
// ZBH1-NEXT: ,1F0,1F1,1F2,,,1I0,1F3,1I1,1W0,1F4,1I2,1W1,1F5,1I3,1W2,1F6,1I4,1W3,1F7,1I5,1W4,1I6,1W5,1I7,1W6,1W7
// ZBH1-NEXT: ,,2F0,2F1,,2I0,2F2,2I1,2F3,2I2,2W0,2F4,2I3,2W1,2F5,2I4,2W2,2F6,2I5,2W3,2F7,2I6,2W4,2I7,2W5,2W6,2W7
// ZBH1-NEXT: ,,,3F0,3I0,3F1,3I1,3F2,3I2,3F3,3I3,3W0,3F4,3I4,3W1,3F5,3I5,3W2,3F6,3I6,3W3,3F7,3I7,3W4,3W5,3W6,3W7
// ZBH1-EMPTY:

// ZBH1-JSON: "bubble_fraction": 0.111111111
// ZBH1-JSON: "makespan": 27,
// ZBH1-JSON: "activation_slots": 4,
// ZBH1-JSON: "activation_slots": 4,
// ZBH1-JSON: "activation_slots": 4,
// ZBH1-JSON: "activation_slots": 4,
// ZBH1-JSON: "kind": "zb-h1"
// ZBH1-JSON: "verified": true

// ZBV-JSON: "bubble_fraction": 0.0588235294
// ZBV-JSON: "makespan": 51,
// ZBV-JSON: "kind": "zb-v"
// ZBV-JSON: "verified": true

// DualPipeV's steady state: overlapped F and full B pairs of the two chunks.
// DUAL: 0F0,0F1,0F2,0F3,0F4,0F5,0F6,7F0,7I0,7W0,7F1,7I1,7W1,7F2,7I2,7W2,7F3,(0F7;7B3)OVERLAP_F_B,(7F4;0B0)OVERLAP_F_B,7B4
// DUAL-JSON: "makespan": 54,
// DUAL-JSON: "kind": "dualpipe-v"
// DUAL-JSON: "verified": true
// REMARK: remark: pipe-report-schedule: {{.*}}dualpipe-v-k4-m8.comms.csv: ignored {{[0-9]+}} communication actions (SEND/RECV/WAIT_SEND: pipedream derives communication from the compute order) and {{[0-9]+}} FSDP actions (UNSHARD/RESHARD/REDUCE_GRAD: parameters are not sharded here)

// ZBV-V1: error: pipe-report-schedule: zb-v runs exactly 2 chunks per stage (a V: stage s and 2K-1-s on rank s), got 1
// DUAL-M: error: pipe-report-schedule: dualpipe-v needs at least 2K = 8 micro-batches (one per virtual stage), got 7

module {}
