// RUN: pipedream-opt %s -split-input-file -allow-unregistered-dialect -verify-diagnostics

//===----------------------------------------------------------------------===//
// #pipe.stage
//===----------------------------------------------------------------------===//

// expected-error @+1 {{stage index must be non-negative, got -1}}
func.func private @f() attributes {pipe.stage = #pipe.stage<-1>}

// -----

// expected-error @+1 {{stage chunk must be non-negative, got -2}}
func.func private @f() attributes {pipe.stage = #pipe.stage<0, chunk = -2>}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{stage index must be non-negative, got -1}}
  %0 = pipe.transfer %x from stage -1 to stage 0 : tensor<4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// #pipe.schedule
//===----------------------------------------------------------------------===//

// expected-error @+1 {{schedule needs at least 1 stage, got 0}}
func.func private @f() attributes {s = #pipe.schedule<kind = gpipe, stages = 0, microbatches = 4>}

// -----

// expected-error @+1 {{schedule needs at least 1 microbatch, got 0}}
func.func private @f() attributes {s = #pipe.schedule<kind = "1f1b", stages = 4, microbatches = 0>}

// -----

// expected-error @+1 {{schedule needs at least 1 chunk per stage, got 0}}
func.func private @f() attributes {s = #pipe.schedule<kind = "1f1b", stages = 4, microbatches = 4, chunks = 0>}

// -----

// expected-error @+1 {{'interleaved-1f1b' needs more than 1 chunk per stage}}
func.func private @f() attributes {s = #pipe.schedule<kind = "interleaved-1f1b", stages = 4, microbatches = 8>}

// -----

// expected-error @+1 {{'interleaved-1f1b' needs microbatches to be a multiple of stages, got 6 microbatches for 4 stages}}
func.func private @f() attributes {s = #pipe.schedule<kind = "interleaved-1f1b", stages = 4, microbatches = 6, chunks = 2>}

// -----

// expected-error @+1 {{'1f1b' has 1 chunk per stage, got 2 (only 'interleaved-1f1b', 'interleaved-zb', 'zb-v' and 'dualpipe-v' have virtual chunks)}}
func.func private @f() attributes {s = #pipe.schedule<kind = "1f1b", stages = 4, microbatches = 8, chunks = 2>}

// -----

// Kinds are spelled as DESIGN.md spells them: `zb-h1`, not `zb_h1`.
// expected-error @+2 {{for pipeline schedule, got: zb_h1}}
// expected-error @+1 {{failed to parse Pipe_ScheduleAttr parameter 'kind'}}
func.func private @f() attributes {s = #pipe.schedule<kind = zb_h1, stages = 4, microbatches = 8>}

// -----

//===----------------------------------------------------------------------===//
// Discardable attributes
//===----------------------------------------------------------------------===//

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'pipe.stage' must be a #pipe.stage attribute, got 1 : i64}}
  %0 = nn.relu %x {pipe.stage = 1} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{attribute 'pipe.schedule' must be a #pipe.schedule attribute, got "1f1b"}}
module attributes {pipe.schedule = "1f1b"} {
}

// -----

// expected-error @+1 {{argument 1 attribute 'pipe.stage' must be a #pipe.stage attribute, got #pipe.schedule}}
func.func private @f(tensor<4xf32>, tensor<4xf32> {pipe.stage = #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1>})

// -----

// expected-error @+1 {{result 0 attribute 'pipe.stage' must be a #pipe.stage attribute, got 0 : i64}}
func.func private @f() -> (tensor<4xf32> {pipe.stage = 0})

// -----

//===----------------------------------------------------------------------===//
// pipe.program / pipe.return
//===----------------------------------------------------------------------===//

// expected-error @+1 {{rank 2 is out of range [0, 2) for a schedule of 2 stages}}
pipe.program @p rank 2 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 2> () {
  pipe.return
}

// -----

// expected-error @+1 {{rank -1 is out of range [0, 2) for a schedule of 2 stages}}
pipe.program @p rank -1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 2> () {
  pipe.return
}

// -----

// expected-error @+1 {{body must end with 'pipe.return'}}
pipe.program @p schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 2> () {
  "test.end"() : () -> ()
}

// -----

pipe.program @p schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 2> () -> tensor<4xf32> {
  // expected-error @+1 {{has 0 operands, but the enclosing program returns 1 values}}
  pipe.return
}

// -----

pipe.program @p schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 2> (%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{operand 0 has type 'tensor<4xf32>', but the enclosing program returns 'tensor<4xf16>'}}
  pipe.return %x : tensor<4xf32>
}

// -----

func.func @f() {
  // expected-error @+1 {{expects parent op 'pipe.program'}}
  pipe.return
}

// -----

//===----------------------------------------------------------------------===//
// pipe.call_stage
//===----------------------------------------------------------------------===//

func.func private @s(tensor<4xf32>) -> tensor<4xf32>

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{microbatch must be non-negative, got -1}}
  %0 = pipe.call_stage F @s(%x) stage 0 microbatch -1 : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func private @s(tensor<4xf32>) -> tensor<4xf32>

pipe.program @p schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 4> (%x: tensor<4xf32>) {
  // expected-error @+1 {{stage #pipe.stage<2> is out of range for a schedule of 2 stages}}
  %0 = pipe.call_stage F @s(%x) stage 2 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return
}

// -----

func.func private @s(tensor<4xf32>) -> tensor<4xf32>

pipe.program @p schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 4> (%x: tensor<4xf32>) {
  // expected-error @+1 {{stage #pipe.stage<0, chunk = 1> is out of range for a schedule of 1 chunks per stage}}
  %0 = pipe.call_stage F @s(%x) stage 0 chunk 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return
}

// -----

func.func private @s(tensor<4xf32>) -> tensor<4xf32>

pipe.program @p schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 4> (%x: tensor<4xf32>) {
  // expected-error @+1 {{microbatch 4 is out of range for a schedule of 4 microbatches}}
  %0 = pipe.call_stage F @s(%x) stage 0 microbatch 4 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return
}

// -----

func.func private @s(tensor<4xf32>) -> tensor<4xf32>

pipe.program @p rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 4> (%x: tensor<4xf32>) {
  // expected-error @+1 {{stage #pipe.stage<1> runs on rank 1, but the enclosing program is for rank 0}}
  %0 = pipe.call_stage F @s(%x) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return
}

// -----

func.func private @s(tensor<4xf32>) -> tensor<4xf32>

pipe.program @p schedule #pipe.schedule<kind = "1f1b", stages = 2, microbatches = 4> (%x: tensor<4xf32>) {
  // expected-error @+1 {{action W needs a schedule that splits the backward ('zb-h1'), got '1f1b'}}
  %0 = pipe.call_stage W @s(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{@missing does not reference a stage function}}
  %0 = pipe.call_stage F @missing(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

pipe.program @other schedule #pipe.schedule<kind = gpipe, stages = 1, microbatches = 1> () {
  pipe.return
}

func.func @f() {
  // expected-error @+1 {{@other does not reference a stage function}}
  pipe.call_stage F @other() stage 0 microbatch 0 : () -> ()
  return
}

// -----

func.func private @s(tensor<4xf32>) -> tensor<4xf32>

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{passes 2 operands, but @s takes 1}}
  %0 = pipe.call_stage F @s(%x, %x) stage 0 microbatch 0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func private @s(tensor<4xf32>) -> tensor<4xf32>

func.func @f(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand 0 has type 'tensor<4xi32>', but @s expects 'tensor<4xf32>'}}
  %0 = pipe.call_stage F @s(%x) stage 0 microbatch 0 : (tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

func.func private @s(tensor<4xf32>) -> tensor<4xf32>

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{has 2 results, but @s returns 1}}
  %0:2 = pipe.call_stage F @s(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func private @s(tensor<4xf32>) -> tensor<4xf32>

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{result 0 has type 'tensor<2x2xf32>', but @s returns 'tensor<4xf32>'}}
  %0 = pipe.call_stage F @s(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func private @s(tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = #pipe.stage<1>}

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{runs stage #pipe.stage<0>, but @s belongs to stage #pipe.stage<1>}}
  %0 = pipe.call_stage B @s(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// pipe.transfer
//===----------------------------------------------------------------------===//

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{source and destination are the same stage #pipe.stage<1, chunk = 1>}}
  %0 = pipe.transfer %x from stage 1 chunk 1 to stage 1 chunk 1 : tensor<4xf32>
  return
}

// -----

pipe.program @p rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 4> (%x: tensor<4xf32>) {
  // expected-error @+1 {{is only valid in a global-view program, but the enclosing program is for rank 0 (use 'pipe.send' and 'pipe.recv')}}
  %0 = pipe.transfer %x from stage 0 to stage 1 : tensor<4xf32>
  pipe.return
}

// -----

pipe.program @p schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 4> (%x: tensor<4xf32>) {
  // expected-error @+1 {{stage #pipe.stage<3> is out of range for a schedule of 2 stages}}
  %0 = pipe.transfer %x from stage 0 to stage 3 : tensor<4xf32>
  pipe.return
}

// -----

func.func @f(%x: tensor<?xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of any type values}}
  %0 = pipe.transfer %x from stage 0 to stage 1 : tensor<?xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{all of {input, result} have same type}}
  %0 = "pipe.transfer"(%x) <{src = #pipe.stage<0>, dst = #pipe.stage<1>}> : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// pipe.send / pipe.recv
//===----------------------------------------------------------------------===//

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{peer rank must be non-negative, got -1}}
  pipe.send %x to -1 tag 0 : tensor<4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{tag must be non-negative, got -3}}
  %0 = pipe.recv from 0 tag -3 : tensor<4xf32>
  return
}

// -----

pipe.program @p schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 4> (%x: tensor<4xf32>) {
  // expected-error @+1 {{is only valid in a per-rank program, but the enclosing program is a global view (use 'pipe.transfer')}}
  pipe.send %x to 1 tag 0 : tensor<4xf32>
  pipe.return
}

// -----

pipe.program @p rank 0 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 4> () {
  // expected-error @+1 {{peer rank 2 is out of range for a schedule of 2 ranks}}
  %0 = pipe.recv from 2 tag 0 : tensor<4xf32>
  pipe.return
}

// -----

pipe.program @p rank 1 schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 4> (%x: tensor<4xf32>) {
  // expected-error @+1 {{peer rank 1 is the enclosing program's own rank}}
  pipe.send %x to 1 tag 0 : tensor<4xf32>
  pipe.return
}

// -----

//===----------------------------------------------------------------------===//
// pipe.stash / pipe.restore
//===----------------------------------------------------------------------===//

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{slot must be non-negative, got -1}}
  pipe.stash %x into activation slot -1 stage 0 microbatch 0 : tensor<4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{microbatch must be non-negative, got -1}}
  %0 = pipe.restore activation slot 0 stage 0 microbatch -1 : tensor<4xf32>
  return
}

// -----

pipe.program @p schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 4> (%x: tensor<4xf32>) {
  // expected-error @+1 {{weight slots need a schedule with weight versions ('pipedream' or '2bw'), got 'gpipe'}}
  pipe.stash %x into weight slot 0 stage 0 microbatch 0 : tensor<4xf32>
  pipe.return
}

// -----

pipe.program @p rank 1 schedule #pipe.schedule<kind = pipedream, stages = 2, microbatches = 4> () {
  // expected-error @+1 {{stage #pipe.stage<0> runs on rank 0, but the enclosing program is for rank 1}}
  %0 = pipe.restore weight slot 0 stage 0 microbatch 0 : tensor<4xf32>
  pipe.return
}

// -----

pipe.program @p schedule #pipe.schedule<kind = pipedream, stages = 2, microbatches = 4> () {
  // expected-error @+1 {{microbatch 9 is out of range for a schedule of 4 microbatches}}
  %0 = pipe.restore activation slot 0 stage 1 microbatch 9 : tensor<4xf32>
  pipe.return
}

//===----------------------------------------------------------------------===//
// pipe.all_reduce_grad
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{'pipe.all_reduce_grad' op needs stages on at least two ranks (a weight held by one rank needs no all-reduce), got [#pipe.stage<0>, #pipe.stage<0, chunk = 1>]}}
pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<0, chunk = 1>] microbatch 0 : tensor<4xf32>

// -----

// expected-error @+1 {{'pipe.all_reduce_grad' op lists stage #pipe.stage<1> twice}}
pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>, #pipe.stage<1>] microbatch 0 : tensor<4xf32>

// -----

// expected-error @+1 {{'pipe.all_reduce_grad' op reduces a gradient, which has a float type, got 'tensor<4xi64>'}}
pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 0 : tensor<4xi64>

// -----

// expected-error @+1 {{'pipe.all_reduce_grad' op needs the weight's name}}
pipe.all_reduce_grad "" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 0 : tensor<4xf32>

// -----

// expected-error @+1 {{'pipe.all_reduce_grad' op microbatch must be non-negative, got -1}}
pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch -1 : tensor<4xf32>

// -----

pipe.program @p schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 4> () {
  // expected-error @+1 {{'pipe.all_reduce_grad' op stage #pipe.stage<2> is out of range for the schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 4>}}
  pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<2>] microbatch 3 : tensor<4xf32>
  pipe.return
}

// -----

pipe.program @p schedule #pipe.schedule<kind = gpipe, stages = 2, microbatches = 4> () {
  // expected-error @+1 {{'pipe.all_reduce_grad' op microbatch 4 is out of range for a schedule of 4 microbatches}}
  pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 4 : tensor<4xf32>
  pipe.return
}

// -----

pipe.program @p rank 2 schedule #pipe.schedule<kind = gpipe, stages = 3, microbatches = 4> () {
  // expected-error @+1 {{'pipe.all_reduce_grad' op is in the program of rank 2, which holds none of its stages}}
  pipe.all_reduce_grad "w" stages [#pipe.stage<0>, #pipe.stage<1>] microbatch 3 : tensor<4xf32>
  pipe.return
}
