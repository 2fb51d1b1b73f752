// pipe-report-schedule: report.json fields, Chrome trace, SVG and torch CSV.
// Expected figures are theory with unit costs (F = 1, B = 2): synchronous
// bubble (K-1)/(M+K-1) = 3/11 for K = 4, M = 8; interleaved (per-chunk
// costs) (K-1)/(V*M+K-1) = 3/19; 1F1B keeps min(K-r, M) micro-batches on
// rank r, GPipe M; PipeDream stage i keeps K-i weight versions.

// RUN: pipedream-opt %s -pipe-report-schedule="kind=1f1b stages=4 microbatches=8 json=%t.1f1b.json trace=%t.1f1b.trace.json svg=%t.1f1b.svg csv=%t.1f1b.csv" -o /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t.1f1b.json
// RUN: FileCheck %s --check-prefix=TRACE < %t.1f1b.trace.json
// RUN: FileCheck %s --check-prefix=SVG < %t.1f1b.svg
// RUN: FileCheck %s --check-prefix=CSV < %t.1f1b.csv
// RUN: pipedream-opt %s -pipe-report-schedule="kind=gpipe stages=4 microbatches=8 json=-" -o /dev/null | FileCheck %s --check-prefix=GPIPE
// RUN: pipedream-opt %s -pipe-report-schedule="kind=interleaved-1f1b stages=4 microbatches=8 virtual=2 json=-" -o /dev/null | FileCheck %s --check-prefix=INTERLEAVED
// RUN: pipedream-opt %s -pipe-report-schedule="kind=pipedream stages=4 microbatches=8 json=-" -o /dev/null | FileCheck %s --check-prefix=PIPEDREAM
// From the module's global program (kind empty).
// RUN: pipedream-opt %S/Inputs/four-stages.mlir -pipe-unroll-schedule="kind=1f1b microbatches=8" -pipe-report-schedule="json=-" -o /dev/null | FileCheck %s --check-prefix=JSON
// CSV round trip: a schedule written by hand in PyTorch's format is read
// and written back unchanged, and it is pipedream's 1F1B.
// RUN: pipedream-opt %s -pipe-report-schedule="schedule-csv=%S/Inputs/torch-1f1b-k2m4.csv csv=%t.rt.csv json=%t.rt.json" -o /dev/null
// RUN: diff %S/Inputs/torch-1f1b-k2m4.csv %t.rt.csv
// RUN: pipedream-opt %s -pipe-report-schedule="kind=1f1b stages=2 microbatches=4 csv=-" -o /dev/null | diff %S/Inputs/torch-1f1b-k2m4.csv -
// RUN: FileCheck %s --check-prefix=RT < %t.rt.json
// kind=auto: the search over the synchronous kinds (V = 2 for the chunked
// ones), unit work per step (a stage's F = 1, backward = 2, split over V
// chunks and M micro-batches): ZB-V 51/16, ZB-H1 27/8, 1F1B 33/8.
// RUN: pipedream-opt %s -pipe-report-schedule="kind=auto stages=4 microbatches=8 json=%t.auto.json" -o /dev/null | FileCheck %s --check-prefix=AUTO
// RUN: FileCheck %s --check-prefix=AUTO-JSON < %t.auto.json
// AUTO: schedule candidates (unit work per step):
// AUTO-NEXT: kind V M step time bubble peak memory/rank
// AUTO-NEXT: * zb-v 2 8 3.1875 0.0588
// AUTO-NEXT: {{^}} interleaved-zb 2 8 3.1875 0.0588
// AUTO-NEXT: {{^}} zb-h1 1 8 3.375 0.1111
// AUTO: {{^}} 1f1b 1 8 4.125 0.2727
// AUTO-NOT: pipedream
// AUTO-JSON: "kind": "zb-v"
// Errors.
// RUN: not pipedream-opt %s -pipe-report-schedule="kind=zb_h1" 2>&1 | FileCheck %s --check-prefix=BAD-KIND
// RUN: not pipedream-opt %s -pipe-report-schedule="schedule-csv=%S/Inputs/custom-k2m2-malformed.csv" 2>&1 | FileCheck %s --check-prefix=BAD-CSV
// RUN: not pipedream-opt %s -pipe-report-schedule 2>&1 | FileCheck %s --check-prefix=NO-PROGRAM

// JSON: "bubble_fraction": 0.2727272727
// JSON: "peak_stash": [
// JSON-NEXT: {
// JSON-NEXT: "activation_slots": 4,
// JSON-NEXT: "rank": 0,
// JSON-NEXT: "weight_versions": 1
// JSON: "activation_slots": 3,
// JSON: "activation_slots": 2,
// JSON: "activation_slots": 1,
// JSON: "schedule": {
// JSON-NEXT: "K": 4,
// JSON-NEXT: "M": 8,
// JSON-NEXT: "V": 1,
// JSON-NEXT: "kind": "1f1b"
// JSON: "verified": true

// One lane per rank, one slice per action (name: action, micro-batch, stage).
// TRACE: "name": "pipeline 1f1b K=4 M=8 V=1"
// TRACE: "name": "rank 0"
// TRACE: "name": "rank 3"
// TRACE: "action": "F",
// TRACE-NEXT: "chunk": 0,
// TRACE-NEXT: "microbatch": 0,
// TRACE-NEXT: "rank": 0,
// TRACE-NEXT: "stage": 0
// TRACE-NEXT: },
// TRACE-NEXT: "cat": "F",
// TRACE-NEXT: "dur": 1000,
// TRACE-NEXT: "name": "F0 s0",
// TRACE-NEXT: "ph": "X",
// TRACE-NEXT: "pid": 0,
// TRACE-NEXT: "tid": 0,
// TRACE-NEXT: "ts": 0
// TRACE: "name": "B0 s0",
// TRACE: "name": "U7 s3",

// SVG: <svg xmlns="http://www.w3.org/2000/svg"
// SVG: 1f1b: K=4 stages, M=8 micro-batches {{.*}} bubble 27.3%
// SVG: >rank 0</text>
// SVG: <title>F0 s0</title>
// SVG: >rank 3</text>
// SVG: F forward
// SVG: B backward
// SVG: U optimizer update

// Rank r starts after r idle steps, runs K-1-r warm-up forwards, then
// alternates (torch's grid: one time step per F or B).
// CSV: 0F0,0F1,0F2,0F3,,,,0B0,0F4,0B1,0F5,0B2,0F6,0B3,0F7,0B4,,0B5,,0B6,,0B7
// CSV-NEXT: ,1F0,1F1,1F2,,,1B0,1F3,1B1,1F4,1B2,1F5,1B3,1F6,1B4,1F7,1B5,,1B6,,1B7
// CSV-NEXT: ,,2F0,2F1,,2B0,2F2,2B1,2F3,2B2,2F4,2B3,2F5,2B4,2F6,2B5,2F7,2B6,,2B7
// CSV-NEXT: ,,,3F0,3B0,3F1,3B1,3F2,3B2,3F3,3B3,3F4,3B4,3F5,3B5,3F6,3B6,3F7,3B7

// GPIPE: "bubble_fraction": 0.2727272727
// GPIPE-COUNT-4: "activation_slots": 8,

// INTERLEAVED: "bubble_fraction": 0.157894736
// INTERLEAVED: "V": 2,

// PIPEDREAM: "rank": 0,
// PIPEDREAM-NEXT: "weight_versions": 4
// PIPEDREAM: "rank": 1,
// PIPEDREAM-NEXT: "weight_versions": 3
// PIPEDREAM: "rank": 2,
// PIPEDREAM-NEXT: "weight_versions": 2
// PIPEDREAM: "rank": 3,
// PIPEDREAM-NEXT: "weight_versions": 1

// RT: "bubble_fraction": 0.2
// RT: "K": 2,
// RT-NEXT: "M": 4,
// RT: "kind": "1f1b"
// RT: "verified": true

// BAD-KIND: error: pipe-report-schedule: unknown schedule kind 'zb_h1'
// BAD-CSV: error: pipe-report-schedule: {{.*}}custom-k2m2-malformed.csv: row 2, column 4: '1X1' has unknown action type 'X' (expected F, B, I or W, or one of torch's SEND_F
// NO-PROGRAM: error: pipe-report-schedule: no global pipe.program in the module
