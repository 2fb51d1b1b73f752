// Stage functions of a 2-rank, 4-stage pipeline in the V placement of zb-v
// and dualpipe-v (stage s and 2K-1-s on rank s: s0 and s3 on rank 0, s1 and
// s2 on rank 1, the second chunk reversed), with the zero-bubble split, in
// the calling convention of pipe-unroll-schedule (docs/Pipe.md, "Stage
// functions"; the same functions as four-stages-split.mlir).

func.func private @s0_F(tensor<2x4xf32> {pipe.input = "x"}) -> (tensor<2x4xf32> {pipe.send = 0 : i64}, tensor<2x4xf32> {nn.residual = 0 : i64}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {pipe.grad = 0 : i64}) -> (tensor<2x4xf32> {nn.carry = 0 : i64}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_W(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {nn.carry = 0 : i64}) -> (tensor<4x4xf32> {nn.updates = "grad:w0"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U(tensor<4x4xf32> {nn.role = "grad", nn.name = "grad:w0"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32> {pipe.recv = 0 : i64}) -> (tensor<2x4xf32> {pipe.send = 1 : i64}, tensor<2x4xf32> {nn.residual = 0 : i64}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {pipe.grad = 1 : i64}) -> (tensor<2x4xf32> {pipe.grad = 0 : i64}, tensor<2x4xf32> {nn.carry = 0 : i64}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_W(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {nn.carry = 0 : i64}) -> (tensor<4x4xf32> {nn.updates = "grad:w1"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U(tensor<4x4xf32> {nn.role = "grad", nn.name = "grad:w1"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s2_F(tensor<2x4xf32> {pipe.recv = 1 : i64}) -> (tensor<2x4xf32> {pipe.send = 2 : i64}, tensor<2x4xf32> {nn.residual = 0 : i64}) attributes {pipe.stage = #pipe.stage<1, chunk = 1, reversed = true>}
func.func private @s2_B(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {pipe.grad = 2 : i64}) -> (tensor<2x4xf32> {pipe.grad = 1 : i64}, tensor<2x4xf32> {nn.carry = 0 : i64}) attributes {pipe.stage = #pipe.stage<1, chunk = 1, reversed = true>}
func.func private @s2_W(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {nn.carry = 0 : i64}) -> (tensor<4x4xf32> {nn.updates = "grad:w2"}) attributes {pipe.stage = #pipe.stage<1, chunk = 1, reversed = true>}
func.func private @s2_U(tensor<4x4xf32> {nn.role = "grad", nn.name = "grad:w2"}) attributes {pipe.stage = #pipe.stage<1, chunk = 1, reversed = true>}
func.func private @s3_F(tensor<2x4xf32> {pipe.recv = 2 : i64}) -> (tensor<f32> {nn.role = "loss"}, tensor<2x4xf32> {nn.residual = 0 : i64}) attributes {pipe.stage = #pipe.stage<0, chunk = 1, reversed = true>}
func.func private @s3_B(tensor<2x4xf32> {nn.residual = 0 : i64}) -> (tensor<2x4xf32> {pipe.grad = 2 : i64}, tensor<2x4xf32> {nn.carry = 0 : i64}) attributes {pipe.stage = #pipe.stage<0, chunk = 1, reversed = true>}
func.func private @s3_W(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {nn.carry = 0 : i64}) -> (tensor<4x4xf32> {nn.updates = "grad:w3"}) attributes {pipe.stage = #pipe.stage<0, chunk = 1, reversed = true>}
func.func private @s3_U(tensor<4x4xf32> {nn.role = "grad", nn.name = "grad:w3"}) attributes {pipe.stage = #pipe.stage<0, chunk = 1, reversed = true>}
