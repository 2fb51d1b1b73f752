// Stage functions of a 2-stage pipeline in the calling convention of
// pipe-unroll-schedule (see four-stages.mlir).

func.func private @s0_F(tensor<2x4xf32> {pipe.input = "x"}) -> (tensor<2x4xf32> {pipe.send = 0 : i64}, tensor<2x4xf32> {nn.residual = 0 : i64}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {pipe.grad = 0 : i64}) -> (tensor<4x4xf32> {nn.updates = "grad:w0"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U(tensor<4x4xf32> {nn.role = "grad", nn.name = "grad:w0"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32> {pipe.recv = 0 : i64}) -> (tensor<f32> {nn.role = "loss"}, tensor<2x4xf32> {nn.residual = 0 : i64}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32> {nn.residual = 0 : i64}) -> (tensor<2x4xf32> {pipe.grad = 0 : i64}, tensor<4x4xf32> {nn.updates = "grad:w1"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U(tensor<4x4xf32> {nn.role = "grad", nn.name = "grad:w1"}) attributes {pipe.stage = #pipe.stage<1>}
