// The V-shaped and interleaved zero-bubble kinds through the compile path
// (issue 17): pipe-unroll-schedule builds the global program of two ranks
// and four virtual stages, pipe-verify-schedule proves it, and the order
// of every rank, read back from the program, is torch 2.15's action by
// action (Inputs/torch, idle cells removed; torch's full backward `B` is
// our B (input gradient) then W, joined).
//
// zb-v and dualpipe-v: the V placement (Inputs/two-ranks-v.mlir): rank 0
// runs stages 0 and 3 (the first and the last), rank 1 stages 1 and 2.
// RUN: pipedream-opt %S/Inputs/two-ranks-v.mlir -pipe-unroll-schedule="kind=zb-v microbatches=4 virtual=2" -pipe-verify-schedule -pipe-report-schedule="csv=%t.zbv.csv" -o %t.zbv.mlir
// RUN: sed -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %t.zbv.csv | FileCheck %s --check-prefix=ZBV
// RUN: sed -e 's/\r$//' -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %S/Inputs/torch/zb-v-k2-m4.csv > %t.torch.zbv
// RUN: sed -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %t.zbv.csv | diff %t.torch.zbv -
// ZBV:      0F0,0F1,0F2,3F0,3I0,3W0,3F1,3I1,3W1,0F3,0I0,0W0,3F2,3I2,3W2,0I1,0W1,3F3,3I3,3W3,0I2,0W2,0I3,0W3
// ZBV-NEXT: 1F0,2F0,1F1,2F1,2I0,2W0,1F2,1I0,1W0,2F2,2I1,2W1,1F3,1I1,1W1,2F3,2I2,2W2,1I2,2I3,1I3,1W2,2W3,1W3
// ZBV-EMPTY:

// The program spells the second chunk `chunk 1 reversed`; the loss is
// stage 3's, on rank 0.
// RUN: FileCheck %s --check-prefix=ZBV-IR < %t.zbv.mlir
// ZBV-IR: pipe.program @train schedule #pipe.schedule<kind = "zb-v", stages = 2, microbatches = 4, chunks = 2>
// ZBV-IR-SAME: -> (tensor<f32> {pipe.stage = #pipe.stage<0, chunk = 1, reversed = true>}
// ZBV-IR: pipe.call_stage F @s2_F({{.*}}) stage 1 chunk 1 reversed microbatch 0
// ZBV-IR: pipe.call_stage F @s3_F({{.*}}) stage 0 chunk 1 reversed microbatch 0
// ZBV-IR: pipe.stash {{.*}} into activation slot {{[0-9]+}} stage 0 chunk 1 reversed microbatch 0

// Projection: the edge from stage 1 to stage 2 (and its gradient) stays on
// rank 1, as 0 <-> 3 would on rank 0; the others cross ranks: 4
// micro-batches x (0 -> 1, 2 -> 3 activations; 3 -> 2, 1 -> 0 gradients) =
// 16 messages, none between the two chunks of a rank. The per-rank programs are proved free
// of deadlock under rendezvous sends (pipe-verify-schedule).
// RUN: pipedream-opt %t.zbv.mlir -pipe-project-ranks -pipe-verify-schedule -o %t.zbv.ranks.mlir
// RUN: grep -c "pipe.send .* to [01] tag" %t.zbv.ranks.mlir | FileCheck %s --check-prefix=SENDS
// RUN: grep -c "pipe.recv from [01] tag" %t.zbv.ranks.mlir | FileCheck %s --check-prefix=SENDS
// SENDS: {{^}}16{{$}}
// RUN: FileCheck %s --check-prefix=ZBV-RANK1 < %t.zbv.ranks.mlir
// ZBV-RANK1: pipe.program @train_rank1 rank 1
// ZBV-RANK1: %[[X:.*]] = pipe.recv from 0 tag 0
// ZBV-RANK1-NEXT: %[[A:.*]]:2 = pipe.call_stage F @s1_F(%[[X]]) stage 1 microbatch 0
// ZBV-RANK1-NEXT: pipe.stash
// ZBV-RANK1-NEXT: pipe.call_stage F @s2_F(%[[A]]#0) stage 1 chunk 1 reversed microbatch 0

// DualPipeV: the overlapped F&B pairs and the full backwards survive in the
// program (`pipe.join`), so the order reads back with torch's compound
// actions.
// RUN: pipedream-opt %S/Inputs/two-ranks-v.mlir -pipe-unroll-schedule="kind=dualpipe-v microbatches=4 virtual=2" -pipe-verify-schedule -pipe-project-ranks="keep-global=true" -pipe-verify-schedule -pipe-report-schedule="csv=%t.dual.csv" -o %t.dual.mlir
// RUN: sed -e 's/\r$//' %S/Inputs/torch/dualpipe-v-k2-m4.csv > %t.torch.dual
// RUN: sed -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %t.dual.csv | diff %t.torch.dual -
// RUN: FileCheck %s --check-prefix=DUAL-IR < %t.dual.mlir
// DUAL-IR: pipe.call_stage F @s0_F({{.*}}) stage 0 microbatch 3
// DUAL-IR: pipe.call_stage B @s3_B({{.*}}) stage 0 chunk 1 reversed microbatch 1 {pipe.join = "overlap"}

// interleaved-zb: two loop-placed chunks per rank
// (Inputs/two-ranks-chunked-split.mlir: stage s on rank s % 2).
// RUN: pipedream-opt %S/Inputs/two-ranks-chunked-split.mlir -pipe-unroll-schedule="kind=interleaved-zb microbatches=4 virtual=2" -pipe-verify-schedule -pipe-project-ranks="keep-global=true" -pipe-verify-schedule -pipe-report-schedule="csv=%t.izb.csv" -o /dev/null
// RUN: sed -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %t.izb.csv | FileCheck %s --check-prefix=IZB
// RUN: sed -e 's/\r$//' -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %S/Inputs/torch/interleaved-zb-k2-m4-v2.csv > %t.torch.izb
// RUN: sed -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//' %t.izb.csv | diff %t.torch.izb -
// IZB:      0F0,0F1,2F0,2F1,2I0,2W0,0F2,2I1,2W1,0F3,0I0,0W0,2F2,0I1,0W1,2F3,2I2,2W2,2I3,2W3,0I2,0W2,0I3,0W3
// IZB-NEXT: 1F0,1F1,3F0,3I0,3F1,3I1,3W0,1F2,1I0,3W1,1F3,1I1,1W0,3F2,3I2,1W1,3F3,3I3,3W2,1I2,3W3,1I3,1W2,1W3
// IZB-EMPTY:

// Errors: stage functions in the wrong placement for the kind (either way).
// RUN: not pipedream-opt %S/Inputs/two-ranks-chunked-split.mlir -pipe-unroll-schedule="kind=zb-v microbatches=4 virtual=2" 2>&1 | FileCheck %s --check-prefix=WRONG-V
// WRONG-V: error: pipe-unroll-schedule: stage function @s2_{{[FBWU]}} has #pipe.stage<0, chunk = 1>, but zb-v places its virtual stage 2 at #pipe.stage<1, chunk = 1, reversed = true> (V placement: stage s and 2K-1-s on rank s)
// RUN: not pipedream-opt %S/Inputs/two-ranks-v.mlir -pipe-unroll-schedule="kind=interleaved-zb microbatches=4 virtual=2" 2>&1 | FileCheck %s --check-prefix=WRONG-LOOP
// WRONG-LOOP: error: pipe-unroll-schedule: stage function @s{{[0-9]}}_{{[FBWU]}} has #pipe.stage<{{[01]}}, chunk = 1, reversed = true>, but interleaved-zb places its virtual stage {{[23]}} at #pipe.stage<{{[01]}}, chunk = 1> (loop placement: stage v on rank v % K)
